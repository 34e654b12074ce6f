import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, loadOidcConfig, loadSessionConfig, loadTrackingConfig, publicUrlWarning, temporalUiOf } from '../config';
import { childEnv, runHerald } from './support/processes';

/** Configuration from environment variables (issue 2, point 2): defaults, and a clear error naming any bad variable. */

/** The ConfigError that loadConfig(env) throws (fails the test when it does not throw one). */
function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('defaults', () => {
  test('an empty environment gives the documented defaults', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      dataDir: path.resolve('./.data'),
      databaseUrl: undefined,
      databaseSessionUrl: undefined,
      databasePreparedStatements: true,
      smtpUrl: undefined,
      engine: 'embedded',
      temporalAddress: undefined,
      temporalNamespace: 'default',
      temporalUiUrl: undefined,
      trustProxyHops: 0,
      httpRequestTimeoutSeconds: 3600,
      logLevel: 'info',
      apiRateLimitPerMinute: 1000,
      healthTimeoutMs: 2000,
      sendRatePerSecond: 14,
      publicUrl: 'http://localhost:3000',
      retention: { days: 365, inboundDays: 30 },
      secretKey: undefined,
      executorId: undefined,
      automationMaxRunning: 200,
      smtpSubmission: { port: 2587, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false,
        sessionMaxMessages: 1000, sessionMaxSeconds: 3600, authMaxFailures: 3, authMaxFailuresPerAddress: 20, authFailureWindowSeconds: 900 },
      smtpLimits: { maxConnectionsPerAddress: 20, sessionTimeoutMs: 600_000, commandTimeoutMs: 60_000 },
      bounces: { domain: undefined, inboundPort: 2525, inboundHost: undefined, softBounceLimit: 3, softBounceWindowDays: 7, mxHost: 'localhost', inboundRetentionDays: 30, inboundAnalysisThreads: 0 },
      metrics: { port: undefined, token: undefined },
      people: { invitationTtlHours: 72, systemSender: undefined },
    });
  });

  test('DATA_DIR is resolved to an absolute path', () => {
    expect(path.isAbsolute(loadConfig({}).dataDir)).toBe(true);
    expect(loadConfig({ DATA_DIR: 'var/herald' }).dataDir).toBe(path.resolve(process.cwd(), 'var/herald'));
    expect(loadConfig({ DATA_DIR: '/srv/herald' }).dataDir).toBe('/srv/herald');
  });

  test('other variables of the environment are ignored', () => {
    expect(loadConfig({ PATH: '/usr/bin', HOME: '/root', SOMETHING_ELSE: 'x' }).port).toBe(3000);
  });

  test('an empty DATABASE_URL or SMTP_URL counts as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', SMTP_URL: '' })).toMatchObject({ databaseUrl: undefined, smtpUrl: undefined });
  });
});

describe('valid values are read and converted', () => {
  test('every variable', () => {
    expect(loadConfig({
      PORT: '8080',
      DATA_DIR: '/var/lib/herald',
      DATABASE_URL: 'postgres://herald:secret@db.internal:5432/herald',
      SMTP_URL: 'smtps://user:pass@smtp.example.com:465',
      ENGINE: 'temporal',
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'herald',
      TEMPORAL_UI_URL: 'https://temporal.example.com/',
      LOG_LEVEL: 'debug',
      API_RATE_LIMIT_PER_MINUTE: '60',
      SEND_RATE_PER_SECOND: '2.5',
      PUBLIC_URL: 'https://mail.example.com/',
      SECRET_KEY: 'k'.repeat(40),
      EXECUTOR_ID: 'worker-3',
      AUTOMATION_MAX_RUNNING: '50',
      METRICS_PORT: '9464',
      METRICS_TOKEN: 't'.repeat(32),
      TRUST_PROXY_HOPS: '2',
      HTTP_REQUEST_TIMEOUT_SECONDS: '7200',
      HEALTH_TIMEOUT_MS: '800',
      RETENTION_DAYS: '90',
    })).toEqual({
      port: 8080,
      dataDir: '/var/lib/herald',
      databaseUrl: 'postgres://herald:secret@db.internal:5432/herald',
      databaseSessionUrl: undefined,
      databasePreparedStatements: true,
      smtpUrl: 'smtps://user:pass@smtp.example.com:465',
      engine: 'temporal',
      temporalAddress: 'temporal.internal:7233',
      temporalNamespace: 'herald',
      temporalUiUrl: 'https://temporal.example.com',
      trustProxyHops: 2,
      httpRequestTimeoutSeconds: 7200,
      logLevel: 'debug',
      apiRateLimitPerMinute: 60,
      healthTimeoutMs: 800,
      sendRatePerSecond: 2.5,
      publicUrl: 'https://mail.example.com',
      retention: { days: 90, inboundDays: 30 },
      secretKey: 'k'.repeat(40),
      executorId: 'worker-3',
      automationMaxRunning: 50,
      smtpSubmission: { port: 2587, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false,
        sessionMaxMessages: 1000, sessionMaxSeconds: 3600, authMaxFailures: 3, authMaxFailuresPerAddress: 20, authFailureWindowSeconds: 900 },
      smtpLimits: { maxConnectionsPerAddress: 20, sessionTimeoutMs: 600_000, commandTimeoutMs: 60_000 },
      bounces: { domain: undefined, inboundPort: 2525, inboundHost: undefined, softBounceLimit: 3, softBounceWindowDays: 7, mxHost: 'mail.example.com', inboundRetentionDays: 30, inboundAnalysisThreads: 0 },
      metrics: { port: 9464, token: 't'.repeat(32) },
      people: { invitationTtlHours: 72, systemSender: undefined },
    });
  });

  test('INVITATION_TTL_HOURS, and the system sender: SYSTEM_PROJECT_ID with SYSTEM_FROM_EMAIL', () => {
    const id = '01890000-0000-7000-8000-00000000000A';
    expect(loadConfig({ INVITATION_TTL_HOURS: '24', SYSTEM_PROJECT_ID: id, SYSTEM_FROM_EMAIL: 'NoReply@Example.com' }).people)
      .toEqual({ invitationTtlHours: 24, systemSender: { projectId: id.toLowerCase(), email: 'noreply@example.com' } });
  });

  test('behind a transaction pooler: DATABASE_SESSION_URL (only with DATABASE_URL) and DATABASE_PREPARED_STATEMENTS', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://h:s@pgbouncer:6432/herald', DATABASE_SESSION_URL: 'postgres://h:s@postgres:5432/herald', DATABASE_PREPARED_STATEMENTS: 'false' }))
      .toMatchObject({ databaseUrl: 'postgres://h:s@pgbouncer:6432/herald', databaseSessionUrl: 'postgres://h:s@postgres:5432/herald', databasePreparedStatements: false });
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: '0' }).databasePreparedStatements).toBe(false);
    expect(configError({ DATABASE_SESSION_URL: 'postgres://h:s@postgres:5432/herald' }).message).toContain('needs DATABASE_URL');
  });

  test('PORT=0 (an ephemeral port) is allowed; postgresql:// and smtp:// schemes too', () => {
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ DATABASE_URL: 'postgresql://localhost/herald' }).databaseUrl).toBe('postgresql://localhost/herald');
    expect(loadConfig({ SMTP_URL: 'smtp://localhost:1025' }).smtpUrl).toBe('smtp://localhost:1025');
  });

  test('SMTP submission listens on 2587 by default; 0 turns it off; the certificate files come in pairs', () => {
    expect(loadConfig({}).smtpSubmission).toEqual({ port: 2587, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false,
        sessionMaxMessages: 1000, sessionMaxSeconds: 3600, authMaxFailures: 3, authMaxFailuresPerAddress: 20, authFailureWindowSeconds: 900 });
    expect(loadConfig({ SMTP_SUBMISSION_PORT: '0' }).smtpSubmission.port).toBe(0);
    expect(loadConfig({ SMTP_TLS_CERT: '/c.pem', SMTP_TLS_KEY: '/k.pem', SMTP_INSECURE_AUTH_LOOPBACK: 'true' }).smtpSubmission)
      .toMatchObject({ tlsCertFile: '/c.pem', tlsKeyFile: '/k.pem', insecureAuthOnLoopback: true });
  });

  test('SMTP listener limits: 20 connections per address, a 10-minute session, a minute per command; each settable', () => {
    expect(loadConfig({ SMTP_MAX_CONNECTIONS_PER_ADDRESS: '5', SMTP_SESSION_TIMEOUT_MS: '120000', SMTP_COMMAND_TIMEOUT_MS: '15000' }).smtpLimits)
      .toEqual({ maxConnectionsPerAddress: 5, sessionTimeoutMs: 120_000, commandTimeoutMs: 15_000 });
  });

  test('SMTP sessions and failed logins have limits of their own, set by SMTP_SESSION_* and SMTP_AUTH_*', () => {
    expect(loadConfig({
      SMTP_SESSION_MAX_MESSAGES: '10', SMTP_SESSION_MAX_SECONDS: '60', SMTP_AUTH_MAX_FAILURES: '5', SMTP_AUTH_MAX_FAILURES_PER_ADDRESS: '50', SMTP_AUTH_FAILURE_WINDOW_SECONDS: '300',
    }).smtpSubmission).toMatchObject({ sessionMaxMessages: 10, sessionMaxSeconds: 60, authMaxFailures: 5, authMaxFailuresPerAddress: 50, authFailureWindowSeconds: 300 });
    expect(() => loadConfig({ SMTP_SESSION_MAX_MESSAGES: '0' })).toThrow(/SMTP_SESSION_MAX_MESSAGES/);
    expect(() => loadConfig({ SMTP_AUTH_MAX_FAILURES: 'many' })).toThrow(/SMTP_AUTH_MAX_FAILURES/);
    for (const bad of ['0', 'a year', '36501']) expect(() => loadConfig({ RETENTION_DAYS: bad })).toThrow(/RETENTION_DAYS/);
  });

  test('bounces: VERP off without BOUNCE_DOMAIN; the inbound listener on 2525; the MX host defaults to PUBLIC_URL\'s', () => {
    expect(loadConfig({ BOUNCE_DOMAIN: 'Bounces.Example.com', PUBLIC_URL: 'https://mail.example.com' }).bounces)
      .toEqual({ domain: 'bounces.example.com', inboundPort: 2525, inboundHost: undefined, softBounceLimit: 3, softBounceWindowDays: 7, mxHost: 'mail.example.com', inboundRetentionDays: 30, inboundAnalysisThreads: 0 });
    expect(loadConfig({ SMTP_INBOUND_PORT: '0', BOUNCE_MX_HOST: 'mx.example.com' }).bounces).toMatchObject({ inboundPort: 0, mxHost: 'mx.example.com' });
    // Worker threads for large received messages: none unless asked; a count, not anything else.
    expect(loadConfig({ INBOUND_ANALYSIS_THREADS: '2' }).bounces.inboundAnalysisThreads).toBe(2);
    for (const bad of ['-1', 'two', '1.5']) expect(() => loadConfig({ INBOUND_ANALYSIS_THREADS: bad })).toThrow(/INBOUND_ANALYSIS_THREADS/);
  });

  test('metrics: on the API port by default; METRICS_PORT moves them (0: an ephemeral port, as PORT=0)', () => {
    expect(loadConfig({}).metrics).toEqual({ port: undefined, token: undefined });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: '' }).metrics).toEqual({ port: 9464, token: undefined });
    expect(loadConfig({ PORT: '0', METRICS_PORT: '0' }).metrics.port).toBe(0);
  });

  test('Temporal UI links only on Temporal with TEMPORAL_UI_URL, in TEMPORAL_NAMESPACE', () => {
    const temporal = { ENGINE: 'temporal', TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: 'herald' };
    expect(temporalUiOf(loadConfig({ ...temporal, TEMPORAL_UI_URL: 'http://localhost:8080/' }))).toEqual({ url: 'http://localhost:8080', namespace: 'herald' });
    expect(temporalUiOf(loadConfig(temporal))).toBeUndefined();
    expect(temporalUiOf(loadConfig({ TEMPORAL_UI_URL: 'http://localhost:8080' }))).toBeUndefined(); // the embedded engine has no Temporal UI
  });

  test('ENGINE=embedded needs no TEMPORAL_ADDRESS', () => {
    expect(loadConfig({ ENGINE: 'embedded' }).engine).toBe('embedded');
  });
});

test('tracking: one event per email and kind per 60 s, 50 recorded hits per address and second; 0 lifts the limit', () => {
  expect(loadTrackingConfig({})).toEqual({ eventWindowMs: 60_000, ratePerAddress: 50 });
  expect(loadTrackingConfig({ TRACKING_EVENT_WINDOW_SECONDS: '5', TRACKING_RATE_PER_ADDRESS: '0' })).toEqual({ eventWindowMs: 5_000, ratePerAddress: 0 });
});

test('sessions: 12 hours idle, 14 days at most; 5 free failed logins per account, 20 per address', () => {
  expect(loadSessionConfig({})).toEqual({ idleMinutes: 720, maxDays: 14, freeFailuresPerAccount: 5, freeFailuresPerAddress: 20 });
  expect(loadSessionConfig({ SESSION_IDLE_MINUTES: '30', SESSION_MAX_DAYS: '1', LOGIN_FREE_FAILURES_PER_ACCOUNT: '3', LOGIN_FREE_FAILURES_PER_ADDRESS: '' }))
    .toEqual({ idleMinutes: 30, maxDays: 1, freeFailuresPerAccount: 3, freeFailuresPerAddress: 20 });
});

test('single sign-on: off unless OIDC_ISSUER is set; openid always among the scopes; sign-up off by default', () => {
  expect(loadOidcConfig({})).toBeUndefined();
  expect(loadOidcConfig({ OIDC_ISSUER: '', OIDC_CLIENT_ID: 'herald' })).toBeUndefined();
  expect(loadOidcConfig({ OIDC_ISSUER: 'https://id.example.com/realms/x/', OIDC_CLIENT_ID: 'herald' }))
    .toEqual({ issuer: 'https://id.example.com/realms/x', clientId: 'herald', clientSecret: undefined, scopes: 'openid email profile', allowSignup: false });
  expect(loadOidcConfig({ OIDC_ISSUER: 'http://127.0.0.1:8080', OIDC_CLIENT_ID: 'h', OIDC_CLIENT_SECRET: 's', OIDC_SCOPES: 'email profile groups', OIDC_ALLOW_SIGNUP: 'true' }))
    .toEqual({ issuer: 'http://127.0.0.1:8080', clientId: 'h', clientSecret: 's', scopes: 'openid email profile groups', allowSignup: true });
  // The secret is never echoed in an error.
  expect(configError({ OIDC_ISSUER: 'https://id.example.com', OIDC_CLIENT_ID: 'h', OIDC_CLIENT_SECRET: 'x'.repeat(2000) }).message).not.toContain('xxxx');
});

describe('a bad value raises a ConfigError naming the variable', () => {
  test.each([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['PORT', { PORT: '80.5' }],
    ['DATA_DIR', { DATA_DIR: '   ' }],
    ['ENGINE', { ENGINE: 'foo' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
    ['DATABASE_URL', { DATABASE_URL: 'not a url' }],
    ['DATABASE_SESSION_URL', { DATABASE_URL: 'postgres://localhost/herald', DATABASE_SESSION_URL: 'mysql://x' }],
    ['DATABASE_PREPARED_STATEMENTS', { DATABASE_PREPARED_STATEMENTS: 'sometimes' }],
    ['SMTP_URL', { SMTP_URL: 'http://x' }],
    ['API_RATE_LIMIT_PER_MINUTE', { API_RATE_LIMIT_PER_MINUTE: '0' }],
    ['API_RATE_LIMIT_PER_MINUTE', { API_RATE_LIMIT_PER_MINUTE: 'lots' }],
    ['HEALTH_TIMEOUT_MS', { HEALTH_TIMEOUT_MS: '50' }],
    ['HEALTH_TIMEOUT_MS', { HEALTH_TIMEOUT_MS: 'soon' }],
    ['SEND_RATE_PER_SECOND', { SEND_RATE_PER_SECOND: '-1' }],
    ['SEND_RATE_PER_SECOND', { SEND_RATE_PER_SECOND: '0' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'ftp://x' }],
    ['TEMPORAL_UI_URL', { TEMPORAL_UI_URL: 'localhost:8080' }],
    ['SECRET_KEY', { SECRET_KEY: 'short' }],
    ['EXECUTOR_ID', { EXECUTOR_ID: 'has spaces' }],
    ['TEMPORAL_ADDRESS', { ENGINE: 'temporal' }],
    ['TEMPORAL_ADDRESS', { ENGINE: 'temporal', TEMPORAL_ADDRESS: 'no-port' }],
    ['SMTP_SUBMISSION_PORT', { SMTP_SUBMISSION_PORT: '70000' }],
    ['SMTP_TLS_KEY', { SMTP_TLS_CERT: '/c.pem' }],
    ['SMTP_TLS_KEY', { SMTP_TLS_KEY: '/k.pem' }],
    ['SMTP_INSECURE_AUTH_LOOPBACK', { SMTP_INSECURE_AUTH_LOOPBACK: 'maybe' }],
    ['SMTP_MAX_CONNECTIONS_PER_ADDRESS', { SMTP_MAX_CONNECTIONS_PER_ADDRESS: '0' }],
    ['SMTP_SESSION_TIMEOUT_MS', { SMTP_SESSION_TIMEOUT_MS: '10' }],
    ['SMTP_COMMAND_TIMEOUT_MS', { SMTP_COMMAND_TIMEOUT_MS: 'soon' }],
    ['BOUNCE_DOMAIN', { BOUNCE_DOMAIN: 'not a domain' }],
    ['SMTP_INBOUND_PORT', { SMTP_INBOUND_PORT: 'x' }],
    ['SOFT_BOUNCE_LIMIT', { SOFT_BOUNCE_LIMIT: '0' }],
    ['METRICS_PORT', { METRICS_PORT: 'x' }],
    ['METRICS_PORT', { METRICS_PORT: '3000' }],
    ['METRICS_PORT', { PORT: '8080', METRICS_PORT: '8080' }],
    ['METRICS_TOKEN', { METRICS_TOKEN: 'too-short' }],
    ['METRICS_TOKEN', { METRICS_TOKEN: 'has a space in it, 0123456789' }],
    ['TRACKING_EVENT_WINDOW_SECONDS', { TRACKING_EVENT_WINDOW_SECONDS: '0' }],
    ['TRACKING_EVENT_WINDOW_SECONDS', { TRACKING_EVENT_WINDOW_SECONDS: '1.5' }],
    ['TRACKING_RATE_PER_ADDRESS', { TRACKING_RATE_PER_ADDRESS: '-1' }],
    ['TRACKING_RATE_PER_ADDRESS', { TRACKING_RATE_PER_ADDRESS: 'many' }],
    ['SESSION_IDLE_MINUTES', { SESSION_IDLE_MINUTES: '1' }],
    ['SESSION_MAX_DAYS', { SESSION_MAX_DAYS: '0' }],
    ['LOGIN_FREE_FAILURES_PER_ACCOUNT', { LOGIN_FREE_FAILURES_PER_ACCOUNT: 'lots' }],
    ['LOGIN_FREE_FAILURES_PER_ADDRESS', { LOGIN_FREE_FAILURES_PER_ADDRESS: '0' }],
    ['INVITATION_TTL_HOURS', { INVITATION_TTL_HOURS: '0' }],
    ['SYSTEM_PROJECT_ID', { SYSTEM_PROJECT_ID: 'default', SYSTEM_FROM_EMAIL: 'a@example.com' }],
    ['SYSTEM_FROM_EMAIL', { SYSTEM_PROJECT_ID: '01890000-0000-7000-8000-000000000000' }],
    ['SYSTEM_FROM_EMAIL', { SYSTEM_FROM_EMAIL: 'a@example.com' }],
    ['SYSTEM_FROM_EMAIL', { SYSTEM_PROJECT_ID: '01890000-0000-7000-8000-000000000000', SYSTEM_FROM_EMAIL: 'nope' }],
    ['OIDC_ISSUER', { OIDC_ISSUER: 'not a url', OIDC_CLIENT_ID: 'h' }],
    ['OIDC_ISSUER', { OIDC_ISSUER: 'http://id.example.com', OIDC_CLIENT_ID: 'h' }],
    ['OIDC_ISSUER', { OIDC_ISSUER: 'ftp://id.example.com', OIDC_CLIENT_ID: 'h' }],
    ['OIDC_CLIENT_ID', { OIDC_ISSUER: 'https://id.example.com' }],
    ['OIDC_SCOPES', { OIDC_SCOPES: 'openid  "email"' }],
    ['OIDC_ALLOW_SIGNUP', { OIDC_ALLOW_SIGNUP: 'maybe' }],
  ])('%s in %j', (variable, env) => {
    const err = configError(env);
    expect(err.name).toBe('ConfigError');
    expect(err.variable).toBe(variable);
    expect(err.message).toContain(variable);
    expect(err.message).toMatch(/^Invalid configuration: /);
  });

  test('the message says what was given (for values that hold no secret)', () => {
    expect(configError({ PORT: 'abc' }).message).toContain('"abc"');
    expect(configError({ LOG_LEVEL: 'loud' }).message).toContain('"loud"');
    expect(configError({ ENGINE: 'temporal' }).message).toMatch(/TEMPORAL_ADDRESS is required/);
  });

  test('the first bad variable is reported even when several are bad', () => {
    const err = configError({ PORT: 'abc', LOG_LEVEL: 'loud' });
    expect(['PORT', 'LOG_LEVEL']).toContain(err.variable);
    expect(err.message).toContain(err.variable);
  });

  test.each([
    ['DATABASE_URL', 'mysql://root:Sup3rSecretPw@db.internal/herald'],
    ['DATABASE_URL', 'postgres://root:Sup3rSecretPw@db internal/herald'],
    ['DATABASE_URL', 'Sup3rSecretPw'],
    ['DATABASE_SESSION_URL', 'mysql://root:Sup3rSecretPw@db.internal/herald'],
    ['SMTP_URL', 'http://mailer:Sup3rSecretPw@smtp.example.com'],
    ['METRICS_TOKEN', 'Sup3rSecretPw'],
  ])('the value of %s is never echoed (it may hold a password): %s', (variable, value) => {
    const err = configError({ [variable]: value });
    expect(err.variable).toBe(variable);
    expect(err.message).not.toContain('Sup3rSecretPw');
    expect(err.message).not.toContain(value);
    expect(JSON.stringify(err)).not.toContain('Sup3rSecretPw');
    expect(String(err.stack)).not.toContain('Sup3rSecretPw');
  });
});

describe('at start-up', () => {
  let dir: string;
  beforeAll(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-config-')); });
  afterAll(() => { fs.rmSync(dir, { recursive: true, force: true }); });

  test('`npm start` with PORT=abc exits with code 2 and a stderr line naming PORT, without starting anything', async () => {
    const dataDir = path.join(dir, 'data');
    const res = await runHerald('bin/start.ts', [], childEnv({ PORT: 'abc', DATA_DIR: dataDir, DATABASE_URL: undefined }));
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    const lines = res.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines.some((l) => /\bPORT\b/.test(l) && l.includes('abc'))).toBe(true);
    // Nothing was started: the data directory (and with it any embedded PostgreSQL) was never created.
    expect(fs.existsSync(dataDir)).toBe(false);
  });
});

test('PUBLIC_URL: a warning at start when links in mail would be plain HTTP outside loopback', () => {
  for (const ok of ['https://mail.example.com', 'http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000', 'http://herald.localhost']) {
    expect(publicUrlWarning(ok)).toBeUndefined();
  }
  for (const plain of ['http://mail.example.com', 'http://10.0.0.5:3000', 'http://[2001:db8::1]']) {
    expect(publicUrlWarning(plain)).toMatch(/^PUBLIC_URL=.* is not HTTPS: .*RFC 8058/);
  }
});
