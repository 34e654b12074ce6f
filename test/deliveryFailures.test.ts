import { addDomain } from '../domains/rows';
import { bearer, createTestContext, type TestContext } from './support/app';
import { createTestDatabase } from './support/db';
import { startTestEngine, waitForEmails, type TestEngine } from './support/engine';
import { startSmtpServer, type TestSmtpServer } from './support/smtp';

/** Failure injection at a real SMTP server, with the embedded engine's real retries (1 s, 2 s, 4 s …). */
let smtp: TestSmtpServer;
let eng: TestEngine;
let t: TestContext;

beforeAll(async () => {
  smtp = await startSmtpServer();
  const db = await createTestDatabase();
  eng = await startTestEngine(db, smtp.url);
  t = await createTestContext({ engine: eng.engine, db });
  await addDomain(t.project.id, 'example.com', true);
});
afterAll(async () => {
  await eng.stop();
  await t.close();
  await smtp.close();
});

async function sendOne(to: string): Promise<{ emailId: string; eventId: string }> {
  const res = await t.http().post('/v1/send').set(bearer(t.project.secretKey))
    .send({ to, from: 'hi@example.com', subject: `for ${to}`, body: '<p>x</p>' });
  expect(res.status).toBe(200);
  return { emailId: res.body.data.emails[0].email, eventId: res.body.data.event };
}

const receivedBy = (to: string) => smtp.received.filter((m) => m.envelopeTo.includes(to));

test('451 twice, then accepted: delivered exactly once, on the third attempt', async () => {
  smtp.script([{ code: 451, message: 'Try again later' }, { code: 451, message: 'Try again later' }]);
  const { emailId, eventId } = await sendOne('retry@example.org');
  const rows = await waitForEmails(t.db, [emailId]);
  expect(rows[emailId]).toMatchObject({ status: 'SENT', attempts: 3, error: null });
  expect(receivedBy('retry@example.org')).toHaveLength(1);
  const events = await t.db.knex('events').where({ project_id: t.project.id, email_id: emailId });
  expect(events.map((e) => [e.id, e.name])).toEqual([[eventId, 'email.sent']]);
});

test('550: FAILED at once with the server’s reason, an email.failed event, nothing delivered', async () => {
  smtp.script([{ code: 550, message: 'No such user here' }]);
  const { emailId, eventId } = await sendOne('nobody@example.org');
  const rows = await waitForEmails(t.db, [emailId]);
  expect(rows[emailId]!.status).toBe('FAILED');
  expect(rows[emailId]!.attempts).toBe(1);
  expect(rows[emailId]!.error).toMatch(/550.*No such user here/);
  expect(receivedBy('nobody@example.org')).toHaveLength(0);
  const event = await t.db.knex('events').where({ project_id: t.project.id, id: eventId }).first();
  expect(event).toMatchObject({ name: 'email.failed', email_id: emailId });
  expect(event.data.error).toMatch(/550/);
});

test('SMTP server down for a while: the email waits QUEUED with the reason and is delivered once it returns', async () => {
  await smtp.pause();
  const { emailId } = await sendOne('patient@example.org');
  // The first attempts fail with a connection error and put the email back in the queue, with the reason.
  const queued = await (async () => {
    for (let i = 0; i < 100; i++) {
      const row = await t.db.knex('emails').where({ project_id: t.project.id, id: emailId }).first('status', 'error', 'attempts');
      if (row.attempts >= 2 && row.status === 'QUEUED') return row;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('email never went back to QUEUED after a failed attempt');
  })();
  expect(queued.error).toMatch(/ECONNREFUSED|connect/i);
  await smtp.resume();
  const rows = await waitForEmails(t.db, [emailId], 30_000);
  expect(rows[emailId]!.status).toBe('SENT');
  expect(receivedBy('patient@example.org')).toHaveLength(1);
});
