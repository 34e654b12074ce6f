import { createHash } from 'node:crypto';
import { runCli } from '../cli/program';
import { bearer, createTestContext, type TestContext } from './support/app';
import { childEnv, runHerald, type RunResult } from './support/processes';

/**
 * The operator CLI (`npm run --silent cli -- …`) against this file's own database (DATABASE_URL). The commands run
 * in-process through runCli, with their stdout and stderr captured and the environment a child would get (a process
 * per command cost ~2 s of start-up each); the last block runs bin/cli.ts as a real process for the entry point's
 * own contract (exit codes, one JSON document on stdout). The keys it prints are then used against a real app on the
 * same database.
 */

const SECRET_KEY = /^sk_[A-Za-z0-9]{40}$/;
const PUBLIC_KEY = /^pk_[A-Za-z0-9]{40}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000';

let t: TestContext;

// One run at a time: while a command runs, Objection's models are bound to that run's knex (runCli binds them back
// to the test's when it is done, and destroys its own), so two side by side would pull the binding from under each other.
let running: Promise<unknown> = Promise.resolve();

/** Runs `herald <args>` in-process with this environment; the same result as runHerald gives for a child. */
function inProcess(args: string[], env: NodeJS.ProcessEnv): Promise<RunResult> {
  const run = running.then(async (): Promise<RunResult> => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['node', 'bin/cli.ts', ...args], {
      env,
      stdout: { write: (s: string) => { stdout += s; } },
      stderr: { write: (s: string) => { stderr += s; } },
    });
    return { code, signal: null, stdout, stderr };
  });
  running = run.catch(() => undefined);
  return run;
}

const cli = (...args: string[]): Promise<RunResult> => inProcess(args, childEnv({ DATABASE_URL: t.db.url }));

/** Runs a command that must succeed and print one JSON value on stdout (and nothing on stderr). */
async function cliJson<T>(...args: string[]): Promise<T> {
  const res = await cli(...args);
  if (res.code !== 0) throw new Error(`herald ${args.join(' ')} exited ${res.code}: ${res.stderr}`);
  expect(res.stderr).toBe('');
  return JSON.parse(res.stdout) as T;
}

/** Expects a command to fail: the given exit code (or any non-zero one), nothing on stdout, a message on stderr. */
async function cliFails(code: number | 'non-zero', stderrPattern: RegExp, ...args: string[]): Promise<RunResult> {
  const res = await cli(...args);
  if (code === 'non-zero') expect(res.code).not.toBe(0);
  else expect(res.code).toBe(code);
  expect(res.code).not.toBeNull(); // exited, not killed
  expect(res.stdout).toBe('');
  expect(res.stderr).toMatch(stderrPattern);
  return res;
}

interface Created { id: string; name: string; secretKey: string; publicKey: string }
interface Listed { id: string; name: string; disabled: boolean; createdAt: string; keys: { id: string; type: string; name: string; scope: string; hint: string; revoked: boolean }[] }
interface CreatedKey { id: string; projectId: string; type: string; key: string }
interface AddedDomain { id: string; projectId: string; domain: string; status: string; verifiedAt: string | null; records: { purpose: string; type: string; name: string; value: string }[] }

beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t?.close(); });

describe('project create', () => {
  let created: Created;
  let raw: RunResult;
  beforeAll(async () => {
    raw = await cli('project', 'create', '--name', 'Acme Mail');
    created = JSON.parse(raw.stdout) as Created;
  });

  test('prints exactly one JSON object {id,name,secretKey,publicKey} on stdout and nothing else', () => {
    expect(raw.code).toBe(0);
    expect(raw.stderr).toBe('');
    // The whole of stdout is one JSON document: a caller can pipe it straight into jq or JSON.parse.
    expect(() => JSON.parse(raw.stdout)).not.toThrow();
    expect(Object.keys(created).sort()).toEqual(['id', 'name', 'publicKey', 'secretKey']);
    expect(created.id).toMatch(UUID);
    expect(created.name).toBe('Acme Mail');
    expect(created.secretKey).toMatch(SECRET_KEY);
    expect(created.publicKey).toMatch(PUBLIC_KEY);
  });

  test('stores the project, enabled, with one secret and one public key', async () => {
    const project = await t.db.knex('projects').where({ id: created.id }).first();
    expect(project).toMatchObject({ name: 'Acme Mail', disabled: false });
    const keys = await t.db.knex('api_keys').where({ project_id: created.id }).orderBy('type');
    expect(keys.map((k: { type: string }) => k.type)).toEqual(['public', 'secret']);
    expect(keys.every((k: { revoked_at: Date | null }) => k.revoked_at === null)).toBe(true);
  });

  test('stores only a hash of each key: hash is bytea, and no column holds the key text', async () => {
    const { rows: columns } = await t.db.knex.raw<{ rows: { data_type: string }[] }>(
      "SELECT data_type FROM information_schema.columns WHERE table_name = 'api_keys' AND column_name = 'hash'",
    );
    expect(columns).toEqual([{ data_type: 'bytea' }]);

    const keys = await t.db.knex('api_keys').where({ project_id: created.id });
    for (const [type, key] of [['secret', created.secretKey], ['public', created.publicKey]] as const) {
      const row = keys.find((k: { type: string }) => k.type === type);
      expect(Buffer.isBuffer(row.hash)).toBe(true);
      expect((row.hash as Buffer).equals(createHash('sha256').update(key).digest())).toBe(true);
    }
    // Every column of every row of the tables the CLI wrote to, as text: the keys (or their random parts) appear nowhere.
    const { rows } = await t.db.knex.raw<{ rows: { t: string }[] }>(
      'SELECT row_to_json(k)::text AS t FROM api_keys k UNION ALL SELECT row_to_json(p)::text FROM projects p',
    );
    const everything = rows.map((r) => r.t).join('\n');
    for (const key of [created.secretKey, created.publicKey]) {
      expect(everything).not.toContain(key);
      expect(everything).not.toContain(key.slice(3));
    }
  });

  test('the printed secret key authenticates against the API; the public key is refused on /contacts', async () => {
    const ok = await t.http().post('/contacts').set(bearer(created.secretKey)).send({ email: 'ops@acme.example' });
    expect(ok.status).toBe(201);
    const pub = await t.http().post('/contacts').set(bearer(created.publicKey)).send({ email: 'ops@acme.example' });
    expect(pub.status).toBe(403);
    expect(pub.body.error.code).toBe('FORBIDDEN');
  });

  test('project list shows the project as JSON, with key hints only, never a key', async () => {
    const res = await cli('project', 'list');
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
    const list = JSON.parse(res.stdout) as Listed[];
    expect(Array.isArray(list)).toBe(true);
    const entry = list.find((p) => p.id === created.id);
    expect(entry).toMatchObject({ id: created.id, name: 'Acme Mail', disabled: false });
    expect(new Date(entry!.createdAt).toISOString()).toBe(entry!.createdAt);
    expect(entry!.keys).toHaveLength(2);
    const secret = entry!.keys.find((k) => k.type === 'secret')!;
    const pub = entry!.keys.find((k) => k.type === 'public')!;
    expect(secret).toMatchObject({ hint: `…${created.secretKey.slice(-4)}`, revoked: false });
    expect(pub).toMatchObject({ hint: `…${created.publicKey.slice(-4)}`, revoked: false });
    expect(secret.id).toMatch(UUID);
    for (const key of [created.secretKey, created.publicKey]) {
      expect(res.stdout).not.toContain(key);
      expect(res.stdout).not.toContain(key.slice(3, 19)); // not even the lookup part
    }
    expect(res.stdout).not.toMatch(/[sp]k_[A-Za-z0-9]{8}/);
    // The test context's own project is listed too.
    expect(list.some((p) => p.id === t.project.id)).toBe(true);
  });

  test('a blank name is refused with exit code 1', async () => {
    await cliFails(1, /--name/, 'project', 'create', '--name', '   ');
  });
});

describe('project disable / enable', () => {
  let p: Created;
  beforeAll(async () => { p = await cliJson<Created>('project', 'create', '--name', 'Toggle'); });

  const flag = async () => (await t.db.knex('projects').where({ id: p.id }).first('disabled')).disabled as boolean;

  test('disable sets the flag, and the project\'s keys get 403 PROJECT_DISABLED', async () => {
    expect(await cliJson('project', 'disable', p.id)).toEqual({ id: p.id, disabled: true });
    expect(await flag()).toBe(true);
    const res = await t.http().get('/contacts').set(bearer(p.secretKey));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('PROJECT_DISABLED');
    // Other projects are untouched.
    expect((await t.http().get('/contacts').set(bearer(t.project.secretKey))).status).toBe(200);
  });

  test('enable clears it again', async () => {
    expect(await cliJson('project', 'enable', p.id)).toEqual({ id: p.id, disabled: false });
    expect(await flag()).toBe(false);
    expect((await t.http().get('/contacts').set(bearer(p.secretKey))).status).toBe(200);
  });

  test('an unknown project id exits 1 with a message on stderr', async () => {
    await Promise.all([
      cliFails(1, new RegExp(`no project ${UNKNOWN_ID}`), 'project', 'disable', UNKNOWN_ID),
      cliFails(1, new RegExp(`no project ${UNKNOWN_ID}`), 'project', 'enable', UNKNOWN_ID),
    ]);
  });

  test('an id that is not a UUID exits 1 without touching the database', async () => {
    await Promise.all([
      cliFails(1, /not an id/, 'project', 'disable', 'acme'),
      cliFails(1, /not an id/, 'project', 'enable', `${p.id}x`),
    ]);
    expect(await flag()).toBe(false);
  });

  test('a missing id is a usage error (non-zero exit)', async () => {
    await cliFails('non-zero', /missing required argument/i, 'project', 'disable');
  });
});

describe('key create / revoke', () => {
  let p: Created;
  beforeAll(async () => { p = await cliJson<Created>('project', 'create', '--name', 'Keys'); });

  const keyRows = () => t.db.knex('api_keys').where({ project_id: p.id });

  test('creates a secret key, printed once, that authenticates', async () => {
    const k = await cliJson<CreatedKey>('key', 'create', '--project', p.id, '--type', 'secret');
    expect(Object.keys(k).sort()).toEqual(['domains', 'id', 'key', 'name', 'projectId', 'scope', 'type']);
    expect(k).toMatchObject({ projectId: p.id, type: 'secret', name: 'Default secret key', scope: 'full', domains: null });
    expect(k.id).toMatch(UUID);
    expect(k.key).toMatch(SECRET_KEY);
    expect(k.key).not.toBe(p.secretKey);
    const row = await t.db.knex('api_keys').where({ id: k.id }).first();
    expect(row).toMatchObject({ project_id: p.id, type: 'secret', revoked_at: null });
    expect((row.hash as Buffer).equals(createHash('sha256').update(k.key).digest())).toBe(true);
    const res = await t.http().post('/contacts').set(bearer(k.key)).send({ email: 'new-key@keys.example' });
    expect(res.status).toBe(201);
  });

  test('creates a public key', async () => {
    const k = await cliJson<CreatedKey>('key', 'create', '--project', p.id, '--type', 'public');
    expect(k).toMatchObject({ projectId: p.id, type: 'public' });
    expect(k.key).toMatch(PUBLIC_KEY);
    // A public key is a real key (so not 401), but it is not accepted on the contacts API.
    const res = await t.http().get('/contacts').set(bearer(k.key));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });

  test('a bad --type, --scope, --name or --domains exits non-zero and creates nothing', async () => {
    const before = (await keyRows()).length;
    await Promise.all([
      cliFails('non-zero', /--type/, 'key', 'create', '--project', p.id, '--type', 'admin'),
      cliFails('non-zero', /--scope/, 'key', 'create', '--project', p.id, '--scope', 'root'),
      cliFails(1, /--name/, 'key', 'create', '--project', p.id, '--name', ' '),
      cliFails(1, /--domains/, 'key', 'create', '--project', p.id, '--domains', 'not a domain'),
    ]);
    expect((await keyRows()).length).toBe(before);
  });

  test('--name, --scope and --domains (issue 27): a sending key limited to a domain, audited as the operator', async () => {
    const k = await cliJson<CreatedKey & { name: string; scope: string; domains: string[] }>('key', 'create', '--project', p.id, '--name', 'CI', '--scope', 'sending', '--domains', 'Acme.com, mail.acme.org');
    expect(k).toMatchObject({ type: 'secret', name: 'CI', scope: 'sending', domains: ['acme.com', 'mail.acme.org'] });
    expect((await t.http().get('/contacts').set(bearer(k.key))).status).toBe(403);
    const listed = (await t.http().get('/keys').set(bearer(p.secretKey))).body.data.items.find((i: { id: string }) => i.id === k.id);
    expect(listed).toMatchObject({ name: 'CI', scope: 'sending', domains: ['acme.com', 'mail.acme.org'] });
    const entry = await t.db.knex('audit_log').where({ project_id: p.id, resource_id: k.id }).first();
    expect(entry).toMatchObject({ actor_kind: 'operator', actor_id: null, operation: 'key.create', resource_type: 'key' });
    expect(JSON.stringify(entry.details)).not.toContain(k.key);
  });

  test('an unknown or malformed --project exits 1', async () => {
    await Promise.all([
      cliFails(1, new RegExp(`no project ${UNKNOWN_ID}`), 'key', 'create', '--project', UNKNOWN_ID, '--type', 'secret'),
      cliFails(1, /not an id/, 'key', 'create', '--project', 'nope', '--type', 'secret'),
      cliFails('non-zero', /--project/, 'key', 'create', '--type', 'secret'),
    ]);
  });

  test('key revoke revokes the key: 401 afterwards, revoked in the DB and in the listing', async () => {
    const k = await cliJson<CreatedKey>('key', 'create', '--project', p.id, '--type', 'secret');
    expect((await t.http().get('/contacts').set(bearer(k.key))).status).toBe(200);

    expect(await cliJson('key', 'revoke', k.id)).toEqual({ id: k.id, revoked: true });
    const row = await t.db.knex('api_keys').where({ id: k.id }).first();
    expect(row.revoked_at).toBeInstanceOf(Date);
    const res = await t.http().get('/contacts').set(bearer(k.key));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
    // The project's other keys still work.
    expect((await t.http().get('/contacts').set(bearer(p.secretKey))).status).toBe(200);

    // Listings show it, revoked, by its hint only.
    const list = await cli('project', 'list');
    expect(list.stdout).not.toContain(k.key);
    const listed = (JSON.parse(list.stdout) as Listed[]).find((x) => x.id === p.id)!.keys.find((x) => x.id === k.id);
    expect(listed).toEqual({ id: k.id, type: 'secret', name: 'Default secret key', scope: 'full', hint: `…${k.key.slice(-4)}`, revoked: true });
    // Audited as the operator's, in the revocation's transaction (issue 27).
    expect(await t.db.knex('audit_log').where({ resource_id: k.id, operation: 'key.revoke' }).select('actor_kind', 'actor_id', 'project_id'))
      .toEqual([{ actor_kind: 'operator', actor_id: null, project_id: p.id }]);

    // Revoking it again, or an unknown key, is an error.
    await Promise.all([
      cliFails(1, /no active key/, 'key', 'revoke', k.id),
      cliFails(1, /no active key/, 'key', 'revoke', UNKNOWN_ID),
      cliFails(1, /not an id/, 'key', 'revoke', 'sk_notanid'),
    ]);
  });
});

describe('domain add', () => {
  let p: Created;
  beforeAll(async () => { p = await cliJson<Created>('project', 'create', '--name', 'Domains'); });

  const domainRow = (domain: string) => t.db.knex('domains').where({ project_id: p.id, domain }).first();

  test('--verified records the domain as VERIFIED', async () => {
    const d = await cliJson<AddedDomain>('domain', 'add', '--project', p.id, '--domain', 'mail.example.com', '--verified');
    expect(d).toMatchObject({ projectId: p.id, domain: 'mail.example.com', status: 'VERIFIED' });
    expect(d.id).toMatch(UUID);
    expect(new Date(d.verifiedAt!).toISOString()).toBe(d.verifiedAt);
    const row = await domainRow('mail.example.com');
    expect(row).toMatchObject({ id: d.id, status: 'VERIFIED', verified_by: 'OPERATOR' });
    expect(row.verified_at).toBeInstanceOf(Date);
    // It also gets its DKIM key (stored encrypted), and the records to publish are printed.
    expect(Buffer.isBuffer(row.dkim_private_key)).toBe(true);
    expect(d.records.map((r) => r.purpose)).toEqual(['DKIM', 'SPF', 'DMARC']);
    expect(d.records[0]).toMatchObject({ type: 'TXT', name: `${row.dkim_selector}._domainkey.mail.example.com`, value: `v=DKIM1; k=rsa; p=${row.dkim_public_key}` });
  });

  test('without --verified it waits as PENDING', async () => {
    const d = await cliJson<AddedDomain>('domain', 'add', '--project', p.id, '--domain', 'news.example.com');
    expect(d).toMatchObject({ projectId: p.id, domain: 'news.example.com', status: 'PENDING', verifiedAt: null });
    expect(await domainRow('news.example.com')).toMatchObject({ id: d.id, status: 'PENDING', verified_at: null });
  });

  test('the name is trimmed and lower-cased', async () => {
    const d = await cliJson<AddedDomain>('domain', 'add', '--project', p.id, '--domain', ' Bounce.Example.COM ');
    expect(d.domain).toBe('bounce.example.com');
    expect(await domainRow('bounce.example.com')).toMatchObject({ id: d.id });
  });

  test('adding a PENDING domain again with --verified verifies the same row', async () => {
    const pending = await domainRow('news.example.com');
    const verified = await cliJson<AddedDomain>('domain', 'add', '--project', p.id, '--domain', 'news.example.com', '--verified');
    expect(verified).toMatchObject({ id: pending.id, domain: 'news.example.com', status: 'VERIFIED' });
    expect(verified.verifiedAt).not.toBeNull();
    const row = await domainRow('news.example.com');
    expect(row).toMatchObject({ id: pending.id, status: 'VERIFIED' });
    expect(row.verified_at).toBeInstanceOf(Date);
  });

  test('adding a VERIFIED domain again without --verified leaves it VERIFIED in the database', async () => {
    const before = await domainRow('mail.example.com');
    const res = await cli('domain', 'add', '--project', p.id, '--domain', 'mail.example.com');
    expect(res.code).toBe(0);
    const rows = await t.db.knex('domains').where({ project_id: p.id, domain: 'mail.example.com' });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: before.id, status: 'VERIFIED', verified_at: before.verified_at });
  });

  // Regression: ON CONFLICT DO NOTHING returns no row for an existing domain; the stored row must be printed.
  test('adding an existing domain again without --verified prints the stored row', async () => {
    const stored = await domainRow('mail.example.com');
    const again = await cliJson<AddedDomain>('domain', 'add', '--project', p.id, '--domain', 'mail.example.com');
    expect(again).toEqual({
      id: stored.id, projectId: p.id, domain: 'mail.example.com', status: 'VERIFIED', verifiedAt: (stored.verified_at as Date).toISOString(),
      records: expect.any(Array),
    });
  });

  test('an invalid domain exits 1 and records nothing', async () => {
    const before = await t.db.knex('domains').where({ project_id: p.id }).count({ n: '*' });
    await Promise.all(['not a domain', 'localhost', '-bad-.example.com', 'mail@example.com'].map((bad) =>
      cliFails(1, /not a valid domain/, 'domain', 'add', '--project', p.id, '--domain', bad, '--verified')));
    expect(await t.db.knex('domains').where({ project_id: p.id }).count({ n: '*' })).toEqual(before);
  });

  test('an unknown project id or a non-UUID exits 1; a missing option is a usage error', async () => {
    await Promise.all([
      cliFails(1, new RegExp(`no project ${UNKNOWN_ID}`), 'domain', 'add', '--project', UNKNOWN_ID, '--domain', 'mail.example.com'),
      cliFails(1, /not an id/, 'domain', 'add', '--project', 'Domains', '--domain', 'mail.example.com'),
      cliFails('non-zero', /--domain/, 'domain', 'add', '--project', p.id),
      cliFails('non-zero', /--project/, 'domain', 'add', '--domain', 'mail.example.com'),
    ]);
  });
});

describe('user add / reset / list', () => {
  interface Invited { id: string; projectId: string; email: string; role: string; expiresAt: string; link: string }
  interface Reset { email: string; expiresAt: string; link: string }
  interface User { id: string; email: string; name: string; operator: boolean; disabled: boolean; createdAt: string; projects: { projectId: string; role: string }[] }
  const tokenOf = (link: string) => /#token=([A-Za-z0-9_-]{43})$/.exec(link)![1]!;
  const PUBLIC_URL = 'http://localhost:3000'; // the CLI's default PUBLIC_URL (PORT 3000)

  test('user add prints an invitation link (never mailed) that accepts once; the operator may invite an owner', async () => {
    const invited = await cliJson<Invited>('user', 'add', '--email', 'Lin@Example.com', '--project', t.project.id, '--role', 'owner');
    expect(Object.keys(invited).sort()).toEqual(['email', 'expiresAt', 'id', 'link', 'projectId', 'role']);
    expect(invited).toEqual(expect.objectContaining({ projectId: t.project.id, email: 'lin@example.com', role: 'owner' }));
    expect(invited.link).toMatch(new RegExp(`^${PUBLIC_URL}/app/invitation#token=[A-Za-z0-9_-]{43}$`));
    const res = await t.http().post('/invitations/accept').send({ token: tokenOf(invited.link), name: 'Lin', password: 'the first password' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(expect.objectContaining({ projectId: t.project.id, role: 'owner', newAccount: true }));
    // Stored hashed: the token is nowhere in the row.
    const row = await t.db.knex('auth_tokens').where({ id: invited.id }).first();
    expect(JSON.stringify(row)).not.toContain(tokenOf(invited.link));
  });

  test('user reset prints a one-hour link that sets a new password; user list shows accounts with their roles', async () => {
    const reset = await cliJson<Reset>('user', 'reset', '--email', 'lin@example.com');
    expect(reset.link).toMatch(new RegExp(`^${PUBLIC_URL}/app/reset#token=[A-Za-z0-9_-]{43}$`));
    expect((Date.parse(reset.expiresAt) - Date.now()) / 60_000).toBeLessThan(60.5);
    const res = await t.http().post('/auth/password-reset/confirm').send({ token: tokenOf(reset.link), password: 'the second password' });
    expect(res.status).toBe(200);

    const users = await cliJson<User[]>('user', 'list');
    const lin = users.find((u) => u.email === 'lin@example.com')!;
    expect(lin).toEqual(expect.objectContaining({ name: 'Lin', operator: false, disabled: false, projects: [{ projectId: t.project.id, role: 'owner' }] }));
    expect(JSON.stringify(users)).not.toMatch(/password|hash/i);
  });

  test('user two-factor-off turns off the two-factor of an account (a lost device); an unknown address is refused', async () => {
    const lin = (await t.db.knex('users').where({ email: 'lin@example.com' }).first('id')) as { id: string };
    await t.db.knex('two_factor').insert({ user_id: lin.id, secret_sealed: Buffer.from([1]), enabled_at: new Date() });
    expect(await cliJson('user', 'two-factor-off', '--email', 'LIN@example.com')).toEqual({ email: 'lin@example.com', twoFactorWasOn: true });
    expect(await t.db.knex('two_factor').where({ user_id: lin.id }).first()).toBeUndefined();
    expect(await cliJson('user', 'two-factor-off', '--email', 'lin@example.com')).toEqual({ email: 'lin@example.com', twoFactorWasOn: false });
    await cliFails(1, /no account/, 'user', 'two-factor-off', '--email', 'nobody@example.com');
  });

  test('refusals: unknown account, unknown project, bad address or role, a member already; nothing made', async () => {
    const before = await t.db.knex('auth_tokens').count({ n: '*' });
    await Promise.all([
      cliFails(1, /no account/, 'user', 'reset', '--email', 'nobody@example.com'),
      cliFails(1, /Project not found/, 'user', 'add', '--email', 'x@example.com', '--project', UNKNOWN_ID, '--role', 'viewer'),
      cliFails(1, /not a valid email/, 'user', 'add', '--email', 'nope', '--project', t.project.id, '--role', 'viewer'),
      cliFails('non-zero', /--role/, 'user', 'add', '--email', 'x@example.com', '--project', t.project.id, '--role', 'king'),
      cliFails(1, /already a member/, 'user', 'add', '--email', 'lin@example.com', '--project', t.project.id, '--role', 'viewer'),
    ]);
    expect(await t.db.knex('auth_tokens').count({ n: '*' })).toEqual(before);
  });
});

describe('usage errors', () => {
  test('project create without --name exits non-zero and creates nothing', async () => {
    const before = await t.db.knex('projects').count({ n: '*' });
    await cliFails('non-zero', /--name/, 'project', 'create');
    expect(await t.db.knex('projects').count({ n: '*' })).toEqual(before);
  });

  test('an unknown command exits non-zero', async () => {
    await cliFails('non-zero', /unknown command/i, 'project', 'destroy');
  });

  test('a bad configuration exits 1 naming the variable, without echoing DATABASE_URL', async () => {
    const res = await inProcess(['project', 'list'], childEnv({ DATABASE_URL: 'mysql://root:hunter2@db/herald' }));
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/DATABASE_URL/);
    expect(res.stderr).not.toContain('hunter2');
  });
});

describe('bin/cli.ts as a real process', () => {
  // The entry point itself: what the compiled entry and Node add around runCli (exit codes through process.exit, nothing else on the
  // streams). Three children side by side, the only ones this file starts.
  const child = (...args: string[]) => runHerald('bin/cli.ts', args, childEnv({ DATABASE_URL: t.db.url }));
  let created: RunResult;
  let usage: RunResult;
  let refused: RunResult;
  beforeAll(async () => {
    [created, usage, refused] = await Promise.all([
      child('project', 'create', '--name', 'From a process'),
      child('project', 'destroy'),
      child('project', 'disable', UNKNOWN_ID),
    ]);
  });

  test('a command that succeeds exits 0 with exactly one JSON document on stdout and nothing on stderr', async () => {
    expect(created).toMatchObject({ code: 0, signal: null, stderr: '' });
    const printed = JSON.parse(created.stdout) as Created;
    expect(printed).toMatchObject({ name: 'From a process' });
    expect(printed.secretKey).toMatch(SECRET_KEY);
    expect(await t.db.knex('projects').where({ id: printed.id }).first()).toMatchObject({ name: 'From a process' });
  });

  test('a usage error exits 2 with the message on stderr', () => {
    expect(usage).toMatchObject({ code: 2, signal: null, stdout: '' });
    expect(usage.stderr).toMatch(/unknown command/i);
  });

  test("an operator's error exits 1 with one line on stderr", () => {
    expect(refused).toMatchObject({ code: 1, signal: null, stdout: '' });
    expect(refused.stderr).toBe(`error: no project ${UNKNOWN_ID}\n`);
  });
});
