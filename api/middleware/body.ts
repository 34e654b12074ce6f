import { bodyParser } from '@koa/bodyparser';
import type { Context, Middleware } from 'koa';
import { ApiError, badRequest } from '../errors';

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The content codings the parser (co-body, through inflation) can decode. */
const ENCODINGS = new Set(['identity', 'gzip', 'deflate', 'br']);

/**
 * A failure of the parser as the client's error. co-body marks a JSON.parse failure 400 whatever it threw (a
 * RangeError included), and a decompressor's failure (zlib's Z_DATA_ERROR, brotli's errors: no HTTP status, a
 * numeric errno) means the body is not in the encoding it claims. Other failures (413, raw-body's own 400s) pass
 * to the error middleware as they are.
 */
function parseFailure(err: unknown, encoding: string): unknown {
  const e = err as { status?: number; errno?: unknown };
  if (e.status === 400 && (err instanceof SyntaxError || err instanceof RangeError)) return badRequest('Malformed JSON in request body');
  if (encoding !== 'identity' && e.status === undefined && typeof e.errno === 'number') {
    return badRequest(`The request body could not be decoded as Content-Encoding ${encoding}`, undefined,
      'Send the body encoded as its Content-Encoding header says, or uncompressed without the header.');
  }
  return err;
}

/**
 * The body's content coding, checked before the parser reads a byte. Names are case-insensitive (RFC 9110 §8.4.1),
 * so the header is lower-cased for the parser, which compares them exactly. An unknown or stacked coding is a 415.
 */
function contentEncoding(ctx: Context): string {
  const encoding = (ctx.get('content-encoding') || 'identity').trim().toLowerCase();
  if (!ENCODINGS.has(encoding)) {
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Encoding: request bodies may be sent as identity, gzip, deflate or br', {
      suggestion: 'Send the body uncompressed (no Content-Encoding header) or with one of gzip, deflate or br.',
    });
  }
  if (ctx.req.headers['content-encoding'] !== undefined) ctx.req.headers['content-encoding'] = encoding;
  return encoding;
}

/**
 * JSON bodies only. A body in another content type is a 400 (not silently ignored); malformed JSON or a body that
 * does not decode is a 400, an unknown Content-Encoding a 415, and a body over `limit` (decoded) a 413.
 */
export function jsonBody(limit = '1mb'): Middleware {
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: limit, jsonStrict: true, parsedMethods: [...WITH_BODY] });
  return async (ctx, next) => {
    if (!WITH_BODY.has(ctx.method)) return next();
    if (ctx.request.length !== 0 && (ctx.request.length || ctx.get('transfer-encoding'))) {
      if (!ctx.is('application/json', '+json')) {
        throw badRequest(`Unsupported Content-Type "${ctx.get('content-type') || 'none'}": request bodies must be JSON`, undefined,
          'Send the header "Content-Type: application/json".');
      }
    }
    const encoding = contentEncoding(ctx);
    // The parser calls its `next` once the body is parsed; the routes run after it, outside this catch.
    try {
      await parse(ctx, async () => undefined);
    } catch (err) {
      throw parseFailure(err, encoding);
    }
    await next();
  };
}
