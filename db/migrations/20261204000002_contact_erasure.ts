import type { Knex } from 'knex';

/**
 * Contact erasure (DELETE /contacts/:id?erase=true, contacts/erase.ts): the erased address stays on the suppression list
 * only as a keyed hash (`hmac-sha256:<hex>` in `email`, audience/suppressions.ts addressHash), with the reason `erased`,
 * so that it is not mailed again by accident while the list no longer says who it was.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check CHECK (reason IN ('manual', 'soft_bounce', 'hard_bounce', 'complaint', 'erased'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("DELETE FROM suppressions WHERE reason = 'erased'");
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check CHECK (reason IN ('manual', 'soft_bounce', 'hard_bounce', 'complaint'))`);
}
