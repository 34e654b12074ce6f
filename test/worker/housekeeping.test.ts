import pino from 'pino';
import { createProject } from '../../projects/service';
import { startHousekeeping } from '../../worker/housekeeping';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/processes';

/**
 * The worker's housekeeping (issue 26: the tracking windows were never deleted) on a real database: passed windows and
 * expired idempotency keys go, in batches; live ones stay; two workers sweeping at once delete each row once.
 */
let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.close(); });

test('passed tracking windows and idempotency keys past 24 hours are deleted; live ones stay', async () => {
  const project = await createProject('Housekeeping');
  // 12,000 emails (more than two batches of windows), each with an open window: two thirds passed, a third live.
  await db.knex.raw(
    `INSERT INTO emails (project_id, from_email, to_email, status) SELECT ?, 'n@example.com', 'u' || g || '@example.org', 'SENT' FROM generate_series(1, 12000) g`,
    [project.id]);
  await db.knex.raw(
    `INSERT INTO tracking_event_windows (project_id, email_id, link, last_event_at)
     SELECT project_id, id, md5(id::text)::uuid, now() - CASE WHEN row_number() OVER () % 3 = 0 THEN interval '10 seconds' ELSE interval '2 minutes' END
     FROM emails WHERE project_id = ?`, [project.id]);
  await db.knex('idempotency_keys').insert([
    { project_id: project.id, key: 'old', endpoint: '/v1/send', request_hash: Buffer.alloc(32), created_at: db.knex.raw("now() - interval '25 hours'") },
    { project_id: project.id, key: 'new', endpoint: '/v1/send', request_hash: Buffer.alloc(32), created_at: db.knex.raw("now() - interval '23 hours'") },
  ]);

  const log = pino({ level: 'silent' });
  const [a, b] = [0, 1].map(() => startHousekeeping({ knex: db.knex, log, eventWindowMs: 60_000, intervalMs: 3_600_000 }));
  try {
    // Each started with a round of its own; two more at once: every row is deleted once, whoever deletes it.
    const rounds = await Promise.all([a!.round(), b!.round()]);
    const left = await db.knex('tracking_event_windows').where({ project_id: project.id }).count<{ count: string }[]>('* as count');
    expect(Number(left[0]!.count)).toBe(4000);
    expect(await db.knex('tracking_event_windows').where({ project_id: project.id }).where('last_event_at', '<', db.knex.raw("now() - interval '1 minute'")).count('* as n').first()).toEqual({ n: 0 });
    expect((await db.knex('idempotency_keys').where({ project_id: project.id }).pluck('key'))).toEqual(['new']);
    expect(rounds.every((r) => r.trackingWindows !== undefined && r.idempotencyKeys !== undefined)).toBe(true);
  } finally {
    await Promise.all([a!.stop(), b!.stop()]);
  }
});

test('a window deleted as it passed changes nothing: the next hit is an event, as it would have been', async () => {
  // The sweep deletes only rows whose window has passed (last_event_at <= now() - window), which the tracker's upsert
  // would have moved anyway; checked through the statement's own condition on one row either side of it.
  const project = await createProject('Housekeeping edge');
  const [email] = await db.knex('emails').insert({ project_id: project.id, from_email: 'n@example.com', to_email: 'e@example.org', status: 'SENT' }).returning('id');
  await db.knex('tracking_event_windows').insert([
    { project_id: project.id, email_id: email.id, link: '00000000-0000-4000-8000-000000000001', last_event_at: db.knex.raw("now() - interval '59 seconds'") },
    { project_id: project.id, email_id: email.id, link: '00000000-0000-4000-8000-000000000002', last_event_at: db.knex.raw("now() - interval '61 seconds'") },
  ]);
  const h = startHousekeeping({ knex: db.knex, log: pino({ level: 'silent' }), eventWindowMs: 60_000, intervalMs: 3_600_000 });
  await h.round();
  await h.stop();
  expect(await db.knex('tracking_event_windows').where({ email_id: email.id }).pluck('link')).toEqual(['00000000-0000-4000-8000-000000000001']);
});

test('sessions and single-use tokens go a day after they ended, expired or were used; live ones stay', async () => {
  const project = await createProject('Housekeeping people');
  const [user] = await db.knex('users').insert({ email: 'kept@example.org' }).returning('id');
  const session = (name: string, fields: Record<string, unknown>) => ({
    token_hash: Buffer.from(name.padEnd(32, '.')), user_id: user.id, expires_at: db.knex.raw("now() + interval '1 day'"), ...fields,
  });
  const ago = (interval: string) => db.knex.raw(`now() - interval '${interval}'`);
  await db.knex('sessions').insert([
    session('live', {}),
    session('ended-recently', { ended_at: ago('1 hour') }),
    session('ended', { ended_at: ago('2 days') }),
    session('expired', { expires_at: ago('2 days') }),
    session('idle', { last_seen_at: ago('3 days') }), // idle 12 h, plus the day
  ]);
  const token = (name: string, fields: Record<string, unknown>) => ({
    kind: 'invitation', token_hash: Buffer.from(name.padEnd(32, '.')), project_id: project.id, email: `${name}@example.org`, role: 'member',
    expires_at: db.knex.raw("now() + interval '1 day'"), ...fields,
  });
  await db.knex('auth_tokens').insert([
    token('pending', {}),
    token('used-recently', { used_at: ago('1 hour') }),
    token('used', { used_at: ago('2 days') }),
    token('expired', { expires_at: ago('2 days') }),
  ]);
  const h = startHousekeeping({ knex: db.knex, log: pino({ level: 'silent' }), eventWindowMs: 60_000, sessionIdleMinutes: 720, intervalMs: 3_600_000 });
  await h.round();
  await h.stop();
  const names = async (table: string) => (await db.knex(table).select('token_hash')).map((r) => (r.token_hash as Buffer).toString().replace(/\.+$/, '')).sort();
  expect(await names('sessions')).toEqual(['ended-recently', 'live']);
  expect((await db.knex('auth_tokens').where({ project_id: project.id }).pluck('email')).sort()).toEqual(['pending@example.org', 'used-recently@example.org']);
});

test('new contacts\' search entries are merged into the index by the workers in the background, not by the sends', async () => {
  // The index keeps more pending entries than PostgreSQL's default before an insert must merge them itself
  // (migration 20261211000001); the workers merge them every pendingMergeMs.
  const { rows: [index] } = await db.knex.raw(`SELECT reloptions FROM pg_class WHERE relname = 'contacts_email_trgm_idx'`);
  expect(index.reloptions).toContain('gin_pending_list_limit=8192');
  await db.knex.raw('CREATE EXTENSION IF NOT EXISTS pgstattuple');
  const pending = async () => Number((await db.knex.raw(`SELECT pending_tuples FROM pgstatginindex('contacts_email_trgm_idx')`)).rows[0].pending_tuples);

  const project = await createProject('Housekeeping search');
  const search = () => db.knex('contacts').where('project_id', project.id).whereILike('email', '%ending-17@%').pluck('email');
  await db.knex.raw(`INSERT INTO contacts (project_id, email) SELECT ?, 'pending-' || g || '@example.org' FROM generate_series(1, 3000) g`, [project.id]);
  expect(await pending()).toBeGreaterThan(0);
  // Found while pending, as after the merge.
  expect(await search()).toEqual(['pending-17@example.org']);

  const h = startHousekeeping({ knex: db.knex, log: pino({ level: 'silent' }), eventWindowMs: 60_000, intervalMs: 3_600_000, pendingMergeMs: 50 });
  try {
    await waitFor('the pending entries merged', async () => ((await pending()) === 0 ? true : undefined), 10_000);
    await db.knex.raw(`INSERT INTO contacts (project_id, email) SELECT ?, 'later-' || g || '@example.org' FROM generate_series(1, 500) g`, [project.id]);
    // The next merges take the entries of contacts added since.
    await waitFor('the later entries merged', async () => ((await pending()) === 0 ? true : undefined), 10_000);
    expect(await search()).toEqual(['pending-17@example.org']);
  } finally {
    await h.stop();
  }
});
