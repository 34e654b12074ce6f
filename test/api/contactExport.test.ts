import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';
import { bearer, createTestContext, type TestContext } from '../support/app';

/** GET /contacts/export (issue 30, point 2): what the file holds, which contacts, and that it streams at the reader's pace. */

let t: TestContext;
let auth: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  auth = bearer(t.project.secretKey);
});
afterAll(async () => { await t.close(); });

const upsert = async (body: object, key = auth) => {
  const res = await t.http().post('/contacts').set(key).send(body);
  expect(res.status).toBeLessThan(300);
  return res.body.data as { id: string; email: string; createdAt: string; updatedAt: string };
};

/** The export's body as text, however it is typed (supertest buffers text/csv as text, x-ndjson as a Buffer). */
const exportText = async (query: string, key = auth) => {
  const res = await t.http().get(`/contacts/export${query}`).set(key).buffer(true).parse((r, done) => {
    const chunks: Buffer[] = [];
    r.on('data', (c: Buffer) => chunks.push(c));
    r.on('end', () => done(null, Buffer.concat(chunks).toString('utf8')));
  });
  return res;
};

describe('GET /contacts/export', () => {
  const tricky = {
    comma: 'Smith, Jane', quote: 'She said "hi"', newline: 'line one\nline two\r\nline three', unicode: 'Zoë Ångström 日本語 🚀',
  };
  let ada: { id: string; email: string; createdAt: string; updatedAt: string };
  let grace: { id: string; email: string };
  let other: { id: string; email: string };

  beforeAll(async () => {
    ada = await upsert({ email: 'ada@example.com', data: { name: tricky.comma, note: tricky.quote, bio: tricky.newline, city: tricky.unicode, plan: 'pro', seats: 12, address: { city: 'London' } } });
    grace = await upsert({ email: 'grace@example.com', subscribed: false, data: { plan: 'free', seats: 1 } });
    other = await upsert({ email: 'linus@example.com', data: { plan: 'pro' } });
    // Another project's contact never shows.
    const foreign = await t.newProject('Foreign');
    await upsert({ email: 'foreign@example.com', data: { plan: 'pro' } }, bearer(foreign.secretKey));
  });

  test('CSV: a header, every contact of the project oldest first, values quoted as RFC 4180 says (commas, quotes, line breaks, unicode)', async () => {
    const res = await exportText('');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="contacts-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.csv"$/);
    const rows = parse(res.body as string, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => r.email)).toEqual(['ada@example.com', 'grace@example.com', 'linus@example.com']);
    expect(Object.keys(rows[0]!)).toEqual(['id', 'email', 'subscribed', 'createdAt', 'updatedAt', 'data']);
    expect(rows[0]).toMatchObject({ id: ada.id, subscribed: 'true', createdAt: ada.createdAt, updatedAt: ada.updatedAt });
    expect(JSON.parse(rows[0]!.data!)).toEqual({ name: tricky.comma, note: tricky.quote, bio: tricky.newline, city: tricky.unicode, plan: 'pro', seats: 12, address: { city: 'London' } });
    expect(rows[1]).toMatchObject({ id: grace.id, subscribed: 'false' });
  });

  test('CSV with data columns: each value as its text, a nested key by its path, a missing one empty', async () => {
    const res = await exportText('?columns=email,data.name,data.note,data.bio,data.city,data.seats,data.address.city,data.address,data.missing');
    expect(res.status).toBe(200);
    const rows = parse(res.body as string, { columns: true }) as Record<string, string>[];
    expect(rows[0]).toEqual({
      email: 'ada@example.com', 'data.name': tricky.comma, 'data.note': tricky.quote, 'data.bio': tricky.newline, 'data.city': tricky.unicode,
      'data.seats': '12', 'data.address.city': 'London', 'data.address': '{"city": "London"}', 'data.missing': '',
    });
    // The raw text: the quote doubled, the line breaks inside one quoted field.
    expect(res.body).toContain('"She said ""hi"""');
    expect(res.body).toContain('"line one\nline two\r\nline three"');
  });

  test('bom=true: a CSV starts with the UTF-8 byte order mark (Excel then reads it as UTF-8); never without asking, never in JSON Lines', async () => {
    const bytes = async (query: string) => Buffer.from((await exportText(query)).body as string, 'utf8');
    const plain = await bytes('?columns=email,data.city');
    expect(plain.subarray(0, 11).toString('utf8')).toBe('email,data.');
    const withBom = await bytes('?columns=email,data.city&bom=true');
    expect([...withBom.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    // The rest is the same file, byte for byte: the mark is only a prefix.
    expect(withBom.subarray(3).equals(plain)).toBe(true);
    expect(parse(withBom.subarray(3).toString('utf8'), { columns: true })).toContainEqual({ email: 'ada@example.com', 'data.city': tricky.unicode });
    const jsonl = await bytes('?format=jsonl&columns=email&bom=true');
    expect(jsonl[0]).toBe('{'.charCodeAt(0));
    expect((await t.http().get('/contacts/export?bom=maybe').set(auth)).body.error.errors).toEqual([expect.objectContaining({ field: 'bom' })]);
  });

  test('JSON Lines: one object per line keyed by the columns, data values keep their JSON type', async () => {
    const res = await exportText('?format=jsonl&columns=email,subscribed,data.seats,data.bio,data.city,data.address,data.missing');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/filename="contacts-.*\.jsonl"$/);
    const text = res.body as string;
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[0]!)).toEqual({ email: 'ada@example.com', subscribed: true, 'data.seats': 12, 'data.bio': tricky.newline, 'data.city': tricky.unicode, 'data.address': { city: 'London' }, 'data.missing': null });
    expect(Object.keys(JSON.parse(lines[0]!))).toEqual(['email', 'subscribed', 'data.seats', 'data.bio', 'data.city', 'data.address', 'data.missing']);
    expect(JSON.parse(lines[1]!)).toMatchObject({ email: 'grace@example.com', subscribed: false, 'data.seats': 1 });
  });

  test('a filter: only the contacts it selects', async () => {
    const filter = JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'subscribed', operator: 'equals', value: true }] }] });
    const res = await exportText(`?format=jsonl&columns=email&filter=${encodeURIComponent(filter)}`);
    expect(res.status).toBe(200);
    expect((res.body as string).trimEnd().split('\n').map((l) => JSON.parse(l).email)).toEqual(['ada@example.com', 'linus@example.com']);
  });

  test('a segment: a static one\'s members, a dynamic one\'s matches; a segment of another project is not found', async () => {
    const stat = await t.http().post('/segments').set(auth).send({ name: 'Picked', type: 'STATIC' });
    await t.http().post(`/segments/${stat.body.data.id}/members`).set(auth).send({ emails: [grace.email, other.email] }).expect(200);
    const dyn = await t.http().post('/segments').set(auth).send({ name: 'Free', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] } });
    const emailsOf = (body: string) => (parse(body, { columns: true }) as Record<string, string>[]).map((r) => r.email);
    expect(emailsOf((await exportText(`?columns=email&segmentId=${stat.body.data.id}`)).body as string)).toEqual(['grace@example.com', 'linus@example.com']);
    expect(emailsOf((await exportText(`?columns=email&segmentId=${dyn.body.data.id}`)).body as string)).toEqual(['grace@example.com']);

    const foreign = await t.newProject('Segment owner');
    const theirs = await t.http().post('/segments').set(bearer(foreign.secretKey)).send({ name: 'Theirs', type: 'STATIC' });
    const res = await t.http().get(`/contacts/export?segmentId=${theirs.body.data.id}`).set(auth);
    expect(res.status).toBe(404);
    expect(res.body.error.message).toBe('Segment not found');
  });

  test('bad columns, formats and filters are a 400 naming the parameter', async () => {
    const cases: [string, string, RegExp][] = [
      ['?columns=email,password', 'columns', /unknown column "password"/],
      ['?columns=email,email', 'columns', /named twice/],
      ['?columns=data.a%20b', 'columns', /unknown column/],
      ['?format=xlsx', 'format', /csv, jsonl/],
      ['?filter=not-json', 'filter', /not JSON/],
      [`?filter=${encodeURIComponent(JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'shoeSize', operator: 'equals', value: 1 }] }] }))}`, 'filter.groups.0.filters.0.field', /unknown field "shoeSize"/],
      [`?filter=${encodeURIComponent(JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'segment.0190a1b2-0000-7000-8000-000000000000', operator: 'memberOf' }] }] }))}`, 'filter.groups.0.filters.0.field', /does not exist/],
      [`?segmentId=0190a1b2-0000-7000-8000-000000000000&filter=${encodeURIComponent('{"logic":"AND","groups":[]}')}`, '', /segmentId|filter/],
    ];
    for (const [query, field, message] of cases) {
      const res = await t.http().get(`/contacts/export${query}`).set(auth);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body.error.code).toBe('BAD_REQUEST');
      if (field) expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect([res.body.error.message, ...res.body.error.errors.map((e: { message: string }) => e.message)].join(' ')).toMatch(message);
    }
  });

  test('read permission: a sending-only key may not export; every export is in the audit log', async () => {
    const key = await t.http().post('/keys').set(auth).send({ name: 'sender', scope: 'sending' });
    expect(key.status).toBe(201);
    const res = await t.http().get('/contacts/export').set(bearer(key.body.data.key));
    expect(res.status).toBe(403);
    const log = await t.http().get('/audit-log?operation=exportContacts').set(auth);
    expect(log.status).toBe(200);
    expect(log.body.data.items.length).toBeGreaterThan(0);
    const entry = log.body.data.items.find((e: { details: { format: string; columns: string[] } }) => e.details.format === 'csv' && e.details.columns.includes('data.missing'));
    expect(entry).toMatchObject({ operation: 'exportContacts', resourceType: 'contact', actor: { kind: 'key' }, details: { columns: ['email', 'data.name', 'data.note', 'data.bio', 'data.city', 'data.seats', 'data.address.city', 'data.address', 'data.missing'] } });
  });
});

describe('streaming at the pace the client reads', () => {
  const COUNT = 200_000;
  let project: { id: string; secretKey: string };
  beforeAll(async () => {
    project = await t.newProject('Big');
    // ~200 bytes per contact: some 40 MB of CSV, far more than the socket buffers between the client and PostgreSQL.
    await t.db.knex.raw(
      `INSERT INTO contacts (project_id, email, data)
       SELECT ?::uuid, 'person' || i || '@example.com', jsonb_build_object('plan', 'pro', 'seats', i, 'city', 'City ' || i, 'note', repeat('x', 120), 'n', i)
       FROM generate_series(1, ?) AS i`, [project.id, COUNT]);
  }, 120_000);

  test('a client that stops reading stops PostgreSQL (it waits on the socket): the server holds a few chunks, not the export', async () => {
    const { port } = t.server.address() as AddressInfo;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/contacts/export?columns=id,email,subscribed,createdAt,data', headers: bearer(project.secretKey) }, resolve).on('error', reject);
    });
    expect(res.statusCode).toBe(200);
    // Counted from the first byte; paused after the first chunk.
    let received = 0;
    let lines = 0;
    const ended = new Promise<void>((resolve, reject) => { res.on('end', resolve); res.on('error', reject); });
    await new Promise<void>((resolve) => {
      res.on('data', (c: Buffer) => {
        if (received === 0) { res.pause(); resolve(); }
        received += c.length;
        for (const b of c) if (b === 10) lines++;
      });
    });
    // While nothing more is read, the export's connection ends up waiting for its socket to drain (ClientWrite): the
    // server stopped reading it. A server that ignored backpressure would have read the whole COPY (its query done).
    let waiting = false;
    for (let i = 0; i < 200 && !waiting; i++) {
      const { rows } = await t.db.knex.raw("SELECT wait_event, state FROM pg_stat_activity WHERE application_name = 'herald-export'");
      waiting = rows.length === 1 && rows[0].wait_event === 'ClientWrite' && rows[0].state === 'active';
      if (!waiting) await new Promise((r) => setTimeout(r, 50));
    }
    expect(waiting).toBe(true);
    // Still waiting a moment later: it does not go on by itself. The kernel may grow a slow reader's socket buffers
    // meanwhile (TCP autotuning), and the connection then writes a little more before it waits again (a CI-like run at
    // load saw it between two waits, 300 ms after the first): still there, still in its query, waiting again.
    await new Promise((r) => setTimeout(r, 300));
    let still: { wait_event: string | null; state: string }[] = [];
    for (let i = 0; i < 40; i++) {
      still = (await t.db.knex.raw("SELECT wait_event, state FROM pg_stat_activity WHERE application_name = 'herald-export'")).rows;
      if (still[0]?.wait_event === 'ClientWrite') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(still).toEqual([{ wait_event: 'ClientWrite', state: 'active' }]);

    // Reading on: the whole file arrives, every contact once, and the export's connection is gone.
    res.resume();
    await ended;
    expect(lines).toBe(COUNT + 1); // the header and one line per contact (no value holds a line break)
    expect(received).toBeGreaterThan(30_000_000);
    for (let i = 0; i < 100; i++) {
      const { rows } = await t.db.knex.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'herald-export'");
      if (rows[0].n === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const { rows: after } = await t.db.knex.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'herald-export'");
    expect(after[0].n).toBe(0);
  }, 120_000);

  test('a client that goes away mid-export ends the export\'s connection', async () => {
    const { port } = t.server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/contacts/export', headers: bearer(project.secretKey) }, (res) => {
        res.once('data', () => { req.destroy(); resolve(); });
      });
      req.on('error', () => undefined);
      setTimeout(() => reject(new Error('no data')), 30_000);
    });
    let n = 1;
    for (let i = 0; i < 200 && n > 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      n = (await t.db.knex.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'herald-export'")).rows[0].n;
    }
    expect(n).toBe(0);
  }, 60_000);
});
