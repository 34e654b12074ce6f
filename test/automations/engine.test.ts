import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { upsertContacts } from '../../db/queries/contacts';
import { recordEvents } from '../../db/queries/events';
import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { DAY, executionsOf, stepClock, waitForExecutions, type ExecutionJson } from '../support/automations';
import { createTestDatabase } from '../support/db';
import { startTestEngine, type TestEngine } from '../support/engine';
import { waitFor } from '../support/processes';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * Automation workflows end to end on the embedded engine (DBOS): /v1/track → execution row (outbox) → the
 * interpreter → activities → the delivery queue → a real SMTP server; a loopback webhook receiver allowed by config.
 * Delays of days are crossed by stepping the clock (test/support/automations.ts stepClock), never by waiting.
 */
let smtp: TestSmtpServer;
let eng: TestEngine;
let t: TestContext;
let key: { Authorization: string };
let hookServer: http.Server;
let hookUrl: string;
const hooks: { method: string; path: string; headers: http.IncomingHttpHeaders; body: unknown }[] = [];
/** Status codes the hook server answers with next (then 200). */
let hookScript: number[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  hookServer = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c.toString(); });
    req.on('end', () => {
      hooks.push({ method: req.method!, path: req.url!, headers: req.headers, body: raw ? JSON.parse(raw) : null });
      res.statusCode = hookScript.shift() ?? 200;
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}`;
  const db = await createTestDatabase();
  eng = await startTestEngine(db, smtp.url, { webhooks: { allowPrivate: ['127.0.0.1'] } });
  t = await createTestContext({ engine: eng.engine, db });
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
});
afterAll(async () => {
  await eng.stop();
  await t.close();
  await smtp.close();
  await new Promise((r) => hookServer.close(r));
});

async function template(name: string, extra: object = {}): Promise<string> {
  const res = await t.http().post('/templates').set(key)
    .send({ name, subject: `${name} for {{ email }}`, body: `<p>${name}: {{ data.plan }}</p>`, from: 'hello@example.com', fromName: 'Acme', ...extra });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

async function workflow(event: string, steps: object[], extra: object = {}): Promise<string> {
  const res = await t.http().post('/workflows').set(key).send({ name: `on ${event}`, enabled: true, trigger: { type: 'EVENT', event }, steps, ...extra });
  if (res.status !== 201) throw new Error(`POST /workflows: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

const track = async (email: string, event: string, data: object = {}) => {
  const res = await t.http().post('/v1/track').set(bearer(t.project.publicKey)).send({ email, event, data });
  expect(res.status).toBe(200);
  return res.body.data as { contact: string; event: string };
};

const mailsTo = (email: string) => smtp.received.filter((m) => m.envelopeTo[0] === email);
const finished = (x: ExecutionJson) => !['RUNNING', 'WAITING'].includes(x.status);

test('a tracked event starts an execution that sends the template, rendered for the contact, and completes', async () => {
  const tpl = await template('Welcome');
  const wf = await workflow('signed_up', [{ id: 'welcome', type: 'SEND_EMAIL', config: { template: tpl } }]);
  const { contact } = await track('ada@example.org', 'signed_up', { plan: 'pro' });
  const [x] = await waitForExecutions(t.http, key, wf, finished);
  expect(x).toMatchObject({ workflowId: wf, contactId: contact, status: 'COMPLETED', currentStepId: 'welcome', error: null });
  expect(x!.completedAt).not.toBeNull();
  const [mail] = await waitFor('the welcome mail', () => (mailsTo('ada@example.org').length ? mailsTo('ada@example.org') : undefined));
  expect(mail!.parsed.subject).toBe('Welcome for ada@example.org');
  expect(mail!.parsed.html).toContain('<p>Welcome: pro</p>');
  // Transactional template: no bulk headers.
  expect(mail!.parsed.headers.get('list-unsubscribe')).toBeUndefined();
});

test('DELAY of 3 days: WAITING with its deadline, then on when the clock is stepped past it (not before)', async () => {
  const tpl = await template('Nudge');
  const wf = await workflow('trial_started', [
    { id: 'wait', type: 'DELAY', config: { amount: 3, unit: 'days' }, next: 'nudge' },
    { id: 'nudge', type: 'SEND_EMAIL', config: { template: tpl } },
  ]);
  const before = Date.now();
  await track('bob@example.org', 'trial_started');
  const [waiting] = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING');
  expect(waiting!.currentStepId).toBe('wait');
  expect(waiting!.waitingFor).toBeNull();
  const until = Date.parse(waiting!.waitingUntil!);
  expect(until - before).toBeGreaterThan(3 * DAY - 60_000);
  expect(until - before).toBeLessThan(3 * DAY + 60_000);

  // Parked: its first engine run has ended; the row holds where the next one begins.
  await waitFor('parked', async () => ((await t.db.knex('automation_executions').where({ id: waiting!.id }).first('parked')).parked ? true : undefined));
  expect(await t.db.knex('automation_executions').where({ id: waiting!.id }).first('parked', 'run')).toEqual({ parked: true, run: 0 });
  await stepClock(t.db.knex, 2 * DAY); // not yet: a day is left (a new run looks, and parks again)
  await new Promise((r) => setTimeout(r, 500));
  expect((await executionsOf(t.http, key, wf))[0]!.status).toBe('WAITING');
  expect(mailsTo('bob@example.org')).toHaveLength(0);

  // Parked again by the second run (not only begun: a run that had not looked yet would see the next step's days too).
  await waitFor('parked again', async () => {
    const row = await t.db.knex('automation_executions').where({ id: waiting!.id }).first('parked', 'run');
    return row.run === 1 && row.parked ? true : undefined;
  });
  await stepClock(t.db.knex, DAY);
  const [x] = await waitForExecutions(t.http, key, wf, finished);
  expect(x!.status).toBe('COMPLETED');
  // Three engine runs: the first, the look after two days, the one that went on after three.
  const runs = await t.db.knex('dbos.workflow_status').where('workflow_uuid', 'like', `execution-${x!.id}%`).orderBy('workflow_uuid').pluck('workflow_uuid');
  expect(runs).toEqual([`execution-${x!.id}`, `execution-${x!.id}-1`, `execution-${x!.id}-2`]);
  await waitFor('the nudge', () => (mailsTo('bob@example.org').length === 1 ? true : undefined));
});

test('WAIT_FOR_EVENT: resumed by that contact\'s event (not another contact\'s), or by its timeout', async () => {
  const tpl = await template('Thanks');
  const wf = await workflow('cart_created', [
    { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'purchased', timeout: { amount: 2, unit: 'days' } }, next: 'thanks' },
    { id: 'thanks', type: 'SEND_EMAIL', config: { template: tpl } },
  ]);
  await track('buyer@example.org', 'cart_created');
  await track('idle@example.org', 'cart_created');
  const waiting = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING', 2);
  expect(waiting.every((x) => x.waitingFor === 'purchased')).toBe(true);

  await track('someone-else@example.org', 'purchased');
  await track('buyer@example.org', 'purchased');
  const buyer = await waitFor('the buyer resumed', async () => {
    const xs = await executionsOf(t.http, key, wf);
    const done = xs.filter(finished);
    return done.length === 1 ? done[0] : undefined;
  });
  expect(buyer.status).toBe('COMPLETED');
  await waitFor('thanks to the buyer', () => (mailsTo('buyer@example.org').length === 1 ? true : undefined));
  expect((await executionsOf(t.http, key, wf)).filter((x) => x.status === 'WAITING')).toHaveLength(1);

  await stepClock(t.db.knex, 2 * DAY); // the idle one times out and goes on to the next step
  await waitForExecutions(t.http, key, wf, finished, 2);
  await waitFor('thanks to the idle one', () => (mailsTo('idle@example.org').length === 1 ? true : undefined));
});

test('CONDITION branches both ways on the contact as it is now; UPDATE_CONTACT; EXIT ends as EXITED', async () => {
  const wf = await workflow('scored', [
    { id: 'is-pro', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } }, branches: { yes: 'tag', no: 'stop' } },
    { id: 'tag', type: 'UPDATE_CONTACT', config: { data: { vip: true, plan: null } } },
    { id: 'stop', type: 'EXIT' },
  ]);
  const pro = await track('pro@example.org', 'scored', { plan: 'pro' });
  const free = await track('free@example.org', 'scored', { plan: 'free' });
  const xs = await waitForExecutions(t.http, key, wf, finished, 2);
  const byContact = new Map(xs.map((x) => [x.contactId, x]));
  expect(byContact.get(pro.contact)).toMatchObject({ status: 'COMPLETED', currentStepId: 'tag' });
  expect(byContact.get(free.contact)).toMatchObject({ status: 'EXITED' });
  const proContact = (await t.http().get(`/contacts/${pro.contact}`).set(key)).body.data;
  expect(proContact.data).toEqual({ vip: true }); // set, and `plan: null` deleted the key
  const freeContact = (await t.http().get(`/contacts/${free.contact}`).set(key)).body.data;
  expect(freeContact.data).toEqual({ plan: 'free' });
});

test('UPDATE_CONTACT unsubscribing records contact.unsubscribed, which triggers a workflow listening to that service event', async () => {
  const farewell = await workflow('contact.unsubscribed', [{ id: 'hook', type: 'WEBHOOK', config: { url: `${hookUrl}/farewell` } }]);
  const wf = await workflow('opted_out', [{ id: 'unsub', type: 'UPDATE_CONTACT', config: { subscribed: false } }]);
  const { contact } = await t.http().post('/contacts').set(key).send({ email: 'leaver@example.org', subscribed: true }).then((r) => ({ contact: r.body.data.id as string }));
  await track('leaver@example.org', 'opted_out');
  await waitForExecutions(t.http, key, wf, finished);
  const [x] = await waitForExecutions(t.http, key, farewell, finished);
  expect(x).toMatchObject({ contactId: contact, status: 'COMPLETED' });
  const events = (await t.http().get(`/events?contactId=${contact}&name=contact.unsubscribed`).set(key)).body.data.items;
  expect(events).toHaveLength(1);
  const hook = hooks.find((h) => h.path === '/farewell')!;
  expect(hook.body).toMatchObject({ type: 'workflow.webhook', workflowId: farewell, contact: { id: contact, email: 'leaver@example.org', subscribed: false } });
});

test('WEBHOOK: method, headers and body as configured; a 500 is retried until it succeeds', async () => {
  hookScript = [500];
  const wf = await workflow('paid', [
    { id: 'notify', type: 'WEBHOOK', config: { url: `${hookUrl}/paid`, method: 'PUT', headers: { 'X-Token': 'abc' }, body: { kind: 'paid' } } },
  ]);
  await track('payer@example.org', 'paid');
  const [x] = await waitForExecutions(t.http, key, wf, finished);
  expect(x!.status).toBe('COMPLETED');
  const calls = hooks.filter((h) => h.path === '/paid');
  expect(calls).toHaveLength(2); // the 500, then the retry
  expect(calls[1]).toMatchObject({ method: 'PUT', body: { kind: 'paid' } });
  expect(calls[1]!.headers['x-token']).toBe('abc');
  // The retry carries the key of the first attempt: the receiver can tell a repeat from a new call.
  expect(calls[1]!.headers['idempotency-key']).toBe(`${x!.id}-1`);
  expect(calls[0]!.headers['idempotency-key']).toBe(calls[1]!.headers['idempotency-key']);
});

test('WEBHOOK to a private address is refused (only 127.0.0.1 is allowed here): the execution FAILED, saying why', async () => {
  const wf = await workflow('leaked', [{ id: 'internal', type: 'WEBHOOK', config: { url: 'http://10.1.2.3/admin' } }]);
  await track('x@example.org', 'leaked');
  const [x] = await waitForExecutions(t.http, key, wf, finished);
  expect(x!.status).toBe('FAILED');
  expect(x!.error).toMatch(/internal/);
  expect(x!.error).toMatch(/private|WEBHOOK_ALLOW_PRIVATE/i);
});

test('reentry: one execution at a time per contact unless allowReentry; a finished one lets the contact enter again', async () => {
  const steps = [{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' } }];
  const once = await workflow('visit', steps);
  const many = await workflow('visit', steps, { allowReentry: true });
  await track('repeat@example.org', 'visit');
  await track('repeat@example.org', 'visit');
  await waitForExecutions(t.http, key, once, (x) => x.status === 'WAITING', 1);
  await waitForExecutions(t.http, key, many, (x) => x.status === 'WAITING', 2);
  await stepClock(t.db.knex, DAY);
  await waitForExecutions(t.http, key, once, finished, 1);
  await track('repeat@example.org', 'visit');
  await waitForExecutions(t.http, key, once, (x) => x.status === 'WAITING' || x.status === 'COMPLETED', 2);
  expect((await executionsOf(t.http, key, once, '&status=COMPLETED'))).toHaveLength(1);
});

test('disabling a workflow cancels its executions, parked in a long delay (no engine run left to stop); re-enabling starts none of them again', async () => {
  const wf = await workflow('browsing', [{ id: 'wait', type: 'DELAY', config: { amount: 10, unit: 'days' }, next: 'hook' }, { id: 'hook', type: 'WEBHOOK', config: { url: `${hookUrl}/never` } }]);
  for (const n of [1, 2, 3]) await track(`browser${n}@example.org`, 'browsing');
  const waiting = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING', 3);
  // WAITING comes first, then the run parks and ends: wait for both.
  await waitFor('the three runs parked and ended', async () => {
    const parked = await t.db.knex('automation_executions').whereIn('id', waiting.map((x) => x.id)).where('parked', true).count('* as n').first();
    const ended = await t.db.knex('dbos.workflow_status').whereIn('workflow_uuid', waiting.map((x) => `execution-${x.id}`)).where('status', 'SUCCESS').count('* as n').first();
    return Number(parked!.n) === 3 && Number(ended!.n) === 3 ? true : undefined;
  });
  const res = await t.http().patch(`/workflows/${wf}`).set(key).send({ enabled: false });
  expect(res.status).toBe(200);
  expect(res.body.data.enabled).toBe(false);
  const xs = await executionsOf(t.http, key, wf);
  expect(xs.map((x) => x.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
  expect(xs.every((x) => x.completedAt)).toBe(true);
  // A 10-day wait is parked on this engine: the first run ended when it parked, and no run of theirs is left.
  const runs = await t.db.knex('dbos.workflow_status').where('workflow_uuid', 'like', 'execution-%')
    .whereIn('workflow_uuid', waiting.map((x) => `execution-${x.id}`)).pluck('status');
  expect(runs).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
  // Even if a wake-up reached them, nothing would run: the rows are the truth.
  await stepClock(t.db.knex, 10 * DAY);
  await t.http().patch(`/workflows/${wf}`).set(key).send({ enabled: true });
  await new Promise((r) => setTimeout(r, 500));
  expect(hooks.filter((h) => h.path === '/never')).toHaveLength(0);
  expect((await executionsOf(t.http, key, wf)).map((x) => x.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
});

test('an edit does not change the path of a running execution; deleting the workflow cancels its live engine run and removes its executions', async () => {
  const wf = await workflow('edited', [{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'hours' }, next: 'a' }, { id: 'a', type: 'WEBHOOK', config: { url: `${hookUrl}/old` } }]);
  await track('editme@example.org', 'edited');
  await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING');
  const patched = await t.http().patch(`/workflows/${wf}`).set(key).send({ steps: [{ id: 'b', type: 'WEBHOOK', config: { url: `${hookUrl}/new` } }] });
  expect(patched.status).toBe(200);
  await stepClock(t.db.knex, 60 * 60 * 1000);
  await waitForExecutions(t.http, key, wf, finished);
  expect(hooks.filter((h) => h.path === '/old')).toHaveLength(1);
  expect(hooks.filter((h) => h.path === '/new')).toHaveLength(0);

  await track('editme2@example.org', 'edited'); // a new execution takes the new steps
  await waitForExecutions(t.http, key, wf, finished, 2);
  await waitFor('the new webhook', () => (hooks.some((h) => h.path === '/new') ? true : undefined));

  // A one-minute wait is not parked: its run is live in the engine, and deleting the workflow cancels that run.
  const wf2 = await workflow('doomed', [{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'minutes' } }]);
  await track('doomed@example.org', 'doomed');
  const [x] = await waitForExecutions(t.http, key, wf2, (e) => e.status === 'WAITING');
  expect((await t.http().delete(`/workflows/${wf2}`).set(key)).status).toBe(204);
  expect((await t.http().get(`/workflows/${wf2}/executions`).set(key)).status).toBe(404);
  expect(await t.db.knex('automation_executions').where({ id: x!.id }).first()).toBeUndefined();
  await waitFor('the DBOS workflow cancelled', async () => (
    (await t.db.knex('dbos.workflow_status').where({ workflow_uuid: `execution-${x!.id}` }).first('status'))?.status === 'CANCELLED' ? true : undefined));
});

test('1,000 contacts entering one workflow at once all complete, each mailed once', async () => {
  const tpl = await template('Batch');
  const wf = await workflow('imported', [
    { id: 'tag', type: 'UPDATE_CONTACT', config: { data: { imported: true } }, next: 'mail' },
    { id: 'mail', type: 'SEND_EMAIL', config: { template: tpl } },
  ]);
  // 1,000 tracked events in one transaction, as a bulk import would record them.
  const before = smtp.received.length;
  await t.db.knex.transaction(async (trx) => {
    const contacts = await upsertContacts(trx, t.project.id, Array.from({ length: 1000 }, (_, i) => ({ email: `bulk${String(i).padStart(4, '0')}@example.org` })), true);
    await recordEvents(trx, t.project.id, contacts.map((c) => ({ name: 'imported', contactId: c.contact.id })));
  });
  // Liveness bounds, not speed (bench/automations.ts measures that): at load 12 the 1,000 took over 2 minutes.
  const xs = await waitForExecutions(t.http, key, wf, finished, 1000, 420_000);
  expect(xs.every((x) => x.status === 'COMPLETED')).toBe(true);
  await smtp.waitFor(before + 1000, 180_000);
  const to = smtp.received.slice(before).map((m) => m.envelopeTo[0]);
  expect(new Set(to).size).toBe(1000);
  const tagged = await t.db.knex('contacts').where({ project_id: t.project.id }).whereRaw("data->>'imported' = 'true'").count('* as n').first();
  expect(Number(tagged!.n)).toBe(1000);
}, 660_000);
