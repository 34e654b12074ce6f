import { ROUTES } from '../../api/routes/index';
import { actorOf, audited, OPERATOR, recordAudit } from '../../audit/log';
import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';

/**
 * The audit log (issue 27, point 4): every listed change by a key has its entry, written in the change's transaction
 * (a failed change leaves none); GET /audit-log filters and pages, and never shows another project's entries.
 */
let t: TestContext;
let key: { Authorization: string };
let keyId: string;
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  keyId = (await t.db.knex('api_keys').where({ project_id: t.project.id, type: 'secret' }).first('id')).id;
  await addDomain(t.project.id, 'example.com', true);
});
afterAll(async () => { await t.close(); });

const entries = async (projectId = t.project.id) =>
  t.db.knex('audit_log').where({ project_id: projectId }).orderBy('id').select('*') as Promise<Record<string, unknown>[]>;

/** Runs a change and returns the one entry it wrote. */
async function change(run: () => Promise<{ status: number }>, status: number) {
  const before = (await entries()).length;
  const res = await run();
  expect(res.status).toBe(status);
  const after = await entries();
  expect(after).toHaveLength(before + 1);
  return after.at(-1)!;
}

test('every listed change by a key has its entry: who, what, which id, from where', async () => {
  const http = t.http;
  const expectEntry = (e: Record<string, unknown>, operation: string, resourceType: string, resourceId?: string) => {
    expect(e).toMatchObject({ actor_kind: 'key', actor_id: keyId, operation, resource_type: resourceType, address: expect.stringMatching(/127\.0\.0\.1/) });
    if (resourceId) expect(e.resource_id).toBe(resourceId);
  };

  // Keys.
  let id = '';
  let e = await change(async () => { const r = await http().post('/keys').set(key).send({ name: 'audited', scope: 'sending' }); id = r.body.data.id; return r; }, 201);
  expectEntry(e, 'createKey', 'key', id);
  expect(JSON.stringify(e.details)).not.toMatch(/sk_/);
  e = await change(() => http().delete(`/keys/${id}`).set(key), 204);
  expectEntry(e, 'revokeKey', 'key', id);
  expect(e.details).toEqual({ name: 'audited' });

  // Members and invitations (a full key acts as an admin): invite, revoke; a member's role changed, then removed.
  e = await change(async () => { const r = await http().post('/invitations').set(key).send({ email: 'invited@example.org', role: 'member' }); id = r.body.data.id; return r; }, 201);
  expectEntry(e, 'createInvitation', 'invitation', id);
  expect(JSON.stringify(e.details)).not.toMatch(/token/);
  expectEntry(await change(() => http().delete(`/invitations/${id}`).set(key), 204), 'deleteInvitation', 'invitation', id);
  const [user] = await t.db.knex('users').insert({ email: 'member@example.org', name: 'M' }).returning('id');
  await t.db.knex('memberships').insert({ project_id: t.project.id, user_id: user.id, role: 'member' });
  e = await change(() => http().patch(`/members/${user.id}`).set(key).send({ role: 'viewer' }), 200);
  expectEntry(e, 'updateMember', 'member', user.id);
  expect(e.details).toEqual({ role: 'viewer', was: 'member' });
  expectEntry(await change(() => http().delete(`/members/${user.id}`).set(key), 204), 'deleteMember', 'member', user.id);

  // Domains.
  e = await change(async () => { const r = await http().post('/domains').set(key).send({ domain: 'audit.example.net' }); id = r.body.data.id; return r; }, 201);
  expectEntry(e, 'createDomain', 'domain', id);
  expectEntry(await change(() => http().delete(`/domains/${id}`).set(key), 204), 'deleteDomain', 'domain', id);

  // Inbound domains and their routes.
  e = await change(async () => { const r = await http().post('/inbound/domains').set(key).send({ domain: 'in.audit.example.net' }); id = r.body.data.id; return r; }, 201);
  expectEntry(e, 'createInboundDomain', 'inbound_domain', id);
  const inboundDomain = id;
  e = await change(async () => { const r = await http().post('/inbound/routes').set(key).send({ match: '*@in.audit.example.net', action: 'store' }); id = r.body.data.id; return r; }, 201);
  expectEntry(e, 'createInboundRoute', 'inbound_route', id);
  expectEntry(await change(() => http().patch(`/inbound/routes/${id}`).set(key).send({ priority: 5 }), 200), 'updateInboundRoute', 'inbound_route', id);
  expectEntry(await change(() => http().delete(`/inbound/routes/${id}`).set(key), 204), 'deleteInboundRoute', 'inbound_route', id);
  expectEntry(await change(() => http().delete(`/inbound/domains/${inboundDomain}`).set(key), 204), 'deleteInboundDomain', 'inbound_domain', inboundDomain);

  // Webhooks, the rotation of their secret included; the secret is never in an entry.
  e = await change(async () => { const r = await http().post('/webhooks').set(key).send({ url: 'https://hooks.example.org/h?token=s3cret', events: ['email.sent'] }); id = r.body.data.id; return r; }, 201);
  expectEntry(e, 'createWebhook', 'webhook', id);
  // Receivers put tokens in the query: the entry keeps the origin and path only.
  expect(e.details).toEqual({ url: 'https://hooks.example.org/h', events: ['email.sent'] });
  expectEntry(await change(() => http().patch(`/webhooks/${id}`).set(key).send({ enabled: false }), 200), 'updateWebhook', 'webhook', id);
  const rotated = await change(() => http().post(`/webhooks/${id}/rotate-secret`).set(key), 200);
  expectEntry(rotated, 'rotateWebhookSecret', 'webhook', id);
  expect(JSON.stringify(await entries())).not.toMatch(/whsec_/);
  expectEntry(await change(() => http().delete(`/webhooks/${id}`).set(key), 204), 'deleteWebhook', 'webhook', id);

  // Settings.
  e = await change(() => http().patch('/settings').set(key).send({ tracking: { send: { opens: true } } }), 200);
  expectEntry(e, 'updateSettings', 'settings');
  expect(e.details).toEqual({ changed: { tracking: { send: { opens: true } } } });

  // Suppressions.
  expectEntry(await change(() => http().post('/suppressions').set(key).send({ email: 'gone@example.org' }), 201), 'createSuppression', 'suppression', 'gone@example.org');
  expectEntry(await change(() => http().delete('/suppressions/gone@example.org').set(key), 204), 'deleteSuppression', 'suppression', 'gone@example.org');

  // Campaigns: schedule, cancel, delete.
  const campaign = (await http().post('/campaigns').set(key).send({ name: 'c', subject: 's', body: '<p>b</p>', from: 'news@example.com', audienceType: 'ALL' })).body.data.id;
  e = await change(() => http().post(`/campaigns/${campaign}/send`).set(key).send({ scheduledAt: new Date(Date.now() + 86_400_000).toISOString() }), 200);
  expectEntry(e, 'sendCampaign', 'campaign', campaign);
  expect((e.details as { scheduledAt: string | null }).scheduledAt).not.toBeNull();
  expectEntry(await change(() => http().post(`/campaigns/${campaign}/cancel`).set(key), 200), 'cancelCampaign', 'campaign', campaign);
  expectEntry(await change(() => http().delete(`/campaigns/${campaign}`).set(key), 204), 'deleteCampaign', 'campaign', campaign);

  // Every other delete.
  const contact = (await http().post('/contacts').set(key).send({ email: 'c@example.org' })).body.data.id;
  expectEntry(await change(() => http().delete(`/contacts/${contact}`).set(key), 204), 'deleteContact', 'contact', contact);
  const template = (await http().post('/templates').set(key).send({ name: 't', subject: 's', body: 'b' })).body.data.id;
  expectEntry(await change(() => http().delete(`/templates/${template}`).set(key), 204), 'deleteTemplate', 'template', template);
  const segment = (await http().post('/segments').set(key).send({ name: 's', type: 'STATIC' })).body.data.id;
  await http().post(`/segments/${segment}/members`).set(key).send({ emails: ['m1@example.org', 'm2@example.org'] });
  e = await change(() => http().delete(`/segments/${segment}/members`).set(key).send({ emails: ['m1@example.org'] }), 200);
  expectEntry(e, 'removeSegmentMembers', 'segment', segment);
  expect(e.details).toEqual({ removed: 1 });
  expectEntry(await change(() => http().delete(`/segments/${segment}`).set(key), 204), 'deleteSegment', 'segment', segment);
  const workflow = (await http().post('/workflows').set(key).send({ name: 'w', trigger: { type: 'EVENT', event: 'x' }, steps: [{ id: 'end', type: 'EXIT' }] })).body.data.id;
  expectEntry(await change(() => http().delete(`/workflows/${workflow}`).set(key), 204), 'deleteWorkflow', 'workflow', workflow);
});

test('no change of the route table escapes the audit: every DELETE and every admin change is among those recorded above', async () => {
  const recorded = new Set((await entries()).map((e) => e.operation as string));
  // Project operations: a person's own sessions (DELETE /auth/sessions/:id) belong to no project.
  const expected = ROUTES.filter((r) => !r.serve && !r.people && (r.method === 'delete' || (r.permission === 'admin' && r.method !== 'get')))
    .map((r) => r.operationId)
    // Checked against a DNS server of the test's own in test/domains/api.test.ts and test/inbound/inbound.test.ts.
    .filter((op) => op !== 'verifyDomain' && op !== 'verifyInboundDomain');
  expect(expected.filter((op) => !recorded.has(op))).toEqual([]);
  for (const op of ['sendCampaign', 'cancelCampaign']) expect(recorded).toContain(op);
});

test('a failed change leaves no entry: a refused delete, a foreign id, a conflict', async () => {
  const before = (await entries()).length;
  const other = await t.newProject('Audit foreign');
  const theirs = (await t.http().post('/contacts').set(bearer(other.secretKey)).send({ email: 'x@example.org' })).body.data.id;
  expect((await t.http().delete(`/contacts/${theirs}`).set(key)).status).toBe(404);
  expect((await t.http().delete('/suppressions/never@example.org').set(key)).status).toBe(404);
  expect((await t.http().post('/domains').set(key).send({ domain: 'example.com' })).status).toBe(409);
  const campaign = (await t.http().post('/campaigns').set(key).send({ name: 'c2', subject: 's', body: 'b', from: 'news@example.com', audienceType: 'ALL' })).body.data.id;
  await t.http().post(`/campaigns/${campaign}/send`).set(key).send({ scheduledAt: new Date(Date.now() + 86_400_000).toISOString() });
  const afterSend = (await entries()).length;
  expect((await t.http().delete(`/campaigns/${campaign}`).set(key)).status).toBe(409);
  expect(await entries()).toHaveLength(afterSend);
  expect(afterSend).toBe(before + 1); // the send only
  // Sends and tracking are not audited.
  expect((await t.http().post('/v1/send').set(key).send({ to: 'r@example.org', from: 'a@example.com', subject: 's', body: 'b' })).status).toBe(200);
  expect(await entries()).toHaveLength(afterSend);
});

test("actorOf: a key's id, or a signed-in person's (sessions), with the request's address", () => {
  expect(actorOf({ principal: { kind: 'key', keyId: 'k', keyType: 'secret', scope: 'full' }, address: '192.0.2.1' })).toEqual({ kind: 'key', id: 'k', address: '192.0.2.1' });
  expect(actorOf({ principal: { kind: 'user', userId: 'u', sessionId: 's', role: 'admin' }, address: '2001:db8::1' })).toEqual({ kind: 'user', id: 'u', address: '2001:db8::1' });
});

test('the entry rolls back with its change, and commits only with it', async () => {
  const knex = t.db.knex;
  const entry = { operation: 'test.rollback', resourceType: 'test', resourceId: 'x' };
  await expect(audited(knex, t.project.id, OPERATOR, entry, async (trx) => {
    await trx('contacts').insert({ project_id: t.project.id, email: 'rolled-back@example.org' });
    throw new Error('the change fails after its write');
  })).rejects.toThrow('the change fails');
  expect(await knex('audit_log').where({ operation: 'test.rollback' })).toHaveLength(0);
  expect(await knex('contacts').where({ email: 'rolled-back@example.org' })).toHaveLength(0);
  // An entry recorded in a transaction that then rolls back is gone with it.
  await knex.transaction(async (trx) => {
    await recordAudit(trx, { ...entry, projectId: t.project.id, actor: OPERATOR });
    await trx.rollback();
  }).catch(() => undefined);
  expect(await knex('audit_log').where({ operation: 'test.rollback' })).toHaveLength(0);
});

describe('GET /audit-log', () => {
  let b: { Authorization: string };
  beforeAll(async () => {
    const other = await t.newProject('Audit B');
    b = bearer(other.secretKey);
    await t.http().post('/suppressions').set(b).send({ email: 'b-only@example.org' });
    for (let i = 0; i < 5; i++) await t.http().post('/suppressions').set(key).send({ email: `page${i}@example.org` });
  });

  test("tenancy: project B sees only its own entries; A's never", async () => {
    const mine = (await t.http().get('/audit-log').query({ limit: 100 }).set(b)).body.data;
    expect(mine.total).toBe(1);
    expect(mine.items[0]).toMatchObject({ operation: 'createSuppression', resourceId: 'b-only@example.org' });
    const a = (await t.http().get('/audit-log').query({ limit: 100 }).set(key)).body.data.items;
    expect(a.map((i: { resourceId: string }) => i.resourceId)).not.toContain('b-only@example.org');
  });

  test('the total is exact up to 1,000 (totalExact), and past it says "at least 1,000"', async () => {
    expect((await t.http().get('/audit-log').set(b)).body.data).toMatchObject({ total: 1, totalExact: true });
    const many = await t.newProject('Audit many');
    await t.db.knex.raw(`INSERT INTO audit_log (project_id, actor_kind, operation, resource_type) SELECT ?::uuid, 'operator', 'key.create', 'key' FROM generate_series(1, 1001)`, [many.id]);
    const page = (await t.http().get('/audit-log').query({ limit: 5 }).set(bearer(many.secretKey))).body.data;
    expect(page).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
    expect(page.items).toHaveLength(5);
  });

  test('cursor pages: every entry once, newest first', async () => {
    const all = (await entries()).map((e) => e.id).reverse();
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await t.http().get('/audit-log').query({ limit: 3, ...(cursor ? { cursor } : {}) }).set(key);
      expect(res.status).toBe(200);
      expect(res.body.data.total).toBe(all.length);
      seen.push(...res.body.data.items.map((i: { id: string }) => i.id));
      cursor = res.body.data.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(all);
  });

  test('filters: actor, operation, resourceType, resourceId, since/until', async () => {
    const q = async (query: Record<string, string>) => {
      const res = await t.http().get('/audit-log').query({ limit: 100, ...query }).set(key);
      expect(res.status).toBe(200);
      return res.body.data.items as { operation: string; resourceType: string; resourceId: string; actor: { id: string }; at: string }[];
    };
    const byOp = await q({ operation: 'createSuppression' });
    expect(byOp.length).toBeGreaterThanOrEqual(5);
    expect(byOp.every((i) => i.operation === 'createSuppression')).toBe(true);
    expect((await q({ resourceType: 'webhook' })).every((i) => i.resourceType === 'webhook')).toBe(true);
    expect((await q({ resourceId: 'page3@example.org' })).map((i) => i.resourceId)).toEqual(['page3@example.org']);
    expect((await q({ actor: keyId })).length).toBe((await entries()).filter((e) => e.actor_id === keyId).length);
    expect(await q({ actor: '00000000-0000-7000-8000-000000000000' })).toEqual([]);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await q({ since: future })).toEqual([]);
    expect((await q({ until: future })).length).toBe((await entries()).length);
    const bad = await t.http().get('/audit-log').query({ since: 'yesterday' }).set(key);
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors[0].field).toBe('since');
  });

  test('a sending key may not read it (403)', async () => {
    const made = (await t.http().post('/keys').set(key).send({ name: 'sender', scope: 'sending' })).body.data;
    expect((await t.http().get('/audit-log').set(bearer(made.key))).status).toBe(403);
  });
});
