import type { ChildProcess } from 'node:child_process';
import { bearer } from './support/app';
import { cancelMidFlight } from './support/cancelStops';
import { childEnv, killGroup, runHerald } from './support/processes';
import { workerProcesses } from './support/workerProcesses';

/**
 * Cancel means stop (issue 25), on the embedded engine: a worker process (bin/worker.ts) at 2/s, then at 14/s, holds
 * claimed campaign emails waiting for their send slots when the campaign is cancelled through the API. Only the sends
 * already handed to SMTP may still arrive after the answer (at most one at 2/s, two at 14/s); the claimed rest ends
 * CANCELLED. The same on the Temporal engine: test/temporal/integration.test.ts. Restarting the worker at 14/s is how
 * an operator changes the cluster's rate; another rate beside a live worker is refused.
 */
jest.setTimeout(120_000);
const h = workerProcesses('cancel-stops');
let worker: ChildProcess | undefined;

async function runWorker(rate: number): Promise<void> {
  if (worker) {
    const w = worker;
    const gone = w.exitCode !== null || w.signalCode !== null ? Promise.resolve() : new Promise((r) => w.once('exit', r));
    killGroup(w, 'SIGTERM');
    await gone;
  }
  // At info the worker logs "delivering mail" once it runs: the cancel is not measured during its start-up.
  const w = h.startWorker({ SEND_RATE_PER_SECOND: String(rate), LOG_LEVEL: 'info' });
  worker = w;
  await new Promise<void>((resolve, reject) => {
    let out = '';
    w.stdout!.on('data', (c: Buffer) => {
      out = (out + c.toString()).slice(-4096);
      if (out.includes('"msg":"delivering mail"')) resolve();
    });
    w.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it started delivering`)));
  });
}

const harness = () => ({ knex: h.t.db.knex, projectId: h.t.project.id, smtp: h.smtp, http: () => h.t.http(), key: bearer(h.t.project.secretKey) });
const apiCancel = async (id: string) => {
  const res = await h.t.http().post(`/campaigns/${id}/cancel`).set(bearer(h.t.project.secretKey));
  expect(res.status).toBe(200);
  expect(res.body.data.status).toBe('CANCELLED');
};

test('at 2/s: after the cancel is answered, at most the one send handed to SMTP arrives; the claimed rest ends CANCELLED', async () => {
  await runWorker(2);
  await cancelMidFlight(harness(), { group: 'slow', total: 12, after: 2, cancel: apiCancel, bound: 1 });
});

test('at 14/s: after the cancel is answered, at most the two sends handed to SMTP arrive; the claimed rest ends CANCELLED', async () => {
  await runWorker(14);
  await cancelMidFlight(harness(), { group: 'fast', total: 60, after: 5, cancel: apiCancel, bound: 2 });
});

test('one rate per database: while the 14/s worker lives, a worker at 20/s refuses to start (exit code 2), naming the difference', async () => {
  const refused = await runHerald('bin/worker.ts', [], childEnv({ DATABASE_URL: h.t.db.url, SMTP_URL: h.smtp.url, EXECUTOR_ID: 'other-rate', SEND_RATE_PER_SECOND: '20', LOG_LEVEL: 'warn' }));
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/this database's workers run ENGINE=embedded at SEND_RATE_PER_SECOND=14 \(live: cancel-stops .*\); this process has ENGINE=embedded at SEND_RATE_PER_SECOND=20: SEND_RATE_PER_SECOND differs/);
  expect(await h.t.db.knex('delivery_pace').where({ name: 'email' }).first('engine', 'send_rate_per_second')).toEqual({ engine: 'embedded', send_rate_per_second: 14 });
});
