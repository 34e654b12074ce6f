import type { Knex } from 'knex';
import { createMonthlyPartitions, monthStart, partitioned } from '../../db/partitions';
import { RECORD_EVENTS_SQL } from '../../db/queries/events';
import { createProject } from '../../projects/service';
import { OLDEST_PENDING_SQL, trimBindings, trimSql } from '../../retention/retention';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { partitionedPlan } from '../support/plans';

/**
 * The retention job's reads are index reads on the partitioned tables (db/partitions.ts): a project's bounded delete
 * batches (retention/retention.ts trimSql: a range of each partition's primary key), the oldest email still to be
 * sent (the queue's and the claims' partial indexes), and a lookup of an email by id, which reads the partitions its
 * id's time names (herald_email_lo/hi). Five months of rows of 50 projects, EXPLAIN of the very SQL the code runs.
 */
let db: TestDatabase;
let projectId: string;
const DAY = 86_400_000;

const explain = async (sql: string, bindings: Knex.RawBinding[]) =>
  partitionedPlan((await db.knex.raw(`EXPLAIN ${sql}`, bindings)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 50; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  const from = monthStart(new Date(), -5);
  for (const table of ['emails', 'events', 'raw_messages'] as const) await createMonthlyPartitions(db.knex, partitioned(table), from, monthStart(new Date(), 1));
  await db.knex.raw(`INSERT INTO contacts (project_id, email) SELECT p, 'c@example.org' FROM unnest(?::uuid[]) p`, [projects]);
  // Six whole months of mail, from the start of the month five months back to the start of the next month: 2,000 emails
  // a project, an event each, a raw message for one in ten, so that every partition of those months holds thousands of
  // rows whatever the day (on the 1st, "until now" left this month's partition near empty, and a partition of a handful
  // of rows is rightly read by a Seq Scan: the plans asserted here are those of full partitions). The rows of the rest of
  // this month carry times ahead of now; neither the delete batches (90 days back) nor the queue's reads mind.
  const since = `'${monthStart(new Date(), -5).toISOString()}'::timestamptz`;
  const end = `'${monthStart(new Date(), 1).toISOString()}'::timestamptz`;
  const at = (g: string) => `(${end} - ${g} * ((${end} - ${since}) / 2000))`;
  await db.knex.raw(
    `INSERT INTO emails (id, event_id, project_id, contact_id, from_email, to_email, subject, html, status, partition_at, created_at)
     SELECT uuidv7(${at('g')} - now()), uuidv7(${at('g')} - now()), c.project_id, c.id, 'a@example.com', 'r' || g || '@example.org', 's', 'h',
            CASE WHEN g % 500 = 0 THEN 'QUEUED' WHEN g % 700 = 0 THEN 'SENDING' ELSE 'SENT' END, ${at('g')}, ${at('g')}
     FROM contacts c CROSS JOIN generate_series(1, 2000) g`);
  await db.knex.raw(
    `INSERT INTO events (id, project_id, name, email_id, created_at)
     SELECT uuidv7((e.created_at - now()) + interval '1 second'), e.project_id, 'email.sent', e.id, e.created_at FROM emails e`);
  await db.knex.raw(
    `INSERT INTO raw_messages (id, project_id, content, size)
     SELECT uuidv7(${at('g * 10')} - now()), p, '\\x00'::bytea, 1 FROM unnest(?::uuid[]) p CROSS JOIN generate_series(1, 200) g`, [projects]);
  // Campaigns: the batch reads those of the project still sending.
  await db.knex.raw(`INSERT INTO campaigns (project_id, name, subject, body, audience_type, status) SELECT p, 'c' || g, 's', 'b', 'ALL', CASE WHEN g = 1 THEN 'SENDING' ELSE 'SENT' END
    FROM unnest(?::uuid[]) p CROSS JOIN generate_series(1, 40) g`, [projects]);
  await db.knex.raw('ANALYZE');
}, 180_000);
afterAll(async () => { await db.close(); });

test.each(['emails', 'events', 'raw_messages'] as const)('a bounded delete batch of one project\'s %s reads an index of each partition', async (table) => {
  const p = await explain(trimSql(table, table), trimBindings(table, projectId, new Date(Date.now() - 90 * DAY), 2000));
  // The project's rows before the cutoff through an index of each partition (its primary key or another that leads with
  // project_id), never a partition read whole.
  expect(p).toMatch(new RegExp(`Index (Only )?Scan (using|on) ${table}_\\w+_p\\d{6}`));
  expect(p).toMatch(/Index Cond: \(+.*project_id = /);
  expect(p).not.toMatch(/Seq Scan/);
  // The files an email still to be sent needs, through the project's status index.
  if (table === 'raw_messages') expect(p).toMatch(/emails_project_status_idx/);
});

test('the oldest email still to be sent: the queue\'s and the claims\' partial indexes', async () => {
  const p = await explain(OLDEST_PENDING_SQL, []);
  expect(p).toMatch(/emails_queue_idx/);
  expect(p).toMatch(/emails_claims_idx/);
  expect(p).not.toMatch(/Seq Scan/);
});

test('an email by id reads the partitions its id\'s time names (one, two near a month\'s start), through their primary key', async () => {
  const { id } = await db.knex('emails').where({ project_id: projectId }).orderBy('id').offset(1000).first('id');
  const p = await explain(`SELECT * FROM emails WHERE project_id = ?::uuid AND id = ?::uuid AND partition_at BETWEEN herald_email_lo(?::uuid) AND herald_email_hi(?::uuid)`, [projectId, id, id, id]);
  expect(p).toMatch(/emails_pkey/);
  expect(p).not.toMatch(/Seq Scan/);
  const scanned = p.match(/Scan using emails_pkey\S*/g) ?? [];
  expect(scanned.length).toBeGreaterThanOrEqual(1);
  expect(scanned.length).toBeLessThanOrEqual(3); // its month, the one before (the 8 days' lag), the default
});

test('an event naming an email reads it (webhook payload, campaign results) from the partitions its id names, and from all only when it is not there', async () => {
  const { id: near, to_email: nearTo } = await db.knex('emails').where({ project_id: projectId }).orderBy('id').offset(1000).first('id', 'to_email');
  // A campaign's email written long after its campaign's first batch: its partition_at three months before its id's time.
  const [{ id: far }] = await db.knex.raw(
    `INSERT INTO emails (project_id, from_email, to_email, subject, html, status, partition_at)
     VALUES (?::uuid, 'a@example.com', 'late@example.org', 's', 'h', 'SENT', now() - interval '90 days') RETURNING id`, [projectId]).then((r) => r.rows);
  await db.knex('webhook_endpoints').insert({ project_id: projectId, url: 'http://127.0.0.1:9/', events: ['email.bounced'], secret: Buffer.alloc(32) });
  const analyse = async (emailId: string) => {
    const trx = await db.knex.transaction();
    try {
      const { rows } = await trx.raw(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${RECORD_EVENTS_SQL}`,
        [projectId, [null], ['email.bounced'], [null], [emailId], ['{}']] as Knex.RawBinding[]);
      const plan = rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      const { payload } = await trx('webhook_deliveries').where({ project_id: projectId, type: 'email.bounced' }).first('payload');
      // The partitions of emails whose primary key was read (the others planned but pruned as the lookup ran, or never reached).
      const read = (plan.match(/Scan (using \S+ )?on emails_\w+ \w+ \(actual rows=/g) ?? []).length;
      return { read, to: (payload as { data: { to?: string } }).data.to };
    } finally {
      await trx.rollback();
    }
  };
  const partitions = (await db.knex.raw(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'emails'::regclass`)).rows[0].n as number;
  const atHome = await analyse(near);
  expect(atHome.to).toBe(nearTo);
  expect(atHome.read).toBeGreaterThanOrEqual(1);
  expect(atHome.read).toBeLessThanOrEqual(3); // its month, the one before (the 8 days' lag), the default
  const late = await analyse(far);
  expect(late.to).toBe('late@example.org');
  expect(late.read).toBeGreaterThan(3); // not in its id's window: then every partition
  expect(late.read).toBeLessThanOrEqual(partitions + 3);
});
