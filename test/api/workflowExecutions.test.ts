import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { executionsOf, stepClock, waitForExecutions, type ExecutionJson } from '../support/automations';
import { createTestDatabase } from '../support/db';
import { startTestEngine, type TestEngine } from '../support/engine';
import { waitFor } from '../support/processes';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * An execution's page on the embedded engine (DBOS): GET /workflows/:id/executions/:executionId with its trace (the
 * steps taken, their times and outcomes: the branch a CONDITION chose, how a wait ended, the EXIT that ended it), and
 * POST …/cancel: a waiting execution CANCELLED at once in its row and stopped in the engine, audited; an ended one 409;
 * another project's or an unknown one 404.
 */
let smtp: TestSmtpServer;
let eng: TestEngine;
let t: TestContext;
let key: { Authorization: string };
let templateId: string;

beforeAll(async () => {
  smtp = await startSmtpServer();
  const db = await createTestDatabase();
  eng = await startTestEngine(db, smtp.url);
  t = await createTestContext({ engine: eng.engine, db });
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  const res = await t.http().post('/templates').set(key).send({ name: 'Hello', subject: 'Hello {{ email }}', body: '<p>Hello</p>', from: 'hello@example.com' });
  templateId = res.body.data.id;
});
afterAll(async () => {
  await eng.stop();
  await t.close();
  await smtp.close();
});

const MINUTE = 60_000;
const finished = (x: ExecutionJson) => !['RUNNING', 'WAITING'].includes(x.status);

async function workflow(event: string, steps: object[]): Promise<string> {
  const res = await t.http().post('/workflows').set(key).send({ name: `on ${event}`, enabled: true, trigger: { type: 'EVENT', event }, steps });
  if (res.status !== 201) throw new Error(`POST /workflows: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

async function track(email: string, event: string, data: object = {}): Promise<void> {
  const res = await t.http().post('/v1/track').set(bearer(t.project.publicKey)).send({ email, event, data });
  expect(res.status).toBe(200);
}

async function detail(wf: string, id: string) {
  const res = await t.http().get(`/workflows/${wf}/executions/${id}`).set(key);
  expect(res.status).toBe(200);
  return res.body.data as ExecutionJson & { traceTruncated: boolean; trace: {
    seq: number; stepId: string; outcome: string; branch: string | null; wokenBy: string | null; error: string | null; startedAt: string; endedAt: string | null;
  }[] };
}

const pro = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

test('the trace: a delay ended by its deadline, the branch a condition chose, the send; times in order', async () => {
  const wf = await workflow('trace_started', [
    { id: 'pause', type: 'DELAY', config: { amount: 1, unit: 'minutes' }, next: 'check' },
    { id: 'check', type: 'CONDITION', config: { filter: pro }, branches: { yes: 'mail-pro', no: 'mail-free' } },
    { id: 'mail-pro', type: 'SEND_EMAIL', config: { template: templateId } },
    { id: 'mail-free', type: 'SEND_EMAIL', config: { template: templateId } },
  ]);
  await track('tracer@example.org', 'trace_started', { plan: 'free' });
  const [waiting] = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING');
  const during = await detail(wf, waiting!.id);
  expect(during).toMatchObject({ contactEmail: 'tracer@example.org', status: 'WAITING', currentStepId: 'pause', traceTruncated: false });
  expect(during.trace).toEqual([expect.objectContaining({ seq: 1, stepId: 'pause', outcome: 'WAITING', wokenBy: null, endedAt: null })]);

  await stepClock(t.db.knex, MINUTE);
  const [x] = await waitForExecutions(t.http, key, wf, finished);
  expect(x!.status).toBe('COMPLETED');
  const done = await detail(wf, x!.id);
  expect(done.trace.map(({ seq, stepId, outcome, branch, wokenBy }) => ({ seq, stepId, outcome, branch, wokenBy }))).toEqual([
    { seq: 1, stepId: 'pause', outcome: 'DONE', branch: null, wokenBy: 'timeout' },
    { seq: 2, stepId: 'check', outcome: 'DONE', branch: 'no', wokenBy: null },
    { seq: 3, stepId: 'mail-free', outcome: 'DONE', branch: null, wokenBy: null },
  ]);
  // Each step ends when the next begins; the last when the execution completed.
  for (let i = 0; i < done.trace.length - 1; i++) expect(done.trace[i]!.endedAt).toBe(done.trace[i + 1]!.startedAt);
  expect(done.trace[2]!.endedAt).toBe(done.completedAt);
  expect(Date.parse(done.trace[0]!.startedAt)).toBeLessThanOrEqual(Date.parse(done.trace[2]!.startedAt));
  expect(Date.parse(done.updatedAt)).toBeGreaterThanOrEqual(Date.parse(done.startedAt));
  await waitFor('the mail', () => (smtp.received.some((m) => m.envelopeTo[0] === 'tracer@example.org') ? true : undefined));
});

test('the trace: a wait ended by the awaited event, and the EXIT step the execution ended at', async () => {
  const wf = await workflow('cart_opened', [
    { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'cart_paid', timeout: { amount: 1, unit: 'days' } }, next: 'leave' },
    { id: 'leave', type: 'EXIT' },
  ]);
  await track('buyer@example.org', 'cart_opened');
  await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING');
  await track('buyer@example.org', 'cart_paid');
  const [x] = await waitForExecutions(t.http, key, wf, finished);
  expect(x).toMatchObject({ status: 'EXITED', currentStepId: 'leave' });
  const { trace } = await detail(wf, x!.id);
  expect(trace.map(({ stepId, outcome, wokenBy }) => ({ stepId, outcome, wokenBy }))).toEqual([
    { stepId: 'await', outcome: 'DONE', wokenBy: 'event' },
    { stepId: 'leave', outcome: 'DONE', wokenBy: null },
  ]);
});

test('cancel: a waiting execution is CANCELLED at once and takes no further step; again is 409; the list filters by status', async () => {
  const wf = await workflow('cancel_me', [
    { id: 'pause', type: 'DELAY', config: { amount: 1, unit: 'minutes' }, next: 'mail' },
    { id: 'mail', type: 'SEND_EMAIL', config: { template: templateId } },
  ]);
  await track('stopped@example.org', 'cancel_me');
  await track('kept@example.org', 'cancel_me');
  const waiting = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING', 2);
  const stopped = waiting.find((x) => x.contactEmail === 'stopped@example.org')!;

  const res = await t.http().post(`/workflows/${wf}/executions/${stopped.id}/cancel`).set(key);
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ id: stopped.id, status: 'CANCELLED', contactEmail: 'stopped@example.org', currentStepId: 'pause' });
  expect(res.body.data.completedAt).not.toBeNull();
  expect(res.body.data.waitingUntil).toBeUndefined();
  // Its engine run (a one-minute wait is not parked) is cancelled too.
  await waitFor('the DBOS workflow cancelled', async () => (
    (await t.db.knex('dbos.workflow_status').where({ workflow_uuid: `execution-${stopped.id}` }).first('status'))?.status === 'CANCELLED' ? true : undefined));
  const audit = await t.db.knex('audit_log').where({ project_id: t.project.id, operation: 'cancelWorkflowExecution' }).first();
  expect(audit).toMatchObject({ resource_type: 'execution', resource_id: stopped.id, actor_kind: 'key' });

  // The clock passes the delay: the other contact is mailed, the cancelled one is not.
  await stepClock(t.db.knex, MINUTE);
  await waitForExecutions(t.http, key, wf, finished, 2);
  await waitFor('the kept contact\'s mail', () => (smtp.received.some((m) => m.envelopeTo[0] === 'kept@example.org') ? true : undefined));
  await new Promise((r) => setTimeout(r, 300));
  expect(smtp.received.filter((m) => m.envelopeTo[0] === 'stopped@example.org')).toHaveLength(0);
  const { trace, status } = await detail(wf, stopped.id);
  expect(status).toBe('CANCELLED');
  expect(trace).toEqual([expect.objectContaining({ stepId: 'pause', outcome: 'CANCELLED' })]);

  const again = await t.http().post(`/workflows/${wf}/executions/${stopped.id}/cancel`).set(key);
  expect(again.status).toBe(409);
  expect(again.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('CANCELLED') });
  const kept = (await executionsOf(t.http, key, wf, '&status=COMPLETED'));
  expect(kept.map((x) => x.contactEmail)).toEqual(['kept@example.org']);
  const completedCancel = await t.http().post(`/workflows/${wf}/executions/${kept[0]!.id}/cancel`).set(key);
  expect(completedCancel.status).toBe(409);
});

test('cancel: another project\'s execution, an unknown id and another workflow\'s execution are 404', async () => {
  const wf = await workflow('foreign_check', [{ id: 'pause', type: 'DELAY', config: { amount: 1, unit: 'days' } }]);
  await track('mine@example.org', 'foreign_check');
  const [x] = await waitForExecutions(t.http, key, wf, (e) => e.status === 'WAITING');
  const other = await t.newProject();
  const foreign = await t.http().post(`/workflows/${wf}/executions/${x!.id}/cancel`).set(bearer(other.secretKey));
  expect(foreign.status).toBe(404);
  expect(foreign.body.error.code).toBe('NOT_FOUND');
  // Its list too, though the workflow has executions (a page that has rows answers without looking the workflow up).
  const foreignList = await t.http().get(`/workflows/${wf}/executions`).set(bearer(other.secretKey));
  expect([foreignList.status, foreignList.body.error?.code]).toEqual([404, 'NOT_FOUND']);
  expect((await t.http().get(`/workflows/${wf}/executions?status=WAITING`).set(key)).body.data.items.map((e: { id: string }) => e.id)).toEqual([x!.id]);
  const otherWf = await workflow('elsewhere', [{ id: 'pause', type: 'DELAY', config: { amount: 1, unit: 'days' } }]);
  expect((await t.http().post(`/workflows/${otherWf}/executions/${x!.id}/cancel`).set(key)).status).toBe(404);
  expect((await t.http().post(`/workflows/${wf}/executions/0197a3c5-0f18-7a63-9d2e-4b6c8e0a2f5d/cancel`).set(key)).status).toBe(404);
  expect((await t.http().post(`/workflows/${wf}/executions/not-an-id/cancel`).set(key)).status).toBe(404);
  // Still waiting: none of those touched it.
  expect((await detail(wf, x!.id)).status).toBe('WAITING');
});
