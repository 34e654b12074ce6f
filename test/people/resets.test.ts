import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { addDomain } from '../../domains/rows';
import { createResetLink } from '../../people/resets';
import { setupLink } from '../../people/setup';
import { Model } from 'objection';
import { hashPassword, passwordMatches } from '../../people/passwords';
import { newToken } from '../../people/tokens';
import { createTestContext, testAppDeps, type TestContext } from '../support/app';

/**
 * Issue 27, password reset and first-start setup (people/resets.ts, people/setup.ts) through the API on a real
 * database: the same answer whether or not an account exists; a confirmed reset sets the password, spends the link and
 * ends every session of the account in one transaction; setup works once; no token reaches the log.
 */

let t: TestContext;
let lines: string[];
let system: { id: string };
/** An app with the system sender (mails go out as sends of `system`) and one without; both log into `lines`. */
let mailing: () => request.Test & request.SuperTest<request.Test>;
let silent: () => request.Test & request.SuperTest<request.Test>;

const OLD = 'the old password';
const NEW = 'a brand new password';

beforeAll(async () => {
  t = await createTestContext();
  system = await t.newProject('System');
  await addDomain(system.id, 'herald-system.test', true);
  lines = [];
  const log = pino({ level: 'debug' }, new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } }));
  const withMail = createApp(testAppDeps(t.db.knex, { log, people: { invitationTtlHours: 72, systemSender: { projectId: system.id, email: 'noreply@herald-system.test' } } }));
  const without = createApp(testAppDeps(t.db.knex, { log }));
  mailing = () => request(withMail.callback()) as never;
  silent = () => request(without.callback()) as never;
});
afterAll(async () => { await t?.close(); });

async function addUser(email: string): Promise<string> {
  const [row] = await t.db.knex('users').insert({ email, name: 'Someone', password_hash: await hashPassword(OLD) }).returning<{ id: string }[]>('id');
  return row!.id;
}
async function addSession(userId: string): Promise<string> {
  const [row] = await t.db.knex('sessions').insert({ user_id: userId, token_hash: newToken().hash, expires_at: t.db.knex.raw("now() + interval '1 day'") }).returning<{ id: string }[]>('id');
  return row!.id;
}
/** The reset mail is sent after the answer (its time must not tell): wait for it. */
async function mailedTo(email: string, count = 1): Promise<Record<string, unknown>[]> {
  for (let i = 0; i < 100; i++) {
    const rows = await mailsTo(email);
    if (rows.length >= count) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail to ${email}`);
}
const mailsTo = (email: string) => t.db.knex('emails').where({ project_id: system.id }).select('*')
  .then((rows) => rows.filter((r) => JSON.stringify(r).includes(email)));
const tokenIn = (text: string, page: string) => new RegExp(`/app/${page}#token=([A-Za-z0-9_-]{43})`).exec(text)?.[1];
const deps = () => ({ knex: t.db.knex, publicUrl: 'http://herald.test' });

describe('password reset', () => {
  test('asking answers the same whether or not the address has an account; only an account gets a mail', async () => {
    await addUser('known@example.com');
    const known = await mailing().post('/auth/password-reset').send({ email: 'Known@Example.com' });
    const unknown = await mailing().post('/auth/password-reset').send({ email: 'nobody@example.com' });
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toEqual(known.body.data);
    expect((await mailedTo('known@example.com'))).toHaveLength(1);
    expect((await mailsTo('nobody@example.com'))).toHaveLength(0);
    // Asked again at once: the same answer, no second mail (the first link still works).
    const again = await mailing().post('/auth/password-reset').send({ email: 'known@example.com' });
    expect(again.body.data).toEqual(known.body.data);
    await new Promise((r) => setTimeout(r, 200));
    expect((await mailsTo('known@example.com'))).toHaveLength(1);
    expect(await t.db.knex('auth_tokens').where({ kind: 'password_reset', email: 'nobody@example.com' })).toEqual([]);
  });

  test('without a system sender nothing is made, the answer is the same, and the log says to use the CLI (no address, no secret)', async () => {
    const userId = await addUser('unsent@example.com');
    const res = await silent().post('/auth/password-reset').send({ email: 'unsent@example.com' });
    expect(res.status).toBe(200);
    expect(await t.db.knex('auth_tokens').where({ user_id: userId })).toEqual([]);
    const hint = lines.find((l) => l.includes('no system sender'));
    expect(hint).toMatch(/user reset --email/);
    expect(hint).not.toContain('unsent@example.com');
  });

  test('confirm sets the password, ends every session of the account, and spends the link; a second use is refused', async () => {
    const userId = await addUser('reset@example.com');
    const other = await addUser('bystander@example.com');
    const sessions = [await addSession(userId), await addSession(userId)];
    const bystander = await addSession(other);
    await mailing().post('/auth/password-reset').send({ email: 'reset@example.com' });
    const [mail] = await mailedTo('reset@example.com');
    const token = tokenIn(JSON.stringify(mail), 'reset')!;
    expect(token).toBeDefined();
    const expires = await t.db.knex('auth_tokens').where({ user_id: userId, kind: 'password_reset' }).first();
    expect((new Date(expires.expires_at).getTime() - Date.now()) / 60_000).toBeLessThan(60.5);

    const res = await mailing().post('/auth/password-reset/confirm').send({ token, password: NEW });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ userId, sessionsEnded: 2 });
    const user = await t.db.knex('users').where({ id: userId }).first();
    expect(await passwordMatches(NEW, user.password_hash)).toBe(true);
    const ended = await t.db.knex('sessions').whereIn('id', sessions).whereNull('ended_at');
    expect(ended).toEqual([]);
    expect((await t.db.knex('sessions').where({ id: bystander }).first()).ended_at).toBeNull();

    const again = await mailing().post('/auth/password-reset/confirm').send({ token, password: 'yet another password' });
    expect(again.status).toBe(422);
    expect(again.body.error.errors[0]).toEqual(expect.objectContaining({ field: 'token', code: 'invalid_token' }));
    expect(await passwordMatches(NEW, (await t.db.knex('users').where({ id: userId }).first()).password_hash)).toBe(true);

    expect(lines.join('\n')).not.toContain(token);
    expect(lines.join('\n')).not.toContain(NEW);
  });

  test('an expired link is refused and changes nothing; an invitation token is no reset token', async () => {
    const userId = await addUser('expired@example.com');
    const session = await addSession(userId);
    const { link } = await createResetLink(deps(), 'expired@example.com');
    await t.db.knex('auth_tokens').where({ user_id: userId }).update({ expires_at: t.db.knex.raw("now() - interval '1 second'") });
    const res = await silent().post('/auth/password-reset/confirm').send({ token: tokenIn(link, 'reset'), password: NEW });
    expect(res.status).toBe(422);
    expect(await passwordMatches(OLD, (await t.db.knex('users').where({ id: userId }).first()).password_hash)).toBe(true);
    expect((await t.db.knex('sessions').where({ id: session }).first()).ended_at).toBeNull();

    const invited = await t.http().post('/invitations').set({ Authorization: `Bearer ${t.project.secretKey}` }).send({ email: 'expired@example.com', role: 'viewer' });
    const foreign = await silent().post('/auth/password-reset/confirm').send({ token: tokenIn(invited.body.data.link, 'invitation'), password: NEW });
    expect(foreign.status).toBe(422);
    expect(await passwordMatches(OLD, (await t.db.knex('users').where({ id: userId }).first()).password_hash)).toBe(true);
  });

  test('bad input is a 4xx naming the field', async () => {
    const res = await silent().post('/auth/password-reset').send({ email: 'not an address' });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0].field).toBe('email');
    const short = await silent().post('/auth/password-reset/confirm').send({ token: 'x'.repeat(43), password: 'short' });
    expect(short.status).toBe(422);
    expect(short.body.error.errors[0].field).toBe('password');
    expect((await silent().post('/auth/password-reset/confirm').set('Content-Type', 'application/json').send('{"token":')).status).toBe(400);
  });
});

describe('first-start setup', () => {
  test('creates an operator who owns every project; once any account exists it is refused, and no link is made', async () => {
    // A database of its own: this file's other tests made accounts.
    const fresh = await createTestContext();
    try {
      const link = (await setupLink({ knex: fresh.db.knex, publicUrl: 'http://herald.test' }))!;
      expect(link).toMatch(/^http:\/\/herald\.test\/app\/setup#token=[A-Za-z0-9_-]{43}$/);
      const second = (await setupLink({ knex: fresh.db.knex, publicUrl: 'http://herald.test' }))!;
      const token = tokenIn(link, 'setup');
      const other = await fresh.newProject('Second');

      const bad = await fresh.http().post('/auth/setup').send({ token: 'A'.repeat(43), email: 'op@example.com', name: 'Op', password: NEW });
      expect(bad.status).toBe(422);
      expect(await fresh.db.knex('users')).toEqual([]);

      const res = await fresh.http().post('/auth/setup').send({ token, email: 'Op@Example.com', name: 'Op', password: NEW });
      expect(res.status).toBe(201);
      expect(res.body.data).toEqual(expect.objectContaining({ email: 'op@example.com', projects: 2 }));
      const user = await fresh.db.knex('users').first();
      expect(user.operator).toBe(true);
      const roles = await fresh.db.knex('memberships').where({ user_id: user.id }).select('project_id', 'role');
      expect(roles.map((r) => [r.project_id, r.role]).sort()).toEqual([[fresh.project.id, 'owner'], [other.id, 'owner']].sort());

      // The same link again, and the other start's link: refused, nothing more.
      for (const tok of [token, tokenIn(second, 'setup')]) {
        const again = await fresh.http().post('/auth/setup').send({ token: tok, email: 'mallory@example.com', name: 'M', password: NEW });
        expect(again.status).toBe(409);
      }
      expect(await fresh.db.knex('users')).toHaveLength(1);
      expect(await setupLink({ knex: fresh.db.knex, publicUrl: 'http://herald.test' })).toBeUndefined();
    } finally {
      await fresh.close();
      Model.knex(t.db.knex); // createTestContext bound the models to the fresh database
    }
  });
});
