import { useEffect, useRef } from 'preact/hooks';
import { basicSetup } from 'codemirror';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { Decoration, EditorView, MatchDecorator, placeholder as placeholderText, ViewPlugin, type DecorationSet, type ViewUpdate } from '@codemirror/view';
import { html } from '@codemirror/lang-html';
import { markdown, markdownLanguage } from '@codemirror/lang-markdown';
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { tags as t } from '@lezer/highlight';

/**
 * A code editor (CodeMirror 6) for a template's body: HTML or Markdown, with Liquid's `{{ … }}` and `{% … %}` marked.
 * Imported by the template editor page only, so CodeMirror lands in that page's lazy chunk, never the first load.
 *
 * The editor lives in a shadow root of its host element. CodeMirror writes its styles at run time: into a <style>
 * element in a document, which the console's CSP (`style-src 'self'`) refuses, but into a constructed stylesheet
 * (adoptedStyleSheets, CSSOM) in a shadow root, which it allows. The console's tokens (CSS custom properties) inherit
 * into the shadow root, so the theme below uses them and follows light and dark. An element outside cannot label one
 * inside (ids do not cross the boundary): the editable element carries its own aria-label.
 */
export interface CodeEditorProps {
  /** The document when the editor is made, and whenever `resetKey` changes. */
  value: string;
  onChange: (value: string) => void;
  /**
   * Changes when the document is replaced from outside (another template loaded). Typing never comes back through
   * `value`: the parent's state lags the editor by a render, and writing a lagging value back would undo keystrokes.
   */
  resetKey?: unknown;
  language: 'html' | 'markdown';
  /** The editable element's accessible name (the visible label outside cannot point into the shadow root). */
  label: string;
  readOnly?: boolean;
  invalid?: boolean;
  placeholder?: string;
}

/** Liquid output and tags, matched line by line (a tag spanning lines is left plain: rare in email templates). */
const liquid = new MatchDecorator({ regexp: /\{\{.*?\}\}|\{%.*?%\}/g, decoration: Decoration.mark({ class: 'cm-liquid' }) });
const liquidMarks = ViewPlugin.fromClass(class {
  decorations: DecorationSet;
  constructor(view: EditorView) { this.decorations = liquid.createDeco(view); }
  update(update: ViewUpdate) { this.decorations = liquid.updateDeco(update, this.decorations); }
}, { decorations: (v) => v.decorations });

/**
 * Typing over a selection: the browser's own editing would delete it first and give the typed text the look of what it
 * deleted (a heading's weight) in a <span style="…">, a style attribute, which the console's CSP refuses and reports.
 * The editor replaces the selection itself instead, through the same input handlers as typing (closing brackets wrap
 * the selection). Backspace, Delete, Enter, cut and paste are CodeMirror's own already.
 */
const typeOverSelection = EditorView.domEventHandlers({
  beforeinput(event, view) {
    const { main } = view.state.selection;
    const text = event.data;
    if (event.inputType !== 'insertText' || !text || view.composing || main.empty) return false;
    event.preventDefault();
    const insert = () => view.state.update(view.state.replaceSelection(text), { scrollIntoView: true, userEvent: 'input.type' });
    if (!view.state.facet(EditorView.inputHandler).some((handle) => handle(view, main.from, main.to, text, insert))) view.dispatch(insert());
    return true;
  },
});

/** Syntax colours from the console's tokens (each meets AA on the surface in both schemes). */
const highlight = HighlightStyle.define([
  { tag: [t.tagName, t.angleBracket], color: 'var(--accent-text)' },
  { tag: t.attributeName, color: 'var(--info-text)' },
  { tag: [t.attributeValue, t.string, t.monospace], color: 'var(--success-text)' },
  { tag: [t.comment, t.meta, t.processingInstruction, t.contentSeparator, t.quote], color: 'var(--text-muted)' },
  { tag: [t.character, t.escape], color: 'var(--warning-text)' },
  { tag: t.heading, fontWeight: '600' },
  { tag: t.strong, fontWeight: '600' },
  { tag: t.emphasis, fontStyle: 'italic' },
  { tag: t.strikethrough, textDecoration: 'line-through' },
  { tag: [t.link, t.url], color: 'var(--accent-text)', textDecoration: 'underline' },
  { tag: t.invalid, color: 'var(--danger-text)' },
]);

const prefersDark = () => typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;

function theme(dark: boolean): Extension {
  return EditorView.theme({
    // Transparent: the host's background shows (its read-only look is the page's, as the other fields'); the page may
    // set the height it starts at (a custom property crosses the shadow root).
    '&': { minHeight: 'var(--code-editor-min-height, 320px)', maxHeight: '68vh', color: 'var(--text)', backgroundColor: 'transparent', fontSize: 'var(--text-sm)' },
    '&.cm-focused': { outline: 'none' },
    '.cm-scroller': { fontFamily: 'var(--font-mono)', lineHeight: '1.6', overflow: 'auto' },
    '.cm-content': { padding: 'var(--space-2) 0', caretColor: 'var(--text)' },
    '.cm-cursor, .cm-dropCursor': { borderLeftColor: 'var(--text)' },
    '.cm-gutters': { backgroundColor: 'var(--surface-2)', color: 'var(--text-muted)', borderRight: '1px solid var(--border)' },
    '.cm-activeLine': { backgroundColor: 'var(--surface-hover)' },
    '.cm-activeLineGutter': { backgroundColor: 'var(--surface-hover)', color: 'var(--text)' },
    '&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection': { backgroundColor: 'var(--accent-soft)' },
    '.cm-selectionMatch': { backgroundColor: 'var(--accent-soft)' },
    '.cm-placeholder': { color: 'var(--text-muted)' },
    '.cm-liquid': { color: 'var(--warning-text)', backgroundColor: 'var(--warning-soft)', borderRadius: '3px' },
    '.cm-liquid *': { color: 'inherit' },
    '.cm-tooltip': { backgroundColor: 'var(--surface)', color: 'var(--text)', border: '1px solid var(--border)', borderRadius: 'var(--radius)', boxShadow: 'var(--shadow)' },
    '.cm-tooltip-autocomplete > ul > li[aria-selected]': { backgroundColor: 'var(--accent-soft)', color: 'var(--accent-text)' },
    '.cm-panels': { backgroundColor: 'var(--surface-2)', color: 'var(--text)' },
    '.cm-foldPlaceholder': { backgroundColor: 'var(--surface-2)', color: 'var(--text-muted)', border: '1px solid var(--border)' },
  }, { dark });
}

const languageOf = (language: CodeEditorProps['language']) => (language === 'markdown' ? markdown({ base: markdownLanguage }) : html());

export function CodeEditor({ value, onChange, resetKey, language, label, readOnly = false, invalid = false, placeholder }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const compartments = useRef({ language: new Compartment(), access: new Compartment(), attributes: new Compartment() });
  // The latest callbacks, read by the editor's listeners (made once).
  const handlers = useRef({ onChange });
  handlers.current = { onChange };

  const access = (ro: boolean) => [EditorState.readOnly.of(ro), EditorView.editable.of(!ro)];
  const attributes = (ro: boolean, bad: boolean) => EditorView.contentAttributes.of({
    'aria-label': label, 'aria-multiline': 'true', ...(ro ? { 'aria-readonly': 'true' } : {}), ...(bad ? { 'aria-invalid': 'true' } : {}),
  });

  useEffect(() => {
    const element = host.current!;
    const root = element.shadowRoot ?? element.attachShadow({ mode: 'open' });
    const c = compartments.current;
    const editor = new EditorView({
      root,
      parent: root,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          EditorView.lineWrapping,
          syntaxHighlighting(highlight),
          liquidMarks,
          typeOverSelection,
          theme(prefersDark()),
          c.language.of(languageOf(language)),
          c.access.of(access(readOnly)),
          c.attributes.of(attributes(readOnly, invalid)),
          ...(placeholder ? [placeholderText(placeholder)] : []),
          EditorView.updateListener.of((update) => { if (update.docChanged) handlers.current.onChange(update.state.doc.toString()); }),
        ],
      }),
    });
    view.current = editor;
    return () => { editor.destroy(); view.current = null; };
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [resetKey]);
  useEffect(() => { view.current?.dispatch({ effects: compartments.current.language.reconfigure(languageOf(language)) }); }, [language]);
  useEffect(() => {
    const c = compartments.current;
    view.current?.dispatch({ effects: [c.access.reconfigure(access(readOnly)), c.attributes.reconfigure(attributes(readOnly, invalid))] });
  }, [readOnly, invalid, label]);

  return <div ref={host} class={`code-editor${invalid ? ' is-invalid' : ''}${readOnly ? ' is-readonly' : ''}`} />;
}
