import type { Knex } from 'knex';

/**
 * Sending domains get their DKIM key pair and the outcome of their DNS checks.
 * The key columns are nullable: rows from before this migration get their key on first use (domains/rows.ts
 * ensureDomainKey), since the encryption key comes from the installation secret, which SQL does not have.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('domains', (t) => {
    t.text('dkim_selector');
    t.text('dkim_public_key'); // base64 SubjectPublicKeyInfo DER: the p= of the DKIM record
    t.binary('dkim_private_key'); // AES-256-GCM ciphertext of the PKCS#8 PEM (domains/dkim.ts)
    // Who made the domain VERIFIED: a DNS check, or the operator (CLI --verified). See domains/records.ts afterCheck.
    t.text('verified_by').checkIn(['DNS', 'OPERATOR']);
    t.jsonb('records').notNullable().defaultTo('{}'); // status per record (DKIM, SPF, DMARC) of the last check
    t.timestamp('checked_at', { useTz: true });
  });
  // Domains verified before DNS checks existed were vouched for by the operator.
  await knex('domains').where('status', 'VERIFIED').update({ verified_by: 'OPERATOR' });
  // The scheduled re-check walks every domain by primary key (keyset on id): no further index.
  // GET /domains walks one project's domains newest first: WHERE project_id = ? [AND id < ?] ORDER BY id DESC.
  await knex.raw('CREATE INDEX domains_project_id_idx ON domains (project_id, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS domains_project_id_idx');
  await knex.schema.alterTable('domains', (t) => {
    for (const c of ['dkim_selector', 'dkim_public_key', 'dkim_private_key', 'verified_by', 'records', 'checked_at']) t.dropColumn(c);
  });
}
