import { BaseModel } from './BaseModel';

/**
 * SUPPRESSED: never queued, its recipient is on the project's suppression list (audience/suppressions.ts). BOUNCED: sent,
 * then refused for good (a hard bounce, bounces/bounces.ts).
 */
export type EmailStatus = 'QUEUED' | 'SENDING' | 'SENT' | 'FAILED' | 'CANCELLED' | 'SUPPRESSED' | 'BOUNCED';

export class Email extends BaseModel {
  static override tableName = 'emails';
  static override jsonAttributes = ['headers'];

  id!: string;
  projectId!: string;
  contactId!: string | null;
  campaignId!: string | null;
  /** An A/B campaign's sample email: its variant (0 is A). Null otherwise (the rest of an A/B campaign gets its winner). */
  variant!: number | null;
  isTest!: boolean;
  templateId!: string | null;
  fromEmail!: string;
  fromName!: string | null;
  replyTo!: string | null;
  toEmail!: string;
  toName!: string | null;
  /** Null for campaign emails: they are rendered at delivery. */
  subject!: string | null;
  html!: string | null;
  headers!: Record<string, string>;
  attachmentIds!: string[];
  /** A message submitted over SMTP: its MIME bytes (raw_messages), sent as the client built them. */
  rawMessageId!: string | null;
  status!: EmailStatus;
  attempts!: number;
  messageId!: string | null;
  error!: string | null;
  eventId!: string;
  dispatchedAt!: Date | null;
  /** 0 transactional, 1 campaign (claimed after transactional mail). */
  priority!: number;
  availableAt!: Date;
  claimedBy!: string | null;
  claimedAt!: Date | null;
  sentAt!: Date | null;
  /** Open and click tracking for this email, fixed when it was queued (tracking/). */
  trackOpens!: boolean;
  trackClicks!: boolean;
  /** Every open and click recorded; first_*: the first that was not a mail proxy or scanner (unique). */
  opens!: number;
  firstOpenedAt!: Date | null;
  clicks!: number;
  firstClickedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
  /**
   * The partition key (db/partitions.ts): the email's creation time (its id's), or its campaign's `emails_partition_at`.
   * A statement that changes an email it has read names it with this too, so that only its partition is read.
   */
  partitionAt!: Date;
}

/**
 * What delivery reads of an email (sending/delivery.ts, worker/deliveryQueue.ts): the claim returns these columns, not
 * the whole row. The row has 36 columns, eight of them timestamps, and the worker's pg client parsed every one of them
 * for each email it sent (BENCHMARKS.md section 52).
 */
export const DELIVERY_FIELDS = [
  'id', 'projectId', 'contactId', 'campaignId', 'variant', 'isTest', 'fromEmail', 'fromName', 'replyTo', 'toEmail', 'toName',
  'subject', 'html', 'headers', 'attachmentIds', 'rawMessageId', 'attempts', 'priority', 'trackOpens', 'trackClicks',
  'createdAt', 'partitionAt',
] as const;

/** An email as delivery reads it (DELIVERY_FIELDS). */
export type DeliveryEmail = Pick<Email, (typeof DELIVERY_FIELDS)[number]>;
