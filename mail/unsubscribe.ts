import { signToken, verifyToken } from './tokens';

/**
 * Unsubscribe tokens: `<base64url(projectId:contactId)>.<HMAC-SHA256 tag>`, signed with SECRET_KEY (mail/tokens.ts). A
 * token names exactly one contact of one project; it cannot be forged or altered to name another without the key.
 */
export interface UnsubscribeTarget {
  projectId: string;
  contactId: string;
  /** The email the link was in, when known: the unsubscribe is then attributed to it (campaign stats). */
  emailId?: string;
}

export function unsubscribeToken(secret: Buffer, target: UnsubscribeTarget): string {
  return signToken(secret, 'unsubscribe', Buffer.from([target.projectId, target.contactId, ...(target.emailId ? [target.emailId] : [])].join(':')));
}

export function verifyUnsubscribeToken(secret: Buffer, token: string): UnsubscribeTarget | null {
  const payload = verifyToken(secret, 'unsubscribe', token);
  if (!payload) return null;
  const [projectId, contactId, emailId, more] = payload.toString('utf8').split(':');
  if (!projectId || !contactId || more !== undefined) return null;
  return emailId ? { projectId, contactId, emailId } : { projectId, contactId };
}

export function unsubscribeUrl(publicUrl: string, secret: Buffer, target: UnsubscribeTarget): string {
  return `${publicUrl.replace(/\/+$/, '')}/unsubscribe/${unsubscribeToken(secret, target)}`;
}

/** The bulk-mail headers of marketing mail: RFC 2369 List-Unsubscribe, RFC 8058 one-click, Precedence: bulk. */
export function bulkMailHeaders(unsubscribeUrl: string | null): Record<string, string> {
  return {
    Precedence: 'bulk',
    ...(unsubscribeUrl ? { 'List-Unsubscribe': `<${unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {}),
  };
}
