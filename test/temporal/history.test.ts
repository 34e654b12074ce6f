import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startDevServer, type DevServer } from '../../scripts/temporalDevServer';
import { bearer } from '../support/app';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../../scripts/temporal.js') as { findTemporal(): string | undefined };

/** The server's history limits here: a workflow whose history passes HISTORY_ERROR events is terminated by it. */
const SUGGEST_CONTINUE_AS_NEW = 20;
const HISTORY_ERROR = 100;

/** An SMTP server that takes `delayMs` to accept each message: deliveries that last, whatever the send rate. */
async function startSlowSmtp(delayMs: number): Promise<{ url: string; recipients: string[]; close(): Promise<void> }> {
  const recipients: string[] = [];
  const server = new SMTPServer({
    authOptional: true, disabledCommands: ['STARTTLS'], logger: false, closeTimeout: 100,
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => setTimeout(() => {
        recipients.push(...session.envelope.rcptTo.map((r) => r.address));
        callback(null, 'Message queued');
      }, delayMs));
    },
  });
  server.on('error', () => undefined);
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.server.address() as AddressInfo).port)));
  return { url: `smtp://127.0.0.1:${port}`, recipients, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * Temporal's history limit (the item 4): on a dev server of this file's own whose limits are tiny (a
 * continue-as-new suggested at 20 events, termination at 100), a campaign whose drain loop alone writes more than 100
 * events (about 11 per look at the deliveries, one look every 2 to 4 s while they trickle out of a slow SMTP server in
 * bursts: workflows/sendCampaign.ts drainPollMs) completes, because the loop continues as new when the server
 * suggests it.
 */
describeTemporal(__filename, 'Temporal history limits: a long campaign continues as new and completes', (shared) => {
  let server: DevServer;
  let smtp: Awaited<ReturnType<typeof startSlowSmtp>>;
  beforeAll(async () => {
    // 10 pooled connections of one worker, 8 s per message: about 1.25 emails/s.
    smtp = await startSlowSmtp(8000);
  });
  const c = heraldCluster(shared, {
    workers: 1,
    workerEnv: () => ({ SMTP_URL: smtp.url }),
    temporal: async () => {
      server = await startDevServer({
        cli: temporalCli.findTemporal()!, namespaces: [shared.namespace], headless: true,
        dynamicConfig: {
          'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW,
          'limit.historyCount.warn': 75,
          'limit.historyCount.error': HISTORY_ERROR,
        },
      });
      return { address: server.address, namespace: shared.namespace };
    },
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.close();
  }, 30_000);
  const key = () => bearer(c.project.secretKey);

  test(`a campaign that needs more than ${HISTORY_ERROR} history events completes SENT, every contact once, in a chain of runs`, async () => {
    const TOTAL = 50;
    await c.db.knex.raw(
      `INSERT INTO contacts (project_id, email, subscribed, data)
       SELECT ?::uuid, 'long-' || g || '@example.org', true, '{"group":"long"}'::jsonb FROM generate_series(1, ?::int) g`,
      [c.project.id, TOTAL],
    );
    const created = await c.http().post('/campaigns').set(key()).send({
      name: 'Long', subject: 'Long', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: 'long' }] }] },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    await c.workersReady();
    expect((await c.http().post(`/campaigns/${id}/send`).set(key()).send({})).status).toBe(200);

    await waitFor('the campaign SENT', async () => {
      const status = (await c.http().get(`/campaigns/${id}`).set(key())).body.data.status as string;
      if (status === 'FAILED' || status === 'CANCELLED') throw new Error(`the campaign ended ${status}`);
      return status === 'SENT' ? true : undefined;
    }, 150_000, 500);
    await new Promise((r) => setTimeout(r, 1000));
    expect([...smtp.recipients].sort()).toEqual(Array.from({ length: TOTAL }, (_, i) => `long-${i + 1}@example.org`).sort());

    // Every run of the workflow, oldest first: each continued as new but the last, which completed.
    const runs = await waitFor('every run in visibility', async () => {
      const all: { runId: string; status: string; events: number; start: number }[] = [];
      for await (const w of c.client.workflow.list({ query: `WorkflowId="campaign-${id}"` })) {
        all.push({ runId: w.runId, status: w.status.name, events: w.historyLength, start: w.startTime.getTime() });
      }
      return all.some((r) => r.status === 'COMPLETED') ? all.sort((a, b) => a.start - b.start) : undefined;
    }, 30_000, 250);
    const events = runs.map((r) => r.events);
    console.log(`campaign to ${TOTAL} at ~1.25/s: ${runs.length} runs of ${events.join(', ')} events (${events.reduce((a, b) => a + b, 0)} in all)`);
    expect(runs.length).toBeGreaterThan(1);
    expect(runs.map((r) => r.status)).toEqual([...runs.slice(1).map(() => 'CONTINUED_AS_NEW'), 'COMPLETED']);
    // One run could not have held it: the chain wrote more than the server's limit.
    expect(events.reduce((a, b) => a + b, 0)).toBeGreaterThan(HISTORY_ERROR);
    expect(Math.max(...events)).toBeLessThan(HISTORY_ERROR);
    const handle = c.client.workflow.getHandle(`campaign-${id}`);
    expect((await handle.describe()).runId).toBe(runs.at(-1)!.runId);
    expect(await handle.result()).toBe('SENT');
  }, 180_000);
});
