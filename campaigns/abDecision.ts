/**
 * How an A/B test's winner is decided, and how sure the difference is: pure arithmetic over the sample's figures per
 * variant (campaigns/abTest.ts reads them from the kept stats and records the outcome).
 *
 * The metric is a rate of the emails delivered to each variant's sample (unique opens or unique clicks: opens and
 * clicks by mail proxies and link scanners are not counted, as in every stat: tracking/agents.ts), so that a variant
 * whose sample lost a few emails to bounces is not judged on them. The highest rate wins; a tie keeps the earliest
 * variant (A before B …).
 *
 * The certainty is a two-proportion z-test of the winner against the runner-up (the variant closest to it), two-sided,
 * with the pooled proportion: z = (p1 − p2) / √(p(1 − p)(1/n1 + 1/n2)). `pValue` is the chance of a difference at
 * least this large if both variants were in truth equally good; the difference is called significant below 0.05 (95 %
 * confidence). A sample of a few dozen emails per variant is almost never significant, and the answer says so.
 */

export type DecidingMetric = 'opens' | 'clicks';

/** The sample's figures of one variant (its position: 0 is A). */
export interface VariantFigures {
  variant: number;
  delivered: number;
  uniqueOpens: number;
  uniqueClicks: number;
}

export interface Significance {
  method: 'two-proportion z-test';
  /** The variant the winner is compared with: the runner-up on this metric. */
  against: number;
  z: number;
  pValue: number;
  /** pValue < 0.05. */
  significant: boolean;
}

/** Successes of a variant's sample on `metric`. */
const successes = (f: VariantFigures, metric: DecidingMetric) => (metric === 'opens' ? f.uniqueOpens : f.uniqueClicks);

/** The rate of `metric` among a variant's delivered emails (0 when none was delivered), to 4 decimals. */
export function rateOf(f: VariantFigures, metric: DecidingMetric): number {
  return f.delivered > 0 ? Math.round((successes(f, metric) / f.delivered) * 10_000) / 10_000 : 0;
}

/** The variant with the highest rate of `metric`; on a tie, the earliest. */
export function leader(figures: readonly VariantFigures[], metric: DecidingMetric): number {
  // Division is correctly rounded, so equal rates (1/2 and 2/4) compare equal and a tie keeps the earlier variant.
  const rate = (f: VariantFigures) => (f.delivered > 0 ? successes(f, metric) / f.delivered : 0);
  return figures.reduce((best, f) => (rate(f) > rate(best) ? f : best)).variant;
}

/** The standard normal distribution's CDF (Abramowitz and Stegun 7.1.26: error below 1.5e-7). */
export function normalCdf(x: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(x) / Math.SQRT2);
  const erf = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-(x * x) / 2);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/**
 * The two-sided two-proportion z-test of x1/n1 against x2/n2 (pooled). Null when either sample is empty. Equal
 * proportions of all or nothing (no spread to measure) give z 0 and pValue 1.
 */
export function twoProportionTest(x1: number, n1: number, x2: number, n2: number): { z: number; pValue: number } | null {
  if (n1 <= 0 || n2 <= 0) return null;
  const pooled = (x1 + x2) / (n1 + n2);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (se === 0) return { z: 0, pValue: 1 };
  const z = (x1 / n1 - x2 / n2) / se;
  const pValue = Math.min(1, 2 * (1 - normalCdf(Math.abs(z))));
  return { z: Math.round(z * 1000) / 1000, pValue: Math.round(pValue * 10_000) / 10_000 };
}

/** The test of `variant` against `against` on `metric` (z > 0: `variant` does better). Null with an empty sample. */
export function compare(figures: readonly VariantFigures[], variant: number, against: number, metric: DecidingMetric): Significance | null {
  const v = figures.find((f) => f.variant === variant);
  const o = figures.find((f) => f.variant === against);
  if (!v || !o || v === o) return null;
  const test = twoProportionTest(successes(v, metric), v.delivered, successes(o, metric), o.delivered);
  return test ? { method: 'two-proportion z-test', against, ...test, significant: test.pValue < 0.05 } : null;
}

/**
 * How sure it is that `winner` beats the others on `metric`: the test against the runner-up (the best of the
 * others). Null with a single variant or an empty sample.
 */
export function significance(figures: readonly VariantFigures[], winner: number, metric: DecidingMetric): Significance | null {
  const others = figures.filter((f) => f.variant !== winner);
  return others.length ? compare(figures, winner, leader(others, metric), metric) : null;
}

/**
 * Each variant's certainty on `metric`: the leader's against the runner-up, every other's against the leader (how
 * sure it is that it does worse: z < 0).
 */
export function certainties(figures: readonly VariantFigures[], metric: DecidingMetric): Map<number, Significance | null> {
  const best = leader(figures, metric);
  return new Map(figures.map((f) => [f.variant, f.variant === best ? significance(figures, best, metric) : compare(figures, f.variant, best, metric)]));
}
