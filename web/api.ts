/**
 * The console's way to the API: the typed client (openapi-fetch over client/schema.d.ts, as in client/), signed in
 * with the session cookie (same origin) and naming the current project in `Herald-Project`. No private endpoints: every
 * call here is one a script can make with a key.
 *
 *   const page = await call(api.GET('/emails', { params: { query: { limit: 50 } } }));   // the answer's `data`
 *
 * `call` unwraps the success envelope and, on an error envelope: sends a 401 to the sign-in page, and otherwise shows
 * a toast and throws an `ApiFailure`. Forms pass `{ form: true }`: no toast, the failure carries the field errors
 * (`fields.email` …) for the form to show under its fields.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from '../client/schema';
import { navigate } from './navigation';
import { toast } from './components/Toasts';

export type Schemas = components['schemas'];
type ErrorEnvelope = Schemas['Error'];

let project: string | null = null;
/** The project the API calls act on (web/session.tsx sets it from the switcher). */
export function setApiProject(id: string | null): void { project = id; }
export const currentProjectId = (): string | null => project;

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });
api.use({
  onRequest({ request }) {
    if (project && !request.headers.has('Herald-Project')) request.headers.set('Herald-Project', project);
    return request;
  },
  async onResponse({ request, response }) {
    // A read that ran beside its admission while the member's role changed (api/middleware/auth.ts readAhead) is
    // answered ACCESS_CHANGED: it is sent once more, with the role now known.
    if (response.status !== 409 || request.method !== 'GET') return response;
    const code = await response.clone().json().then((b: ErrorEnvelope) => b?.error?.code, () => undefined);
    return code === 'ACCESS_CHANGED' ? fetch(request.url, { headers: request.headers, credentials: 'same-origin' }) : response;
  },
});

/** An API call that failed: its status, the envelope's code and message, its field errors, and Retry-After. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The first message per field of a 4xx (`{ email: 'email must be a valid email address' }`). */
    readonly fields: Record<string, string>,
    readonly suggestion?: string,
    /** Seconds, from a 429's Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** The sign-in pages: a 401 there is an answer to show, not a reason to go to them. */
const AUTH_PAGES = /^\/app\/(login|setup|invitation|reset|forgot)(\/|$)/;

export interface CallOptions {
  /** A form shows the failure itself (field errors under the fields): no toast. */
  form?: boolean;
  /** Statuses the caller handles itself (no toast, no redirect), e.g. 404 on a detail page. */
  expect?: number[];
}

interface Answer<T> { data?: T; error?: unknown; response: Response }

export async function call<T>(request: Promise<Answer<T>>, opts: CallOptions = {}): Promise<T extends { data: infer D } ? D : T> {
  let answer: Answer<T>;
  try {
    answer = await request;
  } catch {
    const failure = new ApiFailure(0, 'NETWORK', 'Herald did not answer: check your connection and try again.', {});
    if (!opts.form) toast.error(failure.message);
    throw failure;
  }
  const { response } = answer;
  if (response.ok) {
    const body = answer.data as { data?: unknown } | undefined;
    return (body && typeof body === 'object' && 'data' in body ? body.data : body) as T extends { data: infer D } ? D : T;
  }
  const failure = toFailure(response, answer.error as ErrorEnvelope | undefined);
  if (opts.expect?.includes(response.status)) throw failure;
  if (response.status === 401 && !AUTH_PAGES.test(location.pathname)) {
    navigate(`/app/login?next=${encodeURIComponent(location.pathname + location.search)}`);
    throw failure;
  }
  if (!opts.form) toast.error(failure.suggestion ? `${failure.message}. ${failure.suggestion}` : failure.message);
  throw failure;
}

function toFailure(response: Response, envelope: ErrorEnvelope | undefined): ApiFailure {
  const error = envelope?.error;
  const fields: Record<string, string> = {};
  for (const e of error?.errors ?? []) {
    if (e.field !== undefined && e.message && !(e.field in fields)) fields[e.field] = e.message;
  }
  const retry = Number(response.headers.get('Retry-After'));
  return new ApiFailure(response.status, error?.code ?? `HTTP_${response.status}`, error?.message ?? `Herald answered ${response.status}`,
    fields, error?.suggestion, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}

/**
 * A file the API answers (an export, a raw message), fetched with the session and the project like any call and saved
 * under the name its Content-Disposition gives (else `fallback`). The console cannot send `Herald-Project` with a plain
 * link, so the file passes through a Blob (the browser keeps a large one on disk, not in the page's memory). A failure
 * is an ApiFailure, shown as `call` shows it.
 *
 *   await download(api.GET('/contacts/{id}/export', { params: { path: { id } }, parseAs: 'blob' }), `contact-${id}.json`);
 */
export async function download(request: Promise<Answer<unknown>>, fallback: string, opts: CallOptions = {}): Promise<string> {
  let response: Response | undefined;
  const blob = await call(request.then((answer) => { response = answer.response; return answer; }), opts) as unknown as Blob;
  const named = /filename="([^"]+)"/.exec(response?.headers.get('Content-Disposition') ?? '')?.[1];
  const filename = named ?? fallback;
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.click();
  // Revoked once the browser has taken the file (the click starts the download; it does not wait for it).
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return filename;
}
