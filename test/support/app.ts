import type { Server } from 'node:http';
import request from 'supertest';
import { createApp, type AppDeps } from '../../api/app';
import type { Engine } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { createRenderPool } from '../../mail/renderPool';
import { createProject, type CreatedProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from './db';

export interface TestContext {
  db: TestDatabase;
  server: Server;
  /** supertest against the app, with no key. */
  http: () => request.Agent;
  /** A project of its own with both keys. */
  project: CreatedProject;
  newProject(name?: string): Promise<CreatedProject>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  apiRateLimitPerMinute?: number;
  /** The engine sends go to; tests that do not send get one that refuses (nothing is started). */
  engine?: Engine;
  /** A database the caller already made (e.g. for the engine); otherwise a new one. */
  db?: TestDatabase;
  /** Invitations and resets: INVITATION_TTL_HOURS and the system sender (none by default: links are answered). */
  people?: AppDeps['people'];
}

export const TEST_SECRET = Buffer.from('test-secret-test-secret-test-secret!');

/** For tests that never start a workflow: any start is refused loudly (and the send stays queued). */
export const noEngine: Engine = {
  kind: 'embedded',
  waits: 'parked',
  start: async () => { throw new Error('this test context has no workflow engine'); },
  cancel: async () => { throw new Error('this test context has no workflow engine'); },
  signal: async () => { throw new Error('this test context has no workflow engine'); },
  close: async () => undefined,
};

/** The render threads of this test process, as the API has them (idle threads do not hold the process open). */
const renderPool = createRenderPool(2);

export function testAppDeps(knex: TestDatabase['knex'], overrides: Partial<AppDeps> = {}): AppDeps {
  return { knex, log: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'), apiRateLimitPerMinute: 100_000, engine: noEngine, secret: TEST_SECRET, publicUrl: 'http://herald.test', render: renderPool.render, ...overrides };
}

/** A real app on a real (per-file) PostgreSQL database, listening on an ephemeral loopback port. */
export async function createTestContext(opts: TestAppOptions = {}): Promise<TestContext> {
  const db = opts.db ?? (await createTestDatabase());
  const app = createApp(testAppDeps(db.knex, { apiRateLimitPerMinute: opts.apiRateLimitPerMinute ?? 100_000, ...(opts.engine ? { engine: opts.engine } : {}), ...(opts.people ? { people: opts.people } : {}) }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const project = await createProject('Test project');
  return {
    db,
    server,
    http: () => request.agent(server),
    project,
    newProject: (name = 'Other project') => createProject(name),
    async close() {
      await new Promise((r) => server.close(r));
      await db.close();
    },
  };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
