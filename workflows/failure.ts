/**
 * The message of an activity that failed all its retries: Temporal wraps the activity's error (ActivityFailure →
 * cause); DBOS rethrows the last one. Deterministic: part of the workflow bundle.
 */
export function activityFailureMessage(err: unknown): string {
  const cause = (err as { cause?: { message?: string } }).cause?.message;
  return cause ?? (err instanceof Error ? err.message : String(err));
}

/** Why an email is FAILED after its transient failures outlasted the retry budget (both delivery paths say the same). */
export function gaveUp(reason: string): string {
  return `gave up after repeated transient failures: ${reason}`;
}
