import type { Knex } from 'knex';
import { ADMIT_SESSIONS, LIST_SESSIONS, SESSION_OF } from '../../people/sessions';
import { windowBindings } from '../../projects/access';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';

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
  for (const table of ['users', 'memberships', 'sessions', 'login_failures']) await db.knex.raw(`VACUUM ANALYZE ${table}`);
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
  for (const index of ['sessions_token_hash_key', 'users_pkey', 'projects_pkey']) expect(p).toContain(index);
  // (project_id, user_id) or (user_id, project_id): either index has both columns.
  expect(p).toMatch(/memberships_(pkey|user_idx)/);
  expect(p).not.toMatch(/Seq Scan on (sessions|users|memberships)/);
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
