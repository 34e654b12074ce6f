import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';

/**
 * The Overview's chart: emails per day by outcome, a uPlot canvas (imported here only, so it lands in the Overview's
 * chunk and never in the first load; its stylesheet, uPlot's own file, is @imported by styles/index.css). Colours are the design tokens' --chart-*,
 * read when drawn and again when the colour scheme changes; the width follows the card's.
 */
export interface ChartSeries { label: string; values: number[] }

/** The days are UTC dates (YYYY-MM-DD): shown as the dates they are, whatever the viewer's zone. */
const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const fullDayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

function token(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export function VolumeChart({ days, series, label }: { days: string[]; series: ChartSeries[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const height = () => (el.clientWidth < 600 ? 220 : 280);
    let chart: uPlot | null = null;
    const draw = () => {
      chart?.destroy();
      const axis = { stroke: token('--text-muted'), grid: { stroke: token('--border'), width: 1 }, ticks: { stroke: token('--border'), width: 1 }, font: '11px system-ui, sans-serif' };
      chart = new uPlot({
        width: el.clientWidth,
        height: height(),
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        cursor: { points: { size: 7 }, drag: { x: false, y: false } },
        legend: { live: true },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
        axes: [
          { ...axis, values: (_u, splits) => splits.map((s) => dayFormat.format(new Date(s * 1000))), space: 70 },
          { ...axis, size: 48, values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? s.toLocaleString() : '')) },
        ],
        series: [
          { label: 'Day', value: (_u, v) => (v == null ? '—' : fullDayFormat.format(new Date(v * 1000))) },
          ...series.map((s, i) => ({ label: s.label, stroke: token(`--chart-${i + 1}`), width: 2, points: { show: days.length <= 31, size: 4 }, value: (_u: uPlot, v: number | null) => (v == null ? '—' : v.toLocaleString()) })),
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
  }, [days, series]);
  return <div ref={box} class="volume-chart" role="img" aria-label={label} />;
}
