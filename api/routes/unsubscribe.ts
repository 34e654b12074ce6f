import { token } from '../openapi/operations';
import { rawRoute } from '../route';

const page = (title: string, text: string, form?: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.6rem 1.2rem}</style>
</head><body><h1>${title}</h1><p>${text}</p>${form ?? ''}</body></html>`;

/**
 * Unsubscribe links (no API key: the signed token is the authority; audience/subscription.ts). GET shows a
 * confirmation page, so that link scanners which follow every URL do not unsubscribe anyone; POST unsubscribes, and
 * is also the RFC 8058 one-click target of List-Unsubscribe-Post (no JSON body). Both answer the same for an already
 * unsubscribed contact.
 */
export const unsubscribeRoutes = [
  rawRoute({ operationId: 'unsubscribePage', method: 'get', path: '/unsubscribe/:token', summary: 'Unsubscribe confirmation page', tag: 'Recipients', access: 'open',
    params: { token }, description: 'Shows a confirmation form; following the link alone unsubscribes no one (link scanners).',
    answers: { 200: { description: 'The confirmation page.', media: 'html' }, 404: { description: 'The link is not valid.', media: 'html' } },
    async serve(ctx, { unsubscribes }) {
      ctx.type = 'html';
      ctx.set('Cache-Control', 'no-store');
      if (!(await unsubscribes.target(ctx.params.token!))) {
        ctx.status = 404;
        ctx.body = page('Link not valid', 'This unsubscribe link is not valid. It may have been copied incompletely.');
        return;
      }
      ctx.body = page('Unsubscribe', 'Stop receiving marketing email from this sender?',
        `<form method="post"><button type="submit">Unsubscribe</button></form>`);
    } }),

  rawRoute({ operationId: 'unsubscribe', method: 'post', path: '/unsubscribe/:token', summary: 'Unsubscribe (also the RFC 8058 one-click target)', tag: 'Recipients', access: 'open',
    params: { token }, answers: { 200: { description: 'Unsubscribed (also when already).', media: 'html' }, 404: { description: 'The link is not valid.', media: 'html' } },
    async serve(ctx, { unsubscribes }) {
      ctx.set('Cache-Control', 'no-store');
      const found = await unsubscribes.unsubscribe(ctx.params.token!);
      ctx.type = 'html';
      ctx.status = found ? 200 : 404;
      ctx.body = found
        ? page('You are unsubscribed', 'You will no longer receive marketing email from this sender.')
        : page('Link not valid', 'This unsubscribe link is not valid.');
    } }),
];
