import type Router from '@koa/router';
import type { Tracker } from '../../tracking/tracker';

/** A transparent 1x1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * Open and click tracking (no API key: the signed token authorises; tracking/). GET /t/o/:token answers the pixel,
 * GET /t/c/:token redirects to the link the token names; any query string is ignored. A HEAD (a link scanner
 * looking) answers the same and records nothing. Never cached, so that every
 * open reaches us; a bad token is a 404 in the error envelope.
 */
export function trackingRoutes(router: Router, tracker: Tracker): void {
  router.get('/t/o/:token', async (ctx) => {
    ctx.set('Cache-Control', 'no-store, max-age=0');
    if (ctx.method === 'HEAD') tracker.peek('open', ctx.params.token!);
    else await tracker.open(ctx.params.token!, ctx.get('user-agent'));
    ctx.type = 'image/gif';
    ctx.body = PIXEL;
  });

  router.get('/t/c/:token', async (ctx) => {
    ctx.set('Cache-Control', 'no-store, max-age=0');
    const url = ctx.method === 'HEAD' ? tracker.peek('click', ctx.params.token!)! : await tracker.click(ctx.params.token!, ctx.get('user-agent'));
    ctx.status = 302;
    ctx.set('Location', new URL(url).href); // ASCII only in a header: the host in punycode, the rest percent-encoded
    ctx.body = '';
  });
}
