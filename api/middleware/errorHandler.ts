import type { Middleware } from 'koa';
import { DomainError, type DomainErrorKind } from '../../core/errors';
import { isDataError, sqlState } from '../../db/errors';
import type { Logger } from '../../logging/logger';
import { ApiError, type FieldError } from '../errors';

/** Codes for the HTTP errors that Koa, the router and the body parser raise themselves. */
const HTTP_CODES: Record<number, { code: string; message?: string; suggestion?: string }> = {
  400: { code: 'BAD_REQUEST' },
  401: { code: 'UNAUTHORIZED' },
  403: { code: 'FORBIDDEN' },
  404: { code: 'NOT_FOUND' },
  405: { code: 'METHOD_NOT_ALLOWED' },
  413: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is too large', suggestion: 'Send a smaller body.' },
  415: { code: 'UNSUPPORTED_MEDIA_TYPE' },
  429: { code: 'RATE_LIMITED' },
};


/**
 * A request's path as the logs show it: the signed tokens of tracking and unsubscribe links redacted. A click token
 * decodes to the link's target (a password-reset link, say) and every token is a recipient's credential, so nothing
 * after `/t/o/`, `/t/c/` or `/unsubscribe/` is written (matched as the router matches: any case, repeated slashes).
 * Query strings (where a `token` parameter could be) are never logged at all.
 */
const TOKEN_PATH = /^(\/+(?:t\/+[oc]|unsubscribe)\/+)[^?#]*/i;
export function redactPath(path: string): string {
  return path.replace(TOKEN_PATH, (_m, prefix: string) => `${prefix}[redacted]`);
}

/**
 * Both error shapes of the spec at once. The envelope (`success`, `error{…}`, `timestamp`) is whole; of the second
 * shape (`{code: integer, error: string, message: string, time: integer}`, which Plunk's clients read) the top-level
 * `code` (the HTTP status), `message` (= `error.message`) and `time` (epoch ms, the same instant as `timestamp`) are
 * added. Its `error` string cannot sit beside the envelope's `error` object: the envelope keeps that key.
 */
/** The business's refusals (core/errors.ts) as HTTP answers. */
const DOMAIN_STATUS: Record<DomainErrorKind, { status: number; code: string }> = {
  invalid: { status: 422, code: 'VALIDATION_ERROR' },
  not_found: { status: 404, code: 'NOT_FOUND' },
  conflict: { status: 409, code: 'CONFLICT' },
  forbidden: { status: 403, code: 'FORBIDDEN' },
  too_large: { status: 413, code: 'PAYLOAD_TOO_LARGE' },
  unsupported_media: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
};

export interface ErrorBody {
  success: false;
  error: { code: string; message: string; statusCode: number; requestId: string; errors?: FieldError[]; suggestion?: string };
  timestamp: string;
  code: number;
  message: string;
  time: number;
}

function render(ctx: Parameters<Middleware>[0], status: number, code: string, message: string, extra: { errors?: FieldError[]; suggestion?: string } = {}) {
  const now = new Date();
  const body: ErrorBody = {
    success: false,
    error: {
      code,
      message,
      statusCode: status,
      requestId: ctx.state.requestId as string,
      ...(extra.errors ? { errors: extra.errors } : {}),
      ...(extra.suggestion ? { suggestion: extra.suggestion } : {}),
    },
    timestamp: now.toISOString(),
    code: status,
    message,
    time: now.getTime(),
  };
  ctx.status = status;
  ctx.body = body;
}

/**
 * The one place where failures become responses, always in the spec's envelope (with the second shape's `code`,
 * `message` and `time` beside it: ErrorBody). Also turns "no route
 * matched" into a 404 in the same envelope, and logs each request once (never its body, headers or query string; tokens in the path redacted: redactPath).
 */
/** The public routes, asked for without their /v1 (/send, /track/, /verify). */
const PUBLIC_WITHOUT_V1 = /^\/(send|track|verify)\/?$/;

export function errorHandler(log: Logger): Middleware {
  // The line of every request, without the logger's redaction (logging/logger.ts): its fields are the ones written
  // below, none of them a secret, and the redaction's walk of each line took 24 µs of the 30 µs a line costs (2-3 % of
  // a POST /v1/send's CPU, BENCHMARKS.md section 50).
  const requestLog = log.child({}, { redact: { paths: [] } });
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
      // The router answers "no route" with a bare status; give it the envelope like every other error.
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) {
          const publicPath = PUBLIC_WITHOUT_V1.exec(ctx.path)?.[1];
          if (publicPath) {
            // A newcomer's first mistake (issue 27, point 6): the public routes live under /v1.
            render(ctx, 404, 'NOT_FOUND', `No route for ${ctx.method} ${ctx.path}: the public API is under /v1, as in POST /v1/${publicPath}`, { suggestion: `Use POST /v1/${publicPath}.` });
          } else {
            render(ctx, 404, 'NOT_FOUND', `No route for ${ctx.method} ${ctx.path}`, { suggestion: 'Check the method and path against the API reference.' });
          }
        } else if (ctx.status === 405 || ctx.status === 501) {
          const allow = ctx.response.get('Allow');
          render(ctx, 405, 'METHOD_NOT_ALLOWED', `Method ${ctx.method} is not allowed on ${ctx.path}`, { suggestion: allow ? `Allowed methods: ${allow}.` : undefined });
        }
      }
    } catch (err) {
      if (err instanceof ApiError) {
        for (const [k, v] of Object.entries(err.details.headers ?? {})) ctx.set(k, v);
        render(ctx, err.status, err.code, err.message, err.details);
      } else if (err instanceof DomainError) {
        const { status, code } = DOMAIN_STATUS[err.kind];
        render(ctx, status, code, err.message, err.details);
      } else if (sqlState(err) === '23503') {
        // A row this request refers to was deleted by a request that committed meanwhile (the routes check what they
        // refer to, but a delete can land between the check and the write): the client's race, to retry, not a 500.
        log.warn({ requestId: ctx.state.requestId, method: ctx.method, path: redactPath(ctx.path), sqlState: '23503', constraint: (err as { constraint?: string }).constraint },
          'a row the request refers to was deleted meanwhile');
        render(ctx, 409, 'CONFLICT', 'Something this request refers to was deleted while it was being handled', {
          suggestion: 'Check that what the request names still exists, then retry.',
        });
      } else if (isDataError(err)) {
        // PostgreSQL refused a value (db/errors.ts). The edge validation (api/schemas/common.ts) is meant to refuse such
        // values first; one that still reaches the database is the client's value all the same: a 422, never a 500.
        // Neither the SQL nor the value is shown or logged: the SQLSTATE and where it arose are enough to find the gap.
        const e = err as { table?: string; column?: string; dataType?: string; routine?: string };
        log.warn({ requestId: ctx.state.requestId, method: ctx.method, path: redactPath(ctx.path), sqlState: sqlState(err), table: e.table, column: e.column, dataType: e.dataType, routine: e.routine },
          'a request value was refused by the database');
        render(ctx, 422, 'VALIDATION_ERROR', 'A value in the request cannot be stored: it is malformed or out of range', {
          suggestion: 'Check the values against the API reference; the requestId finds the details in the logs.',
        });
      } else {
        const e = err as { status?: number; statusCode?: number; expose?: boolean; message?: string; headers?: Record<string, string>; type?: string };
        const status = e.status ?? e.statusCode;
        if (status && status >= 400 && status < 500 && HTTP_CODES[status]) {
          const known = HTTP_CODES[status]!;
          for (const [k, v] of Object.entries(e.headers ?? {})) ctx.set(k, v);
          const malformed = e.type === 'entity.parse.failed' || (err instanceof SyntaxError && status === 400);
          const message = malformed ? 'Malformed JSON in request body' : (known.message ?? (e.expose && e.message ? e.message : known.code));
          render(ctx, status, known.code, message, { suggestion: known.suggestion });
        } else {
          log.error({ err, requestId: ctx.state.requestId, method: ctx.method, path: redactPath(ctx.path) }, 'unhandled error');
          render(ctx, 500, 'INTERNAL_ERROR', 'An unexpected error occurred', {
            suggestion: 'Retry later; if it persists, report the requestId to the operator.',
          });
        }
      }
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      requestLog.info({ requestId: ctx.state.requestId, method: ctx.method, path: redactPath(ctx.path), status: ctx.status, ms: Math.round(ms * 10) / 10, projectId: ctx.state.auth?.projectId }, 'request');
    }
  };
}
