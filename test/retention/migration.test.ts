import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Model } from 'objection';
import pg from 'pg';
import { campaignBatches } from '../../campaigns/batches';
import { createKnex } from '../../db/database';
import { migrationSource } from '../../db/migrations';
import { listPartitions, monthStart, monthSuffix, partitioned, PARTITIONED_TABLES } from '../../db/partitions';
import { findEmail } from '../../emails/emails';
import { createProject } from '../../projects/service';
import { trimRows } from '../../retention/retention';
import { TEST_SECRET } from '../support/app';
import { readClusterInfo } from '../support/cluster';

/**
 * The partitioning migration (20261208000001) on an existing database of 1,000,000 emails: the tables become
 * partitioned with the old one attached whole as `<table>_legacy` (no row copied), the rows are all there and found as
 * before, a campaign that was sending goes on into the same partition (each contact once), new rows go to their month,
 * and the legacy rows past the retention are deleted in bounded batches.
 */
const RETENTION_MIGRATION = '20261208000001_retention_partitions';
const EMAILS = 1_000_000;
const DAY = 86_400_000;
let admin: pg.Client;
let name: string;
let knex: Knex;
let projectId: string;
let campaignId: string;
let migrateMs: number;

/** The migrations up to, but not including, the partitioning one. */
const before: Knex.MigrationSource<string> = {
  getMigrations: async () => (await migrationSource.getMigrations([])).filter((m) => m < RETENTION_MIGRATION),
  getMigrationName: (m) => m,
  getMigration: (m) => migrationSource.getMigration(m),
};

beforeAll(async () => {
  const info = readClusterInfo();
  name = `t_${process.env.HERALD_TEST_RUN ?? 'x'}_mig_${randomBytes(4).toString('hex')}`;
  admin = new pg.Client({ connectionString: info.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  knex = createKnex(info.urlPattern.replace('{db}', name), { poolMax: 4 });
  Model.knex(knex);
  await knex.migrate.latest({ migrationSource: before });

  // A project with 10,000 contacts and 1,000,000 emails over the last 200 days (ids: UUIDv7 of their time), 10,000 of
  // them a campaign's that is still SENDING (its contacts once each, half of them still QUEUED), an event for a tenth
  // of them, and raw messages.
  projectId = (await createProject('Migrated')).id;
  await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data) SELECT ?::uuid, 'c' || g || '@example.org', true, '{}' FROM generate_series(1, 10000) g`, [projectId]);
  [{ id: campaignId }] = await knex('campaigns').insert({
    project_id: projectId, name: 'Sending', subject: 'News', body: '<p>News</p>', from_email: 'news@example.com', audience_type: 'ALL',
    status: 'SENDING', started_at: knex.fn.now(),
  }).returning('id');
  const now = Date.now();
  const contact = (await knex('contacts').where({ project_id: projectId }).first('id')).id as string;
  // The time of the g-th email (g = 1 … 1,000,000: newest first, 200 days back) and a UUIDv7 of it.
  const at = (g: string) => `(?::bigint - ${g}::bigint * ${(200 * DAY) / EMAILS})`;
  const uuidAt = (ms: string, g: string) => `(lpad(to_hex(${ms}), 12, '0') || lpad(to_hex(${g}), 20, '0'))::uuid`;
  // Seeded as a bulk load is: the secondary indexes built after the rows, foreign keys not checked row by row
  // (session_replication_role: the rows are consistent by construction). Not the subject of the test: 4 x faster.
  const { rows: indexes } = await knex.raw(`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename = 'emails'
    AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'emails'::regclass)`);
  for (const i of indexes) await knex.raw(`DROP INDEX ${i.name}`);
  await knex.transaction(async (trx) => {
    await trx.raw('SET LOCAL session_replication_role = replica');
    // The campaign's emails: one per contact, the 10,000 newest, half of them still QUEUED.
    await trx.raw(
      `INSERT INTO emails (id, event_id, project_id, contact_id, campaign_id, from_email, to_email, subject, html, status, priority, created_at, updated_at)
       SELECT ${uuidAt(at('c.n'), 'c.n')}, ${uuidAt(at('c.n'), 'c.n')}, ?::uuid, c.id, ?::uuid, 'news@example.com', c.email, 'News', '<p>News</p>',
              CASE WHEN c.n <= 5000 THEN 'QUEUED' ELSE 'SENT' END, 1, to_timestamp(${at('c.n')} / 1000.0), now()
       FROM (SELECT row_number() OVER (ORDER BY id) AS n, id, email FROM contacts WHERE project_id = ?::uuid) c`,
      [now, now, projectId, campaignId, now, projectId],
    );
    // The rest: transactional, to one contact.
    await trx.raw(
      `INSERT INTO emails (id, event_id, project_id, contact_id, from_email, to_email, subject, html, status, created_at, updated_at)
       SELECT ${uuidAt(at('g'), 'g')}, ${uuidAt(at('g'), 'g')}, ?::uuid, ?::uuid, 'app@example.com', 'r' || g || '@example.org', 'Hi', '<p>Hi</p>', 'SENT',
              to_timestamp(${at('g')} / 1000.0), now()
       FROM generate_series(10001, ?::int) g`,
      [now, now, projectId, contact, now, EMAILS],
    );
    // An event for one email in ten, a second after it.
    await trx.raw(
      `INSERT INTO events (id, project_id, name, data, created_at)
       SELECT ${uuidAt(`${at('g')} + 1000`, 'g')}, ?::uuid, 'email.sent', '{}', to_timestamp((${at('g')} + 1000) / 1000.0)
       FROM generate_series(1, ?::int, 10) g`,
      [now, projectId, now, EMAILS],
    );
    await trx.raw(
      `INSERT INTO raw_messages (id, project_id, content, size, created_at)
       SELECT ${uuidAt(`(?::bigint - g::bigint * ${DAY})`, 'g')}, ?::uuid, convert_to('raw ' || g, 'UTF8'), 8, now() FROM generate_series(1, 100) g`,
      [now, projectId],
    );
  });
  for (const i of indexes) await knex.raw(i.def);
  await knex.raw('ANALYZE');
  const started = Date.now();
  await knex.migrate.latest();
  migrateMs = Date.now() - started;
}, 300_000);

afterAll(async () => {
  await knex?.destroy();
  await admin?.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  await admin?.end();
});

const count = async (table: string) => Number((await knex(table).count({ n: '*' }))[0]!.n);

test('every table is partitioned, its old rows in <table>_legacy (attached, not copied), this month and the next ones made, a default each', async () => {
  // The time is the test's record, not a bound (speed is the benchmarks'); the work that reads every row is phase 1.
  console.log(`migration of ${EMAILS} emails: ${migrateMs} ms`);
  const month = monthStart(new Date());
  for (const t of PARTITIONED_TABLES) {
    const { rows } = await knex.raw('SELECT relkind FROM pg_class WHERE oid = to_regclass(?)', [t.table]);
    expect(rows[0].relkind).toBe('p');
    const names = (await listPartitions(knex, t)).map((p) => p.name);
    expect(names).toContain(`${t.table}${monthSuffix(monthStart(month, 1))}`);
    expect(names).toContain(`${t.table}_default`);
    if (['emails', 'events', 'raw_messages'].includes(t.table)) expect(names[0]).toBe(`${t.table}_legacy`);
  }
  expect(await count('emails')).toBe(EMAILS);
  expect(Number((await knex('emails_legacy').count({ n: '*' }))[0]!.n)).toBe(EMAILS);
  expect(await count('events')).toBe(EMAILS / 10);
  expect(await count('raw_messages')).toBe(100);
  // The campaign still sending keeps its emails' partition: the legacy one.
  expect((await knex('campaigns').where({ id: campaignId }).first('emails_partition_at')).emails_partition_at).toEqual(-Infinity);
}, 60_000);

test('an old email is found by id (and the plan reads the legacy partition through its primary key)', async () => {
  const old = await knex('emails').where({ project_id: projectId }).orderBy('id').first('id', 'to_email');
  expect((await findEmail(knex, projectId, old.id))?.toEmail).toBe(old.to_email);
  const { rows } = await knex.raw(`EXPLAIN SELECT * FROM emails WHERE project_id = ?::uuid AND id = ?::uuid
    AND partition_at BETWEEN herald_email_lo(?::uuid) AND herald_email_hi(?::uuid)`, [projectId, old.id, old.id, old.id]);
  const plan = rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
  expect(plan).toMatch(/emails_pkey_legacy|emails_legacy_pkey/);
  expect(plan).not.toMatch(/Seq Scan on emails_legacy/);
});

test('the campaign that was sending goes on: its next batch goes to the same partition, each contact still once', async () => {
  // Contacts added since: the batch queues them, and none of the 10,000 already mailed again.
  await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data) SELECT ?::uuid, 'new' || g || '@example.org', true, '{}' FROM generate_series(1, 20) g`, [projectId]);
  const batches = campaignBatches({ knex, sendRatePerSecond: 1000, secret: TEST_SECRET });
  let after: string | null = null;
  let inserted = 0;
  for (;;) {
    const r = await batches.campaignBatch({ projectId, campaignId, after, size: 5000 });
    inserted += r.inserted;
    after = r.last;
    if (r.done || r.cancelled) break;
  }
  expect(inserted).toBe(20);
  const { rows } = await knex.raw(`SELECT count(*)::int AS n, count(DISTINCT contact_id)::int AS d FROM emails WHERE campaign_id = ?::uuid`, [campaignId]);
  expect(rows[0]).toEqual({ n: 10_020, d: 10_020 });
  expect(Number((await knex('emails_legacy').where({ campaign_id: campaignId }).count({ n: '*' }))[0]!.n)).toBe(10_020);
  // The unique key still holds across the campaign's emails: a second email to a contact is refused.
  const dup = await knex('emails').where({ campaign_id: campaignId }).first('contact_id', 'to_email');
  await expect(knex('emails').insert({ project_id: projectId, contact_id: dup.contact_id, campaign_id: campaignId, from_email: 'a@example.com', to_email: dup.to_email, subject: 's', html: 'h', partition_at: '-infinity' }))
    .rejects.toThrow(/emails_campaign_contact_key/);
}, 60_000);

test("new rows go to their month's partition; the legacy rows past the retention go in bounded batches, the others stay", async () => {
  // The legacy partition holds the months before the one after the migration: this month's new rows too, the next
  // month's go to its own partition.
  const contactId = (await knex('contacts').first('id')).id;
  const next = monthStart(new Date(), 1);
  const [now1, later] = await knex('emails').insert([
    { project_id: projectId, contact_id: contactId, from_email: 'a@example.com', to_email: 'x@example.org', subject: 's', html: 'h' },
    { project_id: projectId, contact_id: contactId, from_email: 'a@example.com', to_email: 'y@example.org', subject: 's', html: 'h', partition_at: new Date(next.getTime() + DAY) },
  ]).returning(['id']);
  const part = async (id: string) => (await knex.raw('SELECT tableoid::regclass::text AS part FROM emails WHERE id = ?::uuid', [id])).rows[0].part;
  expect(await part(now1.id)).toBe('emails_legacy');
  expect(await part(later.id)).toBe(`emails${monthSuffix(next)}`);
  // Retention of 100 days: the older half of the legacy emails and events go, a batch of 50,000 rows a statement.
  const cutoffDays = 100;
  const now = new Date();
  const older = Number((await knex('emails').where('created_at', '<', new Date(now.getTime() - cutoffDays * DAY)).count({ n: '*' }))[0]!.n);
  expect(older).toBeGreaterThan(400_000);
  let calls = 0;
  for (;;) {
    const r = await trimRows({ knex, config: { days: cutoffDays, inboundDays: 30 } }, { batch: 50_000, budgetMs: 0, now });
    calls++;
    if (!r.more) break;
  }
  expect(calls).toBeGreaterThan(older / 50_000);
  expect(await count('emails')).toBe(EMAILS + 20 + 2 - older);
  expect(Number((await knex('events').where('created_at', '<', new Date(now.getTime() - cutoffDays * DAY)).count({ n: '*' }))[0]!.n)).toBe(0);
  expect(await count('events')).toBeGreaterThan(40_000);
  expect(partitioned('emails').key).toBe('partition_at');
}, 180_000);
