import type { Knex } from 'knex';
import request from 'supertest';
import type { Server } from 'node:http';
import { createUser } from '../../people/users';
import type { Role } from '../../projects/roles';

/** People for the session tests: an account, its memberships (written directly: the members routes are not ours here). */
export const PASSWORD = 'correct horse battery staple';
export const ORIGIN = 'http://herald.test'; // test/support/app.ts testAppDeps' publicUrl

let n = 0;
export async function person(knex: Knex, memberships: Record<string, Role>, opts: { operator?: boolean; email?: string } = {}) {
  const email = opts.email ?? `person${++n}-${Date.now()}@example.org`;
  const user = await createUser(knex, { email, name: `Person ${n}`, password: PASSWORD, operator: opts.operator });
  for (const [projectId, role] of Object.entries(memberships)) {
    await knex.raw('INSERT INTO memberships (project_id, user_id, role) VALUES (?, ?, ?)', [projectId, user.id, role]);
  }
  return { ...user, email };
}

/** The `herald_session=…` pair of a Set-Cookie answer. */
export function cookieOf(res: request.Response): string {
  const set = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const line = set.find((c) => c.startsWith('herald_session='));
  if (!line) throw new Error(`no session cookie in ${JSON.stringify(res.headers)}`);
  return line.split(';')[0]!;
}

export async function signIn(server: Server, email: string, password = PASSWORD): Promise<string> {
  const res = await request(server).post('/auth/login').send({ email, password });
  if (res.status !== 200) throw new Error(`login ${res.status}: ${JSON.stringify(res.body)}`);
  return cookieOf(res);
}

/** The headers of a same-origin request of a person signed in, acting on a project. */
export const asPerson = (cookie: string, projectId: string) => ({ Cookie: cookie, 'Herald-Project': projectId, Origin: ORIGIN });
