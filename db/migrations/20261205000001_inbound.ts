import type { Knex } from 'knex';

/**
 * Inbound mail routed to the app (issue 31).
 *
 * - `inbound_domains`: the domains a project receives mail at (usually a subdomain such as in.example.com). A domain
 *   belongs to one project in the whole installation (the listener finds the project by the recipient's domain), and
 *   takes mail once its MX record points at Herald (VERIFIED by a DNS check).
 * - `inbound_routes`: what happens to mail for an address of such a domain: `kind` address (one local part), tag (a
 *   local part with any +tag) or domain (any address), tried in `priority` order (then oldest first); the action
 *   delivers to a webhook endpoint (`email.received`), stores only, or refuses at RCPT TO with the route's 5xx text.
 *   An endpoint deleted later leaves its routes storing only (endpoint_id set null).
 * - `inbound_messages`: one row per message and route it matched: the parsed fields, the authentication results, the
 *   parse warnings, the email it replies to; the raw bytes are a `raw_messages` row (one per message and project) and
 *   the attachments `attachments` rows, shared by the message's rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE inbound_domains (
      id uuid NOT NULL DEFAULT herald_uuidv7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      domain text NOT NULL,
      status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'VERIFIED', 'FAILED')),
      checked_at timestamptz,
      verified_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      -- Serves GET/DELETE /inbound/domains/:id and the list (keyset on id).
      CONSTRAINT inbound_domains_pkey PRIMARY KEY (project_id, id),
      -- Serves the listener's lookup of a recipient's domain; one project per domain.
      CONSTRAINT inbound_domains_domain_key UNIQUE (domain))`);
  await knex.raw(`
    CREATE TABLE inbound_routes (
      id uuid NOT NULL DEFAULT herald_uuidv7(),
      project_id uuid NOT NULL,
      domain_id uuid NOT NULL,
      kind text NOT NULL CHECK (kind IN ('address', 'tag', 'domain')),
      local_part text,
      priority integer NOT NULL DEFAULT 100,
      action text NOT NULL CHECK (action IN ('webhook', 'store', 'reject')),
      endpoint_id uuid REFERENCES webhook_endpoints (id) ON DELETE SET NULL,
      reject_message text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT inbound_routes_pkey PRIMARY KEY (project_id, id),
      CONSTRAINT inbound_routes_domain_fkey FOREIGN KEY (project_id, domain_id) REFERENCES inbound_domains (project_id, id) ON DELETE CASCADE,
      CONSTRAINT inbound_routes_local_part CHECK ((kind = 'domain') = (local_part IS NULL)))`);
  // Serves the listener's routes of one domain in their order.
  await knex.raw('CREATE INDEX inbound_routes_domain_idx ON inbound_routes (project_id, domain_id, priority, id)');
  await knex.raw(`
    CREATE TABLE inbound_messages (
      id uuid NOT NULL DEFAULT herald_uuidv7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      route_id uuid,
      raw_message_id uuid NOT NULL,
      recipient text NOT NULL,
      mail_from text NOT NULL,
      remote_address text,
      helo text,
      from_address text,
      from_name text,
      to_addresses jsonb NOT NULL DEFAULT '[]',
      cc_addresses jsonb NOT NULL DEFAULT '[]',
      reply_to jsonb NOT NULL DEFAULT '[]',
      subject text,
      sent_at timestamptz,
      message_id text,
      in_reply_to text,
      "references" text[] NOT NULL DEFAULT '{}',
      text text,
      html text,
      headers jsonb NOT NULL DEFAULT '[]',
      attachments jsonb NOT NULL DEFAULT '[]',
      auth jsonb NOT NULL DEFAULT '{}',
      warnings text[] NOT NULL DEFAULT '{}',
      reply_email_id uuid,
      reply_contact_id uuid,
      size integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      -- Serves GET /inbound/:id and GET /inbound (keyset on the time-ordered id; since/until are ids' times).
      CONSTRAINT inbound_messages_pkey PRIMARY KEY (project_id, id),
      CONSTRAINT inbound_messages_raw_fkey FOREIGN KEY (project_id, raw_message_id) REFERENCES raw_messages (project_id, id) ON DELETE CASCADE)`);
  // Serve GET /inbound?route=…, ?to=…, ?from=… (keyset on id within each).
  await knex.raw('CREATE INDEX inbound_messages_route_idx ON inbound_messages (project_id, route_id, id)');
  await knex.raw('CREATE INDEX inbound_messages_recipient_idx ON inbound_messages (project_id, recipient, id)');
  await knex.raw('CREATE INDEX inbound_messages_from_idx ON inbound_messages (project_id, from_address, id)');
  // Serves the retention prune (oldest first, all projects).
  await knex.raw('CREATE INDEX inbound_messages_created_idx ON inbound_messages (created_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS inbound_messages');
  await knex.raw('DROP TABLE IF EXISTS inbound_routes');
  await knex.raw('DROP TABLE IF EXISTS inbound_domains');
}
