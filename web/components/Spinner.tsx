/** Long work: a spinner (inline, in buttons), a page's loading line, a progress bar. */
export function Spinner({ label = 'Loading', large }: { label?: string; large?: boolean }) {
  return <span class={`spinner${large ? ' spinner-lg' : ''}`} role={label ? 'status' : undefined} aria-label={label || undefined} aria-hidden={label ? undefined : 'true'} />;
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return <div class="loading"><Spinner large label="" /><span role="status">{what}…</span></div>;
}

/** Indeterminate without `value`; with `value` of `max`, how far it got (a campaign's sent of its total). */
export function Progress({ label, value, max = 100 }: { label: string; value?: number; max?: number }) {
  if (value === undefined) return <div class="progress" role="progressbar" aria-label={label}><span /></div>;
  const share = max > 0 ? Math.min(1, Math.max(0, value / max)) : 0;
  return (
    <div class="progress progress-value" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={max} aria-valuenow={value}
      aria-valuetext={`${value.toLocaleString()} of ${max.toLocaleString()}`}>
      <span style={{ width: `${(share * 100).toFixed(1)}%` }} />
    </div>
  );
}
