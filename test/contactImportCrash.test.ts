import type { ChildProcess } from 'node:child_process';
import { createEmbeddedEngine } from '../engine/embedded';
import type { Engine } from '../engine/types';
import { createLogger } from '../logging/logger';
import { bearer, createTestContext, type TestContext } from './support/app';
import { createTestDatabase } from './support/db';
import { exited, killGroup, spawnWorker, waitFor } from './support/processes';

/**
 * A contact import survives its worker (issue 30, "Bad input and faults"): the API in this process, the embedded
 * engine's worker a process of its own (bin/worker.ts), SIGKILLed in the middle of a 40,000-row import and started
 * again under its EXECUTOR_ID. DBOS recovers the workflow, whose next batch starts at the checkpoint the last
 * committed batch left: exactly the file's contacts, none twice, none lost, every row counted once.
 */
jest.setTimeout(180_000);
const ROWS = 40_000;
let t: TestContext;
let engine: Engine;
const children: ChildProcess[] = [];

beforeAll(async () => {
  const db = await createTestDatabase();
  engine = await createEmbeddedEngine({ databaseUrl: db.url, log: createLogger('silent') });
  t = await createTestContext({ engine, db });
});
afterAll(async () => {
  for (const c of children) killGroup(c);
  await engine.close();
  await t.close();
});

const worker = () => {
  const child = spawnWorker({ DATABASE_URL: t.db.url, SMTP_URL: 'smtp://127.0.0.1:9', EXECUTOR_ID: 'import-crash' });
  children.push(child);
  return child;
};

test('a worker SIGKILLed in the middle of an import and restarted: exactly the file\'s contacts, each row counted once', async () => {
  const key = bearer(t.project.secretKey);
  const file = ['email,n,plan', ...Array.from({ length: ROWS }, (_, i) => `crash${i}@example.com,${i},${i % 2 ? 'pro' : 'free'}`)].join('\r\n');
  const res = await t.http().post('/contacts/imports').set(key).set('Content-Type', 'text/csv')
    .query({ columns: JSON.stringify([{ column: 'email', to: 'email' }, { column: 'n', to: 'data', key: 'n', type: 'number' }, { column: 'plan', to: 'data', key: 'plan' }]) })
    .send(Buffer.from(file));
  expect(res.status).toBe(202);
  const id = res.body.data.id;
  const progress = async () => (await t.http().get(`/contacts/imports/${id}`).set(key)).body.data;

  const first = worker();
  const at = await waitFor('a quarter of the rows merged', async () => {
    const p = await progress();
    return p.rows.read >= ROWS / 4 ? p.rows.read as number : undefined;
  }, 120_000, 10);
  killGroup(first, 'SIGKILL');
  await exited(first);
  const atKill = await progress();
  expect(atKill.status).toBe('RUNNING');
  expect(atKill.rows.read).toBeLessThan(ROWS);
  console.log(`import crash: worker killed with ${atKill.rows.read} of ${ROWS} rows merged (seen ${at})`);

  const restarted = worker();
  const done = await waitFor('the import COMPLETED', async () => {
    const p = await progress();
    return p.status === 'COMPLETED' ? p : undefined;
  }, 120_000, 100);
  expect(done.rows).toEqual({ read: ROWS, created: ROWS, updated: 0, skipped: 0, failed: 0 });
  const counts = await t.db.knex('contacts').where('project_id', t.project.id)
    .select(t.db.knex.raw('count(*)::int AS n, count(DISTINCT email)::int AS d, count(DISTINCT (data->>\'n\'))::int AS v, min((data->>\'n\')::int) AS lo, max((data->>\'n\')::int) AS hi'));
  expect(counts[0]).toEqual({ n: ROWS, d: ROWS, v: ROWS, lo: 0, hi: ROWS - 1 });
  expect(await t.db.knex('contact_import_errors').where('import_id', id).first()).toBeUndefined();
  expect(await t.db.knex('contact_import_chunks').where('import_id', id).first()).toBeUndefined();
  killGroup(restarted, 'SIGTERM');
  await exited(restarted);
});
