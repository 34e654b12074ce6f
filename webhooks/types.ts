/**
 * The event types an outbound webhook endpoint may subscribe to: the one list, read by the API's validation, the docs
 * and the tests. Delivery follows whatever the `events` table records (EVENT_EFFECTS writes the outbox with the event), so `email.bounced`,
 * `email.complained` (bounces/bounces.ts) and `email.suppressed` (sending/sends.ts) reach endpoints like the others.
 */
export const WEBHOOK_EVENT_TYPES = [
  'email.sent',
  'email.failed',
  'email.opened',
  'email.clicked',
  'email.bounced',
  'email.complained',
  'email.suppressed',
  'email.received',
  'contact.created',
  'contact.updated',
  'contact.subscribed',
  'contact.unsubscribed',
  'campaign.sent',
  'campaign.winner',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The body of every webhook request (Standard Webhooks style). */
export interface WebhookPayload {
  type: WebhookEventType;
  /** ISO 8601, UTC, when the event happened. */
  timestamp: string;
  data: Record<string, unknown>;
}

