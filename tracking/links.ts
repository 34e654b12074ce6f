import { signToken, verifyToken } from '../mail/tokens';

/**
 * The open pixel and the click redirect of a tracked email. Their tokens are signed (mail/tokens.ts, with the
 * installation secret) and name the project, the email and, for a click, the link's target itself: the redirect goes
 * only where the signed token says, never where a query string or anything else in the request says, so no open
 * redirect is possible, and a click needs no lookup of the link. Ids are stored as their 16 bytes, which keeps a
 * token 60 characters plus the link.
 */
export interface OpenTarget {
  projectId: string;
  emailId: string;
}

export interface ClickTarget extends OpenTarget {
  url: string;
}

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (b: Buffer) => {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};

export function openToken(secret: Buffer, t: OpenTarget): string {
  return signToken(secret, 'open', Buffer.concat([uuidBytes(t.projectId), uuidBytes(t.emailId)]));
}

export function clickToken(secret: Buffer, t: ClickTarget): string {
  return signToken(secret, 'click', Buffer.concat([uuidBytes(t.projectId), uuidBytes(t.emailId), Buffer.from(t.url, 'utf8')]));
}

export function verifyOpenToken(secret: Buffer, token: string): OpenTarget | null {
  const p = verifyToken(secret, 'open', token);
  if (!p || p.length !== 32) return null;
  return { projectId: uuidOf(p.subarray(0, 16)), emailId: uuidOf(p.subarray(16, 32)) };
}

export function verifyClickToken(secret: Buffer, token: string): ClickTarget | null {
  const p = verifyToken(secret, 'click', token);
  if (!p || p.length <= 32) return null;
  const url = p.subarray(32).toString('utf8');
  return isTrackableUrl(url) ? { projectId: uuidOf(p.subarray(0, 16)), emailId: uuidOf(p.subarray(16, 32)), url } : null;
}

/** Only absolute http(s) links are rewritten (and followed): never mailto:, tel:, anchors or relative links. */
export function isTrackableUrl(url: string): boolean {
  if (!/^https?:\/\//i.test(url) || /[\s\0]/.test(url)) return false;
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}

const base = (publicUrl: string) => publicUrl.replace(/\/+$/, '');

export const openUrl = (publicUrl: string, secret: Buffer, t: OpenTarget) => `${base(publicUrl)}/t/o/${openToken(secret, t)}`;
export const clickUrl = (publicUrl: string, secret: Buffer, t: ClickTarget) => `${base(publicUrl)}/t/c/${clickToken(secret, t)}`;

export interface TrackingOptions {
  opens: boolean;
  clicks: boolean;
  publicUrl: string;
  secret: Buffer;
  projectId: string;
  emailId: string;
}

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };
/** An attribute's value as a browser reads it: the named entities above and numeric references decoded. */
function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

// An <a …> start tag and its href attribute, quoted either way or unquoted.
const ANCHOR_HREF = /(<a\b[^>]*?\shref\s*=\s*)("([^"]*)"|'([^']*)'|([^\s"'>]+))/gi;

/**
 * The HTML of a tracked email as it is delivered: its http(s) links go through the click redirect and an open pixel
 * closes the body. The unsubscribe link (any link to this installation's /unsubscribe/) is never rewritten, and the
 * List-Unsubscribe header is not part of the HTML at all.
 */
export function addTracking(html: string, o: TrackingOptions): string {
  if (!o.opens && !o.clicks) return html;
  let out = html;
  if (o.clicks) {
    const unsubscribe = `${base(o.publicUrl)}/unsubscribe/`;
    out = out.replace(ANCHOR_HREF, (whole, start: string, _v, dq?: string, sq?: string, bare?: string) => {
      const url = decodeAttribute((dq ?? sq ?? bare ?? '').trim());
      if (!isTrackableUrl(url) || url.startsWith(unsubscribe)) return whole;
      return `${start}"${clickUrl(o.publicUrl, o.secret, { projectId: o.projectId, emailId: o.emailId, url })}"`;
    });
  }
  if (o.opens) {
    const pixel = `<img src="${openUrl(o.publicUrl, o.secret, { projectId: o.projectId, emailId: o.emailId })}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
    const end = out.search(/<\/body\s*>(?![\s\S]*<\/body\s*>)/i);
    out = end >= 0 ? `${out.slice(0, end)}${pixel}${out.slice(end)}` : `${out}${pixel}`;
  }
  return out;
}
