/** Parts of the Templates pages (Templates, TemplateEditor): not a page (web/pages/parts/ holds what two pages share). */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, call, type Schemas } from '../../api';
import { Badge } from '../../components';
import { useLoad } from '../../hooks';

export type TemplateType = 'TRANSACTIONAL' | 'MARKETING';
export type BodyType = 'html' | 'markdown';

/** A template's type in words: marketing mail goes to subscribed contacts only, with the unsubscribe headers. */
export const TYPE_OPTIONS: [TemplateType, string][] = [['TRANSACTIONAL', 'Transactional'], ['MARKETING', 'Marketing']];
export const FORMAT_OPTIONS: [BodyType, string][] = [['html', 'HTML'], ['markdown', 'Markdown']];

export function TemplateTypeBadge({ type }: { type: string }) {
  return type === 'MARKETING' ? <Badge tone="accent">Marketing</Badge> : <Badge tone="info">Transactional</Badge>;
}

/** Templates are few; a project with very many has the newest 500 listed (a step's other template is named by id). */
const TEMPLATE_PAGES = 5;

/** The project's templates: a SEND_EMAIL step's choice and its node's name, a campaign's template. */
export function useTemplates() {
  const loaded = useLoad(async () => {
    const all: Schemas['Template'][] = [];
    let cursor: string | undefined;
    for (let page = 0; page < TEMPLATE_PAGES; page++) {
      const got = await call(api.GET('/templates', { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } }));
      all.push(...got.items);
      if (!got.nextCursor) break;
      cursor = got.nextCursor;
    }
    return all;
  }, []);
  const list = loaded.data ?? [];
  const names = new Map(list.map((t) => [t.id, t.name]));
  return { list, loading: loaded.loading, name: (id: string) => names.get(id.toLowerCase()) };
}

export const PART_WORDS: Record<string, string> = { subject: 'Subject', body: 'Body' };

/** The API's answer to a preview, or what went wrong, in words. */
export function failureText(err: unknown): string {
  if (!(err instanceof ApiFailure)) return 'The preview could not be rendered.';
  const fields = Object.entries(err.fields);
  const said = fields.length ? fields.map(([f, m]) => `${PART_WORDS[f] ?? f}: ${m}`).join(' · ') : err.message;
  return err.suggestion ? `${said}. ${err.suggestion}` : said;
}

export interface Preview { subject: string; html: string }

/**
 * The live preview: the content, contact and variables rendered by Herald ~300 ms after the last change; a newer
 * change cancels the request in flight (AbortController), so an old answer never replaces a newer one.
 */
export function usePreview(input: { subject: string; body: string; bodyType: BodyType; contactId?: string; data?: Record<string, unknown> } | null) {
  const [state, setState] = useState<{ preview?: Preview; error: string; busy: boolean }>({ error: '', busy: true });
  const key = JSON.stringify(input);
  useEffect(() => {
    if (!input) return undefined;
    const abort = new AbortController();
    setState((s) => ({ ...s, busy: true }));
    const timer = setTimeout(() => {
      call(api.POST('/templates/preview', { body: input, signal: abort.signal }), { form: true }).then(
        (preview) => setState({ preview, error: '', busy: false }),
        (err: unknown) => { if (!abort.signal.aborted) setState((s) => ({ ...s, error: failureText(err), busy: false })); },
      );
    }, 300);
    return () => { clearTimeout(timer); abort.abort(); };
  }, [key]);
  return state;
}
