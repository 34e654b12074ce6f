import type { Knex } from 'knex';
import { ADMIT_SESSIONS, LIST_SESSIONS, SESSION_OF } from '../../people/sessions';
import { windowBindings } from '../../projects/access';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';

/**
 * Every query path of people's sessions and logins is served by an index (the migrations name which): EXPLAIN of the
 * very SQL people/ runs, on enough rows (20,000 users with a session each, 50 projects) that a sequential scan would lose.
 */
let db: TestDatabase;
let projectId: string;
let userId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 50; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  await db.knex.raw(`INSERT INTO users (email, password_hash) SELECT 'user' || g || '@example.org', 'x' FROM generate_series(1, 20000) g`);
  await db.knex.raw(`INSERT INTO memberships (project_id, user_id, role)
    SELECT (?::uuid[])[1 + (row_number() OVER ()) % 50], id, 'member' FROM users`, [projects]);
  await db.knex.raw(`INSERT INTO sessions (token_hash, user_id, expires_at)
    SELECT sha256(convert_to(id::text || g, 'UTF8')), id, now() + interval '14 days' FROM users, generate_series(1, 2) g`);
  await db.knex.raw(`INSERT INTO login_failures (key, failures) SELECT 'account:user' || g || '@example.org', 1 FROM generate_series(1, 20000) g`);
  // Every other user with two-factor on, and a pending login challenge each.
  await db.knex.raw(`INSERT INTO two_factor (user_id, secret_sealed, enabled_at) SELECT id, '\\x01', now() FROM users WHERE email ~ '[02468]@'`);
  await db.knex.raw(`INSERT INTO login_challenges (token_hash, user_id, expires_at)
    SELECT sha256(convert_to(user_id::text, 'UTF8')), user_id, now() + interval '5 minutes' FROM two_factor`);
  await vacuumAnalyze(db.knex, ['users', 'memberships', 'sessions', 'login_failures', 'two_factor', 'login_challenges']);
  userId = (await db.knex('users').first('id')).id;
});
afterAll(async () => { await db.close(); });

async function plan(sql: string, bindings: Knex.RawBinding[]): Promise<string> {
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings);
  return res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
}

const hash = Buffer.alloc(32, 7);

test('a session request on a project (people/sessions.ts ADMIT_SESSIONS): by the token hash, the user, the membership, the project', async () => {
  const p = await plan(ADMIT_SESSIONS, [[hash.toString('hex')], [projectId], 720, ...windowBindings(Date.now())]);
  for (const index of ['sessions_token_hash_key', 'users_pkey', 'projects_pkey', 'two_factor_pkey']) expect(p).toContain(index);
  // (project_id, user_id) or (user_id, project_id): either index has both columns.
  expect(p).toMatch(/memberships_(pkey|user_idx)/);
  expect(p).not.toMatch(/Seq Scan on (sessions|users|memberships|two_factor)/);
});

test('a session on the /auth routes (SESSION_OF) and the session list (LIST_SESSIONS)', async () => {
  const of = await plan(SESSION_OF, [hash, 720]);
  expect(of).toContain('sessions_token_hash_key');
  expect(of).not.toMatch(/Seq Scan/);
  const list = await plan(LIST_SESSIONS, [720, userId, 720]);
  expect(list).toContain('sessions_user_idx');
  expect(list).not.toMatch(/Seq Scan/);
});

test('a login: the account by its address, its memberships, its failures', async () => {
  expect(await plan('SELECT id FROM users WHERE email = ?', ['user7@example.org'])).toContain('users_email_key');
  const m = await plan('SELECT m.project_id FROM memberships m JOIN projects p ON p.id = m.project_id WHERE m.user_id = ?', [userId]);
  expect(m).toContain('memberships_user_idx');
  expect(await plan('SELECT * FROM login_failures WHERE key = ANY(?::text[])', [['account:user7@example.org', 'address:127.0.0.1']])).toContain('login_failures_pkey');
  expect(await plan("DELETE FROM login_failures WHERE last_failure_at < now() - interval '1 hour'", [])).toContain('login_failures_last_failure_idx');
});

test('two-factor (people/twoFactor.ts): the secret by its user, a challenge by its hash, the sweep of expired challenges', async () => {
  expect(await plan('SELECT secret_sealed, enabled_at FROM two_factor WHERE user_id = ?', [userId])).toContain('two_factor_pkey');
  const challenge = await plan(`SELECT c.user_id, u.email FROM login_challenges c JOIN users u ON u.id = c.user_id
    WHERE c.token_hash = ? AND c.expires_at > now() AND NOT u.disabled`, [hash]);
  expect(challenge).toContain('login_challenges_pkey');
  expect(challenge).not.toMatch(/Seq Scan/);
  expect(await plan('DELETE FROM login_challenges WHERE expires_at < now()', [])).toContain('login_challenges_expires_idx');
});
