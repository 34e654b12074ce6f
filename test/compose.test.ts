import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { Knex } from 'knex';
import { loadConfig } from '../config';
import { createKnex } from '../db/database';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../scripts/temporal.js') as { SERVER_VERSION: string };

/**
 * Cluster mode (docker-compose.yml + Dockerfile), checked statically: no Docker engine runs where Herald is tested.
 * The file parses, names every service, wires API and workers to the same PostgreSQL, Temporal, mail relay and
 * secret, keeps the workers scalable, and the environment it gives Herald passes Herald's own configuration check.
 * It also runs the Temporal server the tests run, on the namespace Herald uses, within PostgreSQL's connections.
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
 * `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`, `${VAR}`, `$VAR` and `$$` as docker compose interpolates
 * them. `:?` makes compose refuse to start when the variable is unset: the same here (it throws). A `$VAR` meant for
 * a container's shell must be written `$$VAR`, or compose replaces it with the operator's (usually empty) variable.
 */
function interpolate(value: string, env: Record<string, string> = OPERATOR_ENV): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-|:\?)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
    if (whole === '$$') return '$';
    const name = braced ?? bare;
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

function environmentOf(s: Service, operatorEnv: Record<string, string> = OPERATOR_ENV): Record<string, string> {
  const env = s.environment ?? {};
  const entries: [string, string][] = Array.isArray(env)
    ? env.map((e) => { const i = e.indexOf('='); return i < 0 ? [e, ''] : [e.slice(0, i), e.slice(i + 1)]; })
    : Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]);
  return Object.fromEntries(entries.map(([k, v]) => [k, interpolate(v, operatorEnv)]));
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

  test('postgres: PostgreSQL 17 with a healthcheck and a volume', () => {
    const pg = service('postgres');
    // 17, not 18: the newest PostgreSQL that Temporal's schema tools declare support for.
    expect(pg.image).toBe('postgres:17');
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

  test('temporal runs auto-setup 1.29.1, the server the tests run; temporal-ui runs UI 2.42.1, the one they serve', () => {
    // scripts/temporal.js pins the Temporal CLI 1.5.1 that the tests start (`temporal server start-dev`); the server
    // embedded in it is SERVER_VERSION, its UI 2.42.1. The cluster runs the same, so the tests cover what it runs.
    expect(temporalCli.SERVER_VERSION).toBe('1.29.1');
    expect(service('temporal').image).toBe(`temporalio/auto-setup:${temporalCli.SERVER_VERSION}`);
    expect(service('temporal').image).toBe('temporalio/auto-setup:1.29.1');
    expect(service('temporal-ui').image).toBe('temporalio/ui:2.42.1');
  });

  test.each([
    ['unset', {}, 'default'],
    ['set', { TEMPORAL_NAMESPACE: 'herald-prod' }, 'herald-prod'],
  ])('TEMPORAL_NAMESPACE %s: the temporal service creates the namespace api and worker use, and Temporal UI opens on it', (_, namespaceEnv, expected) => {
    const operatorEnv = { ...OPERATOR_ENV, ...namespaceEnv };
    for (const name of ['api', 'worker']) {
      expect(environmentOf(service(name), operatorEnv).TEMPORAL_NAMESPACE).toBe(expected);
      expect(loadConfig(environmentOf(service(name), operatorEnv)).temporalNamespace).toBe(expected);
    }
    // auto-setup creates DEFAULT_NAMESPACE (and only that one): any other namespace would not exist.
    expect(environmentOf(service('temporal'), operatorEnv).DEFAULT_NAMESPACE).toBe(expected);
    expect(environmentOf(service('temporal-ui'), operatorEnv).TEMPORAL_DEFAULT_NAMESPACE).toBe(expected);
  });

  test("temporal is healthy only once Herald's namespace exists: its healthcheck describes that namespace", () => {
    const operatorEnv = { ...OPERATOR_ENV, TEMPORAL_NAMESPACE: 'herald-prod' };
    const healthcheck = service('temporal').healthcheck?.test;
    expect(Array.isArray(healthcheck) && healthcheck[0]).toBe('CMD-SHELL');
    // What the container's shell runs: compose interpolates first (`$$` → `$`), then the shell expands the
    // container's variables.
    const containerEnv = environmentOf(service('temporal'), operatorEnv);
    const script = interpolate((healthcheck as string[]).slice(1).join(' '), operatorEnv)
      .replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_whole, name: string) => containerEnv[name] ?? '');
    expect(script).toMatch(/\btemporal operator namespace describe\b/);
    expect(script).toMatch(/--address[ =]temporal:7233\b/);
    expect(script.match(/(?:-n|--namespace)[ =]"?([^"\s]+)"?/)?.[1]).toBe('herald-prod');
    // api and worker wait for it.
    for (const name of ['api', 'worker']) expect(dependenciesOf(service(name)).temporal).toBe('service_healthy');
  });

  test("PostgreSQL's max_connections holds Temporal's pools and Herald's with --scale worker=8 and an operator CLI", async () => {
    const WORKERS = 8;
    // The one auto-setup process runs 4 services (frontend, history, matching, worker); each opens a pool on the
    // `temporal` database (SQL_MAX_CONNS) and one on `temporal_visibility` (SQL_VIS_MAX_CONNS): auto-setup's
    // config template (temporalio/temporal, docker/config_template.yaml) reads these names, with defaults 20 and 10.
    const TEMPORAL_SERVICES = 4;
    // psql sessions and auto-setup's schema tool.
    const MARGIN = 10;

    const temporalEnv = environmentOf(service('temporal'));
    const sqlSetting = (name: string) => {
      expect(temporalEnv[name]).toMatch(/^[1-9][0-9]*$/);
      return Number(temporalEnv[name]);
    };
    const temporalMax = TEMPORAL_SERVICES * (sqlSetting('SQL_MAX_CONNS') + sqlSetting('SQL_VIS_MAX_CONNS'));
    expect(sqlSetting('SQL_MAX_IDLE_CONNS')).toBeLessThanOrEqual(sqlSetting('SQL_MAX_CONNS'));
    expect(sqlSetting('SQL_VIS_MAX_IDLE_CONNS')).toBeLessThanOrEqual(sqlSetting('SQL_VIS_MAX_CONNS'));

    // Herald's pool per process: createKnex's default (db/database.ts does not export it; bin/runtime.ts opens the
    // database without a poolMax). No connection is made: the pool is lazy.
    const knex = createKnex('postgres://compose-test@127.0.0.1:1/none');
    const heraldPoolMax = (knex.client as { config: Knex.Config }).config.pool?.max;
    await knex.destroy();
    expect(heraldPoolMax).toBeGreaterThan(0);

    // Every service that opens Herald's database (api, worker), the workers scaled; plus an operator CLI
    // (`docker compose exec api npm run cli`), a process of its own with a pool of its own.
    const heraldServices = Object.entries(services).filter(([, s]) => environmentOf(s).DATABASE_URL);
    expect(heraldServices.map(([name]) => name).sort()).toEqual(['api', 'worker']);
    const heraldProcesses = heraldServices.reduce((n, [name]) => n + (name === 'worker' ? WORKERS : 1), 0) + 1;
    // Each worker also holds one session of its own: its executor id's advisory lock and heartbeat.
    const heraldMax = heraldProcesses * heraldPoolMax! + WORKERS;

    const command = service('postgres').command;
    const args = Array.isArray(command) ? command : (command ?? '').split(/\s+/);
    const setting = args.map((a, i) => (args[i - 1] === '-c' ? a : a.replace(/^--/, ''))).find((a) => a.startsWith('max_connections='));
    expect(setting).toBeDefined();
    const maxConnections = Number(setting!.split('=')[1]);

    expect(temporalMax + heraldMax + MARGIN).toBeLessThanOrEqual(maxConnections);
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
    // The worker adds only METRICS_PORT: it has no API port to serve GET /metrics on.
    const { METRICS_PORT: _metricsPort, ...workerEnv } = environmentOf(service('worker'));
    expect(workerEnv).toEqual(environmentOf(service('api')));
    expect(Object.keys(dependenciesOf(service('worker')))).toContain('mailpit');
  });

  test('worker: its metrics on METRICS_PORT inside the network, valid for Herald, never published (workers scale)', () => {
    const worker = service('worker');
    expect(environmentOf(worker).METRICS_PORT).toBe('9464');
    expect((worker as { expose?: unknown[] }).expose?.map(String)).toContain('9464');
    expect(publishedPorts(worker)).toEqual([]);
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
