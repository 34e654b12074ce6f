/**
 * Whether a console route's path (`/app/emails/:id`, a `:name` segment matching any non-empty one) matches a requested
 * path, a trailing slash aside: the console's router table (web/pages/index.tsx) and Herald's server of the console
 * (api/console.ts, which preloads the page's chunks) decide alike.
 */
export function routeMatches(pattern: string, requested: string): boolean {
  const want = pattern.split('/');
  const have = requested.replace(/(.)\/+$/, '$1').split('/');
  return want.length === have.length && want.every((seg, i) => (seg.startsWith(':') ? have[i] !== '' : seg === have[i]));
}
