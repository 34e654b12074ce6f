import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServer, type DevServer } from '../../scripts/temporalDevServer';
import { bearer } from '../support/app';
import { runHerald, waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../../scripts/temporal.js') as { findTemporal(): string | undefined };

/**
 * Herald's cluster when its Temporal server goes away: a dev server of this file's own, keeping its state in a file,
 * is stopped for 30 s under a steady /v1/send load and started again on the same port; and an API process pointed at
 * no server at all fails fast, naming the setting.
 */
describeTemporal(__filename, 'Temporal outage: a server of the file\'s own, stopped and started again under load', (shared) => {
  let dir: string;
  let server: DevServer;
  let port: number;
  const namespace = shared.namespace;
  const startServer = () => startDevServer({
    cli: temporalCli.findTemporal()!, namespaces: [namespace], headless: true, port,
    dbFile: path.join(dir, 'temporal.sqlite'), logFile: path.join(dir, 'temporal.log'),
  });
  const c = heraldCluster(shared, {
    // Fast enough to keep up with the load: the test is about what the outage does, not about the rate.
    workerEnv: { SEND_RATE_PER_SECOND: '500' },
    temporal: async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-outage-'));
      port = await freePort();
      server = await startServer();
      return { address: server.address, namespace };
    },
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);
  const key = () => bearer(c.project.secretKey);

  test('an API process with TEMPORAL_ADDRESS at a closed port exits non-zero, and its error names TEMPORAL_ADDRESS', async () => {
    const closed = await freePort();
    const t0 = Date.now();
    // runHerald fails the test if the process outlives 60 s: Herald gives up after its 10-s connect timeout.
    const res = await runHerald('bin/api.ts', [], c.env({ TEMPORAL_ADDRESS: `127.0.0.1:${closed}`, PORT: String(await freePort()) }), 60_000);
    console.log(`API with no Temporal server: exit ${res.code} after ${Date.now() - t0} ms: ${res.stderr.trim().split('\n').at(-1)}`);
    expect(res.code).not.toBe(0);
    expect(res.code).not.toBeNull();
    expect(res.stderr).toContain(`TEMPORAL_ADDRESS=127.0.0.1:${closed}`);
  }, 90_000);

  test('Temporal stopped for 30 s under /v1/send load: every accepted email is delivered once; workers survive; a campaign sent during the outage goes out after it', async () => {
    const SENDERS = 50;
    const accepted: { address: string; at: number }[] = [];
    const refused: string[] = [];
    let n = 0;
    let sending = true;
    const sender = async () => {
      while (sending) {
        const address = `load-${++n}@example.org`;
        try {
          const res = await fetch(`${c.apiUrl}/v1/send`, {
            method: 'POST', headers: { ...key(), 'Content-Type': 'application/json' },
            body: JSON.stringify({ to: address, from: 'hi@example.com', subject: 'Load', body: '<p>Hello</p>' }),
            signal: AbortSignal.timeout(30_000),
          });
          if (res.status >= 200 && res.status < 300) accepted.push({ address, at: Date.now() });
          else refused.push(`${res.status}`);
          await res.arrayBuffer();
        } catch (err) {
          refused.push((err as Error).message);
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    // A campaign for the outage (audience of 3).
    for (let i = 1; i <= 3; i++) await c.http().post('/contacts').set(key()).send({ email: `outage-${i}@example.org`, data: { group: 'outage' } });
    const created = await c.http().post('/campaigns').set(key()).send({
      name: 'During the outage', subject: 'Outage', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: 'outage' }] }] },
    });
    expect(created.status).toBe(201);
    const campaignId = created.body.data.id as string;

    const load = Promise.all(Array.from({ length: SENDERS }, sender));
    await new Promise((r) => setTimeout(r, 5000));
    const down = Date.now();
    await server.stop();
    // The API does not need Temporal to accept mail; a campaign's start waits for it (the dispatcher retries).
    const t0 = Date.now();
    const sent = await c.http().post(`/campaigns/${campaignId}/send`).set(key()).send({});
    console.log(`campaign send during the outage: ${sent.status} after ${Date.now() - t0} ms`);
    expect(sent.status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, down + 30_000 - Date.now())));
    server = await startServer();
    const up = Date.now();
    await new Promise((r) => setTimeout(r, 5000));
    sending = false;
    await load;

    const duringOutage = accepted.filter((a) => a.at >= down && a.at < up).length;
    console.log(`load: ${accepted.length} accepted (${duringOutage} while Temporal was down, ${Math.round((up - down) / 1000)} s), ${refused.length} refused${refused.length ? ` (${[...new Set(refused)].slice(0, 5).join('; ')})` : ''}`);
    expect(duringOutage).toBeGreaterThan(0);

    const wanted = new Set(accepted.map((a) => a.address));
    const delivered = () => c.smtp.received.filter((m) => wanted.has(m.envelopeTo[0]!));
    await waitFor(`${wanted.size} accepted emails delivered`, () => (new Set(delivered().map((m) => m.envelopeTo[0])).size === wanted.size ? true : undefined), 120_000, 250);
    await new Promise((r) => setTimeout(r, 2000));
    const perAddress = new Map<string, number>();
    for (const m of delivered()) perAddress.set(m.envelopeTo[0]!, (perAddress.get(m.envelopeTo[0]!) ?? 0) + 1);
    const twice = [...perAddress].filter(([, k]) => k > 1);
    expect(twice).toEqual([]);
    expect(perAddress.size).toBe(wanted.size);

    // The workers lived through it (a worker that died would have left the delivery to the other, or to nobody).
    for (const [id, w] of c.workers()) expect([id, w.exitCode, w.signalCode]).toEqual([id, null, null]);
    // Temporal is back for the workers and the API: the campaign sent during the outage goes out.
    await waitFor('the campaign SENT', async () => ((await c.http().get(`/campaigns/${campaignId}`).set(key())).body.data.status === 'SENT' ? true : undefined), 90_000, 500);
    const campaignMail = c.smtp.received.filter((m) => m.envelopeTo[0]!.startsWith('outage-'));
    expect(campaignMail.map((m) => m.envelopeTo[0]).sort()).toEqual(['outage-1@example.org', 'outage-2@example.org', 'outage-3@example.org']);
    // The campaign is SENT once its last activity commits; its workflow completes at the workflow task after that one,
    // which a loaded machine may hand out a moment later (a CI-like run saw it still RUNNING right after SENT).
    const handle = c.client.workflow.getHandle(`campaign-${campaignId}`);
    await waitFor('the campaign workflow COMPLETED', async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 30_000, 250);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  }, 210_000);
});
