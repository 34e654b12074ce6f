/**
 * The message of an activity that failed for good (all its retries, or a permanent failure at once): Temporal wraps
 * the activity's error (ActivityFailure → cause); DBOS rethrows a permanent failure as it was, and after the last
 * retry throws an error of its own that lists every attempt's (`errors`): the last one says why. Deterministic: part
 * of the workflow bundle.
 */
export function activityFailureMessage(err: unknown): string {
  const cause = (err as { cause?: { message?: string } } | null)?.cause?.message;
  if (cause) return cause;
  const attempts = (err as { errors?: { message?: string }[] } | null)?.errors;
  const last = Array.isArray(attempts) ? attempts[attempts.length - 1]?.message : undefined;
  if (last) return `gave up after ${attempts!.length} attempts: ${last}`;
  return err instanceof Error ? err.message : String(err);
}

/** Why an email is FAILED after its transient failures outlasted the retry budget (both delivery paths say the same). */
export function gaveUp(reason: string): string {
  return `gave up after repeated transient failures: ${reason}`;
}
