import { OPERATOR } from '../../audit/log';
import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { hashPassword, passwordMatches } from '../../people/passwords';
import { changeRole, removeMember, listMembers } from '../../people/members';
import { createInvitation } from '../../people/invitations';
import { insertToken } from '../../people/links';
import { addDomain } from '../../domains/rows';
import type { Role } from '../../projects/roles';
import { bearer, createTestContext, testAppDeps, type TestContext } from '../support/app';

/**
 * Issue 27, invitations and members (people/invitations.ts, people/members.ts) through the API on a real database:
 * a used, expired, foreign, revoked or unknown token is refused and changes nothing; an existing account joins with
 * its password; nobody grants above their own role; the last owner stays.
 */

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t?.close(); });

const PASSWORD = 'correct horse battery';
const tokenOf = (link: string) => /#token=([A-Za-z0-9_-]{43})$/.exec(link)![1]!;

async function addUser(email: string, password = PASSWORD): Promise<string> {
  const [row] = await t.db.knex('users').insert({ email, name: email.split('@')[0], password_hash: await hashPassword(password) }).returning<{ id: string }[]>('id');
  return row!.id;
}
const addMember = (projectId: string, userId: string, role: Role) => t.db.knex('memberships').insert({ project_id: projectId, user_id: userId, role });
const roleOf = async (projectId: string, userId: string) => (await t.db.knex('memberships').where({ project_id: projectId, user_id: userId }).first('role'))?.role as Role | undefined;
const tokenRow = (id: string) => t.db.knex('auth_tokens').where({ id }).first();

async function invite(email: string, role: Role = 'member', key = t.project.secretKey) {
  const res = await t.http().post('/invitations').set(bearer(key)).send({ email, role });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; email: string; role: Role; expiresAt: string; link: string };
}
const accept = (token: string, name = 'Ada', password = PASSWORD) => t.http().post('/invitations/accept').send({ token, name, password });

function expectTokenRefused(res: request.Response) {
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'token', code: 'invalid_token' })]);
}

describe('invitations', () => {
  test('create answers {id,email,role,expiresAt,link} with a link to /app/invitation#token=…, stored hashed, expiring in 72 h', async () => {
    const before = Date.now();
    const inv = await invite('Ada@Example.com', 'viewer');
    expect(inv).toEqual(expect.objectContaining({ email: 'ada@example.com', role: 'viewer', invitedBy: null }));
    expect(inv.link).toMatch(/^http:\/\/herald\.test\/app\/invitation#token=[A-Za-z0-9_-]{43}$/);
    const hours = (Date.parse(inv.expiresAt) - before) / 3_600_000;
    expect(hours).toBeGreaterThan(71.9);
    expect(hours).toBeLessThan(72.1);
    const row = await tokenRow(inv.id);
    expect(row.kind).toBe('invitation');
    expect(row.project_id).toBe(t.project.id);
    expect(Buffer.from(row.token_hash).toString('latin1')).not.toContain(tokenOf(inv.link));
    expect(JSON.stringify(row)).not.toContain(tokenOf(inv.link));
  });

  test('accept creates the account and the membership, uses the token; a second use is refused and changes nothing', async () => {
    const inv = await invite('grace@example.com', 'member');
    const res = await accept(tokenOf(inv.link), 'Grace Hopper');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(expect.objectContaining({ email: 'grace@example.com', projectId: t.project.id, role: 'member', newAccount: true }));
    const user = await t.db.knex('users').where({ email: 'grace@example.com' }).first();
    expect(user.name).toBe('Grace Hopper');
    expect(user.operator).toBe(false);
    expect(await passwordMatches(PASSWORD, user.password_hash)).toBe(true);
    expect(await roleOf(t.project.id, user.id)).toBe('member');
    expect((await tokenRow(inv.id)).used_at).not.toBeNull();

    const again = await accept(tokenOf(inv.link), 'Mallory', 'another password!');
    expectTokenRefused(again);
    const after = await t.db.knex('users').where({ email: 'grace@example.com' }).first();
    expect(after).toEqual(user);
  });

  test('an expired invitation is refused and creates nothing', async () => {
    const inv = await invite('late@example.com');
    await t.db.knex('auth_tokens').where({ id: inv.id }).update({ expires_at: t.db.knex.raw("now() - interval '1 second'") });
    expectTokenRefused(await accept(tokenOf(inv.link)));
    expect(await t.db.knex('users').where({ email: 'late@example.com' }).first()).toBeUndefined();
    expect((await tokenRow(inv.id)).used_at).toBeNull();
    // Not pending any more either.
    const list = await t.http().get('/invitations').set(bearer(t.project.secretKey));
    expect(list.body.data.items.map((i: { id: string }) => i.id)).not.toContain(inv.id);
  });

  test('a revoked invitation is refused; revoking another project\'s is a 404 and leaves it', async () => {
    const inv = await invite('revoked@example.com');
    const other = await t.newProject('Other');
    const foreign = await t.http().delete(`/invitations/${inv.id}`).set(bearer(other.secretKey));
    expect(foreign.status).toBe(404);
    expect(await tokenRow(inv.id)).toBeDefined();

    const list = await t.http().get('/invitations').set(bearer(t.project.secretKey));
    expect(list.status).toBe(200);
    const listed = list.body.data.items.find((i: { id: string }) => i.id === inv.id);
    expect(listed).toEqual(expect.objectContaining({ email: 'revoked@example.com', role: 'member' }));
    expect(listed.link).toBeUndefined(); // links are shown once, at creation
    expect((await t.http().get('/invitations').set(bearer(other.secretKey))).body.data.items).toEqual([]);

    expect((await t.http().delete(`/invitations/${inv.id}`).set(bearer(t.project.secretKey))).status).toBe(204);
    expect((await t.http().delete(`/invitations/${inv.id}`).set(bearer(t.project.secretKey))).status).toBe(404);
    expectTokenRefused(await accept(tokenOf(inv.link)));
    expect(await t.db.knex('users').where({ email: 'revoked@example.com' }).first()).toBeUndefined();
  });

  test('foreign and unknown tokens are refused: a reset token is no invitation; malformed tokens, too', async () => {
    const userId = await addUser('foreign@example.com');
    const { token } = await insertToken(t.db.knex, 'password_reset', 1, { user_id: userId });
    expectTokenRefused(await accept(token));
    expectTokenRefused(await accept('A'.repeat(43)));
    expectTokenRefused(await accept('not a token'));
    expect(await t.db.knex('memberships').where({ user_id: userId })).toEqual([]);
  });

  test('an address with an account joins with its password; a wrong password is refused and changes nothing', async () => {
    const userId = await addUser('existing@example.com');
    const other = await t.newProject('Existing\'s first project');
    await addMember(other.id, userId, 'owner');
    const inv = await invite('existing@example.com', 'admin');

    const wrong = await accept(tokenOf(inv.link), 'Whoever', 'not the password');
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.errors).toEqual([expect.objectContaining({ field: 'password', code: 'wrong_password' })]);
    expect(await roleOf(t.project.id, userId)).toBeUndefined();
    expect((await tokenRow(inv.id)).used_at).toBeNull();

    const right = await accept(tokenOf(inv.link), 'Ignored name');
    expect(right.status).toBe(200);
    expect(right.body.data).toEqual(expect.objectContaining({ userId, newAccount: false, role: 'admin' }));
    expect(await roleOf(t.project.id, userId)).toBe('admin');
    expect(await roleOf(other.id, userId)).toBe('owner');
    expect((await t.db.knex('users').where({ id: userId }).first()).name).toBe('existing');
  });

  test('two invitations of one new address accepted at once: one account, never a 5xx', async () => {
    const other = await t.newProject('Race');
    const a = await invite('race@example.com', 'viewer');
    const b = await invite('race@example.com', 'viewer', other.secretKey);
    const answers = await Promise.all([accept(tokenOf(a.link)), accept(tokenOf(b.link))]);
    const statuses = answers.map((r) => r.status).sort();
    expect([[200, 200], [200, 409]]).toContainEqual(statuses);
    expect(await t.db.knex('users').where({ email: 'race@example.com' })).toHaveLength(1);
    // A refused one is still unused: accepted again, with the account's password, it joins.
    const refused = answers.findIndex((r) => r.status === 409);
    if (refused >= 0) expect((await accept(tokenOf([a, b][refused]!.link))).status).toBe(200);
  });

  test('inviting a member again is a 409; bad input is a 422 naming the field', async () => {
    const userId = await addUser('already@example.com');
    await addMember(t.project.id, userId, 'viewer');
    const res = await t.http().post('/invitations').set(bearer(t.project.secretKey)).send({ email: 'already@example.com', role: 'member' });
    expect(res.status).toBe(409);
    const bad = await t.http().post('/invitations').set(bearer(t.project.secretKey)).send({ email: 'nope', role: 'king' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(['email', 'role']);
    const short = await t.http().post('/invitations/accept').send({ token: 'x', name: '', password: 'short' });
    expect(short.status).toBe(422);
    expect(short.body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(['name', 'password']);
  });

  test('a full API key acts as an admin: it may not invite an owner (403), and creates nothing', async () => {
    const res = await t.http().post('/invitations').set(bearer(t.project.secretKey)).send({ email: 'boss@example.com', role: 'owner' });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/nobody grants a role above their own/);
    expect(await t.db.knex('auth_tokens').where({ email: 'boss@example.com' })).toEqual([]);
  });

  test('the routes need a key: no key is a 401', async () => {
    expect((await t.http().post('/invitations').send({ email: 'a@example.com', role: 'viewer' })).status).toBe(401);
    expect((await t.http().get('/members')).status).toBe(401);
  });
});

describe('mayGrant: nobody grants a role above their own', () => {
  test.each<[Role, Role, boolean]>([
    ['viewer', 'member', false], ['member', 'admin', false], ['admin', 'owner', false], ['admin', 'admin', true], ['admin', 'viewer', true], ['owner', 'owner', true],
  ])('%s inviting as %s: allowed %s', async (granter, role, allowed) => {
    const inviting = createInvitation({ knex: t.db.knex, publicUrl: 'http://herald.test' }, t.project.id, { email: `g-${granter}-${role}@example.com`, role }, { role: granter, actor: OPERATOR });
    if (allowed) await expect(inviting).resolves.toEqual(expect.objectContaining({ role }));
    else await expect(inviting).rejects.toMatchObject({ kind: 'forbidden' });
  });
});

describe('members', () => {
  let project: { id: string; secretKey: string };
  let owner: string;
  let admin: string;
  let member: string;
  beforeAll(async () => {
    project = await t.newProject('Members');
    owner = await addUser('owner@members.test');
    admin = await addUser('admin@members.test');
    member = await addUser('member@members.test');
    await addMember(project.id, owner, 'owner');
    await addMember(project.id, admin, 'admin');
    await addMember(project.id, member, 'member');
  });

  test('GET /members lists the project\'s members with their roles, and nobody of another project', async () => {
    const res = await t.http().get('/members').set(bearer(project.secretKey));
    expect(res.status).toBe(200);
    expect(res.body.data.items.map((m: { email: string; role: Role }) => [m.email, m.role]).sort()).toEqual([
      ['admin@members.test', 'admin'], ['member@members.test', 'member'], ['owner@members.test', 'owner'],
    ]);
    const other = await t.newProject('Empty');
    expect((await t.http().get('/members').set(bearer(other.secretKey))).body.data.items).toEqual([]);
  });

  test('PATCH /members/:userId changes a role; a member of another project is a 404', async () => {
    const res = await t.http().patch(`/members/${member}`).set(bearer(project.secretKey)).send({ role: 'viewer' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(expect.objectContaining({ userId: member, role: 'viewer' }));
    expect((await t.http().patch(`/members/${member}`).set(bearer(t.project.secretKey)).send({ role: 'admin' })).status).toBe(404);
    expect(await roleOf(project.id, member)).toBe('viewer');
    const bad = await t.http().patch(`/members/${member}`).set(bearer(project.secretKey)).send({ role: 'god' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('role');
  });

  test('a key (admin) may not make an owner nor demote or remove one', async () => {
    expect((await t.http().patch(`/members/${admin}`).set(bearer(project.secretKey)).send({ role: 'owner' })).status).toBe(403);
    expect((await t.http().patch(`/members/${owner}`).set(bearer(project.secretKey)).send({ role: 'viewer' })).status).toBe(403);
    expect((await t.http().delete(`/members/${owner}`).set(bearer(project.secretKey))).status).toBe(403);
    expect(await roleOf(project.id, owner)).toBe('owner');
    expect(await roleOf(project.id, admin)).toBe('admin');
  });

  test('an admin may not promote above admin; a member may not change anyone', async () => {
    await expect(changeRole(t.db.knex, project.id, member, 'owner', { role: 'admin', userId: admin, actor: OPERATOR })).rejects.toMatchObject({ kind: 'forbidden' });
    await expect(changeRole(t.db.knex, project.id, admin, 'viewer', { role: 'member', userId: member, actor: OPERATOR })).rejects.toMatchObject({ kind: 'forbidden' });
  });

  test('the last owner can be neither demoted nor removed, even by themselves; with a second owner, they can', async () => {
    await expect(changeRole(t.db.knex, project.id, owner, 'admin', { role: 'owner', userId: owner, actor: OPERATOR })).rejects.toMatchObject({ kind: 'conflict' });
    await expect(removeMember(t.db.knex, project.id, owner, { role: 'owner', userId: owner, actor: OPERATOR })).rejects.toMatchObject({ kind: 'conflict' });
    expect(await roleOf(project.id, owner)).toBe('owner');

    await changeRole(t.db.knex, project.id, admin, 'owner', { role: 'owner', userId: owner, actor: OPERATOR });
    // Two demotions racing: one wins, the project keeps an owner.
    const results = await Promise.allSettled([
      changeRole(t.db.knex, project.id, owner, 'admin', { role: 'owner', userId: owner, actor: OPERATOR }),
      changeRole(t.db.knex, project.id, admin, 'admin', { role: 'owner', userId: admin, actor: OPERATOR }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const owners = (await listMembers(t.db.knex, project.id)).filter((m) => m.role === 'owner');
    expect(owners).toHaveLength(1);
    await changeRole(t.db.knex, project.id, owners[0]!.userId === owner ? admin : owner, 'owner', { role: 'owner', userId: owners[0]!.userId, actor: OPERATOR });
    await removeMember(t.db.knex, project.id, owner, { role: 'owner', userId: owner, actor: OPERATOR });
    expect(await roleOf(project.id, owner)).toBeUndefined();
  });

  test('DELETE /members/:userId removes the membership, not the account; again is a 404', async () => {
    expect((await t.http().delete(`/members/${member}`).set(bearer(project.secretKey))).status).toBe(204);
    expect(await roleOf(project.id, member)).toBeUndefined();
    expect(await t.db.knex('users').where({ id: member }).first()).toBeDefined();
    expect((await t.http().delete(`/members/${member}`).set(bearer(project.secretKey))).status).toBe(404);
    expect((await t.http().delete('/members/not-a-uuid').set(bearer(project.secretKey))).status).toBe(404);
  });
});

describe('with a system sender', () => {
  test('a system sender that cannot send (its domain unverified) refuses the invitation (409) and leaves none pending', async () => {
    const system = await t.newProject('Unverified system');
    await addDomain(system.id, 'unverified-system.test', false);
    const app = createApp(testAppDeps(t.db.knex, { people: { invitationTtlHours: 72, systemSender: { projectId: system.id, email: 'noreply@unverified-system.test' } } }));
    const res = await request(app.callback()).post('/invitations').set(bearer(t.project.secretKey)).send({ email: 'unmailed@example.com', role: 'viewer' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/could not mail the invitation/);
    expect(res.body.error.suggestion).toMatch(/SYSTEM_FROM_EMAIL/);
    expect(await t.db.knex('auth_tokens').where({ email: 'unmailed@example.com' })).toEqual([]);
  });

  test('the invitation is mailed through the send pipeline and the answer carries no link; no token reaches the log', async () => {
    const system = await t.newProject('System');
    await addDomain(system.id, 'herald-system.test', true);
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } }));
    const app = createApp(testAppDeps(t.db.knex, { log, people: { invitationTtlHours: 24, systemSender: { projectId: system.id, email: 'noreply@herald-system.test' } } }));
    const http = () => request(app.callback());

    const res = await http().post('/invitations').set(bearer(t.project.secretKey)).send({ email: 'mailed@example.com', role: 'viewer' });
    expect(res.status).toBe(201);
    expect(res.body.data.link).toBeUndefined();
    expect((Date.parse(res.body.data.expiresAt) - Date.now()) / 3_600_000).toBeLessThan(24.1);
    const email = await t.db.knex('emails').where({ project_id: system.id }).orderBy('created_at', 'desc').first();
    expect(email).toBeDefined();
    const text = JSON.stringify(email);
    expect(text).toContain('mailed@example.com');
    const token = /app\/invitation#token=([A-Za-z0-9_-]{43})/.exec(text)?.[1];
    expect(token).toBeDefined();

    const accepted = await http().post('/invitations/accept').send({ token, name: 'Mailed', password: PASSWORD });
    expect(accepted.status).toBe(200);
    const refused = await http().post('/invitations/accept').send({ token, name: 'Mailed', password: PASSWORD });
    expect(refused.status).toBe(422);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(token!);
    expect(lines.join('\n')).not.toContain(PASSWORD);
  });
});
