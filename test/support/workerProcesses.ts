import type { ChildProcess } from 'node:child_process';
import { createEmbeddedEngine } from '../../engine/embedded';
import type { Engine } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { addDomain } from '../../domains/rows';
import { createTestContext, type TestContext } from './app';
import { createTestDatabase } from './db';
import { killGroup, spawnWorker } from './processes';
import { startSmtpServer, type TestSmtpServer } from './smtp';

export interface WorkerProcesses {
  /** The API on the test database, with an engine that only enqueues: no workflow runs in the test's process. */
  t: TestContext;
  smtp: TestSmtpServer;
  /**
   * Starts a worker process (bin/worker.ts) under the test's executor id (none given: the worker takes a free one; an
   * EXECUTOR_ID in `env` wins); stopped (SIGKILL) after the file's tests.
   */
  startWorker(env?: Record<string, string>): ChildProcess;
}

/**
 * The set-up of tests that kill and restart worker processes: a test database, an SMTP server, the API in the test's
 * process with example.com verified, and worker processes under one stable executor id (so a restarted worker
 * recovers what the killed one had), or under ids of their own. Registers its own beforeAll/afterAll; read the fields inside tests.
 */
export function workerProcesses(executorId?: string): WorkerProcesses {
  const children: ChildProcess[] = [];
  let engine: Engine;
  const harness = {
    startWorker(env: Record<string, string> = {}) {
      const child = spawnWorker({ DATABASE_URL: harness.t.db.url, SMTP_URL: harness.smtp.url, ...(executorId ? { EXECUTOR_ID: executorId } : {}), ...env });
      children.push(child);
      return child;
    },
  } as WorkerProcesses;
  beforeAll(async () => {
    harness.smtp = await startSmtpServer();
    const db = await createTestDatabase();
    engine = await createEmbeddedEngine({ databaseUrl: db.url, log: createLogger('silent') });
    harness.t = await createTestContext({ engine, db });
    await addDomain(harness.t.project.id, 'example.com', true);
  });
  afterAll(async () => {
    for (const c of children) killGroup(c);
    await engine.close();
    await harness.t.close();
    await harness.smtp.close();
  });
  return harness;
}
