import type { Knex } from 'knex';
import { emailOfToken, emailToken } from '../bounces/token';

/**
 * Reply addresses Herald can recognise (issue 31): an email sent with a Reply-To written `name+*@domain` (usually at an
 * inbound domain with a `name+*@domain` route) goes out with `name+<token>@domain`, the token naming the email and
 * signed with the installation's secret (bounces/token.ts, purpose `reply`). A reply to that address names its email
 * whatever the replier's client did to In-Reply-To and References; a token Herald did not sign names nothing.
 */

const WILDCARD = /^([^@\s+]+)\+\*@([^@\s]+)$/;

/** The Reply-To an email is sent with: `name+*@domain` signed for it; any other address as it is. */
export function replyAddressFor(secret: Buffer, emailId: string, replyTo: string): string {
  const m = WILDCARD.exec(replyTo);
  // RFC 5321's 64-character local part: a base too long for the token stays as written.
  if (!m || m[1]!.length + 1 + 42 > 64) return replyTo;
  return `${m[1]}+${emailToken(secret, emailId, 'reply')}@${m[2]}`;
}

/** Whether `address` is written `name+*@domain` (the form a Reply-To is signed from). */
export const isReplyWildcard = (address: string): boolean => WILDCARD.test(address);

/** The email a recipient's `+tag` names when it is a reply token Herald signed, or undefined. */
export function emailOfReplyRecipient(secret: Buffer, address: string): string | undefined {
  const at = address.lastIndexOf('@');
  const local = at > 0 ? address.slice(0, at).toLowerCase() : '';
  const plus = local.indexOf('+');
  return plus > 0 ? emailOfToken(secret, local.slice(plus + 1), 'reply') : undefined;
}

/**
 * The Reply-To a message submitted over SMTP is sent with when it is one address written `name+*@domain` at a VERIFIED
 * inbound domain of the project: delivery then signs it for each email, as for /v1/send. Any other Reply-To is left
 * to the message as written (undefined).
 */
export async function wildcardReplyTo(knex: Knex, projectId: string, replyTo: { address?: string }[]): Promise<string | undefined> {
  const address = replyTo.length === 1 ? replyTo[0]!.address?.toLowerCase() : undefined;
  if (!address || !isReplyWildcard(address)) return undefined;
  const domain = address.slice(address.lastIndexOf('@') + 1);
  const verified = await knex('inbound_domains').where({ project_id: projectId, domain, status: 'VERIFIED' }).first('id');
  return verified ? address : undefined;
}
