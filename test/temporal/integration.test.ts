import { TEST_SECRET } from '../support/app';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { createActivities } from '../../activities';
import { startExecutionDispatcher } from '../../engine/executionDispatcher';
import { createTemporalEngine, startTemporalWorker } from '../../engine/temporal';
import type { Engine, WorkerHandle } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { createMailer, type Mailer } from '../../mail/transport';
import { addDomain } from '../../projects/service';
import { workflowId } from '../../workflows/registry';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { DAY, stepClock, waitForExecutions } from '../support/automations';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/processes';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * The end-to-end send scenario on the cluster engine: a Temporal worker (workflow + rate-limited delivery workers,
 * engine/temporal.ts) and the Temporal engine behind the real API, against a real Temporal server at TEMPORAL_ADDRESS.
 *
 * Run it against a server that no other Herald worker polls (e.g. `temporal server start-dev`, or the compose file's
 * `temporal` service with the `worker` service scaled to 0): the task queue names are fixed (workflows/policy.ts), so
 * another deployment's workers would take this test's tasks and look for its emails in their own database.
 *
 * Without TEMPORAL_ADDRESS (no Temporal server can run where Herald is built and tested), it prints one line and
 * registers one skipped test whose name says why.
 */

const SKIP_REASON = 'skipped: no Temporal server (set TEMPORAL_ADDRESS to run the Temporal integration suite)';
const address = process.env.TEMPORAL_ADDRESS?.trim();
const namespace = process.env.TEMPORAL_NAMESPACE?.trim() || 'default';

if (!address) {
  process.stdout.write(`${SKIP_REASON}\n`);
  test.skip(SKIP_REASON, () => undefined);
} else {
  describe(`Temporal end to end at ${address} (namespace ${namespace}): POST /v1/send → workflow → rate-limited delivery activity → SMTP`, () => {
    const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
    let smtp: TestSmtpServer;
    let mailer: Mailer;
    let worker: WorkerHandle;
    let engine: Engine;
    let db: TestDatabase;
    let t: TestContext;
    let connection: Connection;
    let client: Client;
    let executions: { stop(): Promise<void> };

    beforeAll(async () => {
      smtp = await startSmtpServer();
      db = await createTestDatabase();
      mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
      engine = await createTemporalEngine({ address, namespace, log, connectTimeoutMs: 5000 });
      const activities = createActivities({ knex: db.knex, mailer, log, secret: TEST_SECRET, publicUrl: 'http://herald.test', engine });
      worker = await startTemporalWorker({ address, namespace, log, activities, sendRatePerSecond: 100 });
      executions = startExecutionDispatcher({ engine, knex: db.knex, log, pollMs: 50 });
      t = await createTestContext({ engine, db });
      await addDomain(t.project.id, 'example.com', true);
      // A client of our own, only to look at the workflow executions the engine started (same TLS/API key settings).
      connection = await Connection.connect({ ...loadClientConnectConfig().connectionOptions, address, connectTimeout: '5s' });
      client = new Client({ connection, namespace });
    }, 120_000);

    afterAll(async () => {
      // Workers first (they hand back what is in flight), then what they use.
      await executions?.stop();
      await worker?.stop();
      await engine?.close();
      await connection?.close();
      if (t) await t.close(); // the HTTP server and the database
      else await db?.close();
      mailer?.close();
      await smtp?.close();
    }, 60_000);

    const emailRow = (emailId: string) => t.db.knex('emails').where({ project_id: t.project.id, id: emailId }).first();

    async function send(body: Record<string, unknown>): Promise<string> {
      const res = await t.http().post('/v1/send').set(bearer(t.project.secretKey)).send(body);
      expect(res.status).toBe(200);
      return res.body.data.emails[0].email as string;
    }

    test('a send is delivered through Temporal: the message reaches the SMTP server and the row is SENT', async () => {
      const before = smtp.received.length;
      const emailId = await send({
        to: { email: 'ada@example.org', name: 'Ada' },
        from: { email: 'hi@example.com', name: 'Herald' },
        subject: 'Hi {{name}}',
        body: '<p>Hello {{name}}</p>',
        data: { name: 'Ada' },
        headers: { 'X-Test': 'temporal' },
      });

      const received = await smtp.waitFor(before + 1, 60_000);
      const mail = received[before]!;
      expect(mail.parsed.subject).toBe('Hi Ada');
      expect(mail.parsed.html).toContain('<p>Hello Ada</p>');
      expect(mail.parsed.headers.get('x-test')).toBe('temporal');
      expect(mail.parsed.messageId).toBe(`<${emailId}@example.com>`);

      const row = await waitFor('the email row to be SENT', async () => {
        const r = await emailRow(emailId);
        return r?.status === 'SENT' ? r : undefined;
      }, 30_000);
      expect(row.message_id).toBe(`<${emailId}@example.com>`);
      expect(row.dispatched_at).not.toBeNull();

      // The workflow execution is there to inspect (Temporal UI shows the same), under the email's business id.
      const handle = client.workflow.getHandle(workflowId.deliverEmail({ projectId: t.project.id, emailId }));
      await expect(handle.result()).resolves.toEqual({ status: 'SENT', messageId: `<${emailId}@example.com>` });
      const description = await handle.describe();
      expect(description.type).toBe('deliverEmail');
      expect(description.taskQueue).toBe('herald');
      expect(description.status.name).toBe('COMPLETED');
    }, 120_000);

    test('starting the same workflow id again is harmless: no error, no second run, nothing sent twice', async () => {
      const before = smtp.received.length;
      const emailId = await send({ to: 'grace@example.org', from: 'hi@example.com', subject: 'Once', body: '<p>once</p>' });
      const ref = { projectId: t.project.id, emailId };
      const id = workflowId.deliverEmail(ref);
      // While it may still run (USE_EXISTING joins it) …
      await expect(engine.start('deliverEmail', ref, { id })).resolves.toBeUndefined();
      await smtp.waitFor(before + 1, 60_000);
      const handle = client.workflow.getHandle(id);
      await handle.result();
      const { runId } = await handle.describe();
      // … and after it finished (REJECT_DUPLICATE refuses a new run; the engine treats that as done).
      await expect(engine.start('deliverEmail', ref, { id })).resolves.toBeUndefined();
      await expect(engine.start('deliverEmail', ref, { id })).resolves.toBeUndefined();

      expect((await handle.describe()).runId).toBe(runId);
      // Give a (wrong) second run time to deliver before counting; the row is final either way.
      await new Promise((r) => setTimeout(r, 1000));
      expect(smtp.received.length).toBe(before + 1);
      expect((await emailRow(emailId)).status).toBe('SENT');
      expect(await t.db.knex('events').where({ project_id: t.project.id, email_id: emailId }).count('* as n').first()).toEqual({ n: '1' });
    }, 120_000);

    test('cancel of an unknown workflow id, and of a finished one, is a no-op', async () => {
      await expect(engine.cancel(`email-${randomUUID()}`)).resolves.toBeUndefined();
      await expect(engine.cancel(`no-such-workflow-${randomUUID()}`)).resolves.toBeUndefined();

      const emailId = await send({ to: 'linus@example.org', from: 'hi@example.com', subject: 'Done', body: '<p>done</p>' });
      const id = workflowId.deliverEmail({ projectId: t.project.id, emailId });
      await waitFor('the email row to be SENT', async () => ((await emailRow(emailId))?.status === 'SENT' ? true : undefined), 60_000);
      await client.workflow.getHandle(id).result();
      await expect(engine.cancel(id)).resolves.toBeUndefined();
      expect((await client.workflow.getHandle(id).describe()).status.name).toBe('COMPLETED');
      expect((await emailRow(emailId)).status).toBe('SENT');
    }, 120_000);

    async function automation(event: string, steps: object[]): Promise<string> {
      const res = await t.http().post('/workflows').set(bearer(t.project.secretKey)).send({ name: event, enabled: true, trigger: { type: 'EVENT', event }, steps });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    }

    test('automation: a tracked event starts a Temporal workflow execution-<id> that waits out a stepped 3-day delay and sends', async () => {
      const key = bearer(t.project.secretKey);
      const template = (await t.http().post('/templates').set(key).send({ name: 'Later', subject: 'Later', body: '<p>later</p>', from: 'hi@example.com' })).body.data.id;
      const wf = await automation('temporal_signup', [
        { id: 'wait', type: 'DELAY', config: { amount: 3, unit: 'days' }, next: 'mail' },
        { id: 'mail', type: 'SEND_EMAIL', config: { template } },
      ]);
      const before = smtp.received.length;
      await t.http().post('/v1/track').set(key).send({ email: 'tina@example.org', event: 'temporal_signup' });
      const [waiting] = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING', 1, 60_000);
      const handle = client.workflow.getHandle(workflowId.runAutomation({ executionId: waiting!.id }));
      expect((await handle.describe()).type).toBe('runAutomation');
      await stepClock(t.db.knex, 3 * DAY); // a wake signal through the outbox; the row's deadline has passed
      await waitForExecutions(t.http, key, wf, (x) => x.status === 'COMPLETED', 1, 60_000);
      await smtp.waitFor(before + 1, 60_000);
      await expect(handle.result()).resolves.toBe('COMPLETED');
    }, 180_000);

    test('automation: cancelling the execution in Temporal (as the UI does) leaves the row CANCELLED, like disabling the workflow', async () => {
      const key = bearer(t.project.secretKey);
      const wf = await automation('temporal_cancel', [{ id: 'wait', type: 'WAIT_FOR_EVENT', config: { event: 'never' } }]);
      await t.http().post('/v1/track').set(key).send({ email: 'carl@example.org', event: 'temporal_cancel' });
      const [waiting] = await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING', 1, 60_000);
      const handle = client.workflow.getHandle(workflowId.runAutomation({ executionId: waiting!.id }));
      await handle.cancel();
      const [x] = await waitForExecutions(t.http, key, wf, (e) => e.status === 'CANCELLED', 1, 60_000);
      expect(x!.completedAt).not.toBeNull();
      expect((await handle.describe()).status.name).toBe('CANCELLED');
    }, 180_000);
  });
}
