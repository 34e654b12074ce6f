import { executionSteps } from '../../automations/executions';
import { createLogger } from '../../logging/logger';
import { bearer, createTestContext, TEST_SECRET, type TestContext } from '../support/app';
import { DAY, executionsOf } from '../support/automations';

/**
 * A wait's deadline and the looks at it (beginWait, checkWait) against the execution's row, with and without the
 * workflow's clock (WaitClock): Temporal passes its own time, which its time-skipping test server moves days ahead of
 * the database's; the row counts from, and compares with, the later of the two clocks.
 */
let t: TestContext;
const activities = () => executionSteps({ knex: t.db.knex, log: createLogger('silent'), secret: TEST_SECRET, publicUrl: 'http://herald.test' });
const HOUR = 60 * 60_000;

beforeAll(async () => {
  t = await createTestContext();
});
afterAll(async () => {
  await t.close();
});

/** A started execution of a one-step DELAY journey, through the API (no engine: its row waits in the outbox). */
async function execution(event: string) {
  const key = bearer(t.project.secretKey);
  const step = { id: 'wait', type: 'DELAY' as const, config: { amount: 3, unit: 'days' as const } };
  const wf = (await t.http().post('/workflows').set(key).send({ name: event, enabled: true, trigger: { type: 'EVENT', event }, steps: [step] })).body.data.id as string;
  await t.http().post('/v1/track').set(key).send({ email: `${event}@example.org`, event });
  const [x] = await executionsOf(t.http, key, wf);
  return { ref: { projectId: t.project.id, executionId: x!.id }, step };
}

const remainingDays = (s: { state: string; remainingMs?: number | null }) => (s.state === 'WAITING' ? Math.round((s.remainingMs! / DAY) * 100) / 100 : s.state);

test('with the workflow\'s clock ahead, the deadline counts from it, and the wait ends when that clock reaches it', async () => {
  const a = activities();
  const { ref, step } = await execution('ahead');
  const start = Date.now() + 10 * DAY; // the time-skipping server has skipped 10 days already
  expect(remainingDays(await a.beginWait({ ...ref, seq: 1, step, now: start }))).toBe(3);
  expect(remainingDays(await a.checkWait({ ...ref, stepId: 'wait', now: start + 2 * DAY }))).toBe(1);
  // The database's clock alone still sees 13 days to go.
  expect(remainingDays(await a.checkWait({ ...ref, stepId: 'wait' }))).toBe(13);
  expect(await a.checkWait({ ...ref, stepId: 'wait', now: start + 3 * DAY })).toEqual({ state: 'DONE', by: 'timeout' });
  expect((await t.db.knex('automation_executions').where({ id: ref.executionId }).first('status')).status).toBe('RUNNING');
});

test('a workflow clock behind the database\'s (a stale workflow task, a retried activity) changes nothing: the later clock counts', async () => {
  const a = activities();
  const { ref, step } = await execution('behind');
  expect(remainingDays(await a.beginWait({ ...ref, seq: 1, step, now: Date.now() - HOUR }))).toBe(3);
  expect(remainingDays(await a.checkWait({ ...ref, stepId: 'wait', now: Date.now() - 5 * DAY }))).toBe(3);
  const { wait_until: until } = await t.db.knex('automation_executions').where({ id: ref.executionId }).first('wait_until');
  expect(Math.abs((until as Date).getTime() - (Date.now() + 3 * DAY))).toBeLessThan(60_000);
});
