import { addDomain } from '../../domains/rows';
import { createProject } from '../../projects/service';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { createTestDatabase } from '../support/db';
import { startTestEngine, type TestEngine } from '../support/engine';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * Issue 27: with a system sender, Herald mails invitations and password resets through its own send pipeline, end to
 * end: the API → the delivery queue on the embedded engine → a real SMTP server; the links in the mails work once.
 */

let smtp: TestSmtpServer;
let eng: TestEngine;
let t: TestContext;

beforeAll(async () => {
  smtp = await startSmtpServer();
  const db = await createTestDatabase();
  const system = await createProject('System');
  await addDomain(system.id, 'herald-system.test', true);
  eng = await startTestEngine(db, smtp.url);
  t = await createTestContext({ engine: eng.engine, db, people: { invitationTtlHours: 72, systemSender: { projectId: system.id, email: 'noreply@herald-system.test' } } });
});
afterAll(async () => {
  await eng?.stop();
  await t?.close();
  await smtp?.close();
});

const tokenIn = (text: string, page: string) => new RegExp(`http://herald\\.test/app/${page}#token=([A-Za-z0-9_-]{43})`).exec(text)?.[1];

test('an invitation arrives by mail from the system sender; its link joins once; a reset arrives and sets the password', async () => {
  const res = await t.http().post('/invitations').set(bearer(t.project.secretKey)).send({ email: 'ada@example.org', role: 'member' });
  expect(res.status).toBe(201);
  expect(res.body.data.link).toBeUndefined();

  const [invitation] = await smtp.waitFor(1, 30_000);
  expect(invitation!.envelopeTo).toEqual(['ada@example.org']);
  expect(invitation!.parsed.from?.value[0]?.address).toBe('noreply@herald-system.test');
  expect(invitation!.parsed.subject).toBe('You are invited to Test project on Herald');
  const token = tokenIn(invitation!.parsed.text ?? '', 'invitation');
  expect(token).toBeDefined();
  // Clickable, and not rewritten through the click redirect (system mail is not tracked).
  expect(invitation!.parsed.html).toContain(`<a href="http://herald.test/app/invitation#token=${token}">`);

  const accepted = await t.http().post('/invitations/accept').send({ token, name: 'Ada', password: 'the first password' });
  expect(accepted.status).toBe(200);
  expect(accepted.body.data).toEqual(expect.objectContaining({ email: 'ada@example.org', projectId: t.project.id, role: 'member', newAccount: true }));
  expect((await t.http().post('/invitations/accept').send({ token, name: 'Ada', password: 'the first password' })).status).toBe(422);

  expect((await t.http().post('/auth/password-reset').send({ email: 'ada@example.org' })).status).toBe(200);
  const [, reset] = await smtp.waitFor(2, 30_000);
  expect(reset!.envelopeTo).toEqual(['ada@example.org']);
  const resetToken = tokenIn(reset!.parsed.text ?? '', 'reset');
  expect(resetToken).toBeDefined();
  const confirmed = await t.http().post('/auth/password-reset/confirm').send({ token: resetToken, password: 'the second password' });
  expect(confirmed.status).toBe(200);
});
