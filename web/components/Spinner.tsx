/** Long work: a spinner (inline, in buttons), a page's loading line, an indeterminate progress bar. */
export function Spinner({ label = 'Loading', large }: { label?: string; large?: boolean }) {
  return <span class={`spinner${large ? ' spinner-lg' : ''}`} role={label ? 'status' : undefined} aria-label={label || undefined} aria-hidden={label ? undefined : 'true'} />;
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return <div class="loading"><Spinner large label="" /><span role="status">{what}…</span></div>;
}

export function Progress({ label }: { label: string }) {
  return <div class="progress" role="progressbar" aria-label={label}><span /></div>;
}
