import { isbot } from 'isbot';

/**
 * Who fetched a pixel or followed a link: a person's mail client, or a mail proxy or scanner that fetches on its own
 * (privacy proxies prefetch every image; security scanners follow every link). Those are recorded, flagged, and kept
 * out of unique opens and clicks.
 * - Apple Mail Privacy Protection fetches with a bare WebKit user agent: no Safari or Version token after
 *   "(KHTML, like Gecko)".
 * - Gmail's image proxy says `GoogleImageProxy`; Yahoo's `YahooMailProxy`.
 * - Anything `isbot` (its maintained list of crawlers, scanners and HTTP libraries) knows, and no user agent at all.
 */
export interface Agent {
  bot: boolean;
  proxy?: 'apple' | 'gmail' | 'yahoo';
}

const APPLE_PROXY = /^Mozilla\/5\.0 \(Macintosh; Intel Mac OS X [\d_]+\) AppleWebKit\/[\d.]+ \(KHTML, like Gecko\)$/;

export function classifyAgent(userAgent: string | undefined): Agent {
  const ua = (userAgent ?? '').trim();
  if (ua === '') return { bot: true };
  if (ua.includes('GoogleImageProxy')) return { bot: true, proxy: 'gmail' };
  if (ua.includes('YahooMailProxy')) return { bot: true, proxy: 'yahoo' };
  if (APPLE_PROXY.test(ua)) return { bot: true, proxy: 'apple' };
  return { bot: isbot(ua) };
}
