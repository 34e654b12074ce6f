import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from './app';
import { createTestDatabase } from './db';
import { startTestEngine, type TestEngine, type TestEngineOptions } from './engine';
import { startSmtpServer, type TestSmtpServer } from './smtp';

/** What an end-to-end test file works with: the app, its engine, the SMTP server its mail reaches, the project's key. */
export interface EndToEnd {
  smtp: TestSmtpServer;
  eng: TestEngine;
  t: TestContext;
  key: { Authorization: string };
  close(): Promise<void>;
}

/**
 * End to end on the embedded engine: a real app (its own database) → DBOS and the delivery queue → a real SMTP server,
 * with a project whose example.com is a verified sending domain.
 */
export async function startEndToEnd(opts: TestEngineOptions = {}): Promise<EndToEnd> {
  const smtp = await startSmtpServer();
  const db = await createTestDatabase();
  const eng = await startTestEngine(db, smtp.url, opts);
  const t = await createTestContext({ engine: eng.engine, db });
  await addDomain(t.project.id, 'example.com', true);
  return {
    smtp, eng, t,
    key: bearer(t.project.secretKey),
    async close() {
      await eng.stop();
      await t.close();
      await smtp.close();
    },
  };
}
