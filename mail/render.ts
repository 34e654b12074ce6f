import { Liquid, type Template } from 'liquidjs';
import { LRUCache } from 'lru-cache';

/**
 * Template rendering with Liquid (liquidjs): `{{ variable }}` plus conditionals, loops and filters.
 * Values are HTML-escaped in bodies (`| raw` opts out) and a missing variable renders as nothing.
 * Templates are user input, so the engine is closed off: no file system (includes resolve only from an empty
 * in-memory map), own properties only, unknown filters refused, and parse/render time and memory bounded.
 */
const LIMITS = { parseLimit: 1_000_000, renderLimit: 1_000, memoryLimit: 50_000_000 };
const CLOSED = { templates: {}, strictFilters: true, strictVariables: false, ownPropertyOnly: true, ...LIMITS };

const htmlEngine = new Liquid({ ...CLOSED, outputEscape: 'escape' });
const textEngine = new Liquid({ ...CLOSED });

export class TemplateError extends Error {
  constructor(readonly part: 'subject' | 'body', message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

export interface CompiledMessage {
  subject: Template[];
  body: Template[];
}

/** Parses subject and body once (per request or template); throws TemplateError naming the part at fault. */
export function compileMessage(subject: string, body: string): CompiledMessage {
  const parse = (engine: Liquid, part: 'subject' | 'body', src: string) => {
    try {
      return engine.parse(src);
    } catch (err) {
      throw new TemplateError(part, `invalid template syntax: ${(err as Error).message.split('\n')[0]}`);
    }
  };
  return { subject: parse(textEngine, 'subject', subject), body: parse(htmlEngine, 'body', body) };
}

/**
 * compileMessage with a bounded cache keyed by the source text: the same template is sent again and again (sends of a
 * template, a campaign's thousands of deliveries), and is parsed once per process. A parse error is not cached.
 */
const compiled = new LRUCache<string, CompiledMessage>({ max: 500 });
export function compileCached(subject: string, body: string): CompiledMessage {
  const key = `${subject}\u0000${body}`;
  let hit = compiled.get(key);
  if (!hit) compiled.set(key, (hit = compileMessage(subject, body)));
  return hit;
}

export interface RenderScope {
  [variable: string]: unknown;
}

/**
 * Variables of a message: the request's `data` at the top level, then the contact's own fields (`email`,
 * `data.<key>`, `contact.*`) and `unsubscribeUrl`, which the request cannot override.
 */
export function messageScope(requestData: Record<string, unknown>, contact: { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }, unsubscribeUrl: string): RenderScope {
  return {
    ...requestData,
    email: contact.email,
    data: contact.data,
    contact: { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data },
    unsubscribeUrl,
  };
}

export function renderMessage(compiled: CompiledMessage, scope: RenderScope): { subject: string; html: string } {
  const subject = textEngine.renderSync(compiled.subject, scope) as string;
  const html = htmlEngine.renderSync(compiled.body, scope) as string;
  // A header cannot carry line breaks: whatever the variables held, the subject stays one line.
  return { subject: subject.replace(/[\r\n]+/g, ' ').trim(), html };
}
