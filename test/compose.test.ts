import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../config';

/**
 * Cluster mode (docker-compose.yml + Dockerfile), checked statically: no Docker engine runs where Herald is tested.
 * The file parses, names every service, wires API and workers to the same PostgreSQL, Temporal, mail relay and
 * secret, keeps the workers scalable, and the environment it gives Herald passes Herald's own configuration check.
 */

const ROOT = path.resolve(__dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  ports?: (string | number | { target: number; published?: string | number })[];
  healthcheck?: { test?: string | string[] };
  container_name?: string;
  volumes?: unknown[];
}

// Compose files use YAML 1.1 merge keys (`<<: *herald`), which docker compose applies.
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const service = (name: string): Service => {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service "${name}"`);
  return s;
};

/** The operator's environment for `docker compose up`: the README tells them to set SECRET_KEY. */
const OPERATOR_ENV = { SECRET_KEY: 'a'.repeat(64) };

/**
 * `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`, `${VAR}` and `$$` as docker compose interpolates them.
 * `:?` makes compose refuse to start when the variable is unset: the same here (it throws).
 */
function interpolate(value: string, env: Record<string, string> = OPERATOR_ENV): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-|:\?)([^}]*))?\}/g, (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (whole === '$$') return '$';
    if (op === ':?') {
      if (!env[name!]) throw new Error(`compose refuses to start: ${name} ${arg}`);
      return env[name!]!;
    }
    return env[name!] ?? arg ?? '';
  });
}

test('compose refuses to start without SECRET_KEY, so no installation runs on a published secret', () => {
  expect(() => interpolate(String((services.api!.environment as Record<string, string>).SECRET_KEY), {})).toThrow(/SECRET_KEY/);
});

function environmentOf(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  const entries: [string, string][] = Array.isArray(env)
    ? env.map((e) => { const i = e.indexOf('='); return i < 0 ? [e, ''] : [e.slice(0, i), e.slice(i + 1)]; })
    : Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]);
  return Object.fromEntries(entries.map(([k, v]) => [k, interpolate(v)]));
}

const dependenciesOf = (s: Service): Record<string, string | undefined> =>
  Array.isArray(s.depends_on)
    ? Object.fromEntries(s.depends_on.map((d) => [d, undefined]))
    : Object.fromEntries(Object.entries(s.depends_on ?? {}).map(([k, v]) => [k, v?.condition]));

const commandOf = (s: Service) => (Array.isArray(s.command) ? s.command.join(' ') : s.command);
const publishedPorts = (s: Service) => (s.ports ?? []).map((p) => (typeof p === 'object' ? String(p.target) : interpolate(String(p))));
const containerPort = (mapping: string) => mapping.split(':').pop()!.split('/')[0];

describe('docker-compose.yml (cluster mode)', () => {
  test('parses and names every service of the cluster', () => {
    expect(Object.keys(services).sort()).toEqual(expect.arrayContaining(['api', 'mailpit', 'postgres', 'temporal', 'temporal-ui', 'worker']));
  });

  test('postgres: PostgreSQL 18 with a healthcheck and a volume', () => {
    const pg = service('postgres');
    expect(pg.image).toMatch(/^postgres:1[3-9]/);
    expect(JSON.stringify(pg.healthcheck?.test)).toContain('pg_isready');
    expect(pg.volumes?.length).toBeGreaterThan(0);
  });

  test('temporal: auto-setup on that PostgreSQL, started once it is healthy', () => {
    const temporal = service('temporal');
    expect(temporal.image).toMatch(/^temporalio\/auto-setup(:|$)/);
    const env = environmentOf(temporal);
    expect(env).toMatchObject({ DB: 'postgres12', DB_PORT: '5432', POSTGRES_SEEDS: 'postgres' });
    expect(env.POSTGRES_USER).toBe(environmentOf(service('postgres')).POSTGRES_USER);
    expect(env.POSTGRES_PWD).toBe(environmentOf(service('postgres')).POSTGRES_PASSWORD);
    expect(dependenciesOf(temporal)).toEqual({ postgres: 'service_healthy' });
    expect(temporal.healthcheck?.test).toBeDefined();
  });

  test('temporal-ui points at the Temporal frontend and serves on 8080; mailpit takes SMTP on 1025 and serves its UI on 8025', () => {
    const ui = service('temporal-ui');
    expect(ui.image).toMatch(/^temporalio\/ui(:|$)/);
    expect(environmentOf(ui).TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(Object.keys(dependenciesOf(ui))).toContain('temporal');
    expect(publishedPorts(ui).map(containerPort)).toContain('8080');

    const mailpit = service('mailpit');
    expect(mailpit.image).toMatch(/^axllent\/mailpit(:|$)/);
    expect(publishedPorts(mailpit).map(containerPort)).toContain('8025');
  });

  test.each(['api', 'worker'])('%s: built from the Dockerfile, ENGINE=temporal on the shared PostgreSQL, Temporal and Mailpit', (name) => {
    const s = service(name);
    const build = typeof s.build === 'string' ? { context: s.build } : s.build;
    expect(build).toBeDefined();
    expect(path.resolve(ROOT, build!.context ?? '.', build!.dockerfile ?? 'Dockerfile')).toBe(path.join(ROOT, 'Dockerfile'));
    const env = environmentOf(s);
    expect(env).toMatchObject({ ENGINE: 'temporal', TEMPORAL_ADDRESS: 'temporal:7233', SMTP_URL: 'smtp://mailpit:1025' });
    expect(new URL(env.DATABASE_URL!).hostname).toBe('postgres');
    expect(env.SECRET_KEY).toBeTruthy();
    expect(env.PUBLIC_URL).toBeTruthy();
    // EXECUTOR_ID identifies a process to the embedded engine's recovery; with Temporal the server reassigns work.
    expect(env).not.toHaveProperty('EXECUTOR_ID');
    expect(dependenciesOf(s)).toMatchObject({ postgres: 'service_healthy', temporal: 'service_healthy' });
  });

  test('api and worker share every setting (same database, Temporal, secret, send rate); worker delivers through mailpit', () => {
    expect(environmentOf(service('worker'))).toEqual(environmentOf(service('api')));
    expect(Object.keys(dependenciesOf(service('worker')))).toContain('mailpit');
  });

  test('api: `npm run api` on port 3000, healthchecked on /health', () => {
    const api = service('api');
    expect(commandOf(api) ?? 'npm run api').toBe('npm run api');
    expect(environmentOf(api).PORT ?? '3000').toBe('3000');
    expect(publishedPorts(api).map(containerPort)).toContain('3000');
    expect(JSON.stringify(api.healthcheck?.test)).toContain('/health');
  });

  test('worker: `npm run worker`, scalable with --scale worker=N (no container_name, no published ports)', () => {
    const worker = service('worker');
    expect(commandOf(worker)).toBe('npm run worker');
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports ?? []).toEqual([]);
  });

  test("the environment given to api and worker passes Herald's configuration check (defaults as compose fills them in)", () => {
    for (const name of ['api', 'worker']) {
      const config = loadConfig(environmentOf(service(name)));
      expect(config).toMatchObject({ engine: 'temporal', temporalAddress: 'temporal:7233', smtpUrl: 'smtp://mailpit:1025', port: 3000 });
      expect(config.secretKey!.length).toBeGreaterThanOrEqual(32);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));

  test('node:20-bookworm-slim, installs with npm ci from the lock file, runs as a non-root user, `npm run api` by default', () => {
    expect(instructions[0]).toMatch(/^FROM node:20-bookworm-slim\b/);
    expect(instructions.some((l) => /^COPY .*package-lock\.json/.test(l))).toBe(true);
    expect(instructions.some((l) => /^RUN .*\bnpm ci\b/.test(l))).toBe(true);
    const user = instructions.filter((l) => l.startsWith('USER ')).pop();
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^USER (root|0)(:|$)/);
    const cmd = instructions.filter((l) => l.startsWith('CMD ')).pop();
    expect(cmd).toBeDefined();
    const args = JSON.parse(cmd!.slice(4)) as string[];
    expect(args).toEqual(['npm', 'run', 'api']);
  });

  test('.dockerignore keeps node_modules and local data out of the build context', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', '.data', '.git']));
  });
});
