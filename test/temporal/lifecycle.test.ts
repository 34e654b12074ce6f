import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DOMAIN_CHECKS_SCHEDULE } from '../../domains/checks';
import { createMonthlyPartitions, listPartitions, monthStart, monthSuffix, partitioned } from '../../db/partitions';
import { RETENTION_INTERVAL_MS, RETENTION_SCHEDULE } from '../../retention/schedule';
import { getDomain } from '../../db/queries/domains';
import { createDomain } from '../../domains/rows';
import { dkimRecordName, dkimRecordValue } from '../../domains/records';
import { bearer, TEST_SECRET } from '../support/app';
import { DAY, stepClock, waitForExecutions, type ExecutionJson } from '../support/automations';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { waitFor } from '../support/processes';
import type { Received } from '../support/smtp';
import { addGroupContacts, heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../../scripts/temporal.js') as { findTemporal(): string | undefined };
const run = promisify(execFile);

/**
 * The life of Herald's workflows on a real Temporal server (the run's dev server, this file's namespace), with the
 * real API and worker processes: a scheduled campaign across a worker restart, automations through their waits and
 * cancels, the domain re-check Schedule, and what an operator finds with Herald's search attributes.
 */
describeTemporal(__filename, 'Temporal lifecycle: schedules, waits, cancels and visibility with real processes', (temporal) => {
  // Every DNS question of the workers goes to a loopback server. The re-check interval is not the default (60): the
  // Schedule must take it from the workers' setting; and long enough that only the test's trigger runs it here.
  let dns: TestDnsServer;
  beforeAll(async () => {
    dns = await startDnsServer();
  });
  const workerEnv = () => ({ DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500', DNS_TRIES: '1', DOMAIN_CHECK_INTERVAL_MINUTES: '30' });
  const c = heraldCluster(temporal, { workerEnv });
  afterAll(async () => {
    await dns?.close();
  });
  const key = () => bearer(c.project.secretKey);

  // ---- helpers ----

  const to = (m: Received) => m.envelopeTo[0]!;
  const receivedBy = (address: string) => c.smtp.received.filter((m) => to(m) === address);
  const receivedOf = (group: string) => c.smtp.received.filter((m) => to(m).startsWith(`${group}-`));

  const addContacts = (group: string, n: number) => addGroupContacts(c, group, n);

  /** A DRAFT campaign to the contacts of `group`; answers its id. */
  async function createCampaign(group: string): Promise<string> {
    const res = await c.http().post('/campaigns').set(key()).send({
      name: `Campaign ${group}`, subject: `News for ${group}`, body: '<p>Hello {{ email }}</p>', from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: group }] }] },
    });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  const campaign = async (id: string) => (await c.http().get(`/campaigns/${id}`).set(key())).body.data as { status: string; scheduledAt: string | null; startedAt: string | null; completedAt: string | null };

  /** Workflow executions (every run) that a visibility query finds. */
  async function list(query: string): Promise<{ workflowId: string; runId: string; type: string; status: string }[]> {
    const found: { workflowId: string; runId: string; type: string; status: string }[] = [];
    for await (const w of c.client.workflow.list({ query })) found.push({ workflowId: w.workflowId, runId: w.runId, type: w.type, status: w.status.name });
    return found;
  }

  /** Waits until visibility lists the workflow and no run of it is Running; answers its runs. */
  async function closedInVisibility(workflowId: string, timeoutMs = 60_000) {
    return waitFor(`${workflowId} closed in visibility`, async () => {
      const runs = await list(`WorkflowId="${workflowId}"`);
      return runs.length > 0 && runs.every((r) => r.status !== 'RUNNING') ? runs : undefined;
    }, timeoutMs, 250);
  }

  async function template(name: string): Promise<string> {
    const res = await c.http().post('/templates').set(key()).send({ name, subject: `${name} for {{ email }}`, body: `<p>${name}</p>`, from: 'hello@example.com' });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  async function automation(event: string, steps: object[]): Promise<string> {
    const res = await c.http().post('/workflows').set(key()).send({ name: `on ${event}`, enabled: true, trigger: { type: 'EVENT', event }, steps });
    if (res.status !== 201) throw new Error(`POST /workflows: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data.id as string;
  }

  async function track(email: string, event: string): Promise<void> {
    const res = await c.http().post('/v1/track').set(bearer(c.project.publicKey)).send({ email, event });
    expect(res.status).toBe(200);
  }

  const execution = async (id: string) => c.db.knex('automation_executions').where({ project_id: c.project.id, id }).first();
  const engineStatus = async (id: string) => (await c.client.workflow.getHandle(`execution-${id}`).describe()).status.name;
  const waiting = (x: ExecutionJson) => x.status === 'WAITING';

  /** Waits until `n` messages reached `address`, then a moment longer, and answers all that did. */
  async function mailTo(address: string, n = 1): Promise<Received[]> {
    await waitFor(`${n} message(s) to ${address}`, () => (receivedBy(address).length >= n ? true : undefined), 60_000, 50);
    await new Promise((r) => setTimeout(r, 1000));
    return receivedBy(address);
  }

  // ---- 1. scheduled campaigns ----

  test('a scheduled campaign fires once, at its time, after the workers were SIGKILLed and restarted; one cancelled before its time sends nothing', async () => {
    await addContacts('sched', 5);
    await addContacts('sched-cancelled', 3);
    const id = await createCampaign('sched');
    const cancelled = await createCampaign('sched-cancelled');
    // Far enough ahead for both workers to be killed and to start again (a bundle build each) before it.
    const scheduledAt = new Date(Date.now() + 75_000);
    for (const campaignId of [id, cancelled]) {
      const res = await c.http().post(`/campaigns/${campaignId}/send`).set(key()).send({ scheduledAt: scheduledAt.toISOString() });
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe('SCHEDULED');
    }
    // The schedule is Temporal's (a delayed start), not a worker's.
    await waitFor('both workflows in visibility', async () => ((await list(`HeraldKind="campaign" AND (WorkflowId="campaign-${id}" OR WorkflowId="campaign-${cancelled}")`)).length === 2 ? true : undefined), 30_000, 250);

    const res = await c.http().post(`/campaigns/${cancelled}/cancel`).set(key());
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('CANCELLED');
    const cancelledRuns = await closedInVisibility(`campaign-${cancelled}`, 120_000);
    const closedBeforeItsTime = Date.now() < scheduledAt.getTime();
    console.log(`cancelled scheduled campaign: its workflow ended ${closedBeforeItsTime ? 'before' : 'only after'} its scheduled time (${cancelledRuns.map((r) => r.status).join(', ')})`);
    expect(cancelledRuns.map((r) => r.status)).toEqual(['CANCELLED']);

    await c.stopWorkers('SIGKILL');
    c.startWorker('w1');
    c.startWorker('w2');
    await c.workersReady();
    // What this test is about: the restart happened before the campaign's time, and nothing fired early.
    if (Date.now() >= scheduledAt.getTime()) throw new Error('the workers took longer to restart than the campaign\'s lead; raise the lead');
    console.log(`workers SIGKILLed and started again ${Math.round((scheduledAt.getTime() - Date.now()) / 1000)} s before the campaign's time`);
    expect((await campaign(id)).status).toBe('SCHEDULED');
    expect(receivedOf('sched')).toHaveLength(0);

    await waitFor('the scheduled campaign SENT', async () => ((await campaign(id)).status === 'SENT' ? true : undefined), 120_000, 250);
    const sent = await campaign(id);
    expect(Date.parse(sent.startedAt!)).toBeGreaterThanOrEqual(Date.parse(sent.scheduledAt!));
    expect(Date.parse(sent.scheduledAt!)).toBe(scheduledAt.getTime());
    await new Promise((r) => setTimeout(r, 1500));
    const mail = receivedOf('sched');
    expect(mail.map(to).sort()).toEqual([1, 2, 3, 4, 5].map((i) => `sched-${i}@example.org`).sort());
    expect((await c.client.workflow.getHandle(`campaign-${id}`).describe()).status.name).toBe('COMPLETED');

    // Its time has passed: the cancelled one sent nothing and queued nothing.
    expect(receivedOf('sched-cancelled')).toHaveLength(0);
    expect(Number((await c.db.knex('emails').where({ project_id: c.project.id, campaign_id: cancelled }).count('* as n').first())!.n)).toBe(0);
    expect((await campaign(cancelled)).status).toBe('CANCELLED');
  }, 240_000);

  // ---- 2. automations ----

  test('DELAY of 3 days, crossed by stepping the clock: a Temporal timer and a wake signal, then the mail', async () => {
    const tpl = await template('Later');
    const wf = await automation('lc_delay', [
      { id: 'wait', type: 'DELAY', config: { amount: 3, unit: 'days' }, next: 'mail' },
      { id: 'mail', type: 'SEND_EMAIL', config: { template: tpl } },
    ]);
    await track('delay@example.org', 'lc_delay');
    const [x] = await waitForExecutions(c.http, key(), wf, waiting, 1, 60_000);
    expect(await engineStatus(x!.id)).toBe('RUNNING');
    await stepClock(c.db.knex, 3 * DAY);
    await waitForExecutions(c.http, key(), wf, (e) => e.status === 'COMPLETED', 1, 60_000);
    const handle = c.client.workflow.getHandle(`execution-${x!.id}`);
    expect(await handle.result()).toBe('COMPLETED');
    // The wait was a Temporal timer, ended by the `wake` signal that the moved deadline sent through the outbox.
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.some((e) => e.timerStartedEventAttributes)).toBe(true);
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes).map((e) => e.workflowExecutionSignaledEventAttributes!.signalName)).toContain('wake');
    const mail = await mailTo('delay@example.org');
    expect(mail).toHaveLength(1);
    expect(mail[0]!.parsed.subject).toBe('Later for delay@example.org');
  }, 120_000);

  const waitThenMail = (event: string, awaited: string, tpl: string) => automation(event, [
    { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: awaited, timeout: { amount: 2, unit: 'days' } }, next: 'mail' },
    { id: 'mail', type: 'SEND_EMAIL', config: { template: tpl } },
  ]);

  test('WAIT_FOR_EVENT woken by POST /v1/track (the contact\'s own event), then the mail', async () => {
    const tpl = await template('Thanks');
    const wf = await waitThenMail('lc_cart', 'lc_paid', tpl);
    await track('buyer@example.org', 'lc_cart');
    const [x] = await waitForExecutions(c.http, key(), wf, waiting, 1, 60_000);
    expect(x!.waitingFor).toBe('lc_paid');
    await track('someone-else@example.org', 'lc_paid'); // not this contact's: it waits on
    await track('buyer@example.org', 'lc_paid');
    await waitForExecutions(c.http, key(), wf, (e) => e.status === 'COMPLETED', 1, 60_000);
    expect((await execution(x!.id)).woken_by_event_id).not.toBeNull();
    expect(await c.client.workflow.getHandle(`execution-${x!.id}`).result()).toBe('COMPLETED');
    expect(await mailTo('buyer@example.org')).toHaveLength(1);
    expect(receivedBy('someone-else@example.org')).toHaveLength(0);
  }, 120_000);

  test('WAIT_FOR_EVENT without its event: its timeout (2 days, clock stepped) ends the wait and the journey takes its timeout branch', async () => {
    const reminder = await template('Reminder');
    const thanks = await template('Welcome aboard');
    // A WAIT_FOR_EVENT has one `next`, taken on the event or at the timeout; the branch is a CONDITION on the event.
    const wf = await automation('lc_quote', [
      { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'lc_accepted', timeout: { amount: 2, unit: 'days' } }, next: 'accepted' },
      {
        id: 'accepted', type: 'CONDITION', branches: { yes: 'thanks', no: 'remind' },
        config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'event.lc_accepted', operator: 'triggered' }] }] } },
      },
      { id: 'thanks', type: 'SEND_EMAIL', config: { template: thanks } },
      { id: 'remind', type: 'SEND_EMAIL', config: { template: reminder } },
    ]);
    await track('idle@example.org', 'lc_quote');
    const [x] = await waitForExecutions(c.http, key(), wf, waiting, 1, 60_000);
    expect(x!.waitingFor).toBe('lc_accepted');
    await stepClock(c.db.knex, DAY); // not yet: a day is left
    await new Promise((r) => setTimeout(r, 2000));
    expect((await execution(x!.id)).status).toBe('WAITING');
    await stepClock(c.db.knex, DAY);
    const [done] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'COMPLETED', 1, 60_000);
    expect(done!.currentStepId).toBe('remind');
    expect((await execution(x!.id)).woken_by_event_id).toBeNull(); // the timeout ended the wait, not an event
    expect(await c.client.workflow.getHandle(`execution-${x!.id}`).result()).toBe('COMPLETED');
    const mail = await mailTo('idle@example.org');
    expect(mail.map((m) => m.parsed.subject)).toEqual(['Reminder for idle@example.org']);
  }, 120_000);

  test('disabling the workflow through the API cancels a waiting execution: row CANCELLED, Temporal execution Canceled, no mail', async () => {
    const tpl = await template('Never');
    const wf = await waitThenMail('lc_disable', 'lc_never', tpl);
    await track('disabled@example.org', 'lc_disable');
    const [x] = await waitForExecutions(c.http, key(), wf, waiting, 1, 60_000);
    const res = await c.http().patch(`/workflows/${wf}`).set(key()).send({ enabled: false });
    expect(res.status).toBe(200);
    await waitForExecutions(c.http, key(), wf, (e) => e.status === 'CANCELLED', 1, 30_000);
    await waitFor('the Temporal execution closed', async () => ((await engineStatus(x!.id)) !== 'RUNNING' ? true : undefined), 60_000, 250);
    expect(await engineStatus(x!.id)).toBe('CANCELLED');
    expect((await closedInVisibility(`execution-${x!.id}`)).map((r) => r.status)).toEqual(['CANCELLED']);
    // Its deadline passing changes nothing now.
    await stepClock(c.db.knex, 3 * DAY);
    await new Promise((r) => setTimeout(r, 2000));
    expect((await execution(x!.id)).status).toBe('CANCELLED');
    expect(receivedBy('disabled@example.org')).toHaveLength(0);
  }, 120_000);

  test('`temporal workflow cancel` on execution-<id> (as Temporal UI does): row CANCELLED, Temporal execution Canceled, no mail', async () => {
    const cli = temporalCli.findTemporal();
    expect(cli).toBeDefined();
    const tpl = await template('Never either');
    const wf = await waitThenMail('lc_ui_cancel', 'lc_never', tpl);
    await track('ui-cancelled@example.org', 'lc_ui_cancel');
    const [x] = await waitForExecutions(c.http, key(), wf, waiting, 1, 60_000);
    await run(cli!, ['workflow', 'cancel', '--address', temporal.address, '--namespace', temporal.namespace, '--workflow-id', `execution-${x!.id}`], { timeout: 60_000 });
    const [done] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'CANCELLED', 1, 30_000);
    expect(done!.completedAt).not.toBeNull();
    await waitFor('the Temporal execution closed', async () => ((await engineStatus(x!.id)) !== 'RUNNING' ? true : undefined), 60_000, 250);
    expect(await engineStatus(x!.id)).toBe('CANCELLED');
    // The row is final: the awaited event no longer wakes anything.
    await track('ui-cancelled@example.org', 'lc_never');
    await new Promise((r) => setTimeout(r, 2000));
    expect((await execution(x!.id)).status).toBe('CANCELLED');
    expect(receivedBy('ui-cancelled@example.org')).toHaveLength(0);
  }, 120_000);

  // ---- 3. the domain re-check Schedule ----

  test('the Schedule domain-checks exists at DOMAIN_CHECK_INTERVAL_MINUTES; triggered as the UI does, it verifies what DNS publishes and fails what it lacks', async () => {
    const schedule = c.client.schedule.getHandle(DOMAIN_CHECKS_SCHEDULE);
    const described = await waitFor('the schedule', async () => schedule.describe().catch(() => undefined), 60_000, 250);
    expect(described.spec.intervals?.map((i) => i.every)).toEqual([30 * 60_000]);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'checkDomains', taskQueue: 'herald' });

    const published = (await createDomain(c.db.knex, TEST_SECRET, c.project.id, 'published.example.net'))!;
    dns.set(dkimRecordName(published.domain, published.dkimSelector!), { TXT: [dkimRecordValue(published.dkimPublicKey!)] });
    const missing = (await createDomain(c.db.knex, TEST_SECRET, c.project.id, 'missing.example.net'))!;
    expect([published.status, missing.status]).toEqual(['PENDING', 'PENDING']);

    const taken = (await schedule.describe()).info.numActionsTaken;
    const triggeredAt = Date.now();
    await schedule.trigger();
    await waitFor('published VERIFIED and missing FAILED', async () => {
      const [p, m] = await Promise.all([getDomain(c.db.knex, c.project.id, published.id), getDomain(c.db.knex, c.project.id, missing.id)]);
      return p!.status === 'VERIFIED' && m!.status === 'FAILED' ? true : undefined;
    }, 120_000, 250);
    expect((await getDomain(c.db.knex, c.project.id, missing.id))!.records).toMatchObject({ DKIM: 'FAILED' });
    expect(dns.count(dkimRecordName(missing.domain, missing.dkimSelector!))).toBeGreaterThan(0);
    // The trigger's run: an action of the Schedule, a checkDomains workflow named after it, that walked every domain.
    const info = (await schedule.describe()).info;
    expect(info.numActionsTaken).toBeGreaterThan(taken);
    // The trigger's action, not the interval's: a run the Schedule took on its own at a slot (:00, :30) just before the
    // trigger read the domains before these two were made (a CI run that crossed 11:30 found it, checked: 1). A slot's
    // action is scheduled at the slot itself; the trigger's when it was asked.
    const atSlot = (a: { scheduledAt: Date }) => a.scheduledAt.getTime() % (30 * 60_000) === 0;
    const action = info.recentActions.find((a) => a.takenAt.getTime() >= triggeredAt - 1000 && !atSlot(a))!;
    expect(action.action.workflow.workflowId).toMatch(new RegExp(`^${DOMAIN_CHECKS_SCHEDULE}-`));
    const result = await c.client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId).result();
    expect(result).toEqual({ checked: 3 }); // example.com, published, missing
    const runs = await waitFor('the triggered run in visibility', async () => {
      const all = await list(`WorkflowId="${action.action.workflow.workflowId}" AND HeraldKind="domain-checks"`);
      return all.length === 1 && all[0]!.status === 'COMPLETED' ? all : undefined;
    }, 30_000, 250);
    expect(runs[0]!.type).toBe('checkDomains');
  }, 240_000);

  // ---- 3b. the retention Schedule ----

  test('the Schedule retention exists (hourly); triggered, its run makes the months ahead, drops a month past RETENTION_DAYS and ends', async () => {
    // The workers create the Schedule once started (a bundle build each: run alone, this test may come first).
    await c.workersReady();
    const schedule = c.client.schedule.getHandle(RETENTION_SCHEDULE);
    const described = await waitFor('the schedule', async () => schedule.describe().catch(() => undefined), 60_000, 250);
    expect(described.spec.intervals?.map((i) => i.every)).toEqual([RETENTION_INTERVAL_MS]);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'applyRetention', taskQueue: 'herald' });
    // A month of events two years back, past the default RETENTION_DAYS (365).
    const old = monthStart(new Date(), -24);
    await createMonthlyPartitions(c.db.knex, partitioned('events'), old, monthStart(old, 1));
    const name = `events${monthSuffix(old)}`;
    const taken = (await schedule.describe()).info.numActionsTaken;
    const triggeredAt = Date.now();
    await schedule.trigger();
    const info = await waitFor('the triggered action', async () => {
      const i = (await schedule.describe()).info;
      return i.numActionsTaken > taken ? i : undefined;
    }, 60_000, 250);
    // The trigger's action, not the interval's: a run the Schedule took on its own at a slot (:00, :30) just before the
    // trigger read the domains before these two were made (a CI run that crossed 11:30 found it, checked: 1). A slot's
    // action is scheduled at the slot itself; the trigger's when it was asked.
    const atSlot = (a: { scheduledAt: Date }) => a.scheduledAt.getTime() % (30 * 60_000) === 0;
    const action = info.recentActions.find((a) => a.takenAt.getTime() >= triggeredAt - 1000 && !atSlot(a))!;
    expect(action.action.workflow.workflowId).toMatch(new RegExp(`^${RETENTION_SCHEDULE}-`));
    const result = await c.client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId).result() as { dropped: string[] };
    expect(result.dropped).toContain(name);
    expect((await listPartitions(c.db.knex, partitioned('events'))).map((p) => p.name)).not.toContain(name);
  }, 120_000);

  // ---- 4. visibility as an operator uses it ----

  test('visibility: HeraldCampaignId finds the campaign\'s workflow, with a static summary naming it; HeraldKind + HeraldProjectId find executions', async () => {
    await addContacts('seen', 2);
    const id = await createCampaign('seen');
    expect((await c.http().post(`/campaigns/${id}/send`).set(key()).send({})).status).toBe(200);
    await waitFor('SENT', async () => ((await campaign(id)).status === 'SENT' ? true : undefined), 60_000, 250);

    const found = await waitFor('the campaign by HeraldCampaignId', async () => {
      const xs = await list(`HeraldCampaignId="${id}"`);
      return xs.length > 0 && xs.every((x) => x.status === 'COMPLETED') ? xs : undefined;
    }, 30_000, 250);
    expect(found.map((x) => [x.workflowId, x.type])).toEqual([[`campaign-${id}`, 'sendCampaign']]);
    const description = await c.client.workflow.getHandle(`campaign-${id}`).describe();
    expect(await description.staticSummary()).toBe(`Campaign "Campaign seen" · project "Temporal cluster" · 2 recipient(s)`);
    expect(description.raw.executionConfig?.userMetadata?.summary).toBeTruthy();
    expect(description.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])).toEqual(expect.arrayContaining([
      ['HeraldKind', 'campaign'], ['HeraldProjectId', c.project.id], ['HeraldCampaignId', id],
    ]));

    const tpl = await template('Seen');
    const wf = await automation('lc_seen', [{ id: 'mail', type: 'SEND_EMAIL', config: { template: tpl } }]);
    await track('seen-a@example.org', 'lc_seen');
    await track('seen-b@example.org', 'lc_seen');
    const xs = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'COMPLETED', 2, 60_000);
    const executions = await waitFor('the executions by HeraldKind and HeraldProjectId', async () => {
      const ws = await list(`HeraldKind="automation" AND HeraldProjectId="${c.project.id}"`);
      return xs.every((x) => ws.some((w) => w.workflowId === `execution-${x.id}`)) ? ws : undefined;
    }, 30_000, 250);
    expect(executions.every((w) => w.type === 'runAutomation' && w.workflowId.startsWith('execution-'))).toBe(true);
    // The executions of the earlier tests are there too; one automation's by HeraldAutomationId.
    expect(executions.length).toBeGreaterThan(xs.length);
    const ofWorkflow = await list(`HeraldAutomationId="${wf}"`);
    expect(ofWorkflow.map((w) => w.workflowId).sort()).toEqual(xs.map((x) => `execution-${x.id}`).sort());
    expect(await mailTo('seen-a@example.org')).toHaveLength(1);
    expect(await mailTo('seen-b@example.org')).toHaveLength(1);
  }, 120_000);
});
