import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';

/**
 * The console's chart of counts over time: the Overview's emails per day by outcome, a campaign's opens and clicks per
 * hour or day. A uPlot canvas (imported here only, so it lands in the chunks of the pages that draw it and never in the
 * first load; its stylesheet, uPlot's own file, is @imported by styles/index.css). Colours are the design tokens'
 * --chart-*, read when drawn and again when the colour scheme changes; the width follows the card's.
 *
 * `at` are the points' times: with `step="day"`, UTC dates (YYYY-MM-DD), shown as the dates they are whatever the
 * viewer's zone; with `step="hour"`, instants (ISO 8601), shown in the viewer's zone.
 */
export interface ChartSeries { label: string; values: number[] }

const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const fullDayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
const hourFormat = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const localDayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const fullHourFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

function token(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

const startsDay = (d: Date) => d.getHours() === 0 && d.getMinutes() === 0;

export function VolumeChart({ at, step, series, label }: { at: string[]; step: 'day' | 'hour'; series: ChartSeries[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = at.map((t) => Date.parse(step === 'day' ? `${t}T00:00:00Z` : t) / 1000);
    const height = () => (el.clientWidth < 600 ? 220 : 280);
    const stepSeconds = step === 'day' ? 86_400 : 3600;
    // Days are UTC dates, so their axis is drawn in UTC; hours in the viewer's own zone (uPlot's default).
    const zone = step === 'day' ? { tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') } : {};
    const tick = (s: number): string => {
      const d = new Date(s * 1000);
      if (step === 'day') return dayFormat.format(d);
      return startsDay(d) ? localDayFormat.format(d) : hourFormat.format(d);
    };
    const legendTime = (v: number) => (step === 'day' ? fullDayFormat : fullHourFormat).format(new Date(v * 1000));
    let chart: uPlot | null = null;
    const draw = () => {
      chart?.destroy();
      const axis = { stroke: token('--text-muted'), grid: { stroke: token('--border'), width: 1 }, ticks: { stroke: token('--border'), width: 1 }, font: '11px system-ui, sans-serif' };
      chart = new uPlot({
        width: el.clientWidth,
        height: height(),
        ...zone,
        cursor: { points: { size: 7 }, drag: { x: false, y: false } },
        legend: { live: true },
        scales: {
          // One point alone (a campaign's first hour) gets a step of room each side, not uPlot's span of years.
          x: { time: true, range: (_u, min, max) => (xs.length === 1 ? [xs[0]! - stepSeconds, xs[0]! + stepSeconds] : [min, max]) },
          y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
        },
        axes: [
          // Ticks on whole steps only (days: a day or more apart, hours: an hour or more), so a short range does not
          // label the same day at every few hours.
          { ...axis, values: (_u, splits) => splits.map(tick), space: step === 'day' ? 70 : 60, incrs: (step === 'day' ? [1, 2, 7, 14, 30, 60, 90] : [1, 2, 3, 6, 12, 24, 48]).map((n) => n * stepSeconds) },
          { ...axis, size: 48, values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? s.toLocaleString() : '')) },
        ],
        series: [
          { label: step === 'day' ? 'Day' : 'Hour', value: (_u, v) => (v == null ? '—' : legendTime(v)) },
          ...series.map((s, i) => ({ label: s.label, stroke: token(`--chart-${i + 1}`), width: 2, points: { show: at.length <= 31, size: 4 }, value: (_u: uPlot, v: number | null) => (v == null ? '—' : v.toLocaleString()) })),
        ],
      }, [xs, ...series.map((s) => s.values)], el);
    };
    draw();
    const resize = new ResizeObserver(() => { if (chart && Math.abs(chart.width - el.clientWidth) > 1) chart.setSize({ width: el.clientWidth, height: height() }); });
    resize.observe(el);
    const scheme = matchMedia('(prefers-color-scheme: dark)');
    scheme.addEventListener('change', draw);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', draw);
      chart?.destroy();
    };
  }, [at, step, series]);
  return <div ref={box} class="volume-chart" role="img" aria-label={label} />;
}
