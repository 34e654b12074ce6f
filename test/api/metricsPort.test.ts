import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/temporalDevServer';
import { createProject, type CreatedProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { childEnv, killGroup, spawnHerald, spawnWorker, waitFor } from '../support/processes';
import { parseExposition } from '../support/prometheus';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * METRICS_PORT and METRICS_TOKEN as an operator sets them, on Herald's real processes (bin/api.ts, bin/worker.ts):
 * the API's port no longer answers /metrics, a listener of its own does, and a worker (which has no other port)
 * serves its own series there, so that a pool can be scraped.
 */
const TOKEN = 'scrape-token-0123456789abcdef';
let db: TestDatabase;
let smtp: TestSmtpServer;
let project: CreatedProject;
let dataDir: string;
const children: ChildProcess[] = [];
let api: { port: number; metricsPort: number };
let worker: { metricsPort: number };

const base = () => ({ DATABASE_URL: db.url, DATA_DIR: dataDir, SECRET_KEY: 'metrics-test-secret-0123456789abcdef', LOG_LEVEL: 'warn', METRICS_TOKEN: TOKEN });
const get = (port: number, p: string, token?: string) =>
  fetch(`http://127.0.0.1:${port}${p}`, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
const scrape = async (port: number) => {
  const res = await get(port, '/metrics', TOKEN);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
};

beforeAll(async () => {
  db = await createTestDatabase();
  smtp = await startSmtpServer();
  project = await createProject('Metrics port');
  await addDomain(project.id, 'example.com', true);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-metrics-'));
  api = { port: await freePort(), metricsPort: await freePort() };
  worker = { metricsPort: await freePort() };
  children.push(spawnHerald('bin/api.ts', [], childEnv({ ...base(), PORT: String(api.port), METRICS_PORT: String(api.metricsPort) })));
  children.push(spawnWorker({ ...base(), SMTP_URL: smtp.url, METRICS_PORT: String(worker.metricsPort) }));
  await waitFor('the API', async () => ((await get(api.port, '/health').catch(() => undefined))?.status === 200 ? true : undefined), 90_000, 200);
  // Each process opens its metrics listener last (bin/runtime.ts): the API answers /health a moment before.
  await waitFor('the API\'s metrics', async () => ((await get(api.metricsPort, '/metrics', TOKEN).catch(() => undefined))?.status === 200 ? true : undefined), 90_000, 200);
  await waitFor('the worker\'s metrics', async () => ((await get(worker.metricsPort, '/metrics', TOKEN).catch(() => undefined))?.status === 200 ? true : undefined), 90_000, 200);
}, 120_000);
afterAll(async () => {
  for (const c of children) killGroup(c);
  await smtp.close();
  await db.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('with METRICS_PORT the API port answers /metrics with a 404; the metrics port serves it, and nothing else', async () => {
  const onApi = await get(api.port, '/metrics', TOKEN);
  expect(onApi.status).toBe(404);
  expect(((await onApi.json()) as { error: unknown }).error).toMatchObject({ code: 'NOT_FOUND' });

  const m = await scrape(api.metricsPort);
  expect(m.value('herald_metrics_database_up')).toBe(1);
  expect(m.types.get('herald_http_request_duration_seconds')).toBe('histogram');
  expect(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: '/health', status: '200' })).toBeGreaterThanOrEqual(1);
  expect((await get(api.metricsPort, '/health')).status).toBe(404);
});

test('METRICS_TOKEN on the metrics port: missing or wrong is a 401 in the envelope', async () => {
  for (const token of [undefined, 'wrong-token-0123456789abcdef']) {
    const res = await get(api.metricsPort, '/metrics', token);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED', statusCode: 401 } });
  }
});

test('a send through the API moves the API\'s send counter; its delivery moves the worker\'s delivery counter', async () => {
  const [apiBefore, workerBefore] = [await scrape(api.metricsPort), await scrape(worker.metricsPort)];
  const res = await fetch(`http://127.0.0.1:${api.port}/v1/send`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${project.secretKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ to: 'pool@example.org', from: 'hi@example.com', subject: 'Scraped', body: '<p>Hi</p>' }),
  });
  expect(res.status).toBe(200);
  await smtp.waitFor(1, 60_000);

  const accepted = (m: ReturnType<typeof parseExposition>) => m.value('herald_emails_accepted_total', { way: 'http' })!;
  expect(accepted(await scrape(api.metricsPort)) - accepted(apiBefore)).toBe(1);
  const sent = (m: ReturnType<typeof parseExposition>) => m.value('herald_deliveries_total', { outcome: 'sent' })!;
  await waitFor('the worker\'s delivery counter', async () => (sent(await scrape(worker.metricsPort)) - sent(workerBefore) === 1 ? true : undefined), 30_000, 100);
  // The worker serves its own series, not the API's requests.
  const w = await scrape(worker.metricsPort);
  expect(accepted(w)).toBe(0);
  expect(w.find('herald_http_request_duration_seconds_count', { route: '/v1/send' })).toEqual([]);
  expect(w.value('process_resident_memory_bytes')).toBeGreaterThan(0);
});
