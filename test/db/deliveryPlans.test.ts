import { createProject } from '../../projects/service';
import { RECORD_SQL } from '../../sending/delivery';
import { CLAIM_SQL } from '../../worker/deliveryQueue';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { partitionedPlan } from '../support/plans';

/**
 * The claim and the outcome write are named statements (db/prepared.ts): after five executions on a connection,
 * PostgreSQL may run them with a generic plan, planned without the values bound. Such a plan must still find the
 * emails as the custom one does: the outcome write through the primary key only (not the queue's or the claims'
 * partial indexes, which would read every QUEUED row of a running campaign), the claim through the queue's index.
 * Checked on the plan PostgreSQL makes without values (plan_cache_mode = force_generic_plan), with a campaign's 3,000
 * QUEUED emails analysed.
 */
let db: TestDatabase;
let projectId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await createProject('Plans')).id;
  await db.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ?::uuid, 'plan-' || g || '@example.org', true, '{}'::jsonb FROM generate_series(1, 3000) g`, [projectId]);
  await db.knex.raw(`INSERT INTO emails (project_id, contact_id, from_email, to_email, subject, html, priority)
    SELECT c.project_id, c.id, 'news@example.com', c.email, 'Hello', '<p>Hello</p>', 1 FROM contacts c WHERE c.project_id = ?::uuid`, [projectId]);
  await db.knex.raw('ANALYZE emails');
});
afterAll(() => db.close());

/**
 * The plan of `sql` (knex's `?` placeholders, as db/prepared.ts numbers them) for parameters of `types`: generic, or
 * custom for `values` (SQL literals).
 */
async function planOf(sql: string, types: string[], mode: 'generic' | 'custom', values: string[]): Promise<string> {
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  expect(n).toBe(types.length);
  return db.knex.transaction(async (trx) => {
    await trx.raw(`SET LOCAL plan_cache_mode = force_${mode}_plan`);
    await trx.raw(`PREPARE plan_probe (${types.join(', ')}) AS ${text}`);
    try {
      const { rows } = await trx.raw(`EXPLAIN EXECUTE plan_probe (${values.map((v, i) => `${v}::${types[i]}`).join(', ')})`);
      return partitionedPlan(rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
    } finally {
      await trx.raw('DEALLOCATE plan_probe');
    }
  });
}

/**
 * How a plan reads the emails table: its scans of it, in order. Emails are partitioned by month (db/partitions.ts): a
 * partition's scan counts as one of the table, its index by the parent's name (emails_pkey_p202611: emails_pkey).
 */
const emailScans = (plan: string) => plan.split('\n').map((l) => /(\w[\w ]*Scan)(?: using (\w+?)(?:_p\d{6}|_default|_legacy)?)? on emails(?:_p\d{6}|_default|_legacy)?\b/.exec(l))
  .filter((m) => m).map((m) => `${m![1]} ${m![2] ?? ''}`.trim());

test('the outcome write finds its emails by the primary key, in its generic plan as in its custom plan', async () => {
  const rows: { id: string; partition_at: Date }[] = await db.knex('emails').where('project_id', projectId).limit(5).select('id', 'partition_at');
  const ids = rows.map((r) => `'${r.id}'`);
  const types = ['uuid[]', 'uuid[]', 'text[]', 'text[]', 'text[]', 'int[]', 'timestamptz[]'];
  const values = [`ARRAY[${ids.map(() => `'${projectId}'`).join(',')}]`, `ARRAY[${ids.join(',')}]`, "ARRAY['SENT','SENT','SENT','SENT','SENT']",
    "ARRAY['<a@b>','<a@b>','<a@b>','<a@b>','<a@b>']", 'ARRAY[NULL,NULL,NULL,NULL,NULL]::text[]', 'ARRAY[0,0,0,0,0]',
    `ARRAY[${rows.map((r) => `'${r.partition_at.toISOString()}'`).join(',')}]`];
  const custom = emailScans(await planOf(RECORD_SQL, types, 'custom', values));
  // The first is the UPDATE's (the event effects read the rows it changed, not the table).
  expect(custom[0]).toBe('Index Scan emails_pkey');
  expect(custom.join()).not.toMatch(/emails_queue_idx|emails_claims_idx|Seq Scan/);
  const generic = await planOf(RECORD_SQL, types, 'generic', values);
  expect(emailScans(generic)).toEqual(custom);
  // Its events are email.sent and email.failed only, which a campaign's results do not count: no look-up of earlier
  // events (the campaign results' parts of EVENT_EFFECTS, a scan of each partition of events initialised per write).
  expect(generic).not.toMatch(/Scan[\w ]* on events/);
  expect(RECORD_SQL).not.toMatch(/campaign_firsts|campaign_links/);
});

test('the claim reads the emails in its generic plan as in its custom plan', async () => {
  const types = ['float8', 'int', 'int', 'float8', 'text', 'float8'];
  const values = ['0.0102', '200', '1000', '0.0102', "'plan-worker'", '0.0102'];
  const custom = emailScans(await planOf(CLAIM_SQL, types, 'custom', values));
  expect(custom[0]).toBe('Index Scan emails_queue_idx');
  expect(emailScans(await planOf(CLAIM_SQL, types, 'generic', values))).toEqual(custom);
});
