import type { Server } from 'node:http';
import request from 'supertest';
import { createApp } from '../../api/app';
import { createLogger } from '../../logging/logger';
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
}

/** A real app on a real (per-file) PostgreSQL database, listening on an ephemeral loopback port. */
export async function createTestContext(opts: TestAppOptions = {}): Promise<TestContext> {
  const db = await createTestDatabase();
  const app = createApp({ knex: db.knex, log: createLogger('silent'), apiRateLimitPerMinute: opts.apiRateLimitPerMinute ?? 100_000 });
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
