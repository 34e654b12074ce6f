import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

// An incoming id is reused only when it is a sane token, so a client cannot inject log lines or huge headers.
const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives every request an id (`ctx.state.requestId`), returned in `X-Request-Id` on every response, errors included. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = SANE.test(incoming) ? incoming : `req_${randomUUID().replace(/-/g, '')}`;
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}
