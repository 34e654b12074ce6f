/** A figure in a tile (the Overview's totals, a campaign's results), and a share of a whole in words. */
export function Stat({ label, value, note }: { label: string; value: number; note?: string }) {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value">{value.toLocaleString()}</div>
      {note ? <div class="stat-note">{note}</div> : null}
    </div>
  );
}

/** `part` of `whole` as a percentage: whole numbers from 10 %, one decimal below; "—" of nothing. */
export const percent = (part: number, whole: number): string => {
  if (!whole) return '—';
  const p = (part / whole) * 100;
  return `${p === 0 || p >= 10 ? Math.round(p) : p.toFixed(1)}%`;
};
