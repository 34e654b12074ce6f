import type { Knex } from 'knex';
import { backfillDailyStats } from '../../db/migrations/20261201000001_daily_stats';
import { backfillCampaignStats } from '../../db/migrations/20261206000010_campaign_outcomes';
import { createMonthlyPartitions, partitioned } from '../../db/partitions';

/**
 * A project as the console sees it at scale, for benchmarks: `contacts` contacts, `emails` emails spread evenly over
 * the last `days` days with realistic statuses, their events, the per-name totals and the daily rollup. Set-based SQL:
 * one INSERT … SELECT generate_series per table (never a loop of statements), so 1,000,000 of each load in about a
 * minute here.
 *
 * Ids are UUIDv7 carrying each row's creation time (as herald_uuidv7 makes them), so that keyset pages and the id date
 * ranges of GET /emails behave as in production. Contact k's id is a function of k, so an email names its contact
 * without a join.
 *
 * The emails: 60 % in one of `campaigns` sent campaigns (subject and body rendered at delivery, so not stored), the
 * rest transactional (subject and HTML stored); each contact receives emails in turn (email g goes to contact
 * g mod contacts). Statuses, by g mod 1000: 2 % FAILED, 1 % BOUNCED, 0.5 % CANCELLED, the rest SENT; and the newest
 * 0.2 % are still QUEUED (a queue the worker has not reached; `available_at` in the future, as no worker runs).
 * The events: email.sent of every SENT or BOUNCED email a second after its creation, email.failed of every FAILED one,
 * email.bounced of every BOUNCED one a minute later, email.opened of 30 % of the sent ones, email.clicked of 8 %,
 * email.complained of 0.1 %; so about 1.4 events per email.
 */
export interface SeedOptions {
  contacts: number;
  emails: number;
  days: number;
  campaigns?: number;
  /** Distinguishes two projects' ids (their time parts may coincide). */
  seed: string;
  /** The end of the spread (now by default): the newest email was created then. */
  until?: Date;
}

export interface Seeded {
  campaignIds: string[];
  timings: Record<string, number>;
}

/**
 * Contact k's address in SQL, as varied as real ones are (a search must not find every address sharing its trigrams):
 * one of 40 first names, a dot, six hex digits of a hash, at one of 8 domains. `seed` is a literal of the seed.
 */
const FIRST_NAMES = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'margaret', 'ken', 'dennis', 'linus', 'guido', 'bjarne',
  'john', 'frances', 'radia', 'tim', 'vint', 'leslie', 'niklaus', 'tony', 'sophie', 'hedy', 'katherine', 'dorothy', 'mary', 'annie',
  'evelyn', 'jean', 'kathleen', 'marlyn', 'ruth', 'betty', 'adele', 'carol', 'susan', 'shafi', 'lynn', 'jude', 'anita', 'joan'];
const DOMAINS = ['example.org', 'example.net', 'mail.example', 'inbox.example', 'post.example', 'corp.example', 'shop.example', 'uni.example'];
const addressOf = (k: string, seed: string) =>
  `((ARRAY[${FIRST_NAMES.map((n) => `'${n}'`).join(',')}])[1 + (${k}) % ${FIRST_NAMES.length}] || '.' || substr(md5('${seed}' || 'm' || (${k})), 1, 6) || (${k})
    || '@' || (ARRAY[${DOMAINS.map((d) => `'${d}'`).join(',')}])[1 + ((${k}) / ${FIRST_NAMES.length}) % ${DOMAINS.length}])`;

/** A UUIDv7 in SQL: `ms` (bigint milliseconds) and a hex string of at least 18 random-looking digits. */
const uuidv7 = (ms: string, hex: string) => `(lpad(to_hex(${ms}), 12, '0') || '7' || substr(${hex}, 1, 3) || '8' || substr(${hex}, 4, 15))::uuid`;

/**
 * Runs a bulk load as pg_restore does: the secondary indexes of `tables` (not those of a primary key or a unique
 * constraint, which the load needs) are dropped first and built again after, each by one sort instead of a million
 * inserts into it (a GIN trigram index most of all); and the load runs in one transaction with
 * `session_replication_role = replica`, so that the foreign keys' triggers do not look each row's contact up (the
 * seed names only contacts it made). The index definitions are read back from pg_indexes, so the indexes come back
 * exactly as the migrations made them.
 */
export async function withIndexesAfter<T>(knex: Knex, tables: string[], load: (db: Knex) => Promise<T>): Promise<{ result: T; indexMs: number }> {
  const indexes: { indexname: string; indexdef: string }[] = (await knex.raw(
    `SELECT indexname, indexdef FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename = ANY(?)
       AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))`, [tables])).rows;
  for (const i of indexes) await knex.raw(`DROP INDEX ${i.indexname}`);
  const result = await knex.transaction(async (trx) => {
    await trx.raw("SET LOCAL session_replication_role = 'replica'");
    return load(trx);
  });
  const started = performance.now();
  await knex.transaction(async (trx) => {
    await trx.raw("SET LOCAL maintenance_work_mem = '512MB'");
    // A partitioned table's index reads `CREATE INDEX … ON ONLY <parent>` in pg_indexes: built that way it would stand
    // on the parent alone, invalid, and its partitions (whose indexes the DROP took with it) would have none. Built
    // without ONLY it is built on every partition, as the migrations built it.
    for (const i of indexes) await trx.raw(i.indexdef.replace(/ ON ONLY /, ' ON '));
  });
  return { result, indexMs: performance.now() - started };
}

export async function seedConsoleProject(knex: Knex, projectId: string, opts: SeedOptions): Promise<Seeded> {
  const until = (opts.until ?? new Date()).getTime();
  const span = opts.days * 86_400_000;
  const start = until - span;
  const campaigns = opts.campaigns ?? 20;
  const timings: Record<string, number> = {};
  const timed = async (name: string, work: () => Promise<unknown>) => {
    const t = performance.now();
    await work();
    timings[name] = performance.now() - t;
  };

  // The window's months have their own partitions of events, as on an install that ran through them (housekeeping makes
  // each month's ahead of it): without them the seeded past went to the default partition, which no bound on the ids
  // prunes, and a read of the last 30 days went through all of it (BENCHMARKS.md section 69).
  await timed('partitions', () => createMonthlyPartitions(knex, partitioned('events'), new Date(start), new Date(until)));

  // Contacts: created over the window's first half and before (a list that grew), 90 % subscribed.
  const contactMs = `(?::bigint - ?::bigint + (k::bigint * ?::bigint) / ?)`;
  await timed('contacts', () => knex.raw(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     SELECT ${uuidv7('t.ms', 't.h')}, ?::uuid, ${addressOf('k', opts.seed)}, k % 10 <> 0,
            jsonb_build_object('firstName', 'Person ' || k, 'plan', (ARRAY['free', 'pro', 'team'])[1 + k % 3]),
            to_timestamp(t.ms / 1000.0), to_timestamp(t.ms / 1000.0)
     FROM generate_series(0, ? - 1) k
     CROSS JOIN LATERAL (SELECT ${contactMs} AS ms, md5(? || 'c' || k) AS h) t`,
    [projectId, opts.contacts, start, span, span / 2, opts.contacts, opts.seed],
  ));
  // The id of contact k, as computed above (the same expression).
  const contactId = (k: string) => uuidv7(`(${start}::bigint - ${span}::bigint + (${k}::bigint * ${span / 2}::bigint) / ${opts.contacts})`, `md5('${opts.seed}' || 'c' || ${k})`);

  const campaignIds: string[] = [];
  await timed('campaigns', async () => {
    const rows = await knex('campaigns').insert(Array.from({ length: campaigns }, (_, i) => ({
      project_id: projectId, name: `Newsletter ${i + 1}`, subject: 'News for {{ data.firstName }}', body: '<p>Hello {{ data.firstName }}, here is what is new.</p>',
      from_email: 'news@example.com', audience_type: 'ALL', status: 'SENT',
    }))).returning('id');
    campaignIds.push(...rows.map((r: { id: string }) => r.id));
  });

  const queuedFrom = Math.floor(opts.emails * 0.998);
  await timed('emails', () => knex.raw(
    `INSERT INTO emails (id, project_id, contact_id, campaign_id, from_email, to_email, subject, html, status, priority, attempts, error,
                         message_id, sent_at, available_at, opens, clicks, first_opened_at, first_clicked_at, track_opens, track_clicks, created_at, updated_at)
     SELECT ${uuidv7('t.ms', 't.h')}, ?::uuid, ${contactId(`g % ${opts.contacts}`)},
            CASE WHEN t.campaign THEN (?::uuid[])[1 + (g / 10) % ${campaigns}] END,
            CASE WHEN t.campaign THEN 'news@example.com' ELSE 'orders@example.com' END, ${addressOf(`g % ${opts.contacts}`, opts.seed)},
            CASE WHEN NOT t.campaign THEN 'Your order #' || g || ' has shipped' END,
            CASE WHEN NOT t.campaign THEN '<p>Hello, your order <b>#' || g || '</b> is on its way. <a href="https://shop.example/orders/' || g || '">Track it</a></p>' END,
            s.status, CASE WHEN t.campaign THEN 1 ELSE 0 END, CASE WHEN s.status = 'QUEUED' THEN 0 ELSE 1 END,
            CASE WHEN s.status IN ('FAILED', 'BOUNCED') THEN '550 5.1.1 <' || ${addressOf(`g % ${opts.contacts}`, opts.seed)} || '>: no such user' END,
            CASE WHEN s.status IN ('SENT', 'BOUNCED') THEN '<' || md5(? || g) || '@example.com>' END,
            CASE WHEN s.status IN ('SENT', 'BOUNCED') THEN to_timestamp(t.ms / 1000.0 + 1) END,
            CASE WHEN s.status = 'QUEUED' THEN 'infinity'::timestamptz ELSE to_timestamp(t.ms / 1000.0) END,
            CASE WHEN s.opened THEN 1 ELSE 0 END, CASE WHEN s.clicked THEN 1 ELSE 0 END,
            CASE WHEN s.opened THEN to_timestamp(t.ms / 1000.0 + 600) END, CASE WHEN s.clicked THEN to_timestamp(t.ms / 1000.0 + 660) END,
            t.campaign, t.campaign, to_timestamp(t.ms / 1000.0), to_timestamp(t.ms / 1000.0)
     FROM generate_series(0, ? - 1) g
     CROSS JOIN LATERAL (SELECT ?::bigint + (g::bigint * ?::bigint) / ? AS ms, md5(? || 'e' || g) AS h, g % 10 < 6 AS campaign) t
     CROSS JOIN LATERAL (SELECT CASE WHEN g >= ? THEN 'QUEUED' WHEN g % 1000 < 20 THEN 'FAILED' WHEN g % 1000 < 30 THEN 'BOUNCED'
                                     WHEN g % 1000 < 35 THEN 'CANCELLED' ELSE 'SENT' END AS status) s0
     CROSS JOIN LATERAL (SELECT s0.status, s0.status = 'SENT' AND g % 100 BETWEEN 40 AND 69 AS opened,
                                s0.status = 'SENT' AND g % 100 BETWEEN 40 AND 47 AS clicked) s`,
    [projectId, campaignIds, opts.seed, opts.emails, start, span, opts.emails, opts.seed, queuedFrom],
  ));

  // Every email's events, from the emails just written (one statement): ids are UUIDv7 of the event's own time.
  await timed('events', () => knex.raw(
    `INSERT INTO events (id, project_id, name, contact_id, email_id, data, created_at)
     SELECT ${uuidv7('(extract(epoch FROM e.created_at) * 1000)::bigint + x.after_ms', "md5(e.id::text || x.name)")},
            e.project_id, x.name, e.contact_id, e.id, x.data, e.created_at + x.after_ms * interval '1 millisecond'
     FROM emails e
     CROSS JOIN LATERAL (VALUES
       ('email.sent', 1000, jsonb_build_object('messageId', e.message_id), e.status IN ('SENT', 'BOUNCED')),
       ('email.failed', 1000, jsonb_build_object('error', e.error), e.status = 'FAILED'),
       ('email.bounced', 60000, jsonb_build_object('type', 'hard', 'status', '5.1.1', 'source', 'dsn'), e.status = 'BOUNCED'),
       ('email.opened', 600000, '{}'::jsonb, e.opens > 0),
       ('email.clicked', 660000, jsonb_build_object('url', 'https://shop.example/orders'), e.clicks > 0),
       ('email.complained', 86400000, jsonb_build_object('feedbackType', 'abuse'), e.status = 'SENT' AND abs(hashtext(e.id::text)) % 1000 = 0)
     ) AS x(name, after_ms, data, happened)
     WHERE e.project_id = ? AND x.happened AND e.created_at + x.after_ms * interval '1 millisecond' < now()`,
    [projectId],
  ));

  await timed('totals and rollup', async () => {
    await knex.raw(
      `INSERT INTO event_names (project_id, name, shard, count, last_seen_at)
       SELECT project_id, name, 0, count(*), max(created_at) FROM events WHERE project_id = ? GROUP BY project_id, name`, [projectId]);
    await backfillDailyStats(knex, projectId);
    await backfillCampaignStats(knex, { projectId });
  });
  return { campaignIds, timings };
}
