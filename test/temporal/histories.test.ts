import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { temporal as proto } from '@temporalio/proto';
import { DOMAIN_CHECKS_SCHEDULE } from '../../domains/checks';
import { bearer } from '../support/app';
import { DAY, stepClock, waitForExecutions } from '../support/automations';
import { startDnsServer } from '../support/dns';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

/**
 * Workflow histories recorded on a real Temporal server, for the replay test (replay.test.ts), which replays them
 * offline in every run: an edit to workflows/ that would break a running execution (automations wait up to 7 days at
 * a time) fails there. Each scenario runs with Herald's real processes; its history is replayed at once against the
 * current code, and written to test/temporal/histories/ only when HERALD_RECORD_HISTORIES=1 (a deliberate
 * re-recording; a normal run checks). Changes to what a recorded history did go behind ctx.patched().
 */
export const HISTORIES = path.join(__dirname, 'histories');
const RECORD = process.env.HERALD_RECORD_HISTORIES === '1';

describeTemporal(__filename, 'recorded workflow histories: each scenario on the dev server, replayed against the current code', (temporal) => {
  const c = heraldCluster(temporal, { workers: 1 });
  const key = () => bearer(c.project.secretKey);

  async function keep(name: string, workflowId: string, runId?: string): Promise<void> {
    const history = await c.client.workflow.getHandle(workflowId, runId).fetchHistory();
    // Replays against workflows/temporal.ts as it is: the recording itself must be deterministic.
    await Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows/temporal'), replayName: name }, history, workflowId);
    if (RECORD) {
      const json = proto.api.history.v1.History.fromObject(history).toJSON();
      // A failure's stack trace names this machine's paths; replay does not read it.
      const text = JSON.stringify({ workflowId, history: json }, (k, v: unknown) => (k === 'stackTrace' ? '' : v));
      fs.writeFileSync(path.join(HISTORIES, `${name}.json`), `${text}\n`);
    }
  }

  async function contacts(group: string, n: number): Promise<void> {
    for (let i = 1; i <= n; i++) await c.http().post('/contacts').set(key()).send({ email: `${group}-${i}@example.org`, data: { group } });
  }
  async function campaign(group: string): Promise<string> {
    const res = await c.http().post('/campaigns').set(key()).send({
      name: group, subject: 'News', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: group }] }] },
    });
    return res.body.data.id as string;
  }
  const status = async (id: string) => (await c.http().get(`/campaigns/${id}`).set(key())).body.data.status as string;

  test('campaign-sent: a campaign to 3 contacts, sent now', async () => {
    await contacts('sent', 3);
    const id = await campaign('sent');
    await c.http().post(`/campaigns/${id}/send`).set(key()).send({});
    await waitFor('SENT', async () => ((await status(id)) === 'SENT' ? true : undefined), 60_000, 200);
    await c.client.workflow.getHandle(`campaign-${id}`).result();
    await keep('campaign-sent', `campaign-${id}`);
  }, 120_000);

  test('campaign-cancelled: cancelled in Temporal (as the UI does) while it waits for its deliveries', async () => {
    await contacts('cancelled', 40);
    const id = await campaign('cancelled');
    await c.http().post(`/campaigns/${id}/send`).set(key()).send({});
    // The audience is stored; the workflow waits for the deliveries (14/s: about 3 s).
    await waitFor('a delivery', async () => ((await c.db.knex('emails').where({ campaign_id: id, status: 'SENT' }).first()) ? true : undefined), 60_000, 50);
    await c.client.workflow.getHandle(`campaign-${id}`).cancel();
    await waitFor('CANCELLED', async () => ((await status(id)) === 'CANCELLED' ? true : undefined), 60_000, 200);
    await waitFor('the workflow closed', async () => ((await c.client.workflow.getHandle(`campaign-${id}`).describe()).status.name === 'CANCELLED' ? true : undefined), 30_000, 200);
    await keep('campaign-cancelled', `campaign-${id}`);
  }, 120_000);

  test('campaign-failed: a campaign whose audience PostgreSQL cannot evaluate (a stored segment with year 0), FAILED at once', async () => {
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'updatedAt', operator: 'greaterThan', value: '0000-01-01T00:00:00Z' }] }] };
    const [segment] = await c.db.knex('segments').insert({ project_id: c.project.id, name: 'Year zero', type: 'DYNAMIC', condition: JSON.stringify(condition) }).returning('id');
    const res = await c.http().post('/campaigns').set(key()).send({ name: 'failed', subject: 'News', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: segment.id });
    const id = res.body.data.id as string;
    await c.http().post(`/campaigns/${id}/send`).set(key()).send({});
    await waitFor('FAILED', async () => ((await status(id)) === 'FAILED' ? true : undefined), 60_000, 200);
    await c.client.workflow.getHandle(`campaign-${id}`).result();
    await keep('campaign-failed', `campaign-${id}`);
  }, 120_000);

  /** An A/B campaign to `n` contacts of `group` (two variants, half of them in the sample), sent now; answers its id once it waits. */
  async function abCampaign(group: string, n: number): Promise<string> {
    await contacts(group, n);
    const res = await c.http().post('/campaigns').set(key()).send({
      name: group, subject: 'News', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: group }] }] },
      variants: [{ subject: 'News A' }, { subject: 'News B' }], abTest: { samplePercent: 50, waitMinutes: 60, metric: 'manual' },
    });
    const id = res.body.data.id as string;
    await c.http().post(`/campaigns/${id}/send`).set(key()).send({});
    await waitFor('the wait', async () => ((await c.http().get(`/campaigns/${id}`).set(key())).body.data.abTest.phase === 'WAITING' ? true : undefined), 60_000, 200);
    return id;
  }

  test('campaign-ab-winner: an A/B campaign, every Herald process restarted during its wait, the winner chosen by a person', async () => {
    const id = await abCampaign('ab-winner', 6);
    expect(await c.db.knex('emails').where({ campaign_id: id }).count({ n: '*' })).toEqual([{ n: 3 }]);
    // Every process of the cluster goes (workers killed, the API restarted); the wait is the server's and the row's.
    await c.stopWorkers('SIGKILL');
    await c.startApi();
    c.startWorker('w-after');
    await c.workersReady();
    expect((await c.http().get(`/campaigns/${id}`).set(key())).body.data).toMatchObject({ status: 'SENDING', abTest: { phase: 'WAITING' } });
    expect((await c.http().post(`/campaigns/${id}/winner`).set(key()).send({ variant: 'B' })).status).toBe(200);
    await waitFor('SENT', async () => ((await status(id)) === 'SENT' ? true : undefined), 60_000, 200);
    await c.client.workflow.getHandle(`campaign-${id}`).result();
    const emails = await c.db.knex('emails').where({ campaign_id: id, is_test: false }).select('to_email', 'variant', 'status');
    expect(emails).toHaveLength(6);
    expect(new Set(emails.map((e) => e.to_email)).size).toBe(6);
    expect(emails.filter((e) => e.variant === null).every((e) => e.status === 'SENT')).toBe(true);
    expect((await c.http().get(`/campaigns/${id}`).set(key())).body.data.abTest).toMatchObject({ winner: 'B', chosen: 'B' });
    await keep('campaign-ab-winner', `campaign-${id}`);
  }, 180_000);

  test('campaign-ab-cancelled: an A/B campaign cancelled in Temporal (as the UI does) during its wait: the API\'s cancel state', async () => {
    const id = await abCampaign('ab-cancelled', 4);
    await c.client.workflow.getHandle(`campaign-${id}`).cancel();
    await waitFor('CANCELLED', async () => ((await status(id)) === 'CANCELLED' ? true : undefined), 60_000, 200);
    await waitFor('the workflow closed', async () => ((await c.client.workflow.getHandle(`campaign-${id}`).describe()).status.name === 'CANCELLED' ? true : undefined), 30_000, 200);
    expect(await c.db.knex('emails').where({ campaign_id: id }).count({ n: '*' })).toEqual([{ n: 2 }]);
    expect((await c.http().get(`/campaigns/${id}`).set(key())).body.data).toMatchObject({ status: 'CANCELLED', abTest: { phase: 'WAITING', winner: null } });
    await keep('campaign-ab-cancelled', `campaign-${id}`);
  }, 120_000);

  async function automation(event: string, steps: object[]): Promise<string> {
    const res = await c.http().post('/workflows').set(key()).send({ name: event, enabled: true, trigger: { type: 'EVENT', event }, steps });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  test('automation-delay: DELAY 3 days (woken when its deadline moved), then SEND_EMAIL', async () => {
    const template = (await c.http().post('/templates').set(key()).send({ name: 'Later', subject: 'Later', body: '<p>later</p>', from: 'hi@example.com' })).body.data.id;
    const wf = await automation('history_delay', [
      { id: 'wait', type: 'DELAY', config: { amount: 3, unit: 'days' }, next: 'mail' },
      { id: 'mail', type: 'SEND_EMAIL', config: { template } },
    ]);
    await c.http().post('/v1/track').set(key()).send({ email: 'delay@example.org', event: 'history_delay' });
    const [x] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'WAITING', 1, 60_000);
    await stepClock(c.db.knex, 3 * DAY);
    await waitForExecutions(c.http, key(), wf, (e) => e.status === 'COMPLETED', 1, 60_000);
    await c.client.workflow.getHandle(`execution-${x!.id}`).result();
    await keep('automation-delay', `execution-${x!.id}`);
  }, 120_000);

  test('automation-event: WAIT_FOR_EVENT woken by a tracked event, then EXIT', async () => {
    const wf = await automation('history_wait', [
      { id: 'wait', type: 'WAIT_FOR_EVENT', config: { event: 'history_paid', timeout: { amount: 2, unit: 'days' } }, next: 'done' },
      { id: 'done', type: 'EXIT' },
    ]);
    await c.http().post('/v1/track').set(key()).send({ email: 'event@example.org', event: 'history_wait' });
    const [x] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'WAITING', 1, 60_000);
    await c.http().post('/v1/track').set(key()).send({ email: 'event@example.org', event: 'history_paid' });
    await waitForExecutions(c.http, key(), wf, (e) => e.status === 'EXITED', 1, 60_000);
    await c.client.workflow.getHandle(`execution-${x!.id}`).result();
    await keep('automation-event', `execution-${x!.id}`);
  }, 120_000);

  test('automation-timeout: WAIT_FOR_EVENT whose timeout passes (its deadline moved, then a wake-up), the timeout branch, SEND_EMAIL', async () => {
    const template = (await c.http().post('/templates').set(key()).send({ name: 'Reminder', subject: 'Reminder', body: '<p>still there?</p>', from: 'hi@example.com' })).body.data.id;
    const wf = await automation('history_timeout', [
      { id: 'wait', type: 'WAIT_FOR_EVENT', config: { event: 'history_bought', timeout: { amount: 2, unit: 'days' } }, next: 'bought' },
      {
        id: 'bought', type: 'CONDITION', branches: { yes: 'done', no: 'remind' },
        config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'event.history_bought', operator: 'triggered' }] }] } },
      },
      { id: 'remind', type: 'SEND_EMAIL', config: { template } },
      { id: 'done', type: 'EXIT' },
    ]);
    await c.http().post('/v1/track').set(key()).send({ email: 'timeout@example.org', event: 'history_timeout' });
    const [x] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'WAITING', 1, 60_000);
    await stepClock(c.db.knex, 2 * DAY);
    const [done] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'COMPLETED', 1, 60_000);
    expect(done!.currentStepId).toBe('remind');
    await c.client.workflow.getHandle(`execution-${x!.id}`).result();
    await keep('automation-timeout', `execution-${x!.id}`);
  }, 120_000);

  test('domain-checks: a run of the Schedule, triggered as the UI does', async () => {
    // DNS questions go to a loopback server, never out of this machine.
    const dns = await startDnsServer();
    await c.stopWorkers();
    c.startWorker('w1', { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '200', DNS_TRIES: '1' });
    await c.workersReady();
    const schedule = c.client.schedule.getHandle(DOMAIN_CHECKS_SCHEDULE);
    await waitFor('the schedule', async () => (await schedule.describe().then(() => true, () => undefined)), 60_000, 200);
    await schedule.trigger();
    const run = await waitFor('a completed run', async () => {
      for await (const w of c.client.workflow.list({ query: 'WorkflowType="checkDomains" AND ExecutionStatus="Completed"' })) return w;
      return undefined;
    }, 60_000, 500);
    await keep('domain-checks', run.workflowId, run.runId);
    // It walked the project's domain (the operator vouched for it, so its status stays; docs/api.md "Domains").
    expect(await c.client.workflow.getHandle(run.workflowId, run.runId).result()).toEqual({ checked: 1 });
    await dns.close();
  }, 120_000);
});
