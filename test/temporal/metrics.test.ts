import { WORKFLOW_TASK_QUEUE } from '../../workflows/policy';
import { freePort } from '../../scripts/temporalDevServer';
import { bearer } from '../support/app';
import { waitFor } from '../support/processes';
import { parseExposition, type Exposition } from '../support/prometheus';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

/**
 * GET /metrics on the cluster engine, with Herald's real processes on a Temporal server: the API (metrics on its own
 * port) counts the workflow starts it asks of Temporal; a worker, with METRICS_PORT, serves what it did: the campaign's
 * emails it inserted and the deliveries it made. The worker runs with the metrics sinks of the workflow bundle.
 */
describeTemporal(__filename, 'Temporal: metrics of the API and of a worker', (temporal) => {
  let workerMetricsPort = 0;
  beforeAll(async () => { workerMetricsPort = await freePort(); });
  const c = heraldCluster(temporal, { workers: 1, workerEnv: () => ({ METRICS_PORT: String(workerMetricsPort) }) });
  const key = () => bearer(c.project.secretKey);

  const scrape = async (url: string): Promise<Exposition> => {
    const res = await fetch(url);
    expect(res.status).toBe(200);
    return parseExposition(await res.text());
  };
  const worker = () => scrape(`http://127.0.0.1:${workerMetricsPort}/metrics`);
  const api = () => scrape(`${c.apiUrl}/metrics`);

  test('a campaign: its start counted by the API (engine temporal), its emails and deliveries by the worker', async () => {
    await c.workersReady();
    // The worker polls Temporal (what workersReady sees) a moment before its metrics listener is up (bin/runtime.ts).
    await waitFor('the worker\'s metrics listener', async () => ((await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`).catch(() => undefined))?.ok ? true : undefined), 30_000, 200);
    for (const email of ['t1@example.org', 't2@example.org']) expect((await c.http().post('/contacts').set(key()).send({ email, subscribed: true })).status).toBe(201);
    const [apiBefore, workerBefore] = [await api(), await worker()];
    const created = await c.http().post('/campaigns').set(key()).send({ name: 'Scraped', subject: 'Hi', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'ALL' });
    expect(created.status).toBe(201);
    expect((await c.http().post(`/campaigns/${created.body.data.id}/send`).set(key()).send({})).status).toBe(200);
    await waitFor('the campaign SENT', async () => ((await c.http().get(`/campaigns/${created.body.data.id}`).set(key())).body.data.status === 'SENT' ? true : undefined), 60_000, 200);

    const starts = (m: Exposition) => m.value('herald_engine_workflow_starts_total', { engine: 'temporal', workflow: 'sendCampaign' }) ?? 0;
    expect(starts(await api()) - starts(apiBefore)).toBe(1);
    const w = await waitFor('the worker\'s delivery counter', async () => {
      const m = await worker();
      return m.value('herald_deliveries_total', { outcome: 'sent' })! - workerBefore.value('herald_deliveries_total', { outcome: 'sent' })! >= 2 ? m : undefined;
    }, 30_000, 200);
    expect(w.value('herald_emails_accepted_total', { way: 'campaign' })! - workerBefore.value('herald_emails_accepted_total', { way: 'campaign' })!).toBe(2);
    expect(w.value('herald_deliveries_total', { outcome: 'sent' })! - workerBefore.value('herald_deliveries_total', { outcome: 'sent' })!).toBe(2);
    // The campaign completed: no failed run counted.
    expect(w.value('herald_engine_workflow_failures_total', { engine: 'temporal', workflow: 'sendCampaign' }) ?? 0).toBe(0);
    // The worker serves no API: its metrics listener answers /metrics alone.
    expect((await fetch(`http://127.0.0.1:${workerMetricsPort}/health`)).status).toBe(404);
  });

  test('a run that fails its execution is counted by the worker that ran it, through the bundle\'s sink', async () => {
    const before = await worker();
    // A campaign run for ids that are no UUIDs: its activities fail with a data error (a PermanentError, not retried),
    // the one that would record the campaign FAILED too, so the run fails its execution.
    const handle = await c.client.workflow.start('sendCampaign', { taskQueue: WORKFLOW_TASK_QUEUE, workflowId: 'metrics-failing-campaign', args: [{ projectId: 'not-a-uuid', campaignId: 'not-a-uuid' }] });
    await expect(handle.result()).rejects.toThrow();
    const failures = (m: Exposition) => m.value('herald_engine_workflow_failures_total', { engine: 'temporal', workflow: 'sendCampaign' }) ?? 0;
    const after = await waitFor('the failed run counted', async () => {
      const m = await worker();
      return failures(m) - failures(before) >= 1 ? m : undefined;
    }, 30_000, 200);
    expect(failures(after) - failures(before)).toBe(1);
  });
});
