import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { badRequest } from '../errors';

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * JSON bodies only. A body in another content type is a 400 (not silently ignored); malformed JSON is a 400
 * and a body over `limit` a 413, both raised by the parser and rendered by the error middleware.
 */
export function jsonBody(limit = '1mb'): Middleware {
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: limit, jsonStrict: true, parsedMethods: [...WITH_BODY] });
  return async (ctx, next) => {
    if (WITH_BODY.has(ctx.method) && ctx.request.length !== 0 && (ctx.request.length || ctx.get('transfer-encoding'))) {
      if (!ctx.is('application/json', '+json')) {
        throw badRequest(`Unsupported Content-Type "${ctx.get('content-type') || 'none'}": request bodies must be JSON`, undefined,
          'Send the header "Content-Type: application/json".');
      }
    }
    await parse(ctx, next);
  };
}
