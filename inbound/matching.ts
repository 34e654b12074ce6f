/**
 * How a recipient finds its inbound route (pure: the listener and the API's validation share it).
 *
 * A route's match is written as an address:
 * - `support@in.example.com`: that address only (the local part compared without regard to case);
 * - `reply+*@in.example.com`: the local part `reply` with any `+tag` (and `reply` itself); the tag is handed on;
 * - `*@in.example.com`: any address at the domain.
 * A domain's routes are tried in priority order (lower first, then the oldest); the first that matches decides.
 */

export type MatchKind = 'address' | 'tag' | 'domain';

export interface RouteMatch {
  kind: MatchKind;
  /** Lower case; null for `domain`. */
  localPart: string | null;
  domain: string;
}

/** RFC 5322 dot-atom text of a local part (no quoted strings: they have no place in a route). */
const LOCAL = /^[a-z0-9!#$%&'*/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*/=?^_`{|}~-]+)*$/;

/** A route's match as written (see above), or a reason why it is not one. */
export function parseMatch(text: string): RouteMatch | { error: string } {
  const value = text.trim().toLowerCase();
  const at = value.lastIndexOf('@');
  if (at <= 0 || at === value.length - 1) return { error: 'must be an address, local+*@domain or *@domain' };
  const local = value.slice(0, at);
  const domain = value.slice(at + 1).replace(/\.$/, '');
  if (local === '*') return { kind: 'domain', localPart: null, domain };
  if (local.endsWith('+*')) {
    const base = local.slice(0, -2);
    if (!LOCAL.test(base) || base.includes('+') || base.length > 64) return { error: 'the local part before +* must be a plain local part, e.g. reply+*@in.example.com' };
    return { kind: 'tag', localPart: base, domain };
  }
  if (!LOCAL.test(local) || local.length > 64 || local.includes('*')) return { error: 'the local part must be a plain local part (letters, digits, . - _ + and the like), or * for any' };
  return { kind: 'address', localPart: local, domain };
}

/** The match as the API writes it back. */
export function matchText(m: Pick<RouteMatch, 'kind' | 'localPart'>, domain: string): string {
  if (m.kind === 'domain') return `*@${domain}`;
  return m.kind === 'tag' ? `${m.localPart}+*@${domain}` : `${m.localPart}@${domain}`;
}

/** A recipient split for matching: its local part in lower case and its domain; undefined for no address. */
export function splitRecipient(address: string): { local: string; domain: string } | undefined {
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return undefined;
  return { local: address.slice(0, at).toLowerCase(), domain: address.slice(at + 1).toLowerCase().replace(/\.$/, '') };
}

/** Whether a route of the recipient's domain takes it; for a tag route, the tag (null when the address has none). */
export function matches(route: Pick<RouteMatch, 'kind' | 'localPart'>, local: string): { tag: string | null } | undefined {
  if (route.kind === 'domain') return { tag: null };
  if (route.kind === 'address') return local === route.localPart ? { tag: null } : undefined;
  if (local === route.localPart) return { tag: null };
  return local.startsWith(`${route.localPart}+`) ? { tag: local.slice(route.localPart!.length + 1) } : undefined;
}

/** The first route (in the order given: priority, then age) that takes the local part. */
export function firstMatch<R extends Pick<RouteMatch, 'kind' | 'localPart'>>(routes: readonly R[], local: string): { route: R; tag: string | null } | undefined {
  for (const route of routes) {
    const m = matches(route, local);
    if (m) return { route, tag: m.tag };
  }
  return undefined;
}

/**
 * A reject route's text as it goes on the SMTP reply line: printable ASCII only (a CR or LF would start a reply line
 * of the client's choosing), at most 200 characters.
 */
export function replyText(text: string): string {
  return text.replace(/[^\x20-\x7e]+/g, ' ').trim().slice(0, 200) || 'Rejected';
}
