import { emailsAccepted, type AcceptedWay } from './registry';

/**
 * Emails committed to the delivery queue (the emails table), whichever way they came in: counted in
 * herald_emails_accepted_total, and news to the delivery loops of this process (worker/deliveryQueue.ts). An idle loop
 * looks at the queue every 100 ms; told, it looks at once, so a campaign's first batch (stored by a workflow step in
 * the worker that also delivers) or a /v1/send to an embedded Herald leaves without waiting out that poll. Only this
 * process hears it: another process's loop finds the rows at its next poll, as before. Call it after the commit; told
 * earlier, a loop finds nothing yet and naps its poll, which costs nothing but the gain.
 *
 * Here, beside the counter, because every way in (sending/, campaigns/, automations/) calls it and metrics/ imports
 * nothing: in sending/ it made campaigns/ and sending/ import each other.
 */
const listeners = new Set<() => void>();

export function emailsQueued(way: AcceptedWay, n: number): void {
  emailsAccepted.inc({ way }, n);
  if (n > 0) for (const listener of listeners) listener();
}

/** Calls `listener` whenever this process commits emails to the queue; answers how to stop. */
export function onEmailsQueued(listener: () => void): () => void {
  listeners.add(listener);
  return () => { listeners.delete(listener); };
}
