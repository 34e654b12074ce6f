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

export interface CampaignRef {
  projectId: string;
  campaignId: string;
}

export type CampaignPhase = 'DRAFT' | 'SCHEDULED' | 'SENDING' | 'SENT' | 'CANCELLED' | 'FAILED';

export interface BatchResult {
  /** The campaign is no longer SENDING (cancelled): stop. */
  cancelled: boolean;
  inserted: number;
  /** Keyset position: the last contact id of this batch. */
  last: string | null;
  /** The audience is exhausted. */
  done: boolean;
}

/** Input of a run of the periodic domain re-check: its slot (epoch ms), and the keyset position after continue-as-new. */
export interface DomainChecksInput {
  slot: number;
  after?: string | null;
}

export interface DomainBatchResult {
  checked: number;
  verified: number;
  failed: number;
  /** Keyset position: the last domain id of this batch. */
  last: string | null;
  /** Every domain has been checked. */
  done: boolean;
}

/** The activities every engine runs for the workflows, as plain async functions (activities/). */
export interface Activities {
  /** Delivers one stored email. Throws on transient failures (the engine retries); returns FAILED on permanent ones. */
  deliverEmail(ref: EmailRef): Promise<DeliveryOutcome>;
  /** Marks an email FAILED after its transient failures outlasted the retries. */
  failEmail(ref: EmailRef & { error: string }): Promise<DeliveryOutcome>;
  /** Marks a still-queued email CANCELLED (its delivery workflow was cancelled); a sent one stays SENT. */
  cancelEmail(ref: EmailRef): Promise<DeliveryOutcome>;
  beginCampaign(ref: CampaignRef): Promise<CampaignPhase>;
  campaignBatch(ref: CampaignRef & { after: string | null; size: number }): Promise<BatchResult>;
  campaignProgress(ref: CampaignRef): Promise<{ pending: number; cancelled: boolean; ratePerSecond?: number }>;
  finishCampaign(ref: CampaignRef): Promise<CampaignPhase>;
  cancelCampaign(ref: CampaignRef): Promise<CampaignPhase>;
  /** Checks the next batch of sending domains (all projects, id order) against DNS and stores the outcomes. */
  checkDomainBatch(ref: { after: string | null; size: number }): Promise<DomainBatchResult>;
  /** Schedules the re-check run of the slot after `after`; returns that slot. */
  scheduleDomainChecks(ref: { after: number }): Promise<number>;
}

/** Delivery is the activity that runs on the rate-limited queue. */
export type DeliveryActivities = Pick<Activities, 'deliverEmail'>;
export type OtherActivities = Omit<Activities, 'deliverEmail'>;
