import type { Knex } from 'knex';
import { addressHasher, ERASED_REASON } from '../audience/suppressions';
import { audited, type Actor } from '../audit/log';
import { notFound } from '../core/errors';
import { isUuid } from '../core/values';
import { eraseContactRows, type Erasure } from '../db/queries/contacts';

/**
 * DELETE /contacts/:id?erase=true (issue 30, point 3; GDPR article 17, docs/api.md "Erasure"): the contact is
 * deleted as DELETE /contacts/:id deletes it, and in the same transaction its address and what its emails said are
 * redacted from everything that outlives it (db/queries/contacts.ts eraseContactRows). The suppression list keeps only
 * the address's keyed hash (audience/suppressions.ts addressHasher) under the reason `erased`, in place of any entry of
 * the address itself: every send checks the hash as well, so the address is not mailed again by accident. Audited, by
 * the contact's id and the counts (never the address).
 */
export async function eraseContact(trx: Knex.Transaction, hash: (email: string) => string, projectId: string, id: string): Promise<Erasure> {
  if (!isUuid(id)) throw notFound('Contact');
  const contact = await trx('contacts').where({ project_id: projectId, id }).first('email');
  if (!contact) throw notFound('Contact');
  const hashed = hash(contact.email as string);
  const erased = await eraseContactRows(trx, projectId, id, hashed);
  if (!erased) throw notFound('Contact');
  const { email, ...counts } = erased;
  const had = await trx('suppressions').where({ project_id: projectId, email }).delete().returning('reason');
  await trx.raw(
    `INSERT INTO suppressions (project_id, email, reason, details) VALUES (?::uuid, ?, ?, ?::jsonb) ON CONFLICT (project_id, email) DO NOTHING`,
    [projectId, hashed, ERASED_REASON, JSON.stringify({ contactId: id, ...(had[0] ? { previousReason: had[0].reason } : {}) })],
  );
  return counts;
}

export function contactErasureService({ knex, secret }: { knex: Knex; secret: Buffer }) {
  const hash = addressHasher(secret);
  return {
    erase: (projectId: string, id: string, actor: Actor) =>
      audited(knex, projectId, actor, (counts: Erasure) => ({ operation: 'eraseContact', resourceType: 'contact', resourceId: id, details: { ...counts } }),
        (trx) => eraseContact(trx, hash, projectId, id)),
  };
}

export type ContactErasure = ReturnType<typeof contactErasureService>;
