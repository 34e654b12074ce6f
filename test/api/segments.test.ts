import type { Response } from 'supertest';
import { previewSegment, segmentRecounts } from '../../audience/segments';
import { DomainError } from '../../core/errors';
import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';

let t: TestContext;
let key: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true); // a campaign's sender
  for (const [email, plan] of [['a@acme.io', 'pro'], ['b@acme.io', 'free'], ['c@example.com', 'pro'], ['d@example.com', 'free']] as const) {
    await t.http().post('/contacts').set(key).send({ email, data: { plan } });
  }
});
afterAll(async () => { await t.close(); });

const pro = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

test('dynamic segment: create with memberCount, members list, patch the condition, delete', async () => {
  const created = await t.http().post('/segments').set(key).send({ name: 'Pro', type: 'DYNAMIC', condition: pro });
  expect(created.status).toBe(201);
  expect(created.body.data).toMatchObject({ name: 'Pro', type: 'DYNAMIC', condition: pro, memberCount: 2, description: null });
  const id = created.body.data.id;
  const members = await t.http().get(`/segments/${id}/contacts`).set(key);
  expect(members.body.data.items.map((c: { email: string }) => c.email).sort()).toEqual(['a@acme.io', 'c@example.com']);
  expect(members.body.data).toMatchObject({ total: 2, totalExact: true });

  const patched = await t.http().patch(`/segments/${id}`).set(key).send({ condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'endsWith', value: '@acme.io' }] }] } });
  expect(patched.body.data.memberCount).toBe(2);
  expect((await t.http().get(`/segments/${id}/contacts?limit=1`).set(key)).body.data).toMatchObject({ hasMore: true, total: 2 });

  expect((await t.http().post(`/segments/${id}/members`).set(key).send({ emails: ['x@y.z'] })).status).toBe(409);
  expect((await t.http().delete(`/segments/${id}`).set(key)).status).toBe(204);
  expect((await t.http().get(`/segments/${id}`).set(key)).status).toBe(404);
});

// A process keeps a project's segments and checks them in each page's statement (audience/segments.ts knownSegments):
// what another process changed (here written to the database directly, past this one) is what the next page reads.
test('a segment page reads the segments as the database has them, whatever this process kept of them', async () => {
  const emails = async (id: string) => {
    const res = await t.http().get(`/segments/${id}/contacts`).set(key);
    expect(res.status).toBe(200);
    return res.body.data.items.map((c: { email: string }) => c.email).sort();
  };
  const { body } = await t.http().post('/segments').set(key).send({ name: 'Kept', type: 'DYNAMIC', condition: pro });
  const id = body.data.id;
  expect(await emails(id)).toEqual(['a@acme.io', 'c@example.com']);
  expect(await emails(id)).toEqual(['a@acme.io', 'c@example.com']);

  const free = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] };
  await t.db.knex('segments').where({ id }).update({ condition: JSON.stringify(free) });
  expect(await emails(id)).toEqual(['b@acme.io', 'd@example.com']);

  // A segment it names, changed elsewhere: the page of the one that names it follows.
  const { body: outer } = await t.http().post('/segments').set(key).send({ name: 'Names Kept', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOf' }] }] } });
  expect(await emails(outer.data.id)).toEqual(['b@acme.io', 'd@example.com']);
  await t.db.knex('segments').where({ id }).update({ condition: JSON.stringify(pro) });
  expect(await emails(outer.data.id)).toEqual(['a@acme.io', 'c@example.com']);

  // Made elsewhere: found; deleted elsewhere: not found.
  const [made] = await t.db.knex('segments').insert({ project_id: t.project.id, name: 'Made elsewhere', type: 'DYNAMIC', condition: JSON.stringify(free) }).returning('id');
  expect(await emails(made.id)).toEqual(['b@acme.io', 'd@example.com']);
  await t.db.knex('segments').where({ id: made.id }).delete();
  expect((await t.http().get(`/segments/${made.id}/contacts`).set(key)).status).toBe(404);
  for (const s of [outer.data.id, id]) expect((await t.http().delete(`/segments/${s}`).set(key)).status).toBe(204);
});

test('static segment: add by email (unknown emails become subscribed contacts), remove, counts', async () => {
  const { body } = await t.http().post('/segments').set(key).send({ name: 'VIP', type: 'STATIC' });
  const id = body.data.id;
  expect(body.data.memberCount).toBe(0);
  const add = await t.http().post(`/segments/${id}/members`).set(key).send({ emails: ['a@acme.io', 'New@Example.com', 'a@acme.io'] });
  expect(add.body.data).toEqual({ added: 2, created: 1, memberCount: 2 });
  const again = await t.http().post(`/segments/${id}/members`).set(key).send({ emails: ['a@acme.io'] });
  expect(again.body.data).toMatchObject({ added: 0, memberCount: 2 });
  const created = await t.db.knex('contacts').where({ project_id: t.project.id, email: 'new@example.com' }).first();
  expect(created.subscribed).toBe(true);
  const removed = await t.http().delete(`/segments/${id}/members`).set(key).send({ emails: ['new@example.com', 'unknown@nowhere.io'] });
  expect(removed.body.data).toEqual({ removed: 1, memberCount: 1 });
  // Its counts are its member rows (audience/segmentQueries.ts segmentCountRows); a deleted contact leaves with its row.
  const gone = await t.http().post(`/segments/${id}/members`).set(key).send({ emails: ['gone@example.com'] });
  expect(gone.body.data).toMatchObject({ added: 1, memberCount: 2 });
  const goneId = (await t.db.knex('contacts').where({ project_id: t.project.id, email: 'gone@example.com' }).first('id')).id;
  expect((await t.http().delete(`/contacts/${goneId}`).set(key)).status).toBe(204);
  // The count is kept (audience/segments.ts withCounts): as counted when the member was added, with that time, until a
  // read past SEGMENT_RECOUNT_AFTER_MS has it recounted after the answer.
  const kept = (await t.http().get(`/segments/${id}`).set(key)).body.data;
  expect(kept).toMatchObject({ memberCount: 2, memberCountAt: expect.any(String) });
  await t.db.knex('segments').where({ id }).update({ members_counted_at: t.db.knex.raw("members_counted_at - interval '2 minutes'") });
  const stale = (await t.http().get(`/segments/${id}`).set(key)).body.data;
  expect(stale.memberCount).toBe(2);
  await segmentRecounts();
  const recounted = (await t.http().get(`/segments/${id}`).set(key)).body.data;
  expect(recounted.memberCount).toBe(1);
  expect(Date.parse(recounted.memberCountAt)).toBeGreaterThan(Date.parse(stale.memberCountAt));
  const listed = await t.http().get(`/segments/${id}/contacts`).set(key);
  expect(listed.body.data).toMatchObject({ total: 1, hasMore: false });
  expect(listed.body.data.items.map((c: { email: string }) => c.email)).toEqual(['a@acme.io']);
  expect((await t.http().patch(`/segments/${id}`).set(key).send({ condition: pro })).status).toBe(422);
  const tooMany = await t.http().post(`/segments/${id}/members`).set(key).send({ emails: Array.from({ length: 1001 }, (_, i) => `m${i}@x.io`) });
  expect(tooMany.status).toBe(422);
});

test('nested segments, cycles refused, in-use segments cannot be deleted', async () => {
  const base = await t.http().post('/segments').set(key).send({ name: 'Base', type: 'DYNAMIC', condition: pro });
  const ref = (id: string) => ({ logic: 'AND', groups: [{ filters: [{ field: `segment.${id.toUpperCase()}`, operator: 'memberOf' }, { field: 'email', operator: 'contains', value: 'acme' }] }] });
  const nested = await t.http().post('/segments').set(key).send({ name: 'Nested', type: 'DYNAMIC', condition: ref(base.body.data.id) });
  expect(nested.status).toBe(201);
  expect(nested.body.data.memberCount).toBe(1);
  const cycle = await t.http().patch(`/segments/${base.body.data.id}`).set(key).send({ condition: ref(nested.body.data.id) });
  expect(cycle.status).toBe(422);
  expect(cycle.body.error.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0.field', code: 'cycle' });
  const self = await t.http().patch(`/segments/${base.body.data.id}`).set(key).send({ condition: ref(base.body.data.id) });
  expect(self.body.error.errors[0].code).toBe('cycle');
  const inUse = await t.http().delete(`/segments/${base.body.data.id}`).set(key);
  expect(inUse.status).toBe(409);
  expect(inUse.body.error.message).toContain('Nested');
});

test('a segment named by an enabled workflow\'s condition step or by a draft campaign\'s filter is in use: 409 naming it; once they let go, it can be deleted', async () => {
  const seg = (await t.http().post('/segments').set(key).send({ name: 'Named', type: 'DYNAMIC', condition: pro })).body.data.id as string;
  const memberOf = { logic: 'AND', groups: [{ filters: [{ field: `segment.${seg}`, operator: 'memberOf' }] }] };
  const flow = (await t.http().post('/workflows').set(key).send({
    name: 'Pro path', enabled: true, trigger: { type: 'EVENT', event: 'signed_up' },
    steps: [{ id: 'check', type: 'CONDITION', config: { filter: memberOf }, branches: { yes: null, no: null } }],
  })).body.data.id as string;
  const byFlow = await t.http().delete(`/segments/${seg}`).set(key);
  expect(byFlow.status).toBe(409);
  expect(byFlow.body.error.message).toContain('Pro path');
  expect((await t.http().patch(`/workflows/${flow}`).set(key).send({ enabled: false })).status).toBe(200);

  const campaign = (await t.http().post('/campaigns').set(key).send({
    name: 'Pro news', subject: 's', body: '<p>b</p>', from: 'news@example.com', audienceType: 'FILTERED', audienceFilter: memberOf,
  })).body.data.id as string;
  const byCampaign = await t.http().delete(`/segments/${seg}`).set(key);
  expect(byCampaign.status).toBe(409);
  expect(byCampaign.body.error.message).toContain('Pro news');
  expect((await t.http().delete(`/campaigns/${campaign}`).set(key)).status).toBe(204);
  expect((await t.http().delete(`/segments/${seg}`).set(key)).status).toBe(204);
});

test('a segment\'s pages follow a change of its condition and of a segment it names, and each cursor page answers for its cursor', async () => {
  // Their statements are compiled once per shape (db/pages.ts pageStatementCache): these are the shapes changing.
  const base = (await t.http().post('/segments').set(key).send({ name: 'Plan base', type: 'DYNAMIC', condition: pro })).body.data;
  const named = { logic: 'AND', groups: [{ filters: [{ field: `segment.${base.id}`, operator: 'memberOf' }] }] };
  const nested = (await t.http().post('/segments').set(key).send({ name: 'Plan nested', type: 'DYNAMIC', condition: named })).body.data;
  const walk = async (id: string) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: { email: string }[]; nextCursor: string | null } = (await t.http().get(`/segments/${id}/contacts?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`).set(key)).body.data;
      seen.push(...page.items.map((c) => c.email));
      cursor = page.nextCursor;
    } while (cursor);
    return seen;
  };
  // Newest first: c and d were made after a and b.
  expect(await walk(nested.id)).toEqual(['c@example.com', 'a@acme.io']);
  const free = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] };
  expect((await t.http().patch(`/segments/${base.id}`).set(key).send({ condition: free })).status).toBe(200);
  expect(await walk(nested.id)).toEqual(['d@example.com', 'b@acme.io']);
  expect(await walk(base.id)).toEqual(['d@example.com', 'b@acme.io']);
  expect((await t.http().patch(`/segments/${nested.id}`).set(key).send({ condition: pro })).status).toBe(200);
  expect(await walk(nested.id)).toEqual(['c@example.com', 'a@acme.io']);
  for (const id of [nested.id, base.id]) expect((await t.http().delete(`/segments/${id}`).set(key)).status).toBe(204);
});

test('invalid conditions are 422 naming the path', async () => {
  const bad = await t.http().post('/segments').set(key).send({ name: 'x', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'within', value: 3 }] }] } });
  expect(bad.status).toBe(422);
  expect(bad.body.error.errors[0].field).toBe('condition.groups.0.filters.0.unit');
  const missing = await t.http().post('/segments').set(key).send({ name: 'x', type: 'DYNAMIC' });
  expect(missing.body.error.errors[0]).toMatchObject({ field: 'condition', code: 'required' });
  const staticWithCondition = await t.http().post('/segments').set(key).send({ name: 'x', type: 'STATIC', condition: pro });
  expect(staticWithCondition.body.error.errors[0].field).toBe('condition');
  const unknownSegment = await t.http().post('/segments').set(key).send({ name: 'x', type: 'DYNAMIC', condition: { logic: 'OR', groups: [{ filters: [{ field: 'segment.01a20131-0000-7000-8000-000000000000', operator: 'memberOf' }] }] } });
  expect(unknownSegment.body.error.errors[0]).toMatchObject({ code: 'not_found' });
});

test('preview: count and first contacts without saving', async () => {
  const res = await t.http().post('/segments/preview').set(key).send({ condition: pro });
  expect(res.status).toBe(200);
  expect(res.body.data.count).toBe(2);
  expect(res.body.data.contacts.map((c: { email: string }) => c.email).sort()).toEqual(['a@acme.io', 'c@example.com']);
});

test('list with memberCount in one go; tenancy', async () => {
  const p = await t.newProject('segments list');
  const k = bearer(p.secretKey);
  await t.http().post('/contacts').set(k).send({ email: 'z@acme.io', data: { plan: 'pro' } });
  for (let i = 0; i < 3; i++) await t.http().post('/segments').set(k).send({ name: `S${i}`, type: 'DYNAMIC', condition: pro });
  await t.http().post('/segments').set(k).send({ name: 'Static', type: 'STATIC' });
  const seen: { name: string; memberCount: number }[] = [];
  let cursor: string | null = null;
  do {
    const res: Response = await t.http().get(`/segments?limit=3${cursor ? `&cursor=${cursor}` : ''}`).set(k);
    expect(res.body.data.total).toBe(4);
    seen.push(...res.body.data.items);
    cursor = res.body.data.nextCursor;
  } while (cursor);
  expect(seen.map((s) => [s.name, s.memberCount])).toEqual([['Static', 0], ['S2', 1], ['S1', 1], ['S0', 1]]);
  const mine = await t.http().get('/segments?limit=100').set(key);
  for (const s of seen) expect(mine.body.data.items.map((x: { id: string }) => x.id)).not.toContain((s as unknown as { id: string }).id);
  const theirs = (seen[0] as unknown as { id: string }).id;
  expect((await t.http().get(`/segments/${theirs}`).set(key)).status).toBe(404);
  expect((await t.http().get(`/segments/${theirs}/contacts`).set(key)).status).toBe(404);
  expect((await t.http().post(`/segments/${theirs}/members`).set(key).send({ emails: ['a@acme.io'] })).status).toBe(404);
});

test('a preview that counts for too long is stopped in PostgreSQL and answered 422 condition_too_slow, naming the condition', async () => {
  // A project big enough that a data.* filter (which reads every contact) cannot finish in 1 ms.
  const other = await t.newProject('Slow preview');
  await t.db.knex.raw(`INSERT INTO contacts (project_id, email, data) SELECT ?::uuid, 'slow' || g || '@example.org', jsonb_build_object('plan', 'pro', 'n', g) FROM generate_series(1, 30000) g`, [other.id]);
  const slow = previewSegment(t.db.knex, other.id, { logic: 'AND', groups: [{ filters: [{ field: 'data.n', operator: 'equals', value: 7 }] }] }, { timeoutMs: 1 });
  await expect(slow).rejects.toBeInstanceOf(DomainError);
  await expect(slow).rejects.toMatchObject({ details: { errors: [{ field: 'condition', code: 'condition_too_slow' }] } });
  // Cancelled, not left running.
  await new Promise((r) => setTimeout(r, 200));
  const running = await t.db.knex.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%slow%' AND query NOT LIKE '%pg_stat_activity%'");
  expect(running.rows[0].n).toBe(0);
  // Without the tiny budget it answers.
  const ok = await previewSegment(t.db.knex, other.id, { logic: 'AND', groups: [{ filters: [{ field: 'data.n', operator: 'equals', value: 7 }] }] });
  expect(ok.count).toBe(1);
  await t.db.knex('contacts').where({ project_id: other.id }).delete();
}, 60_000);

test('a segment\'s members: the total is exact up to 100 for a dynamic segment and 1,000 for a static one (totalExact), and past it says "at least"', async () => {
  const p = await t.newProject('Many members');
  const k = bearer(p.secretKey);
  // 1,001 contacts in one INSERT, three of them on the free plan.
  await t.db.knex.raw(`INSERT INTO contacts (project_id, email, data) SELECT ?::uuid, 'm' || g || '@cap.example', jsonb_build_object('plan', CASE WHEN g <= 3 THEN 'free' ELSE 'pro' END) FROM generate_series(1, 1001) g`, [p.id]);
  const all = (await t.http().post('/segments').set(k).send({ name: 'All', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'endsWith', value: '@cap.example' }] }] } })).body.data.id;
  const page = (await t.http().get(`/segments/${all}/contacts?limit=5`).set(k)).body.data;
  expect(page).toMatchObject({ total: 100, totalExact: false, hasMore: true });
  expect(page.items).toHaveLength(5);
  // The largest page still has its one row more: a count of 101 holds the 101 a page of 100 reads.
  const largest = (await t.http().get(`/segments/${all}/contacts?limit=100`).set(k)).body.data;
  expect(largest).toMatchObject({ total: 100, totalExact: false, hasMore: true });
  expect(largest.items).toHaveLength(100);
  const second = (await t.http().get(`/segments/${all}/contacts?limit=100&cursor=${largest.nextCursor}`).set(k)).body.data;
  expect(second.items[0].id < largest.items[99].id).toBe(true);
  // Its size is the segment's kept count.
  expect((await t.http().get(`/segments/${all}`).set(k)).body.data.memberCount).toBe(1001);
  const free = (await t.http().post('/segments').set(k).send({ name: 'Free', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] } })).body.data.id;
  expect((await t.http().get(`/segments/${free}/contacts`).set(k)).body.data).toMatchObject({ total: 3, totalExact: true });
  // A static segment's members are counted the same way (its rows of segment_members).
  const vip = (await t.http().post('/segments').set(k).send({ name: 'VIP', type: 'STATIC' })).body.data.id;
  await t.db.knex.raw('INSERT INTO segment_members (project_id, segment_id, contact_id) SELECT project_id, ?::uuid, id FROM contacts WHERE project_id = ?', [vip, p.id]);
  expect((await t.http().get(`/segments/${vip}/contacts?limit=5`).set(k)).body.data).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
  // Under the cap a dynamic segment's total is exact: 100 contacts left.
  await t.db.knex('contacts').where({ project_id: p.id }).whereRaw("email ~ '^m(1[0-9][1-9]|1[1-9]0|[2-9][0-9][0-9]|1000|1001)@'").delete();
  expect((await t.http().get(`/segments/${all}/contacts?limit=5`).set(k)).body.data).toMatchObject({ total: 100, totalExact: true });
});
