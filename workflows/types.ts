/**
 * What workflows and activities exchange. Workflows carry ids, never payloads: state lives in PostgreSQL.
 */

export interface EmailRef {
  projectId: string;
  emailId: string;
}

export type DeliveryOutcome =
  | { status: 'SENT'; messageId: string }
  | { status: 'FAILED'; error: string }
  | { status: 'CANCELLED' }
  /** Nothing to do: already sent, failed or cancelled (a repeated delivery), or the email was deleted with its contact. */
  | { status: 'SKIPPED'; reason: string };

/** The activities every engine runs for the workflows, as plain async functions (activities/). */
export interface Activities {
  /** Delivers one stored email. Throws on transient failures (the engine retries); returns FAILED on permanent ones. */
  deliverEmail(ref: EmailRef): Promise<DeliveryOutcome>;
  /** Marks an email FAILED after its transient failures outlasted the retries. */
  failEmail(ref: EmailRef & { error: string }): Promise<DeliveryOutcome>;
  /** Marks a still-queued email CANCELLED (its delivery workflow was cancelled); a sent one stays SENT. */
  cancelEmail(ref: EmailRef): Promise<DeliveryOutcome>;
}

/** Delivery is the activity that runs on the rate-limited queue. */
export type DeliveryActivities = Pick<Activities, 'deliverEmail'>;
export type OtherActivities = Omit<Activities, 'deliverEmail'>;
