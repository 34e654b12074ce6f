import { token } from '../openapi/operations';
import { rawRoute } from '../route';

/** A transparent 1x1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * Open and click tracking (no API key: the signed token authorises; tracking/). GET /t/o/:token answers the pixel,
 * GET /t/c/:token redirects to the link the token names; any query string is ignored. A HEAD (a link scanner
 * looking) answers the same and records nothing. Never cached, so that every
 * open reaches us; a bad token is a 404 in the error envelope. The remote address (the socket's: the app trusts no
 * forwarding header) is what the tracker throttles by.
 */
export const opensAndClicksRoutes = [
  rawRoute({ operationId: 'trackOpen', method: 'get', path: '/t/o/:token', summary: 'Open pixel of tracked mail', tag: 'Recipients', access: 'open',
    params: { token }, answers: { 200: { description: 'A transparent 1×1 GIF (never cached); the open is recorded.', media: 'gif' } }, errors: [404],
    async serve(ctx, { opensAndClicks }) {
      ctx.set('Cache-Control', 'no-store, max-age=0');
      if (ctx.method === 'HEAD') opensAndClicks.peek('open', ctx.params.token!);
      else await opensAndClicks.open(ctx.params.token!, ctx.get('user-agent'), ctx.ip);
      ctx.type = 'image/gif';
      ctx.body = PIXEL;
    } }),

  rawRoute({ operationId: 'trackClick', method: 'get', path: '/t/c/:token', summary: 'Click redirect of tracked mail', tag: 'Recipients', access: 'open',
    params: { token }, answers: { 302: { description: 'To the link the token names; the click is recorded.', media: 'none', headers: { Location: 'The link.' } } }, errors: [404],
    async serve(ctx, { opensAndClicks }) {
      ctx.set('Cache-Control', 'no-store, max-age=0');
      const url = ctx.method === 'HEAD' ? opensAndClicks.peek('click', ctx.params.token!)! : await opensAndClicks.click(ctx.params.token!, ctx.get('user-agent'), ctx.ip);
      ctx.status = 302;
      ctx.set('Location', new URL(url).href); // ASCII only in a header: the host in punycode, the rest percent-encoded
      ctx.body = '';
    } }),
];
