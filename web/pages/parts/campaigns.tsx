import type { Schemas } from '../../api';
import { Badge, type Tone } from '../../components';

/** What the campaign pages share: a campaign's status in words and colour, its audience in words. */
export type Campaign = Schemas['Campaign'];
export type CampaignStatusName = Campaign['status'];

export const CAMPAIGN_STATUSES: [CampaignStatusName, string, Tone][] = [
  ['DRAFT', 'Draft', 'neutral'],
  ['SCHEDULED', 'Scheduled', 'accent'],
  ['SENDING', 'Sending', 'info'],
  ['SENT', 'Sent', 'success'],
  ['CANCELLED', 'Cancelled', 'warning'],
  ['FAILED', 'Failed', 'danger'],
];

export function CampaignStatus({ status }: { status: CampaignStatusName }) {
  const [, word, tone] = CAMPAIGN_STATUSES.find(([s]) => s === status) ?? [status, status, 'neutral' as Tone];
  return <Badge tone={tone}>{word}</Badge>;
}

/** The audience in a few words: "All subscribed contacts", "Segment: Pro customers", "A filter". */
export function audienceWords(c: Pick<Campaign, 'audienceType' | 'segmentId'>, segmentName?: string | null): string {
  if (c.audienceType === 'ALL') return 'All subscribed contacts';
  if (c.audienceType === 'SEGMENT') return segmentName ? `Segment: ${segmentName}` : 'A segment';
  return 'Contacts matching a filter';
}

/** The audience inside a sentence ("… goes at once to every subscribed contact"). */
export function audiencePhrase(c: Pick<Campaign, 'audienceType'>, segmentName?: string | null): string {
  if (c.audienceType === 'ALL') return 'every subscribed contact';
  if (c.audienceType === 'SEGMENT') return segmentName ? `the subscribed members of the segment “${segmentName}”` : 'the subscribed members of its segment';
  return 'the subscribed contacts that match its filter';
}

/** "12,408 contacts", "1 contact". */
export const contacts = (n: number): string => `${n.toLocaleString()} contact${n === 1 ? '' : 's'}`;

/** The viewer's time zone as the browser names it (Europe/Paris), for the words beside a time they choose. */
export const viewerZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'your time zone';

/** A chosen send time in full, in the viewer's zone: "Tuesday 3 June 2031 at 10:00". */
export const formatWhen = (d: Date | string): string => whenFormat.format(typeof d === 'string' ? new Date(d) : d);
const whenFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'short' });

type Template = Schemas['Template'];
type Content = Pick<Campaign, 'subject' | 'body' | 'bodyType' | 'from' | 'fromName' | 'replyTo'>;

/**
 * What a campaign sends, to show it: each part it has of its own, else its template's, as the API merges them
 * (mail/applyTemplate.ts: a sender of its own goes without the template's name). `template` undefined: none, or not
 * loaded.
 */
export function campaignContent(c: Content, template: Template | null | undefined) {
  return {
    subject: c.subject ?? template?.subject ?? '',
    body: c.body ?? template?.body ?? '',
    bodyType: (c.body !== null ? c.bodyType : template?.bodyType ?? 'html') as 'html' | 'markdown',
    from: c.from ?? template?.from ?? '',
    fromName: c.fromName ?? (c.from ? null : template?.fromName ?? null),
    replyTo: c.replyTo ?? template?.replyTo ?? null,
  };
}
