/**
 * Navigation outside components (the API wrapper's 401): the router's `route` once the app has mounted, a full load
 * before that.
 */
let routeTo: ((url: string, replace?: boolean) => void) | undefined;

export function setNavigator(route: (url: string, replace?: boolean) => void): void { routeTo = route; }

export function navigate(url: string, replace = false): void {
  if (routeTo) routeTo(url, replace);
  else location.assign(url);
}

/** A `next` target after sign-in: only a console path (never another site). */
export function safeNext(next: string | undefined): string {
  return next && /^\/app(\/|$|\?)/.test(next) && !next.startsWith('//') ? next : '/app';
}

/** The `token` of a link's fragment (`#token=…`, people/links.ts), removed from the address bar once read. */
export function takeFragmentToken(): string {
  const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
  if (location.hash) history.replaceState(history.state, '', location.pathname + location.search);
  return token;
}
