import type { Knex } from 'knex';

/**
 * What the console's other lists read, beside bench/lib/consoleSeed.ts' contacts, emails and events, for a project at
 * that scale: segments (dynamic over `data.*`, over events, and a static one with members), templates, a workflow
 * with its executions, a webhook endpoint with its deliveries and their attempts, received mail with its raw
 * messages, the suppressions the seed's bounces and complaints make, and an audit log.
 *
 * The small resources (segments, templates, the workflow, the endpoint, the inbound domain and route) are created by
 * the caller through the API, as a person would (`create`); the many rows are one INSERT … SELECT each, ids UUIDv7 of
 * their time as Herald makes them. Sizes are options: what a project that sent 1,000,000 emails plausibly holds, and
 * enough for an exact count to cost what it costs at scale.
 */
export interface ExtraSizes {
  /** Members of the static segment (the newest contacts). */
  staticMembers: number;
  /** Executions of the workflow. */
  executions: number;
  /** Deliveries of the webhook endpoint (one per event, newest events), each with one attempt. */
  deliveries: number;
  /** Messages received. */
  inbound: number;
  /** Entries of the audit log. */
  audit: number;
}

export interface ExtraIds {
  staticSegmentId: string;
  workflowId: string;
  endpointId: string;
  routeId: string;
}

const uuidv7 = (ms: string, hex: string) => `(lpad(to_hex(${ms}), 12, '0') || '7' || substr(${hex}, 1, 3) || '8' || substr(${hex}, 4, 15))::uuid`;

export async function seedListExtras(knex: Knex, projectId: string, ids: ExtraIds, sizes: ExtraSizes): Promise<Record<string, number>> {
  const timings: Record<string, number> = {};
  const timed = async (name: string, work: () => Promise<unknown>) => {
    const t = performance.now();
    await work();
    timings[name] = performance.now() - t;
  };
  await timed('static segment members', () => knex.raw(
    `INSERT INTO segment_members (project_id, segment_id, contact_id, created_at)
     SELECT project_id, ?::uuid, id, created_at FROM contacts WHERE project_id = ? ORDER BY id DESC LIMIT ?`,
    [ids.staticSegmentId, projectId, sizes.staticMembers]));
  // A workflow that started for many contacts: most done, some waiting in a delay, a few failed.
  await timed('executions', () => knex.raw(
    `INSERT INTO automation_executions (id, project_id, automation_id, contact_id, status, current_step_id, exclusive, started_at, completed_at, updated_at, wait_until, parked)
     SELECT ${uuidv7('(extract(epoch FROM c.created_at) * 1000)::bigint', "md5(c.id::text || 'x')")}, c.project_id, ?::uuid, c.id, s.status,
            CASE WHEN s.status = 'WAITING' THEN 'wait' END, true, c.created_at,
            CASE WHEN s.status IN ('COMPLETED', 'FAILED') THEN c.created_at + interval '1 day' END, c.created_at,
            CASE WHEN s.status = 'WAITING' THEN now() + interval '1 day' END, s.status = 'WAITING'
     FROM (SELECT id, project_id, created_at, row_number() OVER (ORDER BY id DESC) AS n FROM contacts WHERE project_id = ? ORDER BY id DESC LIMIT ?) c
     CROSS JOIN LATERAL (SELECT CASE WHEN c.n <= ? / 20 THEN 'WAITING' WHEN c.n % 100 = 7 THEN 'FAILED' ELSE 'COMPLETED' END AS status) s`,
    [ids.workflowId, projectId, sizes.executions, sizes.executions]));
  // Every event of the newest ones delivered to the endpoint (its payload as the trigger writes it, shortened), once.
  await timed('webhook deliveries', async () => {
    await knex.raw(
      `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, type, event_id, payload, status, attempts, next_attempt_at, last_status_code, last_latency_ms, delivered_at, created_at, updated_at)
       SELECT ${uuidv7('(extract(epoch FROM ev.created_at) * 1000)::bigint', "md5(ev.id::text || 'w')")}, ev.project_id, ?::uuid, ev.name, ev.id,
              jsonb_build_object('type', ev.name, 'timestamp', ev.created_at, 'data', jsonb_build_object('emailId', ev.email_id, 'contactId', ev.contact_id)),
              'SUCCEEDED', 1, ev.created_at, 200, 35, ev.created_at, ev.created_at, ev.created_at
       FROM (SELECT * FROM events WHERE project_id = ? ORDER BY id DESC LIMIT ?) ev`,
      [ids.endpointId, projectId, sizes.deliveries]);
    await knex.raw(
      `INSERT INTO webhook_attempts (id, delivery_id, attempt, status_code, latency_ms, created_at)
       SELECT ${uuidv7('(extract(epoch FROM d.created_at) * 1000)::bigint', "md5(d.id::text || 'a')")}, d.id, 1, 200, 35, d.created_at
       FROM webhook_deliveries d WHERE d.endpoint_id = ?`, [ids.endpointId]);
  });
  // Received mail: replies to the project's addresses, a raw message each (small: the list never reads it).
  await timed('inbound', async () => {
    await knex.raw(
      `INSERT INTO raw_messages (id, project_id, content, size, created_at)
       SELECT ${uuidv7('t.ms', "md5('r' || g)")}, ?::uuid, convert_to('Subject: Re: your order ' || g || E'\\r\\n\\r\\nThanks!\\r\\n', 'UTF8'), 40, to_timestamp(t.ms / 1000.0)
       FROM generate_series(1, ?) g CROSS JOIN LATERAL (SELECT (extract(epoch FROM now()) * 1000)::bigint - g::bigint * 60000 AS ms) t`,
      [projectId, sizes.inbound]);
    await knex.raw(
      `INSERT INTO inbound_messages (id, project_id, route_id, raw_message_id, recipient, mail_from, remote_address, helo, from_address, from_name,
                                     to_addresses, subject, sent_at, message_id, text, size, auth, created_at)
       SELECT r.id, r.project_id, ?::uuid, r.id, 'support@in.example.com', 'person-' || (abs(hashtext(r.id::text)) % 5000) || '@example.org', '127.0.0.1',
              'mail.example.org', 'person-' || (abs(hashtext(r.id::text)) % 5000) || '@example.org', 'A person',
              '[{"address":"support@in.example.com","name":""}]'::jsonb, 'Re: your order', r.created_at, '<' || r.id || '@example.org>', 'Thanks!', r.size,
              '{"spf":"pass","dkim":"none","dmarc":"none"}'::jsonb, r.created_at
       FROM raw_messages r WHERE r.project_id = ?`, [ids.routeId, projectId]);
  });
  // The suppressions that the seed's hard bounces and complaints would have made.
  await timed('suppressions', () => knex.raw(
    `INSERT INTO suppressions (id, project_id, email, reason, details, created_at)
     SELECT DISTINCT ON (e.to_email) ${uuidv7('(extract(epoch FROM ev.created_at) * 1000)::bigint', "md5(ev.id::text || 's')")}, e.project_id, e.to_email,
            CASE WHEN ev.name = 'email.bounced' THEN 'hard_bounce' ELSE 'complaint' END, jsonb_build_object('emailId', e.id), ev.created_at
     FROM events ev JOIN emails e ON e.project_id = ev.project_id AND e.id = ev.email_id
     WHERE ev.project_id = ? AND ev.name IN ('email.bounced', 'email.complained')
     ORDER BY e.to_email, ev.id
     ON CONFLICT DO NOTHING`, [projectId]));
  // An audit log: people and keys changing things, newest last.
  await timed('audit log', () => knex.raw(
    `INSERT INTO audit_log (id, project_id, actor_kind, actor_id, operation, resource_type, resource_id, address, at, details)
     SELECT ${uuidv7('t.ms', "md5('au' || g)")}, ?::uuid, 'key', NULL, (ARRAY['updateContact', 'deleteContact', 'createSuppression', 'updateSettings', 'sendCampaign'])[1 + g % 5],
            (ARRAY['contact', 'contact', 'suppression', 'settings', 'campaign'])[1 + g % 5], md5('r' || g), '127.0.0.1', to_timestamp(t.ms / 1000.0), '{}'::jsonb
     FROM generate_series(1, ?) g CROSS JOIN LATERAL (SELECT (extract(epoch FROM now()) * 1000)::bigint - g::bigint * 120000 AS ms) t`,
    [projectId, sizes.audit]));
  return timings;
}
