import path from 'node:path';
import Joi from 'joi';

/**
 * Herald's configuration, read once from environment variables and validated at start-up. It sits below every other
 * module and imports none of them: the business reads its settings from here, never the other way round.
 */
export interface Config {
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  /**
   * DATABASE_SESSION_URL: where the connections that need a PostgreSQL session of their own go (a worker's id lock,
   * DBOS's LISTEN/NOTIFY and its schema lock), when DATABASE_URL goes through a transaction pooler (PgBouncer in
   * `pool_mode = transaction`); unset, DATABASE_URL. Only with DATABASE_URL.
   */
  databaseSessionUrl: string | undefined;
  /**
   * DATABASE_PREPARED_STATEMENTS: Herald's hottest statements are named (prepared once per connection). `false` sends
   * them unnamed, for a transaction pooler that does not carry prepared statements across its server connections
   * (PgBouncer before 1.21, or with max_prepared_statements = 0).
   */
  databasePreparedStatements: boolean;
  smtpUrl: string | undefined;
  engine: 'embedded' | 'temporal';
  temporalAddress: string | undefined;
  temporalNamespace: string;
  /**
   * TEMPORAL_UI_URL: where people reach Temporal UI (http://localhost:8080 with compose). On Temporal, a campaign's
   * answer links to its workflow there (temporalUiOf); unset, or on the embedded engine, no link.
   */
  temporalUiUrl: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  apiRateLimitPerMinute: number;
  /** How long GET /health waits for the database's answer (a pool connection and `SELECT 1`) before it answers 503. */
  healthTimeoutMs: number;
  /**
   * Reverse proxies in front of the API that append to X-Forwarded-For (0: none, the connection's address is the
   * client's). With n, the client is the n-th address from the right of X-Forwarded-For (what the nearest proxy saw).
   */
  trustProxyHops: number;
  /**
   * HTTP_REQUEST_TIMEOUT_SECONDS: the longest one HTTP request (head and body) may take to arrive. Node's own default,
   * 300 s, would cut a contact import of 1 GB sent at under 3.5 MB/s; slow heads are still cut by Node's
   * headersTimeout (60 s).
   */
  httpRequestTimeoutSeconds: number;
  sendRatePerSecond: number;
  /** Base URL under which recipients reach Herald (unsubscribe links). */
  publicUrl: string;
  /** Signing/encryption secret; when unset, one is generated into DATA_DIR (see config/secret.ts). */
  secretKey: string | undefined;
  /** Stable id of this worker process for the embedded engine's crash recovery. */
  executorId: string | undefined;
  /** How many automation executions may be running (not waiting) at once, across all workers. */
  automationMaxRunning: number;
  /** SMTP submission (smtp/submission.ts), served by the API processes. */
  smtpSubmission: SmtpSubmissionConfig;
  /** What one client may hold of either SMTP listener (submission and inbound; smtp/listener.ts). */
  smtpLimits: SmtpLimitsConfig;
  /** Bounces and complaints (bounces/): the VERP domain, the inbound listener, the soft-bounce rule. */
  bounces: BounceConfig;
  /** GET /metrics (metrics/, api/metricsServer.ts). */
  metrics: MetricsConfig;
  /** Invitations and password resets (people/). */
  people: PeopleConfig;
  /** RETENTION_DAYS and INBOUND_RETENTION_DAYS (retention/). */
  retention: RetentionConfig;
}

export interface PeopleConfig {
  /** INVITATION_TTL_HOURS: how long an invitation link may be accepted. */
  invitationTtlHours: number;
  /**
   * SYSTEM_PROJECT_ID and SYSTEM_FROM_EMAIL: Herald mails invitations and resets from this address, as a send of this
   * project (whose domain must be verified, as for any send); unset, links are shown to the inviter or the operator.
   */
  systemSender: { projectId: string; email: string } | undefined;
}

export interface MetricsConfig {
  /** METRICS_PORT: a listener of its own for GET /metrics (API and worker processes); unset: on the API's port. */
  port: number | undefined;
  /** METRICS_TOKEN: the bearer token a scrape must send; unset: none. */
  token: string | undefined;
}

export interface BounceConfig {
  /** The domain of the VERP return paths (`bounces+<token>@<domain>`); unset: messages keep the sender as Return-Path. */
  domain: string | undefined;
  /** The inbound listener's port (its MX points here); 0: no listener. */
  inboundPort: number;
  inboundHost: string | undefined;
  /** An address that soft-bounced this many times within `softBounceWindowDays` is suppressed. */
  softBounceLimit: number;
  softBounceWindowDays: number;
  /** The host the bounce domain's MX names (BOUNCE_MX_HOST): where the inbound listener is reached. */
  mxHost: string;
  /** INBOUND_RETENTION_DAYS: received messages (inbound/) older than this are deleted by housekeeping. */
  inboundRetentionDays: number;
  /** INBOUND_ANALYSIS_THREADS: worker threads that parse and authenticate large received messages (inbound/analysis.ts); 0: none. */
  inboundAnalysisThreads: number;
}

/**
 * Where mail comes back: the VERP return paths' domain (BOUNCE_DOMAIN) and the host its MX must name (Herald's inbound
 * listener). Its SPF record authorises the relay for the envelope sender, which is the bounce domain's from then on.
 */
export interface ReturnPath {
  domain: string;
  mxHost: string;
}

/** Temporal UI as the campaign answers link to it: only when Herald runs on Temporal and TEMPORAL_UI_URL is set. */
export function temporalUiOf(config: Pick<Config, 'engine' | 'temporalUiUrl' | 'temporalNamespace'>): { url: string; namespace: string } | undefined {
  return config.engine === 'temporal' && config.temporalUiUrl ? { url: config.temporalUiUrl, namespace: config.temporalNamespace } : undefined;
}

/** The bounce domain's records that each sending domain's record list shows; none without BOUNCE_DOMAIN. */
export function returnPathOf(config: Pick<Config, 'bounces'>): ReturnPath | undefined {
  return config.bounces.domain ? { domain: config.bounces.domain, mxHost: config.bounces.mxHost } : undefined;
}

/** Default of AUTOMATION_MAX_RUNNING: automation executions live in the engine at once, across all workers. */
export const AUTOMATION_MAX_RUNNING = 200;

/** The inbound (bounce) port when SMTP_INBOUND_PORT is unset: 25's unprivileged twin. */
export const DEFAULT_SMTP_INBOUND_PORT = 2525;

export interface SmtpSubmissionConfig {
  /** The listener's port; 0: no listener. */
  port: number;
  /** The address it binds; unset: every address, as the HTTP API. */
  host: string | undefined;
  /** PEM files of the certificate STARTTLS offers; unset: a self-signed one generated into DATA_DIR (smtp/tls.ts). */
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** AUTH before STARTTLS from loopback addresses (a local app). Never from elsewhere. */
  insecureAuthOnLoopback: boolean;
  /** Messages one connection may send (SMTP_SESSION_MAX_MESSAGES); then 421 and the connection is closed. */
  sessionMaxMessages: number;
  /** A connection's lifetime in seconds (SMTP_SESSION_MAX_SECONDS); then 421 and the connection is closed. */
  sessionMaxSeconds: number;
  /** Failed AUTHs one connection may make (SMTP_AUTH_MAX_FAILURES); the last is answered 421 and the connection closed. */
  authMaxFailures: number;
  /** Failed AUTHs one remote address may make in SMTP_AUTH_FAILURE_WINDOW_SECONDS; beyond them its AUTHs get 421. */
  authMaxFailuresPerAddress: number;
  authFailureWindowSeconds: number;
}

export interface SmtpLimitsConfig {
  /** SMTP_MAX_CONNECTIONS_PER_ADDRESS: connections at once from one remote address (IPv6: one /64); more get 421. */
  maxConnectionsPerAddress: number;
  /** SMTP_SESSION_TIMEOUT_MS: the longest a connection may last, however active; then 421 and closed. */
  sessionTimeoutMs: number;
  /** SMTP_COMMAND_TIMEOUT_MS: the longest from a reply to the end of the client's next command line; then 421 and closed. */
  commandTimeoutMs: number;
}

/** The submission port when SMTP_SUBMISSION_PORT is unset: 587's unprivileged twin, so a non-root process can bind it. */
export const DEFAULT_SMTP_SUBMISSION_PORT = 2587;

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const urlWithScheme = (schemes: string[]) => Joi.string().uri({ scheme: schemes });

// Keys are the environment variable names, so a Joi error path names the offending variable. An empty value
// counts as unset, as shells and compose files often pass `VAR=`.
const envSchema = Joi.object({
  PORT: Joi.number().integer().min(0).max(65535).empty('').default(3000),
  DATA_DIR: Joi.string().trim().min(1).default('./.data'),
  DATABASE_URL: urlWithScheme(['postgres', 'postgresql']).empty(''),
  DATABASE_SESSION_URL: urlWithScheme(['postgres', 'postgresql']).empty('')
    .when('DATABASE_URL', { is: Joi.exist(), otherwise: Joi.forbidden() })
    .messages({ 'any.unknown': 'needs DATABASE_URL beside it (the embedded PostgreSQL has no pooler in front)' }),
  DATABASE_PREPARED_STATEMENTS: Joi.boolean().truthy('1').falsy('0').empty('').default(true),
  SMTP_URL: urlWithScheme(['smtp', 'smtps']).empty(''),
  ENGINE: Joi.string().valid('embedded', 'temporal').empty('').default('embedded'),
  TEMPORAL_ADDRESS: Joi.string()
    .pattern(/^[A-Za-z0-9.-]+:\d{1,5}$/, 'host:port')
    .empty('')
    .when('ENGINE', { is: 'temporal', then: Joi.required() }),
  TEMPORAL_NAMESPACE: Joi.string().trim().empty('').default('default'),
  TEMPORAL_UI_URL: urlWithScheme(['http', 'https']).empty(''),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').empty('').default('info'),
  API_RATE_LIMIT_PER_MINUTE: Joi.number().integer().min(1).empty('').default(1000),
  TRUST_PROXY_HOPS: Joi.number().integer().min(0).max(10).empty('').default(0),
  HEALTH_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).empty('').default(2000),
  // An hour: IMPORT_MAX_BYTES' 2 GiB at 0.6 MB/s. A client that holds a connection that long holds one connection;
  // a shorter limit only makes it reconnect, and cuts honest uploads over slow links.
  HTTP_REQUEST_TIMEOUT_SECONDS: Joi.number().integer().min(1).max(86_400).empty('').default(3600),
  SEND_RATE_PER_SECOND: Joi.number().positive().max(100000).empty('').default(14),
  PUBLIC_URL: urlWithScheme(['http', 'https']).empty(''),
  SECRET_KEY: Joi.string().min(32).empty('').messages({ 'string.min': 'must be at least 32 characters (e.g. openssl rand -hex 32)' }),
  EXECUTOR_ID: Joi.string().pattern(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, dot, dash, underscore').empty(''),
  AUTOMATION_MAX_RUNNING: Joi.number().integer().min(1).max(100000).empty('').default(AUTOMATION_MAX_RUNNING),
  SMTP_SUBMISSION_PORT: Joi.number().integer().min(0).max(65535).empty('').default(DEFAULT_SMTP_SUBMISSION_PORT),
  SMTP_SUBMISSION_HOST: Joi.string().trim().empty(''),
  SMTP_TLS_CERT: Joi.string().trim().empty(''),
  SMTP_TLS_KEY: Joi.string().trim().empty('').when('SMTP_TLS_CERT', { is: Joi.exist(), then: Joi.required(), otherwise: Joi.forbidden() })
    .messages({ 'any.required': 'is required with SMTP_TLS_CERT', 'any.unknown': 'needs SMTP_TLS_CERT beside it' }),
  SMTP_INSECURE_AUTH_LOOPBACK: Joi.boolean().truthy('1').falsy('0').empty('').default(false),
  SMTP_MAX_CONNECTIONS_PER_ADDRESS: Joi.number().integer().min(1).max(100_000).empty('').default(20),
  SMTP_SESSION_TIMEOUT_MS: Joi.number().integer().min(1000).max(86_400_000).empty('').default(600_000),
  SMTP_COMMAND_TIMEOUT_MS: Joi.number().integer().min(1000).max(3_600_000).empty('').default(60_000),
  SMTP_SESSION_MAX_MESSAGES: Joi.number().integer().min(1).max(1_000_000).empty('').default(1000),
  SMTP_SESSION_MAX_SECONDS: Joi.number().integer().min(1).max(7 * 24 * 3600).empty('').default(3600),
  SMTP_AUTH_MAX_FAILURES: Joi.number().integer().min(1).max(100).empty('').default(3),
  SMTP_AUTH_MAX_FAILURES_PER_ADDRESS: Joi.number().integer().min(1).max(100_000).empty('').default(20),
  SMTP_AUTH_FAILURE_WINDOW_SECONDS: Joi.number().integer().min(1).max(7 * 24 * 3600).empty('').default(900),
  BOUNCE_DOMAIN: Joi.string().trim().lowercase().empty('').domain({ tlds: false, minDomainSegments: 1 }),
  SMTP_INBOUND_PORT: Joi.number().integer().min(0).max(65535).empty('').default(DEFAULT_SMTP_INBOUND_PORT),
  SMTP_INBOUND_HOST: Joi.string().trim().empty(''),
  SOFT_BOUNCE_LIMIT: Joi.number().integer().min(1).max(1000).empty('').default(3),
  SOFT_BOUNCE_WINDOW_DAYS: Joi.number().integer().min(1).max(365).empty('').default(7),
  BOUNCE_MX_HOST: Joi.string().trim().lowercase().empty('').domain({ tlds: false, minDomainSegments: 1 }),
  INBOUND_RETENTION_DAYS: Joi.number().integer().min(1).max(3650).empty('').default(30),
  INBOUND_ANALYSIS_THREADS: Joi.number().integer().min(0).max(64).empty('').default(0),
  // 0: an ephemeral port, as PORT=0 (tests); otherwise it must not be the API's own.
  METRICS_PORT: Joi.number().integer().min(0).max(65535).empty('')
    .custom((v: number, helpers) => (v !== 0 && v === Number(helpers.state.ancestors[0].PORT ?? 3000) ? helpers.error('any.invalid') : v))
    .messages({ 'any.invalid': 'must differ from PORT (unset it to serve /metrics on the API port)' }),
  INVITATION_TTL_HOURS: Joi.number().integer().min(1).max(24 * 90).empty('').default(72),
  // Both or neither: the system sender mails invitations and password resets through the project's own pipeline.
  SYSTEM_PROJECT_ID: Joi.string().trim().lowercase().guid().empty(''),
  SYSTEM_FROM_EMAIL: Joi.string().trim().lowercase().email({ tlds: false }).empty('')
    .when('SYSTEM_PROJECT_ID', { is: Joi.exist(), then: Joi.required(), otherwise: Joi.forbidden() })
    .messages({ 'any.required': 'is required when SYSTEM_PROJECT_ID is set', 'any.unknown': 'needs SYSTEM_PROJECT_ID (the project whose verified domain sends it)' }),
  METRICS_TOKEN: Joi.string().pattern(/^[\x21-\x7e]{16,}$/, 'token').empty('')
    .messages({ 'string.pattern.name': 'must be at least 16 printable characters without spaces (e.g. openssl rand -hex 32)' }),
})
  // Every other variable of the environment (PATH, HOME, …) is none of our business.
  .unknown(true)
  .prefs({ convert: true, abortEarly: true });

function configError(error: Joi.ValidationError, env: NodeJS.ProcessEnv): ConfigError {
  const detail = error.details[0]!;
  const variable = String(detail.path[0] ?? 'environment');
  const given = env[variable];
  const shown = ['DATABASE_URL', 'DATABASE_SESSION_URL', 'SMTP_URL', 'SECRET_KEY', 'METRICS_TOKEN', 'OIDC_CLIENT_SECRET'].includes(variable) ? '(value hidden: it may hold a secret)' : JSON.stringify(given);
  const reason = detail.message.replace(/^"[^"]+" /, '');
  return new ConfigError(variable, `Invalid configuration: ${variable} ${reason}; got ${given === undefined ? 'nothing' : shown}.`);
}

/** Reads and validates the configuration; throws a ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const { value, error } = envSchema.validate(env);
  if (error) throw configError(error, env);
  loadDnsConfig(env); // validated here too, so that a bad DNS setting also stops Herald at start-up
  loadTrackingConfig(env); // and a bad tracking setting
  loadSessionConfig(env); // and a bad session setting
  loadRetentionConfig(env); // and a bad retention setting
  loadOidcConfig(env); // and a bad single sign-on setting
  return {
    port: value.PORT,
    dataDir: path.resolve(value.DATA_DIR),
    databaseUrl: value.DATABASE_URL,
    databaseSessionUrl: value.DATABASE_SESSION_URL,
    databasePreparedStatements: value.DATABASE_PREPARED_STATEMENTS,
    smtpUrl: value.SMTP_URL,
    engine: value.ENGINE,
    temporalAddress: value.TEMPORAL_ADDRESS,
    temporalNamespace: value.TEMPORAL_NAMESPACE,
    temporalUiUrl: value.TEMPORAL_UI_URL?.replace(/\/+$/, ''),
    logLevel: value.LOG_LEVEL,
    apiRateLimitPerMinute: value.API_RATE_LIMIT_PER_MINUTE,
    healthTimeoutMs: value.HEALTH_TIMEOUT_MS,
    trustProxyHops: value.TRUST_PROXY_HOPS,
    httpRequestTimeoutSeconds: value.HTTP_REQUEST_TIMEOUT_SECONDS,
    sendRatePerSecond: value.SEND_RATE_PER_SECOND,
    publicUrl: (value.PUBLIC_URL ?? `http://localhost:${value.PORT}`).replace(/\/+$/, ''),
    secretKey: value.SECRET_KEY,
    executorId: value.EXECUTOR_ID,
    automationMaxRunning: value.AUTOMATION_MAX_RUNNING,
    smtpSubmission: {
      port: value.SMTP_SUBMISSION_PORT,
      host: value.SMTP_SUBMISSION_HOST,
      tlsCertFile: value.SMTP_TLS_CERT,
      tlsKeyFile: value.SMTP_TLS_KEY,
      insecureAuthOnLoopback: value.SMTP_INSECURE_AUTH_LOOPBACK,
      sessionMaxMessages: value.SMTP_SESSION_MAX_MESSAGES,
      sessionMaxSeconds: value.SMTP_SESSION_MAX_SECONDS,
      authMaxFailures: value.SMTP_AUTH_MAX_FAILURES,
      authMaxFailuresPerAddress: value.SMTP_AUTH_MAX_FAILURES_PER_ADDRESS,
      authFailureWindowSeconds: value.SMTP_AUTH_FAILURE_WINDOW_SECONDS,
    },
    smtpLimits: {
      maxConnectionsPerAddress: value.SMTP_MAX_CONNECTIONS_PER_ADDRESS,
      sessionTimeoutMs: value.SMTP_SESSION_TIMEOUT_MS,
      commandTimeoutMs: value.SMTP_COMMAND_TIMEOUT_MS,
    },
    bounces: {
      domain: value.BOUNCE_DOMAIN,
      inboundPort: value.SMTP_INBOUND_PORT,
      inboundHost: value.SMTP_INBOUND_HOST,
      softBounceLimit: value.SOFT_BOUNCE_LIMIT,
      softBounceWindowDays: value.SOFT_BOUNCE_WINDOW_DAYS,
      mxHost: value.BOUNCE_MX_HOST ?? new URL(value.PUBLIC_URL ?? `http://localhost:${value.PORT}`).hostname,
      inboundRetentionDays: value.INBOUND_RETENTION_DAYS,
      inboundAnalysisThreads: value.INBOUND_ANALYSIS_THREADS,
    },
    metrics: { port: value.METRICS_PORT, token: value.METRICS_TOKEN },
    retention: loadRetentionConfig(env),
    people: {
      invitationTtlHours: value.INVITATION_TTL_HOURS,
      systemSender: value.SYSTEM_PROJECT_ID ? { projectId: value.SYSTEM_PROJECT_ID, email: value.SYSTEM_FROM_EMAIL } : undefined,
    },
  };
}

/** DNS lookups: sending-domain verification and POST /v1/verify. */
export interface DnsConfig {
  /** Resolvers as `host:port` (`[v6]:port`); empty: the system's resolvers (/etc/resolv.conf). */
  servers: string[];
  /** Time one query waits for an answer before it is tried again (c-ares `timeout`). */
  timeoutMs: number;
  /** Tries per query (c-ares `tries`). */
  tries: number;
  /** Total time POST /v1/verify may spend on DNS for one address; what has not answered by then counts as unknown. */
  verifyBudgetMs: number;
  /** How often the scheduled workflow re-checks the DNS records of every sending domain. */
  domainCheckIntervalMinutes: number;
}

// host:port, [v6]:port or a bare host/IP (port 53): what node:dns setServers() accepts.
const dnsServer = /^(?:\[[0-9A-Fa-f:.]+\](?::\d{1,5})?|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*|[A-Za-z0-9.-]+(?::\d{1,5})?)$/;

const dnsSchema = Joi.object({
  DNS_SERVERS: Joi.string().trim().empty('').custom((v: string, helpers) => {
    const list = v.split(',').map((s) => s.trim()).filter(Boolean);
    if (list.length === 0 || !list.every((s) => dnsServer.test(s))) return helpers.error('any.invalid');
    return list;
  }).messages({ 'any.invalid': 'must be a comma-separated list of host:port (e.g. 1.1.1.1:53,[2606:4700:4700::1111]:53)' }),
  DNS_TIMEOUT_MS: Joi.number().integer().min(50).max(60_000).empty('').default(2000),
  DNS_TRIES: Joi.number().integer().min(1).max(10).empty('').default(2),
  VERIFY_DNS_BUDGET_MS: Joi.number().integer().min(50).max(60_000).empty('').default(3000),
  DOMAIN_CHECK_INTERVAL_MINUTES: Joi.number().integer().min(1).max(7 * 24 * 60).empty('').default(60),
}).unknown(true).prefs({ convert: true, abortEarly: true });

/** Reads and validates the DNS settings (part of loadConfig's validation; read on their own by the domain and verify code). */
export function loadDnsConfig(env: NodeJS.ProcessEnv = process.env): DnsConfig {
  const { value, error } = dnsSchema.validate(env);
  if (error) throw configError(error, env);
  return {
    servers: value.DNS_SERVERS ?? [],
    timeoutMs: value.DNS_TIMEOUT_MS,
    tries: value.DNS_TRIES,
    verifyBudgetMs: value.VERIFY_DNS_BUDGET_MS,
    domainCheckIntervalMinutes: value.DOMAIN_CHECK_INTERVAL_MINUTES,
  };
}

/** Open and click tracking's defences against floods (issue 26; tracking/tracker.ts). */
export interface TrackingConfig {
  /** One `email.opened` per email, one `email.clicked` per email and link, per this window (ms); counts take every hit. */
  eventWindowMs: number;
  /** Hits recorded per remote address and second on the tracking routes; beyond, answered but not recorded. 0: no limit. */
  ratePerAddress: number;
}

const trackingSchema = Joi.object({
  TRACKING_EVENT_WINDOW_SECONDS: Joi.number().integer().min(1).max(86_400).empty('').default(60),
  TRACKING_RATE_PER_ADDRESS: Joi.number().integer().min(0).max(1_000_000).empty('').default(50),
}).unknown(true).prefs({ convert: true, abortEarly: true });

/** Reads and validates the tracking settings (part of loadConfig's validation; read on their own by the API's tracker). */
export function loadTrackingConfig(env: NodeJS.ProcessEnv = process.env): TrackingConfig {
  const { value, error } = trackingSchema.validate(env);
  if (error) throw configError(error, env);
  return { eventWindowMs: value.TRACKING_EVENT_WINDOW_SECONDS * 1000, ratePerAddress: value.TRACKING_RATE_PER_ADDRESS };
}

/**
 * How long emails, their events, raw messages and attachments are kept (issue 33; retention/retention.ts): RETENTION_DAYS,
 * 365 by default. They are stored by month (db/partitions.ts): a month goes whole once its last day is RETENTION_DAYS old,
 * so rows stay between RETENTION_DAYS and RETENTION_DAYS plus a month. A project may ask for less (PATCH /settings
 * `retentionDays`), which is deleted in batches. Received messages keep their own INBOUND_RETENTION_DAYS.
 */
export interface RetentionConfig {
  days: number;
  /** INBOUND_RETENTION_DAYS (default 30): received messages. */
  inboundDays: number;
}

/** RETENTION_DAYS when unset: a year. */
export const DEFAULT_RETENTION_DAYS = 365;

const retentionSchema = Joi.object({
  RETENTION_DAYS: Joi.number().integer().min(1).max(36_500).empty('').default(DEFAULT_RETENTION_DAYS),
  INBOUND_RETENTION_DAYS: Joi.number().integer().min(1).max(3650).empty('').default(30),
}).unknown(true).prefs({ convert: true, abortEarly: true });

/** Reads and validates the retention settings (part of loadConfig's validation; read on their own by the retention job and the settings). */
export function loadRetentionConfig(env: NodeJS.ProcessEnv = process.env): RetentionConfig {
  const { value, error } = retentionSchema.validate(env);
  if (error) throw configError(error, env);
  return { days: value.RETENTION_DAYS, inboundDays: value.INBOUND_RETENTION_DAYS };
}

/** People's sessions (issue 27; people/sessions.ts) and the throttle of failed logins (people/throttle.ts). */
export interface SessionConfig {
  /** A session not used for this long ends (SESSION_IDLE_MINUTES). */
  idleMinutes: number;
  /** A session ends this long after its login, however used (SESSION_MAX_DAYS). */
  maxDays: number;
  /** Failed logins of one account before each next one waits (LOGIN_FREE_FAILURES_PER_ACCOUNT). */
  freeFailuresPerAccount: number;
  /** Failed logins from one client address before each next one waits (LOGIN_FREE_FAILURES_PER_ADDRESS). */
  freeFailuresPerAddress: number;
}

const sessionSchema = Joi.object({
  // 12 hours: a working day of the console without signing in again, and a forgotten browser closes by morning.
  SESSION_IDLE_MINUTES: Joi.number().integer().min(5).max(30 * 24 * 60).empty('').default(720),
  // 14 days: an absolute bound on what a stolen cookie is worth, whatever its use.
  SESSION_MAX_DAYS: Joi.number().integer().min(1).max(365).empty('').default(14),
  LOGIN_FREE_FAILURES_PER_ACCOUNT: Joi.number().integer().min(1).max(1000).empty('').default(5),
  // Higher: many people can share one address (an office behind NAT).
  LOGIN_FREE_FAILURES_PER_ADDRESS: Joi.number().integer().min(1).max(100_000).empty('').default(20),
}).unknown(true).prefs({ convert: true, abortEarly: true });

/** Reads and validates the session settings (part of loadConfig's validation; read on their own by the API). */
export function loadSessionConfig(env: NodeJS.ProcessEnv = process.env): SessionConfig {
  const { value, error } = sessionSchema.validate(env);
  if (error) throw configError(error, env);
  return {
    idleMinutes: value.SESSION_IDLE_MINUTES,
    maxDays: value.SESSION_MAX_DAYS,
    freeFailuresPerAccount: value.LOGIN_FREE_FAILURES_PER_ACCOUNT,
    freeFailuresPerAddress: value.LOGIN_FREE_FAILURES_PER_ADDRESS,
  };
}

/** Single sign-on with OpenID Connect (issue 27; people/oidc.ts). */
export interface OidcConfig {
  /** OIDC_ISSUER: the provider's issuer URL (its discovery document is under /.well-known/openid-configuration). */
  issuer: string;
  /** OIDC_CLIENT_ID: Herald's client at the provider. */
  clientId: string;
  /** OIDC_CLIENT_SECRET; absent for a public client (PKCE alone protects the exchange). */
  clientSecret?: string;
  /** OIDC_SCOPES, space-separated; `openid` is always among them. */
  scopes: string;
  /** OIDC_ALLOW_SIGNUP: a first login with an unknown (verified) address creates an account without projects. */
  allowSignup: boolean;
}

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

const oidcSchema = Joi.object({
  // https, or plain http to this machine only (a provider in development or in the tests): the ID token's keys and
  // the code exchange must not cross a network in clear.
  OIDC_ISSUER: urlWithScheme(['http', 'https']).empty('').custom((value: string, helpers) => {
    const url = new URL(value);
    if (url.protocol === 'http:' && !LOOPBACK_HOSTS.includes(url.hostname)) return helpers.message({ custom: 'must be https (plain http only to 127.0.0.1, localhost or [::1])' });
    return value.replace(/\/+$/, '');
  }),
  OIDC_CLIENT_ID: Joi.string().trim().max(512).empty('').when('OIDC_ISSUER', { is: Joi.exist(), then: Joi.required() }),
  OIDC_CLIENT_SECRET: Joi.string().max(1024).empty(''),
  OIDC_SCOPES: Joi.string().trim().pattern(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'space-separated scopes')
    .empty('').default('openid email profile'),
  OIDC_ALLOW_SIGNUP: Joi.boolean().empty('').default(false),
}).unknown(true).prefs({ convert: true, abortEarly: true });

/**
 * Single sign-on (issue 27; people/oidc.ts): undefined, SSO off, unless OIDC_ISSUER is set (then OIDC_CLIENT_ID must
 * be too). `openid` is added to the scopes when missing: without it there is no ID token.
 */
export function loadOidcConfig(env: NodeJS.ProcessEnv = process.env): OidcConfig | undefined {
  const { value, error } = oidcSchema.validate(env);
  if (error) throw configError(error, env);
  if (!value.OIDC_ISSUER) return undefined;
  const scopes = (value.OIDC_SCOPES as string).split(' ');
  return {
    issuer: value.OIDC_ISSUER,
    clientId: value.OIDC_CLIENT_ID,
    clientSecret: value.OIDC_CLIENT_SECRET,
    scopes: (scopes.includes('openid') ? scopes : ['openid', ...scopes]).join(' '),
    allowSignup: value.OIDC_ALLOW_SIGNUP,
  };
}

/**
 * Why PUBLIC_URL deserves a warning at start, or undefined: links in mail (unsubscribe, one-click) should be HTTPS
 * wherever recipients reach them (RFC 8058 expects an HTTPS URI); plain HTTP is for loopback only.
 */
export function publicUrlWarning(publicUrl: string): string | undefined {
  const url = new URL(publicUrl);
  if (url.protocol === 'https:') return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
  if (loopback) return undefined;
  return `PUBLIC_URL=${publicUrl} is not HTTPS: recipients' mail clients get plain-HTTP unsubscribe links, and one-click unsubscribe (RFC 8058) expects HTTPS. Serve Herald behind TLS and set PUBLIC_URL to its https:// address.`;
}

const importSchema = Joi.object({
  // 2 GiB: the issue asks for at least 1 GB; the file is stored in the database until its import ends.
  IMPORT_MAX_BYTES: Joi.number().integer().min(1024).max(64 * 1024 ** 3).empty('').default(2 * 1024 ** 3),
}).unknown(true).prefs({ convert: true, abortEarly: true });

/** The largest contact import file accepted, in bytes (IMPORT_MAX_BYTES; contacts/imports/imports.ts). */
export function loadImportMaxBytes(env: NodeJS.ProcessEnv = process.env): number {
  const { value, error } = importSchema.validate(env);
  if (error) throw configError(error, env);
  return value.IMPORT_MAX_BYTES as number;
}
