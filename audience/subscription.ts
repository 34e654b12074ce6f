import type { ApiKeyType } from '../db/models/ApiKey';
import type { TemplateType } from '../db/models/Template';
import type { Knex } from 'knex';
import { recordEvents } from '../db/queries/events';
import { bulkMailHeaders, unsubscribeUrl, verifyUnsubscribeToken, type UnsubscribeTarget } from '../mail/unsubscribe';

/**
 * The subscription rules, in one place (docs/api.md, "Subscriptions"):
 * - who may change a contact's marketing subscription: a public key (pk_, which sits in web pages) only chooses the
 *   subscription of a contact it creates, never an existing contact's; a secret key, the dashboard API, an
 *   automation and an unsubscribe link may change it. Every change of an existing contact records
 *   `contact.subscribed` or `contact.unsubscribed` (db/queries/contacts.ts writes both in the same transaction);
 * - who receives what: marketing mail (a MARKETING template) only subscribed contacts, with the bulk-mail headers
 *   (List-Unsubscribe, one-click, Precedence: bulk); transactional mail anyone not on the suppression list
 *   (audience/suppressions.ts, enforced where emails are stored: sending/sends.ts).
 */

/** What a request's `subscribed` does to the contact it upserts (db/queries/contacts.ts ContactInput). */
export interface SubscriptionWrite {
  /** The subscription asked for; omitted: a new contact gets the route's default, an existing one keeps its own. */
  subscribed?: boolean;
  /** `subscribed` applies to a new contact only: an existing contact keeps its subscription. */
  onlyNew?: boolean;
}

/** The subscription write of a request authenticated with `keyType` that asks for `subscribed`. */
export function subscriptionWrite(subscribed: boolean | undefined, keyType: ApiKeyType): SubscriptionWrite {
  if (subscribed === undefined) return {};
  return keyType === 'secret' ? { subscribed } : { subscribed, onlyNew: true };
}

/** Why a recipient gets no email; in the answer's `emails[].skipped`. */
export type SkipReason = 'unsubscribed';

/** Whether mail of this kind goes to this contact, and if not, why. */
export function skipReason(marketing: boolean, contact: { subscribed: boolean }): SkipReason | null {
  return marketing && !contact.subscribed ? 'unsubscribed' : null;
}

/** Whether a template's mail is marketing mail. */
export const isMarketing = (type: TemplateType | string | null | undefined): boolean => type === 'MARKETING';

/** The headers marketing mail carries (none for transactional mail): RFC 2369/8058 unsubscribe, Precedence: bulk. */
export function marketingHeaders(marketing: boolean, publicUrl: string, secret: Buffer, target: UnsubscribeTarget): Record<string, string> {
  return marketing ? bulkMailHeaders(unsubscribeUrl(publicUrl, secret, target)) : {};
}

/**
 * An unsubscribe link's contact (mail/unsubscribe.ts): null for a token that is not ours, or whose contact is gone.
 * The signed token is the authority; no API key is involved.
 */
export async function unsubscribeLinkTarget(db: Knex, secret: Buffer, token: string): Promise<UnsubscribeTarget | null> {
  const target = verifyUnsubscribeToken(secret, token);
  if (!target) return null;
  return (await db('contacts').where({ project_id: target.projectId, id: target.contactId }).first('id')) ? target : null;
}

/**
 * Follows an unsubscribe link: the contact is unsubscribed, and `contact.unsubscribed` recorded with the email the
 * link was in (campaign stats), in one transaction. An already unsubscribed contact answers the same and records
 * nothing. False when the link names no contact.
 */
export async function unsubscribeByLink(db: Knex, secret: Buffer, token: string): Promise<boolean> {
  const target = verifyUnsubscribeToken(secret, token);
  if (!target) return false;
  return db.transaction(async (trx) => {
    const [changed] = await trx('contacts')
      .where({ project_id: target.projectId, id: target.contactId, subscribed: true })
      .update({ subscribed: false, updated_at: trx.fn.now() })
      .returning('id');
    if (changed) {
      await recordEvents(trx, target.projectId, [{ name: 'contact.unsubscribed', contactId: target.contactId, emailId: target.emailId ?? null, data: { source: 'link' } }]);
      return true;
    }
    return (await trx('contacts').where({ project_id: target.projectId, id: target.contactId }).first('id')) !== undefined;
  });
}

/** Unsubscribe links (the functions above) over the app's database and installation secret, the API's way in. */
export function unsubscribeService({ knex, secret }: { knex: Knex; secret: Buffer }) {
  return {
    target: (token: string) => unsubscribeLinkTarget(knex, secret, token),
    unsubscribe: (token: string) => unsubscribeByLink(knex, secret, token),
  };
}

export type Unsubscribes = ReturnType<typeof unsubscribeService>;
