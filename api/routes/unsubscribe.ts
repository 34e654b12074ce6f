import type Router from '@koa/router';
import type { Knex } from 'knex';
import { unsubscribeByLink, unsubscribeLinkTarget } from '../../audience/subscription';

const page = (title: string, text: string, form?: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.6rem 1.2rem}</style>
</head><body><h1>${title}</h1><p>${text}</p>${form ?? ''}</body></html>`;

/**
 * Unsubscribe links (no API key: the signed token is the authority). GET shows a confirmation page, so that link
 * scanners which follow every URL do not unsubscribe anyone; POST unsubscribes, and is also the RFC 8058
 * one-click target of List-Unsubscribe-Post. Both answer the same for an already unsubscribed contact.
 */
export function unsubscribeRoutes(router: Router, knex: Knex, secret: Buffer): void {
  router.get('/unsubscribe/:token', async (ctx) => {
    ctx.type = 'html';
    ctx.set('Cache-Control', 'no-store');
    if (!(await unsubscribeLinkTarget(knex, secret, ctx.params.token!))) {
      ctx.status = 404;
      ctx.body = page('Link not valid', 'This unsubscribe link is not valid. It may have been copied incompletely.');
      return;
    }
    ctx.body = page('Unsubscribe', 'Stop receiving marketing email from this sender?',
      `<form method="post"><button type="submit">Unsubscribe</button></form>`);
  });

  router.post('/unsubscribe/:token', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const found = await unsubscribeByLink(knex, secret, ctx.params.token!);
    ctx.type = 'html';
    ctx.status = found ? 200 : 404;
    ctx.body = found
      ? page('You are unsubscribed', 'You will no longer receive marketing email from this sender.')
      : page('Link not valid', 'This unsubscribe link is not valid.');
  });
}
