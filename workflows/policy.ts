/**
 * Names and retry policies shared by both engines. Pure constants: imported by the Temporal workflow bundle.
 */

/** Temporal task queue of workflows and their activities. */
export const WORKFLOW_TASK_QUEUE = 'herald';

/**
 * Retries of one delivery after a transient failure (SMTP 4xx, connection errors): 1 s, 2 s, 4 s … 256 s,
 * 10 attempts over about 8.5 minutes, then the email is FAILED. Permanent failures (5xx) are never retried.
 */
export const DELIVERY_RETRY = {
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maximumIntervalMs: 5 * 60 * 1000,
  maximumAttempts: 10,
} as const;

/** Retries of database activities (a failover, a dropped connection). */
export const ACTIVITY_RETRY = {
  initialIntervalMs: 500,
  backoffCoefficient: 2,
  maximumIntervalMs: 30 * 1000,
  maximumAttempts: 10,
} as const;

/**
 * Retries of a webhook call after a transient failure (5xx, 408, 429, network): 2 s, 4 s … 32 s, 6 attempts over
 * about a minute; then the execution FAILED with the last error. Permanent failures (other 4xx) are not retried.
 */
export const WEBHOOK_RETRY = {
  initialIntervalMs: 2000,
  backoffCoefficient: 2,
  maximumIntervalMs: 60 * 1000,
  maximumAttempts: 6,
} as const;

/**
 * Activities that beat while they run (Temporal's heartbeat; the embedded engine's recovery needs none): a contact
 * import's batch can take seconds on a big table, more than a short start-to-close timeout should allow, yet a worker
 * killed in the middle of one must not hold the import for ACTIVITY's minute. The worker beats every `everyMs`; the
 * server retries the batch on another worker once `timeoutMs` passes without one (the checkpoint makes it safe: a batch
 * not committed is read again, a committed one is not).
 */
export const HEARTBEAT = { timeoutMs: 10_000, everyMs: 2_000 } as const;
export const HEARTBEATING_ACTIVITIES: readonly string[] = ['importBatch'];

/** Topic of the nudge that wakes an automation execution from a wait (an event arrived, or its deadline moved). */
export const WAKE_TOPIC = 'wake';

/**
 * The error type of an activity's permanent failure (engine/permanent.ts): a failure that is the same on every
 * attempt (a value PostgreSQL cannot hold, a stored audience that cannot be compiled). Neither engine retries it: the
 * workflow hears of it at once and ends FAILED, instead of after ACTIVITY_RETRY's 10 attempts.
 */
export const PERMANENT_ERROR = 'PermanentError';

export type RetryPolicy = typeof DELIVERY_RETRY | typeof ACTIVITY_RETRY | typeof WEBHOOK_RETRY;
