import type { Response } from 'supertest';
import { bearer, createTestContext, type TestContext } from '../support/app';

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

const track = (body: object, key = t.project.publicKey) => t.http().post('/v1/track').set(bearer(key)).send(body);

describe('POST /v1/track', () => {
  test('accepts a public key: creates the contact (subscribed by default) and the event', async () => {
    const res = await track({ email: 'Buyer@Example.com', event: 'purchase', data: { plan: 'pro' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { contact: expect.any(String), event: expect.any(String), timestamp: expect.any(String) } });
    const contact = await t.db.knex('contacts').where({ project_id: t.project.id, id: res.body.data.contact }).first();
    expect(contact).toMatchObject({ email: 'buyer@example.com', subscribed: true, data: { plan: 'pro' } });
    const event = await t.db.knex('events').where({ project_id: t.project.id, id: res.body.data.event }).first();
    expect(event).toMatchObject({ name: 'purchase', contact_id: contact.id, data: { plan: 'pro' } });
    expect(event.created_at.toISOString()).toBe(res.body.data.timestamp);
  });

  test('concurrent requests share one transaction (group commit): each gets its own event, the same address one contact, data merged in order', async () => {
    const bodies = Array.from({ length: 60 }, (_, i) => ({ email: `burst${i % 20}@example.com`, event: i % 2 ? 'burst.odd' : 'burst_even', data: { [`k${i}`]: i } }));
    const results = await Promise.all(bodies.map((b) => track(b)));
    expect(results.map((r) => r.status)).toEqual(bodies.map(() => 200));
    expect(new Set(results.map((r) => r.body.data.event)).size).toBe(60);
    const contactOf = new Map<string, Set<string>>();
    results.forEach((r, i) => contactOf.set(bodies[i]!.email, (contactOf.get(bodies[i]!.email) ?? new Set()).add(r.body.data.contact)));
    expect([...contactOf.values()].every((ids) => ids.size === 1)).toBe(true);
    const events = await t.db.knex('events').where({ project_id: t.project.id }).whereIn('id', results.map((r) => r.body.data.event)).select('id', 'name', 'contact_id', 'data');
    const byId = new Map(events.map((e) => [e.id, e]));
    results.forEach((r, i) => {
      expect(byId.get(r.body.data.event)).toMatchObject({ name: bodies[i]!.event, contact_id: r.body.data.contact, data: bodies[i]!.data });
    });
    const c = await t.db.knex('contacts').where({ project_id: t.project.id, email: 'burst3@example.com' }).first();
    expect(c.data).toEqual({ k3: 3, k23: 23, k43: 43 });
    // Each total may be spread over a few rows (db/queries/events.ts): their sum is the count.
    const totals = await t.db.knex('event_names').where({ project_id: t.project.id }).whereIn('name', ['burst.odd', 'burst_even']).groupBy('name').select('name', t.db.knex.raw('sum(count) AS count'));
    expect(Object.fromEntries(totals.map((x) => [x.name, Number(x.count)]))).toEqual({ 'burst.odd': 30, burst_even: 30 });
  });

  test('accepts a secret key too; merges data (null deletes) and keeps subscription of an existing contact', async () => {
    await track({ email: 'merge@example.com', event: 'signup', subscribed: false, data: { a: 1, b: 2 } });
    const res = await track({ email: 'merge@example.com', event: 'login', subscribed: true, data: { b: null, c: 3 } }, t.project.secretKey);
    expect(res.status).toBe(200);
    const contact = await t.db.knex('contacts').where({ project_id: t.project.id, email: 'merge@example.com' }).first();
    expect(contact.data).toEqual({ a: 1, c: 3 });
    expect(contact.subscribed).toBe(true);
  });

  test('Plunk\'s { value, persistent } data: the event records the values; persistent: false stays off the contact', async () => {
    const data = {
      resetUrl: { value: 'https://app.example.com/reset?t=1', persistent: false },
      plan: { value: 'pro' }, seats: { value: 3, persistent: true }, plain: 'p',
      box: { value: 1, other: 2 }, // not the form: a plain object, stored as it is
    };
    const res = await track({ email: 'plunk@example.com', event: 'reset.requested', data });
    expect(res.status).toBe(200);
    const contact = await t.db.knex('contacts').where({ project_id: t.project.id, id: res.body.data.contact }).first();
    expect(contact.data).toEqual({ plan: 'pro', seats: 3, plain: 'p', box: { value: 1, other: 2 } });
    const event = await t.db.knex('events').where({ project_id: t.project.id, id: res.body.data.event }).first();
    expect(event.data).toEqual({ resetUrl: 'https://app.example.com/reset?t=1', plan: 'pro', seats: 3, plain: 'p', box: { value: 1, other: 2 } });
    // A non-persistent key leaves a stored value of the same key alone.
    await track({ email: 'plunk@example.com', event: 'again', data: { plan: { value: 'trial', persistent: false } } });
    expect((await t.db.knex('contacts').where({ id: contact.id }).first()).data.plan).toBe('pro');
  });

  test('reserved and invalid event names are 422 naming the field', async () => {
    for (const event of ['email.sent', 'Contact.unsubscribed', 'campaign.failed', 'execution.failed', '', 'x'.repeat(101), 'bad\nname']) {
      const res = await track({ email: 'r@example.com', event });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0].field).toBe('event');
    }
    const missing = await track({ event: 'x' });
    expect(missing.body.error.errors[0]).toMatchObject({ field: 'email', code: 'required' });
    expect(await t.db.knex('contacts').where({ project_id: t.project.id, email: 'r@example.com' }).first()).toBeUndefined();
  });

  test('Idempotency-Key: same body replays the first answer, another body is 409', async () => {
    const body = { email: 'idem@example.com', event: 'clicked' };
    const first = await track(body).set('Idempotency-Key', 'k-1');
    const again = await track(body).set('Idempotency-Key', 'k-1');
    expect(again.status).toBe(first.status);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await track({ ...body, event: 'other' }).set('Idempotency-Key', 'k-1');
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');
    const events = await t.db.knex('events').where({ project_id: t.project.id, name: 'clicked' });
    expect(events).toHaveLength(1);
  });

  test('concurrent requests with one Idempotency-Key do the work once', async () => {
    const body = { email: 'idem2@example.com', event: 'raced' };
    const results = await Promise.all(Array.from({ length: 10 }, () => track(body).set('Idempotency-Key', 'race-key')));
    for (const r of results) expect(r.status).toBe(200);
    expect(new Set(results.map((r) => r.body.data.event)).size).toBe(1);
    expect(await t.db.knex('events').where({ project_id: t.project.id, name: 'raced' })).toHaveLength(1);
  });
});

describe('GET /events and /events/names', () => {
  let p: { id: string; secretKey: string; publicKey: string };
  beforeAll(async () => {
    p = await t.newProject('events');
    for (let i = 0; i < 12; i++) await track({ email: `e${i % 3}@example.com`, event: i % 2 ? 'view' : 'buy', data: { i } }, p.publicKey);
  });

  test('lists newest first with keyset pagination and filters', async () => {
    const all = await t.http().get('/events?limit=5').set(bearer(p.secretKey));
    expect(all.status).toBe(200);
    expect(all.body.data.total).toBe(12);
    expect(all.body.data.items[0]).toEqual({ id: expect.any(String), name: 'view', contactId: expect.any(String), emailId: null, data: { i: 11 }, createdAt: expect.any(String) });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Response = await t.http().get(`/events?limit=5${cursor ? `&cursor=${cursor}` : ''}`).set(bearer(p.secretKey));
      seen.push(...page.body.data.items.map((e: { id: string }) => e.id));
      cursor = page.body.data.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(12);

    const buys = await t.http().get('/events?name=buy&limit=100').set(bearer(p.secretKey));
    expect(buys.body.data.total).toBe(6);
    const contactId = all.body.data.items[0].contactId;
    const mine = await t.http().get(`/events?contactId=${contactId}&limit=100`).set(bearer(p.secretKey));
    expect(mine.body.data.items.every((e: { contactId: string }) => e.contactId === contactId)).toBe(true);
    expect(mine.body.data.total).toBe(4);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await t.http().get(`/events?since=${future}`).set(bearer(p.secretKey))).body.data.total).toBe(0);
    expect((await t.http().get(`/events?until=${future}`).set(bearer(p.secretKey))).body.data.total).toBe(12);
    expect((await t.http().get('/events?since=yesterday').set(bearer(p.secretKey))).status).toBe(400);
  });

  test('names with counts and last seen time, only the project’s own', async () => {
    const res = await t.http().get('/events/names').set(bearer(p.secretKey));
    expect(res.body.data.items).toEqual([
      { name: 'buy', count: 6, lastSeenAt: expect.any(String) },
      { name: 'view', count: 6, lastSeenAt: expect.any(String) },
    ]);
  });

  test('public keys cannot read events', async () => {
    expect((await t.http().get('/events').set(bearer(p.publicKey))).status).toBe(403);
  });
});
