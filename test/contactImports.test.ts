import { startTestEngine, type TestEngine } from './support/engine';
import { bearer, createTestContext, type TestContext } from './support/app';
import { createTestDatabase } from './support/db';
import { waitFor } from './support/processes';
import { asPerson, person, signIn } from './people/support';

/**
 * Contact imports on the embedded engine (issue 30, point 1): a file uploaded through the API, merged by the
 * importContacts workflow batch by batch. What a team importing its list meets: bad rows refused one by one with their
 * line and reason while the good ones import, the modes, subscriptions that an import never turns back on, a segment,
 * cancel, two imports at once, and files refused whole with nothing stored.
 */
// Liveness bounds, not speed: a loaded 2-core machine takes many times a quiet one's time (BENCHMARKS.md §31: 1,000,000
// rows in about a minute).
jest.setTimeout(300_000);
// A small limit, so that a file over it is quick to send (the API reads IMPORT_MAX_BYTES when it is made).
process.env.IMPORT_MAX_BYTES = String(2 * 1024 * 1024);
let t: TestContext;
let eng: TestEngine;
let key: { Authorization: string };

beforeAll(async () => {
  const db = await createTestDatabase();
  eng = await startTestEngine(db, 'smtp://127.0.0.1:9');
  t = await createTestContext({ engine: eng.engine, db });
  key = bearer(t.project.secretKey);
});
afterAll(async () => {
  await eng.stop();
  await t.close();
});

type Column = { column: string; to: string; key?: string; type?: string };
const EMAIL_PLAN: Column[] = [{ column: 'email', to: 'email' }, { column: 'plan', to: 'data', key: 'plan' }];

function upload(file: string | Buffer, options: Record<string, unknown> & { columns: Column[] }, type = 'text/csv', auth: Record<string, string> = key) {
  const query = Object.fromEntries(Object.entries(options).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  return t.http().post('/contacts/imports').query(query).set(auth).set('Content-Type', type).send(Buffer.isBuffer(file) ? file : Buffer.from(file));
}

async function finished(id: string, auth: Record<string, string> = key) {
  return waitFor(`import ${id} to end`, async () => {
    const res = await t.http().get(`/contacts/imports/${id}`).set(auth);
    return ['COMPLETED', 'CANCELLED', 'FAILED'].includes(res.body.data.status) ? res.body.data : undefined;
  }, 180_000, 50);
}

async function contact(email: string, projectId = t.project.id) {
  return t.db.knex('contacts').where({ project_id: projectId, email }).first();
}

test('bad rows are refused one by one with line and reason; the good rows import; the errors download as CSV', async () => {
  const lines = [
    '\uFEFFemail;plan;seats;vip;since',
    'ada@example.com;pro;3;yes;2024-01-31', // 2 good
    'not-an-email;pro;1;no;2024-01-01', // 3 invalid email
    'ADA@example.com;free;1;no;2024-01-01', // 4 duplicate of line 2
    'bob@example.com;pro;three;no;2024-01-01', // 5 wrong type (number)
    'cy@example.com;pro;1;maybe;2024-01-01', // 6 wrong type (boolean)
    `dee@example.com;${'x'.repeat(10_001)};1;no;2024-01-01`, // 7 over limit
    'eve@example.com;p\u0000ro;1;no;2024-01-01', // 8 NUL byte
    'fay@example.com;"pro"x;1;no;2024-01-01', // 9 broken quote
    'gus@example.com;"multi', // 10 a quoted field over two lines: good
    'line";2;no;2024-02-29',
    'hal@example.com;pro;1', // 12 too few fields
    '', // empty line: no row
    'ivy@example.com;"never closed;1;no;2024-01-01', // 14 broken quote: never closed
    'jon@example.com;basic;7;0;2023-12-01T10:00:00Z', // 15 good, after the unclosed quote
  ];
  const res = await upload(lines.join('\r\n'), {
    columns: [{ column: 'email', to: 'email' }, { column: 'plan', to: 'data', key: 'plan' }, { column: 'seats', to: 'data', key: 'seats', type: 'number' },
      { column: 'vip', to: 'data', key: 'vip', type: 'boolean' }, { column: 'since', to: 'data', key: 'since', type: 'date' }],
    name: 'list.csv',
  });
  expect(res.body.error).toBeUndefined();
  expect(res.status).toBe(202);
  expect(res.body.data).toMatchObject({ status: 'QUEUED', format: 'csv', delimiter: ';', fileName: 'list.csv', mode: 'upsert' });
  const done = await finished(res.body.data.id);
  expect(done).toMatchObject({ status: 'COMPLETED', rows: { read: 12, created: 3, updated: 0, skipped: 0, failed: 9 } });
  expect(done.bytesRead).toBe(done.fileBytes);
  expect((await contact('ada@example.com')).data).toEqual({ plan: 'pro', seats: 3, vip: true, since: '2024-01-31T00:00:00.000Z' });
  expect((await contact('gus@example.com')).data).toEqual({ plan: 'multi\r\nline', seats: 2, vip: false, since: '2024-02-29T00:00:00.000Z' });
  expect((await contact('jon@example.com')).data).toEqual({ plan: 'basic', seats: 7, vip: false, since: '2023-12-01T10:00:00.000Z' });
  for (const refused of ['bob@example.com', 'cy@example.com', 'dee@example.com', 'eve@example.com', 'fay@example.com', 'hal@example.com', 'ivy@example.com']) {
    expect(await contact(refused)).toBeUndefined();
  }

  const errors = await t.http().get(`/contacts/imports/${res.body.data.id}/errors`).set(key).buffer(true).parse((r, cb) => {
    let s = '';
    r.on('data', (c: Buffer) => { s += c.toString(); });
    r.on('end', () => cb(null, s));
  });
  expect(errors.status).toBe(200);
  expect(errors.headers['content-type']).toMatch(/^text\/csv/);
  const rows = (errors.body as string).trim().split('\r\n');
  expect(rows[0]).toBe('line,reason,raw');
  const reasons = Object.fromEntries(rows.slice(1).map((r) => [Number(r.split(',')[0]), r]));
  expect(Object.keys(reasons).map(Number)).toEqual([3, 4, 5, 6, 7, 8, 9, 12, 14, 15].filter((l) => l !== 15));
  expect(reasons[3]).toContain('invalid email');
  expect(reasons[4]).toContain('duplicate email: the file has it on line 2');
  expect(reasons[5]).toContain('is not a number');
  expect(reasons[6]).toContain('is not a boolean');
  expect(reasons[7]).toContain('over the limit');
  expect(reasons[8]).toContain('NUL byte');
  expect(reasons[9]).toContain('broken quote');
  expect(reasons[12]).toContain('3 fields where the header has 5');
  expect(reasons[14]).toContain('broken quote: a quoted field is never closed');
});

test('JSON Lines, and the modes: create skips known addresses, update skips unknown ones; data merged or replaced', async () => {
  await t.http().post('/contacts').set(key).send({ email: 'known@example.com', data: { plan: 'free', team: 'a' } }).expect(201);
  const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n');
  const created = await finished((await upload(jsonl([{ email: 'known@example.com', plan: 'pro' }, { email: 'new1@example.com', plan: 'pro' }]),
    { columns: EMAIL_PLAN, mode: 'create' }, 'application/x-ndjson')).body.data.id);
  expect(created.rows).toEqual({ read: 2, created: 1, updated: 0, skipped: 1, failed: 0 });
  expect((await contact('known@example.com')).data).toEqual({ plan: 'free', team: 'a' });

  const updated = await finished((await upload(jsonl([{ email: 'known@example.com', plan: 'pro' }, { email: 'new2@example.com', plan: 'pro' }]),
    { columns: EMAIL_PLAN, mode: 'update' }, 'application/x-ndjson')).body.data.id);
  expect(updated.rows).toEqual({ read: 2, created: 0, updated: 1, skipped: 1, failed: 0 });
  expect((await contact('known@example.com')).data).toEqual({ plan: 'pro', team: 'a' });
  expect(await contact('new2@example.com')).toBeUndefined();

  const replaced = await finished((await upload(jsonl([{ email: 'known@example.com', plan: 'team' }, { email: 'new2@example.com', plan: 'pro' }, { email: 'bad' }, [1]]),
    { columns: EMAIL_PLAN, mode: 'upsert', data: 'replace' }, 'application/x-ndjson')).body.data.id);
  expect(replaced.rows).toEqual({ read: 4, created: 1, updated: 1, skipped: 0, failed: 2 });
  expect((await contact('known@example.com')).data).toEqual({ plan: 'team' });

  // The same file again changes nothing: every row is skipped, no contact.updated is due.
  const again = await finished((await upload(jsonl([{ email: 'known@example.com', plan: 'team' }]), { columns: EMAIL_PLAN, data: 'replace' }, 'application/x-ndjson')).body.data.id);
  expect(again.rows).toEqual({ read: 1, created: 0, updated: 0, skipped: 1, failed: 0 });
});

test('values with backslashes, tabs, quotes and line breaks are stored as the file has them', async () => {
  const note = 'C:\\path\\n\ttab "quoted" \\N\r\nnext line';
  const csv = `email,note\r\nodd@example.com,"${note.replace(/"/g, '""')}"\r\n`;
  const done = await finished((await upload(csv, { columns: [{ column: 'email', to: 'email' }, { column: 'note', to: 'data' }] })).body.data.id);
  expect(done.rows).toEqual({ read: 1, created: 1, updated: 0, skipped: 0, failed: 0 });
  expect((await contact('odd@example.com')).data).toEqual({ note });
});

test('an import never re-subscribes an unsubscribed or suppressed contact; resubscribe does, for admins only, audited', async () => {
  await t.http().post('/contacts').set(key).send({ email: 'gone@example.com', subscribed: false }).expect(201);
  await t.http().post('/contacts').set(key).send({ email: 'stays@example.com', subscribed: true }).expect(201);
  await t.http().post('/suppressions').set(key).send({ email: 'bounced@example.com' }).expect(201);
  const file = 'email,subscribed\ngone@example.com,true\nstays@example.com,false\nbounced@example.com,true\nfresh@example.com,\n';
  const columns = [{ column: 'email', to: 'email' }, { column: 'subscribed', to: 'subscribed' }];
  const plain = await finished((await upload(file, { columns })).body.data.id);
  expect(plain.rows).toMatchObject({ created: 2, updated: 1, skipped: 1 });
  expect((await contact('gone@example.com')).subscribed).toBe(false);
  expect((await contact('stays@example.com')).subscribed).toBe(false); // unsubscribing is allowed
  expect((await contact('bounced@example.com')).subscribed).toBe(false); // suppressed: created unsubscribed
  expect((await contact('fresh@example.com')).subscribed).toBe(true); // the default
  const flips = await t.db.knex('events').where({ project_id: t.project.id, name: 'contact.unsubscribed' }).select('data');
  expect(flips).toEqual([{ data: { source: 'import', importId: plain.id } }]);

  // A member may import, not with resubscribe.
  const m = await person(t.db.knex, { [t.project.id]: 'member' });
  const member = asPerson(await signIn(t.server, m.email), t.project.id);
  const refused = await upload(file, { columns, resubscribe: true }, 'text/csv', member);
  const imports = async () => Number((await t.db.knex('contact_imports').where({ project_id: t.project.id }).count('* as n').first())!.n);
  const stored = await imports();
  expect(refused.status).toBe(403);
  expect(await imports()).toBe(stored);

  const resubscribed = await upload(file, { columns, resubscribe: true });
  expect(resubscribed.status).toBe(202);
  await finished(resubscribed.body.data.id);
  expect((await contact('gone@example.com')).subscribed).toBe(true);
  expect((await contact('bounced@example.com')).subscribed).toBe(true);
  expect(await t.db.knex('suppressions').where({ project_id: t.project.id, email: 'bounced@example.com' }).first()).toBeDefined(); // still never mailed
  const audit = await t.db.knex('audit_log').where({ project_id: t.project.id, operation: 'createContactImport', resource_id: resubscribed.body.data.id }).first();
  expect(audit.details).toMatchObject({ resubscribe: true, mode: 'upsert' });
});

test('every imported contact joins the static segment; one contact.created webhook per new contact', async () => {
  const segment = (await t.http().post('/segments').set(key).send({ name: 'Imported', type: 'STATIC' }).expect(201)).body.data;
  await t.http().post('/webhooks').set(key).send({ url: 'https://hooks.example.com/in', events: ['contact.created', 'contact.updated'] }).expect(201);
  await t.http().post('/contacts').set(key).send({ email: 'seg0@example.com' }).expect(201);
  const before = Number((await t.db.knex('webhook_deliveries').where({ project_id: t.project.id }).count('* as n').first())!.n);
  const file = ['email,plan', ...Array.from({ length: 12_000 }, (_, i) => `seg${i}@example.com,p${i % 3}`)].join('\n');
  const done = await finished((await upload(file, { columns: EMAIL_PLAN, segmentId: segment.id })).body.data.id);
  expect(done.rows).toEqual({ read: 12_000, created: 11_999, updated: 1, skipped: 0, failed: 0 });
  expect((await t.http().get(`/segments/${segment.id}`).set(key)).body.data.memberCount).toBe(12_000);
  const hooks = await t.db.knex('webhook_deliveries').where({ project_id: t.project.id }).groupBy('type').select('type').count('* as n');
  expect(Object.fromEntries(hooks.map((h) => [h.type, Number(h.n)]))).toEqual({ 'contact.created': 11_999 + 1, 'contact.updated': 1 });
  expect(before).toBe(1);

  const dynamic = (await t.http().post('/segments').set(key).send({ name: 'Pro', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'p1' }] }] } })).body.data;
  const refused = await upload('email\na@example.com\n', { columns: [{ column: 'email', to: 'email' }], segmentId: dynamic.id });
  expect(refused.status).toBe(422);
});

test('cancel stops the import between batches; the rows merged so far stay, the file is deleted; an ended import is a 409', async () => {
  const file = ['email', ...Array.from({ length: 80_000 }, (_, i) => `cancel${i}@example.com`)].join('\n');
  const id = (await upload(file, { columns: [{ column: 'email', to: 'email' }] })).body.data.id;
  await waitFor('a first batch', async () => ((await t.http().get(`/contacts/imports/${id}`).set(key)).body.data.rows.read > 0 ? true : undefined), 120_000, 20);
  const cancelled = await t.http().post(`/contacts/imports/${id}/cancel`).set(key);
  expect(cancelled.status).toBe(200);
  expect(cancelled.body.data.status).toBe('CANCELLED');
  const read = cancelled.body.data.rows.read;
  expect(read).toBeLessThan(80_000);
  // No batch after the cancel: the counts and the contacts stay where the cancel found them.
  await new Promise((r) => setTimeout(r, 500));
  const after = (await t.http().get(`/contacts/imports/${id}`).set(key)).body.data;
  expect(after.rows.read).toBe(read);
  expect(Number((await t.db.knex('contacts').where('project_id', t.project.id).where('email', 'like', 'cancel%').count('* as n').first())!.n)).toBe(read);
  expect(await t.db.knex('contact_import_chunks').where('import_id', id).first()).toBeUndefined();
  expect(await t.db.knex('contact_import_seen').where('import_id', id).first()).toBeUndefined();
  expect((await t.http().post(`/contacts/imports/${id}/cancel`).set(key)).status).toBe(409);
});

test('an import deleted while it runs (its project deleted) takes its seen addresses with it', async () => {
  const other = await t.newProject('Deleted mid-import');
  const k = bearer(other.secretKey);
  const file = ['email', ...Array.from({ length: 80_000 }, (_, i) => `gone${i}@example.com`)].join('\n');
  const id = (await upload(file, { columns: [{ column: 'email', to: 'email' }] }, 'text/csv', k)).body.data.id;
  await waitFor('a first batch', async () => ((await t.http().get(`/contacts/imports/${id}`).set(k)).body.data.rows.read > 0 ? true : undefined), 120_000, 20);
  expect(Number((await t.db.knex('contact_import_seen').where('import_id', id).count('* as n').first())!.n)).toBeGreaterThan(0);
  // As a project's deletion cascades to its imports: the seen table has no foreign key, a trigger deletes its rows.
  await t.db.knex('contact_imports').where('id', id).delete();
  expect(await t.db.knex('contact_import_seen').where('import_id', id).first()).toBeUndefined();
  expect((await t.http().get(`/contacts/imports/${id}`).set(k)).status).toBe(404);
});

test('two imports into the same project at once, overlapping: every address once, the later data wins or merges', async () => {
  const other = await t.newProject('Two at once');
  const k = bearer(other.secretKey);
  const rows = (from: number, to: number, plan: string) => ['email,plan', ...Array.from({ length: to - from }, (_, i) => `both${from + i}@example.com,${plan}`)].join('\n');
  const analyses = async () => Number((await t.db.knex('pg_stat_user_tables').where({ relname: 'contacts' }).first('analyze_count')).analyze_count);
  const analysedBefore = await analyses();
  const [a, b] = await Promise.all([
    upload(rows(0, 15_000, 'a'), { columns: EMAIL_PLAN }, 'text/csv', k),
    upload(rows(5_000, 20_000, 'b'), { columns: EMAIL_PLAN }, 'text/csv', k),
  ]);
  const [da, db] = await Promise.all([finished(a.body.data.id, k), finished(b.body.data.id, k)]);
  expect(da.status).toBe('COMPLETED');
  expect(db.status).toBe('COMPLETED');
  // Each import accounts for every row it read; together they created each address once.
  expect(da.rows.created + da.rows.updated + da.rows.skipped).toBe(15_000);
  expect(db.rows.created + db.rows.updated + db.rows.skipped).toBe(15_000);
  expect(da.rows.created + db.rows.created).toBe(20_000);
  const counts = await t.db.knex('contacts').where('project_id', other.id).select(t.db.knex.raw('count(*)::int AS n, count(DISTINCT email)::int AS d'));
  expect(counts[0]).toEqual({ n: 20_000, d: 20_000 });
  expect(await contact('both0@example.com', other.id)).toMatchObject({ data: { plan: 'a' } });
  expect(await contact('both19999@example.com', other.id)).toMatchObject({ data: { plan: 'b' } });
  // Their first batches grew a new project by thousands of contacts: the statistics were refreshed for the batches after
  // (db/queries/contactImports.ts refreshContactStatistics; the counter reaches pg_stat_user_tables within a second).
  await waitFor('contacts analysed by the imports', async () => ((await analyses()) > analysedBefore ? true : undefined), 10_000, 100);
});

test('a file that is not CSV or JSON Lines, over the limit or with a column map that does not fit is refused at once, nothing stored', async () => {
  const count = async () => Number((await t.db.knex('contact_imports').count('* as n').first())!.n);
  const before = await count();
  const earlier: string[] = await t.db.knex('contact_imports').pluck('id');
  const columns = [{ column: 'email', to: 'email' }];
  expect((await upload('email\na@example.com\n', { columns }, 'application/pdf')).status).toBe(415);
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.alloc(200, 7)]);
  const binary = await upload(png, { columns });
  expect(binary.status).toBe(422);
  expect(binary.body.error.message).toMatch(/not CSV or JSON Lines/);
  expect((await upload('{"email": "a@example.com"', { columns }, 'application/x-ndjson')).status).toBe(422);
  const missing = await upload('mail,plan\na@example.com,pro\n', { columns });
  expect(missing.status).toBe(422);
  expect(missing.body.error.message).toContain('no column "email"');
  expect((await upload('email\na@example.com\n', { columns: [] })).status).toBe(400);
  expect((await upload('email\na@example.com\n', { columns: [{ column: 'email', to: 'data' }] })).status).toBe(422);
  const big = await upload(Buffer.alloc(3 * 1024 * 1024, 'a'), { columns });
  expect(big.status).toBe(413);
  expect(await count()).toBe(before);
  // No piece of a refused file either (the earlier tests' imports may still hold theirs).
  expect(Number((await t.db.knex('contact_import_chunks').whereNotIn('import_id', earlier).count('* as n').first())!.n)).toBe(0);
});

test('preview proposes the column map from the first rows; a foreign import is a 404', async () => {
  const res = await t.http().post('/contacts/imports/preview').set(key).set('Content-Type', 'text/csv')
    .send(Buffer.from('E-mail,First name,Seats,Opt-in,Signed up\r\nada@example.com,Ada,3,yes,2024-01-01\r\nbob@example.com,Bob,1,no,2024-02-01\r\nbad,"Cy "x,,,\r\n'));
  expect(res.status).toBe(200);
  expect(res.body.data.format).toBe('csv');
  expect(res.body.data.columns.map(({ column, to, key, type }: Column) => (key ? { column, to, key, type } : { column, to }))).toEqual([
    { column: 'E-mail', to: 'email' }, { column: 'First name', to: 'data', key: 'First name', type: 'string' },
    { column: 'Seats', to: 'data', key: 'Seats', type: 'number' }, { column: 'Opt-in', to: 'subscribed' },
    { column: 'Signed up', to: 'data', key: 'Signed up', type: 'date' },
  ]);
  expect(res.body.data.rows).toEqual([['ada@example.com', 'Ada', '3', 'yes', '2024-01-01'], ['bob@example.com', 'Bob', '1', 'no', '2024-02-01']]);
  expect(res.body.data.problems).toEqual([{ line: 4, reason: expect.stringContaining('broken quote') }]);
  // The rows the import would refuse under the proposed map are named too, not only those that cannot be read.
  const refusals = await t.http().post('/contacts/imports/preview').set(key).set('Content-Type', 'text/csv')
    .send(Buffer.from('email,plan\nada@example.com,pro\nnot-an-address,pro\nbob@example.com\nADA@example.com,free\ncy@example.com,team\n'));
  expect(refusals.body.data.problems).toEqual([
    { line: 3, reason: expect.stringMatching(/email/i) },
    { line: 4, reason: '1 fields where the header has 2' },
    { line: 5, reason: 'duplicate email: the file has it on line 2 already' },
  ]);
  expect(refusals.body.data.rows).toHaveLength(5);
  const clean = await t.http().post('/contacts/imports/preview').set(key).set('Content-Type', 'text/csv')
    .send(Buffer.from('email,seats,since\nada@example.com,3,2024-01-01\nbob@example.com,1,2024-02-01\n'));
  expect(clean.body.data.columns.map((c: Column) => c.type ?? c.to)).toEqual(['email', 'number', 'date']);

  const other = await t.newProject('Foreign');
  const theirs = (await upload('email\nx@example.com\n', { columns: [{ column: 'email', to: 'email' }] }, 'text/csv', bearer(other.secretKey))).body.data.id;
  expect((await t.http().get(`/contacts/imports/${theirs}`).set(key)).status).toBe(404);
  expect((await t.http().get(`/contacts/imports/${theirs}/errors`).set(key)).status).toBe(404);
  expect((await t.http().post(`/contacts/imports/${theirs}/cancel`).set(key)).status).toBe(404);
});
