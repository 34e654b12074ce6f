/** Parts of the Webhooks pages (Webhooks, WebhookDetail): not a page. */
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../../webhooks/types';
import { Badge, Checkbox } from '../../components';
import type { Schemas } from '../../api';

/** The documented event types (webhooks/types.ts, the one list) with what each means (docs/api.md "Event types"). */
export const EVENT_TYPES: readonly WebhookEventType[] = WEBHOOK_EVENT_TYPES;

const MEANS: Record<WebhookEventType, string> = {
  'email.sent': 'The receiving server accepted an email',
  'email.failed': 'An email could not be delivered',
  'email.opened': 'An open was tracked',
  'email.clicked': 'A tracked link was clicked',
  'email.bounced': 'A hard or soft bounce came back',
  'email.complained': 'A recipient reported spam',
  'email.suppressed': 'A send to a suppressed address was stopped',
  'email.received': 'Mail arrived at an inbound route (every route, not only those naming this endpoint)',
  'contact.created': 'A contact was created',
  'contact.updated': 'A contact’s address, subscription or data changed',
  'contact.subscribed': 'A contact subscribed',
  'contact.unsubscribed': 'A contact unsubscribed',
  'campaign.sent': 'A campaign finished sending',
  'campaign.winner': 'An A/B campaign’s winner was decided',
};

/** Checkboxes of the event types, with "all" and "none". */
export function EventTypePicker({ value, onValue, error }: { value: WebhookEventType[]; onValue: (v: WebhookEventType[]) => void; error?: string }) {
  const toggle = (type: WebhookEventType, on: boolean) => onValue(on ? EVENT_TYPES.filter((t) => t === type || value.includes(t)) : value.filter((t) => t !== type));
  return (
    <fieldset class="checkbox-group" aria-invalid={error ? 'true' : undefined} aria-describedby={error ? 'event-types-error' : undefined}>
      <legend>Event types</legend>
      <div class="checkbox-group-all">
        <button type="button" class="btn btn-ghost btn-sm" onClick={() => onValue([...EVENT_TYPES])}>Select all</button>
        <button type="button" class="btn btn-ghost btn-sm" onClick={() => onValue([])}>Clear</button>
      </div>
      {EVENT_TYPES.map((t) => <Checkbox key={t} label={t} hint={MEANS[t]} checked={value.includes(t)} onChecked={(on) => toggle(t, on)} />)}
      {error ? <div class="field-error checkbox-group-error" id="event-types-error">{error}</div> : null}
    </fieldset>
  );
}

export function EndpointBadges({ hook }: { hook: Schemas['Webhook'] }) {
  return (
    <span class="row">
      {hook.enabled ? <Badge tone="success">Enabled</Badge> : <Badge>Disabled</Badge>}
      {hook.status === 'failing' ? <Badge tone="danger">Failing</Badge> : null}
    </span>
  );
}

const DELIVERY: Record<Schemas['WebhookDelivery']['status'], [string, 'neutral' | 'info' | 'success' | 'danger']> = {
  PENDING: ['Pending', 'neutral'],
  DELIVERING: ['Delivering', 'info'],
  SUCCEEDED: ['Succeeded', 'success'],
  FAILED: ['Failed', 'danger'],
};

export function DeliveryStatus({ status }: { status: Schemas['WebhookDelivery']['status'] }) {
  const [word, tone] = DELIVERY[status];
  return <Badge tone={tone}>{word}</Badge>;
}
