import type { Knex } from 'knex';

/**
 * Inbound mail, second part (issue 31).
 *
 * - Ownership: a domain no longer belongs to whichever project added it first (a project could add a domain it does not
 *   own and keep its owner out). Any project may add any domain, PENDING; a domain takes mail once its project has
 *   shown that it owns it: the MX names Herald AND a TXT record at `_herald.<domain>` carries the project's token
 *   (inbound/domains.ts). One VERIFIED row per domain in the installation (the listener finds the project by it);
 *   the project that verifies later takes the domain over (the DNS owner published its token). `mx_status` and
 *   `owner_status` say which record the last check found. Domains VERIFIED before this migration proved their MX
 *   only: they wait for their TXT record as PENDING.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE inbound_domains
    ADD COLUMN mx_status text NOT NULL DEFAULT 'PENDING' CHECK (mx_status IN ('PENDING', 'VERIFIED', 'FAILED')),
    ADD COLUMN owner_status text NOT NULL DEFAULT 'PENDING' CHECK (owner_status IN ('PENDING', 'VERIFIED', 'FAILED'))`);
  await knex.raw(`UPDATE inbound_domains SET mx_status = status, status = 'PENDING', verified_at = NULL WHERE status <> 'PENDING'`);
  await knex.raw('ALTER TABLE inbound_domains DROP CONSTRAINT inbound_domains_domain_key');
  // A project adds a domain once (409 for the second time).
  await knex.raw('ALTER TABLE inbound_domains ADD CONSTRAINT inbound_domains_project_domain_key UNIQUE (project_id, domain)');
  // Serves the listener's lookup of a recipient's domain (WHERE domain = ? AND status = 'VERIFIED'); one owner per domain.
  await knex.raw(`CREATE UNIQUE INDEX inbound_domains_verified_key ON inbound_domains (domain) WHERE status = 'VERIFIED'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS inbound_domains_verified_key');
  await knex.raw('ALTER TABLE inbound_domains DROP CONSTRAINT IF EXISTS inbound_domains_project_domain_key');
  // Back to one row per domain: the verified one, else the oldest.
  await knex.raw(`DELETE FROM inbound_domains d WHERE EXISTS (
    SELECT 1 FROM inbound_domains o WHERE o.domain = d.domain AND o.id <> d.id
      AND ((o.status = 'VERIFIED') > (d.status = 'VERIFIED')
        OR ((o.status = 'VERIFIED') = (d.status = 'VERIFIED') AND (o.created_at, o.id) < (d.created_at, d.id))))`);
  await knex.raw('ALTER TABLE inbound_domains ADD CONSTRAINT inbound_domains_domain_key UNIQUE (domain)');
  await knex.raw('ALTER TABLE inbound_domains DROP COLUMN owner_status, DROP COLUMN mx_status');
}
