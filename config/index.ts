import path from 'node:path';
import Joi from 'joi';

/** Herald's configuration, read once from environment variables and validated at start-up. */
export interface Config {
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  smtpUrl: string | undefined;
  engine: 'embedded' | 'temporal';
  temporalAddress: string | undefined;
  temporalNamespace: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  apiRateLimitPerMinute: number;
  sendRatePerSecond: number;
  /** Base URL under which recipients reach Herald (unsubscribe links). */
  publicUrl: string;
  /** Signing/encryption secret; when unset, one is generated into DATA_DIR (see config/secret.ts). */
  secretKey: string | undefined;
  /** Stable id of this worker process for the embedded engine's crash recovery. */
  executorId: string | undefined;
}

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
  SMTP_URL: urlWithScheme(['smtp', 'smtps']).empty(''),
  ENGINE: Joi.string().valid('embedded', 'temporal').empty('').default('embedded'),
  TEMPORAL_ADDRESS: Joi.string()
    .pattern(/^[A-Za-z0-9.-]+:\d{1,5}$/, 'host:port')
    .empty('')
    .when('ENGINE', { is: 'temporal', then: Joi.required() }),
  TEMPORAL_NAMESPACE: Joi.string().trim().empty('').default('default'),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').empty('').default('info'),
  API_RATE_LIMIT_PER_MINUTE: Joi.number().integer().min(1).empty('').default(1000),
  SEND_RATE_PER_SECOND: Joi.number().positive().max(100000).empty('').default(14),
  PUBLIC_URL: urlWithScheme(['http', 'https']).empty(''),
  SECRET_KEY: Joi.string().min(32).empty('').messages({ 'string.min': 'must be at least 32 characters (e.g. openssl rand -hex 32)' }),
  EXECUTOR_ID: Joi.string().pattern(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, dot, dash, underscore').empty(''),
})
  // Every other variable of the environment (PATH, HOME, …) is none of our business.
  .unknown(true)
  .prefs({ convert: true, abortEarly: true });

/** Reads and validates the configuration; throws a ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const { value, error } = envSchema.validate(env);
  if (error) {
    const detail = error.details[0]!;
    const variable = String(detail.path[0] ?? 'environment');
    const given = env[variable];
    const shown = ['DATABASE_URL', 'SMTP_URL', 'SECRET_KEY'].includes(variable) ? '(value hidden: it may hold a secret)' : JSON.stringify(given);
    const reason = detail.message.replace(/^"[^"]+" /, '');
    throw new ConfigError(variable, `Invalid configuration: ${variable} ${reason}; got ${given === undefined ? 'nothing' : shown}.`);
  }
  return {
    port: value.PORT,
    dataDir: path.resolve(value.DATA_DIR),
    databaseUrl: value.DATABASE_URL,
    smtpUrl: value.SMTP_URL,
    engine: value.ENGINE,
    temporalAddress: value.TEMPORAL_ADDRESS,
    temporalNamespace: value.TEMPORAL_NAMESPACE,
    logLevel: value.LOG_LEVEL,
    apiRateLimitPerMinute: value.API_RATE_LIMIT_PER_MINUTE,
    sendRatePerSecond: value.SEND_RATE_PER_SECOND,
    publicUrl: (value.PUBLIC_URL ?? `http://localhost:${value.PORT}`).replace(/\/+$/, ''),
    secretKey: value.SECRET_KEY,
    executorId: value.EXECUTOR_ID,
  };
}
