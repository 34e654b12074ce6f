import { Context, Liquid, toValue, toValueSync, type Template } from 'liquidjs';
import { LRUCache } from 'lru-cache';
import { Marked } from 'marked';

/**
 * Template rendering with Liquid (liquidjs): `{{ variable }}` plus conditionals, loops and filters.
 * Values are HTML-escaped in bodies (`| raw` opts out) and a missing variable renders as nothing.
 * Templates are user input, so the engine is closed off: no file system (includes resolve only from an empty
 * in-memory map), own properties only, unknown filters refused, and parse/render time and memory bounded.
 */
const LIMITS = { parseLimit: 1_000_000, renderLimit: 1_000, memoryLimit: 50_000_000 };

/**
 * What one message may render to, and what all the renders of one request (or one delivery) may cost. A 500-byte
 * template with nested loops can otherwise produce megabytes per recipient: the caps stop it as soon as the output
 * passes them (the emitter counts as it writes), the time budget is shared by every render of the request.
 */
export const RENDER_BUDGET = {
  /** Characters of a rendered subject. */
  subjectChars: 1_000,
  /** Characters of a rendered HTML body (about 2 MB; Gmail clips messages past 102 KB anyway). */
  htmlChars: 2_000_000,
  /** Characters of all the renders of one request together (its recipients' subjects and bodies). */
  requestChars: 20_000_000,
  /** Milliseconds of rendering for one request, all its recipients together. */
  requestMs: 1_000,
} as const;
const CLOSED = { templates: {}, strictFilters: true, strictVariables: false, ownPropertyOnly: true, ...LIMITS };

const htmlEngine = new Liquid({ ...CLOSED, outputEscape: 'escape' });
const textEngine = new Liquid({ ...CLOSED });

/**
 * A template that cannot be used: its syntax (`invalid_template`), or a render that passed a budget (`too_big` for
 * the size caps, `too_complex` for time and memory). `part` names the part at fault.
 */
export class TemplateError extends Error {
  constructor(readonly part: 'subject' | 'body', message: string, readonly code: 'invalid_template' | 'too_big' | 'too_complex' = 'invalid_template') {
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

/** What is left of a request's budget; each render takes from it. */
export class RenderBudget {
  private readonly deadline: number;
  private chars: number;
  /** `memory`: liquidjs's allocation limit for each render (its units: characters and array elements). */
  constructor(ms: number = RENDER_BUDGET.requestMs, chars: number = RENDER_BUDGET.requestChars, readonly memory: number = LIMITS.memoryLimit) {
    this.deadline = performance.now() + ms;
    this.chars = chars;
  }
  remainingMs(): number {
    return Math.max(0, this.deadline - performance.now());
  }
  remainingChars(): number {
    return this.chars;
  }
  take(chars: number): void {
    this.chars -= chars;
  }
}

/** What liquidjs's own emitter writes for a value (its `stringify`, which it does not export). */
function stringify(value: unknown): string {
  const v: unknown = toValue(value);
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(stringify).join('');
  return String(v);
}

/**
 * liquidjs's emitter contract (`write`, `buffer`), with a cap: the write that passes it throws, so a runaway loop
 * stops at the cap instead of building its whole output first.
 */
class CappedEmitter {
  buffer = '';
  constructor(readonly cap: number) {}
  write(html: unknown): void {
    this.buffer += stringify(html);
    if (this.buffer.length > this.cap) throw new Error('output cap passed');
  }
}

const count = (n: number) => n.toLocaleString('en-US');

function renderPart(engine: Liquid, templates: Template[], scope: RenderScope, part: 'subject' | 'body', partCap: number, budget: RenderBudget): string {
  const requestLeft = budget.remainingChars();
  const emitter = new CappedEmitter(Math.min(partCap, requestLeft));
  const ctx = new Context(scope, engine.options, { sync: true, renderLimit: Math.min(LIMITS.renderLimit, budget.remainingMs()), memoryLimit: budget.memory }, { liquid: engine });
  try {
    toValueSync(engine.renderer.renderTemplates(templates, ctx, emitter));
  } catch (err) {
    if (emitter.buffer.length > emitter.cap) {
      throw partCap <= requestLeft
        ? new TemplateError(part, `the ${part} renders to more than ${count(partCap)} characters`, 'too_big')
        : new TemplateError(part, `the messages of this request render to more than ${count(RENDER_BUDGET.requestChars)} characters together`, 'too_big');
    }
    const message = (err as Error).message.split('\n')[0]!;
    if (message.includes('render limit exceeded')) {
      throw new TemplateError(part, `rendering passed the budget of ${count(RENDER_BUDGET.requestMs)} ms per request`, 'too_complex');
    }
    if (message.includes('memory alloc limit exceeded')) throw new TemplateError(part, 'rendering needs more memory than allowed', 'too_complex');
    throw new TemplateError(part, `template could not be rendered: ${message}`);
  }
  budget.take(emitter.buffer.length);
  // A filter can make U+0000 out of plain text (`"%00" | url_decode`): neither PostgreSQL's text nor a mail line can
  // carry it. (An unpaired surrogate, from `slice` cutting a pair, is written as U+FFFD by the UTF-8 encoders.)
  return emitter.buffer.includes('\0') ? emitter.buffer.replace(/\0/g, '') : emitter.buffer;
}

/**
 * Markdown bodies (`type: "markdown"`): CommonMark with GitHub's extensions, by marked. Like an HTML body, what the
 * sender wrote is sent as written: HTML inside the markdown passes through, as an HTML body's does.
 */
const markdown = new Marked({ gfm: true, async: false });

/**
 * A rendered markdown body as HTML, within the same budgets as any body: the HTML cap per message, the request's
 * characters (the growth is taken from them) and its time (checked once converted: marked runs in linear time).
 */
function markdownToHtml(rendered: string, budget: RenderBudget): string {
  const html = markdown.parse(rendered, { async: false });
  if (html.length > RENDER_BUDGET.htmlChars) throw new TemplateError('body', `the body renders to more than ${count(RENDER_BUDGET.htmlChars)} characters`, 'too_big');
  budget.take(html.length - rendered.length);
  if (budget.remainingChars() < 0) throw new TemplateError('body', `the messages of this request render to more than ${count(RENDER_BUDGET.requestChars)} characters together`, 'too_big');
  if (budget.remainingMs() === 0) throw new TemplateError('body', `rendering passed the budget of ${count(RENDER_BUDGET.requestMs)} ms per request`, 'too_complex');
  return html;
}

/**
 * Renders one message within `budget` (by default a fresh one: a single message). Throws TemplateError naming the
 * part when the template fails or passes a cap. A markdown body is rendered by Liquid first (variables are
 * HTML-escaped as in any body), then converted to HTML.
 */
export function renderMessage(compiled: CompiledMessage, scope: RenderScope, budget = new RenderBudget(), asMarkdown = false): { subject: string; html: string } {
  // The subject is rendered with a little room over its cap: trimming below may bring it back under.
  const subject = renderPart(textEngine, compiled.subject, scope, 'subject', RENDER_BUDGET.subjectChars * 2, budget).replace(/[\r\n]+/g, ' ').trim();
  if (subject.length > RENDER_BUDGET.subjectChars) throw new TemplateError('subject', `the subject renders to more than ${count(RENDER_BUDGET.subjectChars)} characters`, 'too_big');
  const rendered = renderPart(htmlEngine, compiled.body, scope, 'body', RENDER_BUDGET.htmlChars, budget);
  const html = asMarkdown ? markdownToHtml(rendered, budget) : rendered;
  // A header cannot carry line breaks: whatever the variables held, the subject stays one line.
  return { subject, html };
}

/** The renders of one request: a template and the scope of each recipient. */
export interface RenderJob {
  subject: string;
  body: string;
  /** The body is markdown: converted to HTML after Liquid, here, where the rendering runs. */
  markdown?: boolean;
  scopes: RenderScope[];
}

export type RenderJobResult =
  | { rendered: { subject: string; html: string }[] }
  | { failed: { index: number; part: 'subject' | 'body'; code: TemplateError['code']; message: string } };


/**
 * Renders every recipient of a request within one budget. Plain data in and out, so it runs the same inline or on a
 * render thread (mail/renderPool.ts). The first failure ends the job.
 */
export function renderJob(job: RenderJob, budget = new RenderBudget()): RenderJobResult {
  const rendered: { subject: string; html: string }[] = [];
  try {
    const compiled = compileCached(job.subject, job.body);
    for (const scope of job.scopes) rendered.push(renderMessage(compiled, scope, budget, job.markdown === true));
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    return { failed: { index: rendered.length, part: err.part, code: err.code, message: err.message } };
  }
  return { rendered };
}

/** Several requests' jobs, each within its own budget: what a render thread does with one task. */
export function renderJobs(jobs: RenderJob[]): RenderJobResult[] {
  return jobs.map((job) => renderJob(job));
}

/**
 * Renders requests' messages, each job within its own budget: on a render thread (the API: mail/renderPool.ts), or
 * inline. The jobs of one call share a thread, so they should be one tenant's (project's): `tenant` lets a pool share
 * its threads fairly.
 */
export type Renderer = (jobs: RenderJob[], tenant?: string) => Promise<RenderJobResult[]>;

/** Inline rendering, for processes whose event loop answers no one but the engine (workers). */
export const renderInline: Renderer = async (jobs) => renderJobs(jobs);

/**
 * The unsubscribe link of a message rendered to be looked at (a check, a preview, a test copy): it unsubscribes no one.
 * A real link would unsubscribe the contact whose data filled the message, whoever clicks it.
 */
export const INERT_UNSUBSCRIBE_URL = 'https://example.invalid/unsubscribe';

/** A recipient with no data of its own (no contact): checks, and previews and tests without a chosen contact. */
export const sampleRecipient = (email = 'recipient@example.com') => ({ id: '00000000-0000-0000-0000-000000000000', email, subscribed: true, data: {} });

/** What a request that passed a render budget is told (a syntax error needs no pointer). */
export const RENDER_LIMITS_HINT = 'Templates render within a budget per request: see "Rendering limits" in docs/api.md.';

/** A recipient with no data, for checking a template before anyone receives it: what the template costs by itself. */
const SAMPLE_SCOPE = messageScope({}, sampleRecipient(), INERT_UNSUBSCRIBE_URL);

export type TemplateProblem = Extract<RenderJobResult, { failed: unknown }>['failed'];

/**
 * A template checked where it is written (templates, campaigns, campaign tests): it parses, and it renders within the
 * budgets, for `scopes` or a recipient with no data. Undefined when it is fine; otherwise the part at fault and why.
 */
export async function checkTemplate(render: Renderer, subject: string, body: string, scopes: RenderScope[] = [SAMPLE_SCOPE], markdown = false): Promise<TemplateProblem | undefined> {
  const [outcome] = await render([{ subject, body, scopes, ...(markdown ? { markdown } : {}) }]);
  return 'failed' in outcome! ? outcome.failed : undefined;
}
