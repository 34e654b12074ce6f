import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Marked, type Tokens } from 'marked';

/**
 * The guide page (GET /docs/guide): docs/api.md, rendered with marked into a plain page that Herald serves itself (it
 * does not know where its repository lives, so the reference links here rather than to a repository's copy). Headings
 * get the ids GitHub gives them, so the guide's own links (`#api-keys`) work on the page as they do on GitHub; a link
 * to another file of the repository (not served) is left as its text. docs/api.md is the project's own file: its
 * HTML is trusted, and the page's Content-Security-Policy allows no script at all anyway.
 */

export const GUIDE_FILE = path.join(__dirname, '..', 'docs', 'api.md');

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** GitHub's heading id: lower case, punctuation dropped (hyphens and underscores kept), spaces to hyphens. */
export function slugOf(text: string): string {
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

interface Heading { depth: number; id: string; text: string }

export interface Guide {
  html: string;
  /** The ids of the page's headings, in order. */
  ids: string[];
}

/** docs/api.md as the guide page's HTML. */
export function renderGuide(markdown: string, version: string): Guide {
  const headings: Heading[] = [];
  const seen = new Map<string, number>();
  const marked = new Marked({ gfm: true });
  marked.use({
    renderer: {
      heading({ tokens, depth }: Tokens.Heading) {
        const text = this.parser.parseInline(tokens, this.parser.textRenderer);
        const base = slugOf(text);
        const n = seen.get(base) ?? 0;
        seen.set(base, n + 1);
        const id = n ? `${base}-${n}` : base;
        headings.push({ depth, id, text });
        return `<h${depth} id="${id}">${this.parser.parseInline(tokens)}<a class="anchor" href="#${id}" aria-label="Link to ${escape(text)}">#</a></h${depth}>\n`;
      },
      link({ href, tokens }: Tokens.Link) {
        const inner = this.parser.parseInline(tokens);
        if (/^(#|https?:|mailto:)/.test(href)) return `<a href="${escape(href)}">${inner}</a>`;
        return `${inner} (<code>docs/${escape(href)}</code> in Herald's repository)`;
      },
    },
  });
  // Wide tables and long code scroll inside their own box, not the page; a box that scrolls takes the keyboard's focus.
  const body = marked.parse(markdown, { async: false })
    .replace(/<table>/g, '<div class="table" tabindex="0"><table>').replace(/<\/table>/g, '</table></div>')
    .replace(/<pre>/g, '<pre tabindex="0">');
  const toc = headings.filter((h) => h.depth === 2).map((h) => `<li><a href="#${h.id}">${escape(h.text)}</a></li>`).join('');
  const title = headings.find((h) => h.depth === 1)?.text ?? 'Herald API guide';
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Herald ${escape(version)}</title>
<link rel="icon" href="../favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="guide.css"></head>
<body><a class="skip" href="#content">Skip to the guide</a>
<header class="top"><a class="brand" href="../app"><img src="../favicon.svg" alt="" width="24" height="24">Herald <span class="version">${escape(version)}</span></a>
<nav aria-label="Herald"><a href="../docs">API reference</a><a href="guide" aria-current="page">Guide</a><a href="../app">Console</a></nav></header>
<div class="layout"><nav class="toc" aria-labelledby="toc-title"><h2 id="toc-title">On this page</h2><ol>${toc}</ol></nav>
<main id="content">
${body}</main></div></body></html>`;
  return { html, ids: headings.map((h) => h.id) };
}

let cached: Promise<Guide> | undefined;

/** The guide, read and rendered once per process (docs/api.md does not change while Herald runs). */
export function guide(version: string): Promise<Guide> {
  cached ??= readFile(GUIDE_FILE, 'utf8').then((markdown) => renderGuide(markdown, version));
  return cached;
}
