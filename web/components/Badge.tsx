import type { ComponentChildren } from 'preact';

export type Tone = 'neutral' | 'success' | 'danger' | 'warning' | 'info' | 'accent';

/** A status in a word, coloured by its tone. */
export function Badge({ tone = 'neutral', children }: { tone?: Tone; children: ComponentChildren }) {
  return <span class={`badge${tone === 'neutral' ? '' : ` badge-${tone}`}`}>{children}</span>;
}

/** An email's status (emails/emails.ts EMAIL_STATUSES) in words and colour. */
const EMAIL_STATUS: Record<string, [string, Tone]> = {
  QUEUED: ['Queued', 'neutral'],
  SENDING: ['Sending', 'info'],
  SENT: ['Sent', 'success'],
  FAILED: ['Failed', 'danger'],
  BOUNCED: ['Bounced', 'danger'],
  SUPPRESSED: ['Suppressed', 'warning'],
  CANCELLED: ['Cancelled', 'neutral'],
};

export const emailStatusWord = (status: string): string => EMAIL_STATUS[status]?.[0] ?? status;

export function EmailStatus({ status }: { status: string }) {
  const [word, tone] = EMAIL_STATUS[status] ?? [status, 'neutral' as Tone];
  return <Badge tone={tone}>{word}</Badge>;
}
