import { AudienceError } from '../core/errors';
import { databaseMessage, isDataError } from '../db/errors';
import { PERMANENT_ERROR } from '../workflows/policy';

/**
 * An activity's failure that no retry can mend: the engines do not retry it (Temporal: its type is one of the retry
 * policy's nonRetryableErrorTypes; DBOS: the step's shouldRetry says no), so the workflow hears of it at once and ends
 * FAILED with its message. The message is meant for the API user (stored as the campaign's or execution's error).
 */
export class PermanentError extends Error {
  constructor(message: string) {
    super(message);
    // Temporal names the failure after the constructor, DBOS keeps the name through its serialisation.
    this.name = PERMANENT_ERROR;
  }
}

/**
 * The error as the engines should see it: failures that are the same on every attempt become a PermanentError with a
 * message fit for the API user (`what` says what could not be done, e.g. `the audience cannot be evaluated`):
 * - a condition that cannot be compiled (AudienceError);
 * - a PostgreSQL data exception (SQLSTATE class 22: a date out of range, an invalid cast): the same statement with the
 *   same values fails again; the message is the server's, without the statement and its values.
 * Anything else (a lost connection, a deadlock, a bug fixed by the next deploy) is left to the retry policy.
 */
export function asPermanent(err: unknown, what?: string): unknown {
  const prefix = what ? `${what}: ` : '';
  if (err instanceof PermanentError) return what ? new PermanentError(`${prefix}${err.message}`) : err;
  if (err instanceof AudienceError) return new PermanentError(`${prefix}${err.message}`);
  if (isDataError(err)) return new PermanentError(`${prefix}${databaseMessage(err)}`);
  return err;
}

/** The activities with their permanent failures turned into PermanentErrors (asPermanent), for both engines. */
export function withPermanentFailures<T extends object>(activities: T): T {
  return Object.fromEntries(Object.entries(activities).map(([name, fn]) => [name, async (...args: unknown[]) => {
    try {
      return await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
    } catch (err) {
      throw asPermanent(err);
    }
  }])) as T;
}
