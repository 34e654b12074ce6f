import request from 'supertest';
import type { JsonRoute } from '../../api/route';
import { ROUTES } from '../../api/routes';
import { allows, ROLES, type Principal, type Role } from '../../projects/roles';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { asPerson, person, signIn } from './support';

/**
 * The permission matrix, walked (issue 27): EVERY operation of the route table that acts on a project, called by a
 * session of each role and by a full key, is refused (403) exactly when projects/roles.ts `allows` says so, before
 * anything it names is looked up (the path's ids are ids of nothing, so an allowed call is a 404 or a 422, never a 403).
 * And a member of project A sees nothing of project B.
 */
let t: TestContext;
const cookies = {} as Record<Role, string>;

beforeAll(async () => {
  t = await createTestContext();
  for (const role of ROLES) cookies[role] = await signIn(t.server, (await person(t.db.knex, { [t.project.id]: role })).email);
});
afterAll(() => t.close());

const projectRoutes = ROUTES.filter((r): r is JsonRoute & typeof r => !r.serve && !r.people && r.permission !== undefined);
const NOWHERE = '0190a3f1-0000-7000-8000-00000000abcd';
const pathOf = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => (name === 'email' ? 'nobody%40example.org' : NOWHERE));

test('the table has project operations of every permission but owner, and every one declares its permission', () => {
  expect(projectRoutes.length).toBeGreaterThanOrEqual(60);
  expect(new Set(projectRoutes.map((r) => r.permission))).toEqual(new Set(['read', 'send', 'write', 'admin']));
});

type Caller = { name: string; principal: Principal; headers: () => Record<string, string> };
const callers: Caller[] = [
  ...ROLES.map((role): Caller => ({ name: role, principal: { kind: 'user', userId: '', sessionId: '', role }, headers: () => asPerson(cookies[role], t.project.id) })),
  { name: 'full key', principal: { kind: 'key', keyId: '', keyType: 'secret', scope: 'full' }, headers: () => bearer(t.project.secretKey) },
];

describe.each(callers)('$name', (caller) => {
  test.each(projectRoutes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))('%s', async (_name, route) => {
    const call = request(t.server)[route.method](pathOf(route.path)).set(caller.headers());
    const res = route.method === 'get' ? await call : await call.send({});
    const allowed = allows(caller.principal, route.permission);
    if (allowed) {
      expect(res.status).not.toBe(403);
      expect(res.status).toBeLessThan(500);
    } else {
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining(`needs the ${route.permission} permission`) });
    }
  });
});

test('a member of project A sees nothing of project B', async () => {
  const b = await t.newProject('Project B');
  const created = await request(t.server).post('/contacts').set(bearer(b.secretKey)).send({ email: 'only-in-b@example.org' });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  const member = asPerson(cookies.member, t.project.id);
  expect((await request(t.server).get(`/contacts/${id}`).set(member)).status).toBe(404);
  expect((await request(t.server).patch(`/contacts/${id}`).set(member).send({ subscribed: false })).status).toBe(404);
  expect((await request(t.server).delete(`/contacts/${id}`).set(member)).status).toBe(404);
  const list = await request(t.server).get('/contacts').set(member);
  expect(list.body.data.items.map((c: { email: string }) => c.email)).not.toContain('only-in-b@example.org');
  // Naming B itself: not found, as any project that is not theirs.
  const asB = await request(t.server).get(`/contacts/${id}`).set({ ...member, 'Herald-Project': b.id });
  expect(asB.status).toBe(404);
  expect(asB.body.error.errors[0].field).toBe('Herald-Project');
  expect((await request(t.server).get(`/contacts/${id}`).set(bearer(b.secretKey))).body.data.email).toBe('only-in-b@example.org');
});
