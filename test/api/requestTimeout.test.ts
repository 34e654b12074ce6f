import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/temporalDevServer';
import { createProject, type CreatedProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { childEnv, killGroup, spawnHerald, waitFor } from '../support/processes';

/**
 * HTTP_REQUEST_TIMEOUT_SECONDS on Herald's real API process (bin/api.ts): how long one request, body included, may take
 * to arrive. Node's own 300 s would cut a large contact import sent over a slow link; the operator's value replaces it.
 * Here it is 4 s: an upload that trickles in over 2 s is taken, one that trickles for longer is cut with a 408 and
 * leaves no import behind.
 */
const TIMEOUT_S = 4;
let db: TestDatabase;
let project: CreatedProject;
let dataDir: string;
let child: ChildProcess;
let port: number;

beforeAll(async () => {
  db = await createTestDatabase();
  project = await createProject('Slow uploads');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-request-timeout-'));
  port = await freePort();
  child = spawnHerald('bin/api.ts', [], childEnv({
    DATABASE_URL: db.url, DATA_DIR: dataDir, SECRET_KEY: 'request-timeout-secret-0123456789abcdef', LOG_LEVEL: 'warn',
    PORT: String(port), SMTP_SUBMISSION_PORT: '0', SMTP_INBOUND_PORT: '0', HTTP_REQUEST_TIMEOUT_SECONDS: String(TIMEOUT_S),
  }));
  await waitFor('the API', async () => ((await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.status === 200 ? true : undefined), 90_000, 200);
}, 120_000);
afterAll(async () => {
  killGroup(child);
  await db.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** POST /contacts/imports with a CSV written one line every `everyMs`; answers the status, or 'closed' if the socket closed first. */
function trickleUpload(lines: number, everyMs: number): Promise<{ status: number | 'closed'; body: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path: `/contacts/imports?mode=upsert&columns=${encodeURIComponent(JSON.stringify([{ column: 'email', to: 'email' }, { column: 'name', to: 'data', key: 'name' }]))}`,
      headers: { Authorization: `Bearer ${project.secretKey}`, 'Content-Type': 'text/csv' },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode!, body, ms: Date.now() - started }));
    });
    req.on('error', () => resolve({ status: 'closed', body: '', ms: Date.now() - started }));
    req.write('email,name\n');
    let i = 0;
    const timer = setInterval(() => {
      if (req.destroyed) return clearInterval(timer);
      req.write(`slow-${i}@example.com,Person ${i}\n`);
      if (++i === lines) {
        clearInterval(timer);
        req.end();
      }
    }, everyMs);
  });
}

const imports = async () => (await (await fetch(`http://127.0.0.1:${port}/contacts/imports`, { headers: { Authorization: `Bearer ${project.secretKey}` } })).json()) as { data: { items: unknown[] } };

test('an upload that trickles in within the timeout is taken', async () => {
  const res = await trickleUpload(8, 250);
  expect([res.status, res.body]).toEqual([202, expect.stringContaining('"id"')]);
  expect((await imports()).data.items).toHaveLength(1);
}, 30_000);

test('an upload still arriving after HTTP_REQUEST_TIMEOUT_SECONDS is cut with a 408, and no import is left of it', async () => {
  const res = await trickleUpload(60, 250); // 15 s of body
  expect(res.status === 408 || res.status === 'closed').toBe(true);
  // Cut near the timeout (Node looks every timeout/4), not when the body would have ended.
  expect(res.ms).toBeGreaterThanOrEqual(TIMEOUT_S * 1000 - 100);
  expect(res.ms).toBeLessThan(TIMEOUT_S * 1000 * 2);
  expect((await imports()).data.items).toHaveLength(1);
}, 30_000);
