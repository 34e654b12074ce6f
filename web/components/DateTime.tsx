/**
 * Dates in the viewer's time zone and language (Intl): "26 Nov 2026, 14:05" in lists, the full date with the zone on
 * hover, and "3 min ago" where recency matters.
 */
const short = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const full = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

export const formatDateTime = (iso: string): string => short.format(new Date(iso));
export const formatFullDateTime = (iso: string): string => full.format(new Date(iso));

export function formatRelative(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return relative.format(seconds, 'second');
  if (abs < 45 * 60) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 22 * 3600) return relative.format(Math.round(seconds / 3600), 'hour');
  if (abs < 26 * 86400) return relative.format(Math.round(seconds / 86400), 'day');
  return short.format(new Date(iso));
}

/** A <time> in the viewer's zone; `relative` shows "3 min ago" instead. */
export function Time({ value, relative: rel }: { value: string | null | undefined; relative?: boolean }) {
  if (!value) return <span class="muted">—</span>;
  return <time dateTime={value} title={formatFullDateTime(value)} class="nowrap">{rel ? formatRelative(value) : formatDateTime(value)}</time>;
}
