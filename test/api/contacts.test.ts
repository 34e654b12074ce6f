import type { Response } from 'supertest';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { searchPattern } from '../../db/queries/contacts';

let t: TestContext;
let auth: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  auth = bearer(t.project.secretKey);
});
afterAll(async () => { await t.close(); });

const upsert = (body: object, key = auth) => t.http().post('/contacts').set(key).send(body);

describe('POST /contacts (upsert by email)', () => {
  test('creates with 201, trims and lower-cases the email, subscribed by default', async () => {
    const res = await upsert({ email: '  Grace.Hopper@Example.COM ', data: { firstName: 'Grace' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        email: 'grace.hopper@example.com',
        subscribed: true,
        data: { firstName: 'Grace' },
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        _meta: { isNew: true, isUpdate: false },
      },
    });
  });

  test('existing email answers 200, merges data key by key, null deletes a key, keeps subscribed unless sent', async () => {
    const first = await upsert({ email: 'merge@example.com', subscribed: false, data: { a: 1, b: 2, nested: { x: 1 } } });
    const second = await upsert({ email: 'MERGE@example.com', data: { b: null, c: 3, nested: { y: 2 } } });
    expect(second.status).toBe(200);
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(second.body.data._meta).toEqual({ isNew: false, isUpdate: true });
    expect(second.body.data.subscribed).toBe(false);
    // Top-level keys merge; a nested object is a value and is replaced whole.
    expect(second.body.data.data).toEqual({ a: 1, c: 3, nested: { y: 2 } });
    const third = await upsert({ email: 'merge@example.com', subscribed: true });
    expect(third.body.data.subscribed).toBe(true);
    expect(third.body.data.data).toEqual({ a: 1, c: 3, nested: { y: 2 } });
  });

  test('updatedAt moves only when something changed', async () => {
    const a = await upsert({ email: 'stable@example.com', data: { k: 1 } });
    const b = await upsert({ email: 'stable@example.com', data: { k: 1 } });
    expect(b.body.data.updatedAt).toBe(a.body.data.updatedAt);
    const c = await upsert({ email: 'stable@example.com', data: { k: 2 } });
    expect(new Date(c.body.data.updatedAt).getTime()).toBeGreaterThan(new Date(a.body.data.updatedAt).getTime());
  });

  test('null for a key of a new contact stores nothing for it', async () => {
    const res = await upsert({ email: 'nulls@example.com', data: { gone: null, kept: 0 } });
    expect(res.body.data.data).toEqual({ kept: 0 });
  });

  test('concurrent upserts of one email end in one contact and no 500', async () => {
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => upsert({ email: 'race@example.com', data: { [`k${i}`]: i } })));
    for (const r of results) expect([200, 201]).toContain(r.status);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    const rows = await t.db.knex('contacts').where({ project_id: t.project.id, email: 'race@example.com' });
    expect(rows).toHaveLength(1);
    // Every concurrent merge landed: no lost update.
    expect(Object.keys(rows[0].data)).toHaveLength(25);
  });
});

describe('GET / PATCH / DELETE /contacts/:id', () => {
  test('get, patch (merge + subscribed), delete 204, then 404', async () => {
    const created = await upsert({ email: 'crud@example.com', data: { plan: 'free', seats: 1 } });
    const id = created.body.data.id;
    const got = await t.http().get(`/contacts/${id}`).set(auth);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ ...created.body.data, _meta: undefined });
    expect(got.body.data._meta).toBeUndefined();

    const patched = await t.http().patch(`/contacts/${id}`).set(auth).send({ subscribed: false, data: { plan: 'pro', seats: null } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id, subscribed: false, data: { plan: 'pro' } });

    const del = await t.http().delete(`/contacts/${id}`).set(auth);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await t.http().get(`/contacts/${id}`).set(auth)).status).toBe(404);
    expect((await t.http().delete(`/contacts/${id}`).set(auth)).status).toBe(404);
    expect((await t.http().patch(`/contacts/${id}`).set(auth).send({ subscribed: true })).status).toBe(404);
  });

  test('patch validation: empty body and email changes are 422', async () => {
    const { body } = await upsert({ email: 'patchval@example.com' });
    const empty = await t.http().patch(`/contacts/${body.data.id}`).set(auth).send({});
    expect(empty.status).toBe(422);
    const email = await t.http().patch(`/contacts/${body.data.id}`).set(auth).send({ email: 'x@example.com' });
    expect(email.status).toBe(422);
    expect(email.body.error.errors[0].field).toBe('email');
  });

  test('ids that are not UUIDs are 404, never 500', async () => {
    for (const method of ['get', 'patch', 'delete'] as const) {
      const res = await t.http()[method]('/contacts/not-a-uuid').set(auth).send({ subscribed: true });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });
});

describe('tenancy', () => {
  test("another project's contact is 404 on every route, and lists never leak", async () => {
    const other = await t.newProject('tenant B');
    const mine = await upsert({ email: 'tenant@example.com', data: { owner: 'A' } });
    const theirs = await upsert({ email: 'tenant@example.com', data: { owner: 'B' } }, bearer(other.secretKey));
    expect(theirs.status).toBe(201); // same email, different project: a different contact
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);

    const otherAuth = bearer(other.secretKey);
    const id = mine.body.data.id;
    expect((await t.http().get(`/contacts/${id}`).set(otherAuth)).status).toBe(404);
    expect((await t.http().patch(`/contacts/${id}`).set(otherAuth).send({ subscribed: false })).status).toBe(404);
    expect((await t.http().delete(`/contacts/${id}`).set(otherAuth)).status).toBe(404);

    const list = await t.http().get('/contacts?limit=100').set(otherAuth);
    expect(list.body.data.items.map((c: { id: string }) => c.id)).toEqual([theirs.body.data.id]);
    expect(list.body.data.total).toBe(1);
    const search = await t.http().get('/contacts?search=tenant').set(otherAuth);
    expect(search.body.data.total).toBe(1);

    // Mine is untouched by their attempts.
    const still = await t.http().get(`/contacts/${id}`).set(auth);
    expect(still.body.data).toMatchObject({ subscribed: true, data: { owner: 'A' } });
  });
});

describe('GET /contacts (list)', () => {
  let p: { secretKey: string };
  let key: { Authorization: string };
  beforeAll(async () => {
    p = await t.newProject('lists');
    key = bearer(p.secretKey);
    // 45 contacts in one request each, alternating subscription.
    for (let i = 0; i < 45; i++) {
      await upsert({ email: `user${String(i).padStart(2, '0')}@${i % 3 === 0 ? 'acme.io' : 'example.com'}`, subscribed: i % 2 === 0 }, key);
    }
  });

  async function walk(query: string, limit: number): Promise<{ ids: string[]; totals: Set<number>; pages: number }> {
    const ids: string[] = [];
    const totals = new Set<number>();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Response = await t.http().get(`/contacts?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`).set(key);
      expect(res.status).toBe(200);
      const d = res.body.data as { items: { id: string }[]; contacts: unknown; cursor: unknown; nextCursor: string | null; hasMore: boolean; total: number };
      expect(d.contacts).toEqual(d.items);
      expect(d.cursor).toBe(d.nextCursor);
      expect(d.hasMore).toBe(d.nextCursor !== null);
      expect(d.items.length).toBeLessThanOrEqual(limit);
      ids.push(...d.items.map((c: { id: string }) => c.id));
      totals.add(d.total);
      cursor = d.nextCursor;
      pages++;
    } while (cursor);
    return { ids, totals, pages };
  }

  test('default limit is 20, newest first', async () => {
    const res = await t.http().get('/contacts').set(key);
    expect(res.body.data.items).toHaveLength(20);
    expect(res.body.data.total).toBe(45);
    expect(res.body.data.hasMore).toBe(true);
    expect(res.body.data.items[0].email).toBe('user44@example.com');
  });

  test('the total is exact up to 1,000 (totalExact), a search\'s up to 100, and past it says "at least"', async () => {
    expect((await t.http().get('/contacts?subscribed=true').set(key)).body.data).toMatchObject({ total: 23, totalExact: true });
    const big = await t.newProject('a thousand and one');
    const bigKey = bearer(big.secretKey);
    // 1,001 contacts in one insert: the point is the count, not how they came.
    await t.db.knex('contacts').insert(Array.from({ length: 1001 }, (_, i) => ({ project_id: big.id, email: `c${i}@big.example` })));
    const all = (await t.http().get('/contacts?limit=5').set(bigKey)).body.data;
    expect(all).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
    expect(all.items).toHaveLength(5);
    // A filter that matches under the cap is exact again.
    expect((await t.http().get('/contacts?search=c100').set(bigKey)).body.data).toMatchObject({ total: 2, totalExact: true });
    // A first page that holds every match is its own count (db/pages.ts pageWithTotal `whole`); a full one is counted.
    expect((await t.http().get('/contacts?search=c100&limit=2').set(bigKey)).body.data).toMatchObject({ total: 2, totalExact: true, hasMore: false });
    // A page that addresses beginning with the term fill counts those alone ("at least"); the page that reads past them
    // counts the others too (db/queries/contacts.ts searchStatement).
    const first = (await t.http().get('/contacts?search=c100&limit=1').set(bigKey)).body.data;
    expect(first).toMatchObject({ total: 2, totalExact: false, hasMore: true });
    expect((await t.http().get(`/contacts?search=c100&limit=1&cursor=${encodeURIComponent(first.nextCursor)}`).set(bigKey)).body.data)
      .toMatchObject({ total: 2, totalExact: true, hasMore: false });
    // A search counts up to 100 (db/pages.ts MATCH_COUNT_CAP): c1, c10-c19, c100-c199 and c1000 are 112.
    const many = (await t.http().get('/contacts?search=c1&limit=100').set(bigKey)).body.data;
    expect(many).toMatchObject({ total: 100, totalExact: false, hasMore: true });
    expect(many.items).toHaveLength(100);
    // …and its pages still reach every match: 112 in two pages.
    const rest = (await t.http().get(`/contacts?search=c1&limit=100&cursor=${encodeURIComponent(many.nextCursor)}`).set(bigKey)).body.data;
    expect(rest).toMatchObject({ total: 100, totalExact: false, hasMore: false });
    expect(new Set([...many.items, ...rest.items].map((c: { email: string }) => c.email)).size).toBe(112);
    // c10, c100-c109 and c1000 begin with c10: at least 12 while they fill the pages, exactly 12 on the last.
    let page = (await t.http().get('/contacts?search=c10&limit=5').set(bigKey)).body.data;
    expect(page).toMatchObject({ total: 12, totalExact: false, hasMore: true });
    const seen = page.items.map((c: { email: string }) => c.email);
    while (page.nextCursor) {
      page = (await t.http().get(`/contacts?search=c10&limit=5&cursor=${encodeURIComponent(page.nextCursor)}`).set(bigKey)).body.data;
      seen.push(...page.items.map((c: { email: string }) => c.email));
    }
    expect(page).toMatchObject({ total: 12, totalExact: true, hasMore: false });
    expect(new Set(seen).size).toBe(12);
    // A term that begins no address is counted through the others at once: only c1000 holds 000.
    expect((await t.http().get('/contacts?search=000&limit=1').set(bigKey)).body.data).toMatchObject({ total: 1, totalExact: true, hasMore: false });
  });

  test('a walk visits every contact exactly once', async () => {
    const { ids, totals, pages } = await walk('', 7);
    expect(ids).toHaveLength(45);
    expect(new Set(ids).size).toBe(45);
    expect([...totals]).toEqual([45]);
    expect(pages).toBe(7);
  });

  test('inserts between pages neither repeat nor skip the contacts that existed', async () => {
    const before = new Set((await walk('', 100)).ids);
    const seen: string[] = [];
    let cursor: string | null = null;
    let n = 0;
    do {
      const res: Response = await t.http().get(`/contacts?limit=10${cursor ? `&cursor=${cursor}` : ''}`).set(key);
      seen.push(...res.body.data.items.map((c: { id: string }) => c.id));
      cursor = res.body.data.nextCursor;
      await upsert({ email: `late${n++}@example.com` }, key); // lands before the cursor: not part of this walk
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of before) expect(seen).toContain(id);
    await t.db.knex('contacts').where('email', 'like', 'late%').delete();
  });

  test('limit bounds: 1 and 100 accepted, 0 and 101 refused with 400', async () => {
    expect((await t.http().get('/contacts?limit=1').set(key)).body.data.items).toHaveLength(1);
    expect((await t.http().get('/contacts?limit=100').set(key)).body.data.items).toHaveLength(45);
    for (const bad of ['0', '101', '2.5', '-1']) {
      const res = await t.http().get(`/contacts?limit=${bad}`).set(key);
      expect(res.status).toBe(400);
      expect(res.body.error.errors[0].field).toBe('limit');
    }
  });

  test('subscribed filter, alone and walked', async () => {
    const subs = await walk('&subscribed=true', 5);
    expect(subs.ids).toHaveLength(23);
    expect([...subs.totals]).toEqual([23]);
    const unsubs = await t.http().get('/contacts?subscribed=false&limit=100').set(key);
    expect(unsubs.body.data.total).toBe(22);
    expect(unsubs.body.data.items.every((c: { subscribed: boolean }) => !c.subscribed)).toBe(true);
  });

  test('search matches a case-insensitive substring of the email, combined with other filters', async () => {
    const acme = await t.http().get('/contacts?search=ACME.IO&limit=100').set(key);
    expect(acme.body.data.total).toBe(15);
    expect(acme.body.data.items.every((c: { email: string }) => c.email.endsWith('@acme.io'))).toBe(true);
    const both = await t.http().get('/contacts?search=acme&subscribed=true&limit=100').set(key);
    expect(both.body.data.items.every((c: { email: string; subscribed: boolean }) => c.subscribed && c.email.includes('acme'))).toBe(true);
    expect(both.body.data.total).toBe(8);
    const one = await t.http().get('/contacts?search=user07').set(key);
    expect(one.body.data.items.map((c: { email: string }) => c.email)).toEqual(['user07@example.com']);
  });

  test('a search with an address is still a substring of the address: the whole term must match, not its local part', async () => {
    const emails = async (q: string) => (await t.http().get(`/contacts?search=${encodeURIComponent(q)}&limit=100`).set(key)).body.data.items.map((c: { email: string }) => c.email).sort();
    expect(await emails('user07@example.com')).toEqual(['user07@example.com']);
    expect(await emails('ser07@EXAMPLE.com')).toEqual(['user07@example.com']);
    // Its local part matches user07@example.com, the whole does not: nothing.
    expect(await emails('user07@acme.io')).toEqual([]);
    expect(await emails('r03@acme.io')).toEqual(['user03@acme.io']);
    expect(await emails('user1%@acme.io')).toEqual([]);
  });

  test('search treats % and _ literally', async () => {
    expect((await t.http().get('/contacts?search=%25').set(key)).body.data.total).toBe(0);
    expect((await t.http().get('/contacts?search=user_7').set(key)).body.data.total).toBe(0);
  });
});

describe('a search term of several words', () => {
  test('the index is asked for its words apart, and the whole term must still match', async () => {
    const p = await t.newProject('Words in addresses');
    const k = bearer(p.secretKey);
    for (const email of ['adele.e87f@uni.example', 'adele.x.e87f@uni.example', 'e87.adele@uni.example', 'jane_adele.e87@corp.example']) {
      expect((await upsert({ email }, k)).status).toBeLessThan(300);
    }
    const emails = async (q: string) => (await t.http().get(`/contacts?search=${encodeURIComponent(q)}&limit=100`).set(k)).body.data.items.map((c: { email: string }) => c.email).sort();
    expect(await emails('adele.e87')).toEqual(['adele.e87f@uni.example', 'jane_adele.e87@corp.example']);
    expect(await emails('adele.e87f@uni.example')).toEqual(['adele.e87f@uni.example']);
    expect(await emails('ADELE.X.E87')).toEqual(['adele.x.e87f@uni.example']);
    expect((await t.http().get('/contacts?search=adele.e87').set(k)).body.data.total).toBe(2);
  });
});

describe('a search term with a long word that holds a digit (an id in an address)', () => {
  test('the index is asked for that word, and the whole term must still match', async () => {
    const p = await t.newProject('Ids in addresses');
    const k = bearer(p.secretKey);
    for (const email of ['ruth.a9ea50495030@uni.example', 'ken.a9ea50495030@uni.example', 'ruth.a9ea50495031@uni.example']) {
      expect((await upsert({ email }, k)).status).toBeLessThan(300);
    }
    const emails = async (q: string) => (await t.http().get(`/contacts?search=${encodeURIComponent(q)}&limit=100`).set(k)).body.data.items.map((c: { email: string }) => c.email).sort();
    expect(await emails('ruth.a9ea50495030')).toEqual(['ruth.a9ea50495030@uni.example']);
    expect(await emails('ruth.a9ea50495030@uni.example')).toEqual(['ruth.a9ea50495030@uni.example']);
    expect(await emails('a9ea50495030@uni')).toEqual(['ken.a9ea50495030@uni.example', 'ruth.a9ea50495030@uni.example']);
    expect(await emails('ruth.a9ea5049503')).toEqual(['ruth.a9ea50495030@uni.example', 'ruth.a9ea50495031@uni.example']);
    expect(await emails('kEn.A9EA50495030')).toEqual(['ken.a9ea50495030@uni.example']);
  });

  test('which part of a term the index is asked for', () => {
    expect(searchPattern('ruth.a9ea50495030@uni.example')).toBe('%a9ea50495030%');
    expect(searchPattern('ruth.a9ea50495030')).toBe('%a9ea50495030%');
    expect(searchPattern('jane1987.doe2')).toBe('%jane1987%');
    // Words of three characters or more, apart: their inner trigrams, not the edges next to the separators.
    expect(searchPattern('john.smith@example.com')).toBe('%john%smith%');
    expect(searchPattern('john.smith')).toBe('%john%smith%');
    expect(searchPattern('adele.e87')).toBe('%adele%e87%');
    expect(searchPattern('grace+news@corp')).toBe('%grace%news%');
    // A short word's edges are all the index knows of it; one word is the term itself.
    expect(searchPattern('dennis.69')).toBeUndefined();
    expect(searchPattern('ab@example.com')).toBeUndefined();
    expect(searchPattern('tim.e@corp.example')).toBe('%tim.e%');
    expect(searchPattern('user2999')).toBeUndefined();
    expect(searchPattern('.smith')).toBeUndefined();
  });
});

describe('a search lists the addresses that begin with its term first, in address order, then the others, newest first', () => {
  let k: { Authorization: string };
  // Created in this order (ids grow with it): prefix matches out of address order, the others spread between them.
  const created = ['tim.eb@x.example', 'justin.tim.ea@x.example', 'tim.ec@x.example', 'ana@tim.e.example', 'tim.ea@x.example', 'notim@x.example', 'xtim.e@x.example', 'tim.ed@x.example'];
  beforeAll(async () => {
    const p = await t.newProject('Prefixes first');
    k = bearer(p.secretKey);
    for (const email of created) expect((await upsert({ email, subscribed: email !== 'tim.ec@x.example' && email !== 'xtim.e@x.example' }, k)).status).toBe(201);
  });
  const page = async (query: string) => (await t.http().get(`/contacts?${query}`).set(k)).body.data as { items: { email: string }[]; nextCursor: string | null; total: number; totalExact: boolean; hasMore: boolean };
  const prefixed = ['tim.ea@x.example', 'tim.eb@x.example', 'tim.ec@x.example', 'tim.ed@x.example'];
  const elsewhere = ['xtim.e@x.example', 'ana@tim.e.example', 'justin.tim.ea@x.example'];

  test('one page: the prefix part in address order, then the rest newest first; the total counts both', async () => {
    const d = await page('search=TIM.E&limit=100');
    expect(d.items.map((c) => c.email)).toEqual([...prefixed, ...elsewhere]);
    expect(d).toMatchObject({ total: 7, totalExact: true, hasMore: false, nextCursor: null });
  });

  test.each([1, 2, 3, 4, 5, 7])('a walk of %i a page reaches every match once, in that order, across the parts', async (limit) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const d = await page(`search=tim.e&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(d.items.length).toBeLessThanOrEqual(limit);
      // A page that the prefix part fills counts it alone, "at least 4"; one that reads past it counts all 7.
      if (d.totalExact) expect(d.total).toBe(7);
      else {
        expect(d.total).toBe(4);
        expect(d.items.every((c) => prefixed.includes(c.email)) && d.hasMore).toBe(true);
      }
      if (!d.nextCursor) expect(d.totalExact).toBe(true);
      seen.push(...d.items.map((c) => c.email));
      cursor = d.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...prefixed, ...elsewhere]);
  });

  test('with the subscribed filter, each part keeps its order', async () => {
    const d = await page('search=tim.e&subscribed=true&limit=100');
    expect(d.items.map((c) => c.email)).toEqual(['tim.ea@x.example', 'tim.eb@x.example', 'tim.ed@x.example', 'ana@tim.e.example', 'justin.tim.ea@x.example']);
    expect(d.total).toBe(5);
  });

  test('a page after an address begins after it even when that contact was deleted meanwhile', async () => {
    const first = await page('search=tim.e&limit=2');
    expect(first.items.map((c) => c.email)).toEqual(prefixed.slice(0, 2));
    const gone = (await t.http().get('/contacts?search=tim.eb@x.example').set(k)).body.data.items[0];
    expect((await t.http().delete(`/contacts/${gone.id}`).set(k)).status).toBe(204);
    const next = await page(`search=tim.e&limit=2&cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(next.items.map((c) => c.email)).toEqual(prefixed.slice(2, 4));
    expect(next.total).toBe(6);
    expect((await upsert({ email: 'tim.eb@x.example' }, k)).status).toBe(201);
  });

  test('an address cursor is refused without search, and a cursor we did not make with it', async () => {
    const cursor = (await page('search=tim.e&limit=1')).nextCursor!;
    const plain = await t.http().get(`/contacts?cursor=${encodeURIComponent(cursor)}`).set(k);
    expect(plain.status).toBe(400);
    expect(plain.body.error.errors[0]).toMatchObject({ field: 'cursor', code: 'invalid_cursor' });
    for (const bad of [Buffer.from('v1:@').toString('base64url'), Buffer.from('v1:@a\nb').toString('base64url'), 'nonsense']) {
      const res = await t.http().get(`/contacts?search=tim.e&cursor=${encodeURIComponent(bad)}`).set(k);
      expect(res.status).toBe(400);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'cursor', code: 'invalid_cursor' });
    }
  });

  test('the count adds the other matches while the prefix part is under the cap, and the pages reach every match', async () => {
    const p = await t.newProject('Many prefixes');
    const many = bearer(p.secretKey);
    await t.db.knex('contacts').insert([
      ...Array.from({ length: 150 }, (_, i) => ({ project_id: p.id, email: `pat.${String(i).padStart(3, '0')}@x.example` })),
      ...Array.from({ length: 30 }, (_, i) => ({ project_id: p.id, email: `kim.pat.${i}@x.example` })),
    ]);
    const d = (await t.http().get('/contacts?search=pat.&limit=100').set(many)).body.data;
    expect(d).toMatchObject({ total: 100, totalExact: false, hasMore: true });
    expect(d.items[0].email).toBe('pat.000@x.example');
    expect(d.items[99].email).toBe('pat.099@x.example');
    const fewer = (await t.http().get('/contacts?search=pat.14&limit=100').set(many)).body.data;
    expect(fewer.items.map((c: { email: string }) => c.email)).toEqual([...Array.from({ length: 10 }, (_, i) => `pat.14${i}@x.example`), 'kim.pat.14@x.example']);
    expect(fewer).toMatchObject({ total: 11, totalExact: true });
    // 150 + 30 matches, walked 100 at a time: every one once.
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const res: Response = await t.http().get(`/contacts?search=pat.&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`).set(many);
      walked.push(...res.body.data.items.map((c: { email: string }) => c.email));
      cursor = res.body.data.nextCursor;
    } while (cursor);
    expect(walked).toHaveLength(180);
    expect(new Set(walked).size).toBe(180);
    expect(walked.slice(0, 150).every((e) => e.startsWith('pat.'))).toBe(true);
  });
});
