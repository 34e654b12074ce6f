import { recordEvents } from '../../db/queries/events';
import { dispatchExecutions } from '../../worker/executionDispatcher';
import type { Engine } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { bearer, createTestContext, type TestContext } from '../support/app';

/**
 * The execution dispatcher against a recording engine (what it told, in order; no workflow runs): the outbox is
 * cleared only for what the engine accepted, wake-ups always go, and starts wait while AUTOMATION_MAX_RUNNING
 * executions are running.
 */
let t: TestContext;
const told: string[] = [];
let refuse = false;
const engine: Engine = {
  kind: 'embedded',
  waits: 'parked',
  start: async (_wf, _input, opts) => { if (refuse) throw new Error('engine away'); told.push(`start ${opts.id}`); },
  signal: async (id, name) => { if (refuse) throw new Error('engine away'); told.push(`${name} ${id}`); },
  cancel: async () => undefined,
  close: async () => undefined,
};
const log = createLogger('silent');

beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

test('starts at most maxRunning executions; the rest wait in the outbox until running ones end; wake-ups always go', async () => {
  const key = bearer(t.project.secretKey);
  await t.http().post('/workflows').set(key).send({ name: 'w', enabled: true, allowReentry: true, trigger: { type: 'EVENT', event: 'burst' }, steps: [{ id: 'x', type: 'EXIT' }] });
  const { knex } = t.db;
  const contact = (await t.http().post('/contacts').set(key).send({ email: 'b@example.org' })).body.data.id;
  await knex.transaction((trx) => recordEvents(trx, t.project.id, Array.from({ length: 10 }, () => ({ name: 'burst', contactId: contact }))));
  const outbox = () => knex('automation_executions').where({ project_id: t.project.id }).whereNotNull('outbox').count('* as n').first().then((r) => Number(r!.n));

  refuse = true; // the engine is away: nothing is cleared, everything stays for the next claim
  expect(await dispatchExecutions(engine, knex, log, 200, 3)).toBe(0);
  expect(await outbox()).toBe(10);
  refuse = false;

  expect(await dispatchExecutions(engine, knex, log, 200, 3)).toBe(3);
  expect(told).toHaveLength(3);
  expect(await dispatchExecutions(engine, knex, log, 200, 3)).toBe(0); // 3 running: no room
  expect(await outbox()).toBe(7);

  // Two end, one waits (live: it still holds worker memory on this engine) and gets a wake-up: the wake-up goes
  // regardless of the limit, and two more may start.
  const started = await knex('automation_executions').where({ project_id: t.project.id }).whereNull('outbox').orderBy('id').pluck('id');
  await knex('automation_executions').whereIn('id', started.slice(0, 2)).update({ status: 'COMPLETED' });
  await knex('automation_executions').where('id', started[2]).update({ status: 'WAITING', outbox: 'WAKE' });
  told.length = 0;
  expect(await dispatchExecutions(engine, knex, log, 200, 3)).toBe(3);
  expect(told[0]).toBe(`wake execution-${started[2]}`);
  expect(told.slice(1).every((c) => c.startsWith('start execution-'))).toBe(true);
  expect(await outbox()).toBe(5);
});

test('a parked execution gets a new run when its deadline comes or an event wakes it, with what its row holds', async () => {
  const { knex } = t.db;
  await knex('automation_executions').where({ project_id: t.project.id }).update({ status: 'COMPLETED', outbox: null });
  const [x, y] = await knex('automation_executions').where({ project_id: t.project.id }).orderBy('id').limit(2).pluck('id');
  const resume = { steps: [{ id: 'w', type: 'DELAY', config: { amount: 1, unit: 'days' } }], at: 'w', seq: 4 };
  await knex('automation_executions').whereIn('id', [x, y]).update({ status: 'WAITING', parked: true, resume: JSON.stringify(resume), run: 2, wait_until: knex.raw("now() + interval '1 day'") });
  const inputs: unknown[] = [];
  const recording: Engine = { ...engine, start: async (_wf, input, opts) => { inputs.push(input); told.push(`start ${opts.id}`); } };
  told.length = 0;
  expect(await dispatchExecutions(recording, knex, log, 200, 3)).toBe(0); // not due, not woken: nothing
  await knex('automation_executions').where('id', x).update({ wait_until: knex.raw("now() - interval '1 second'") });
  await knex('automation_executions').where('id', y).update({ outbox: 'WAKE' });
  expect(await dispatchExecutions(recording, knex, log, 200, 3)).toBe(2);
  expect(told.sort()).toEqual([`start execution-${x}-3`, `start execution-${y}-3`].sort());
  expect(inputs[0]).toMatchObject({ projectId: t.project.id, ...resume, resume: true });
  const rows = await knex('automation_executions').whereIn('id', [x, y]).select('parked', 'run', 'resume', 'outbox');
  expect(rows).toEqual([{ parked: false, run: 3, resume: null, outbox: null }, { parked: false, run: 3, resume: null, outbox: null }]);
});
