/**
 * The rules of an A/B test that need nothing but arithmetic: the variants' names, the metrics, the bounds, and how a
 * sample is sized and split. campaigns/abTest.ts applies them on the server; the console's composer (web/) imports
 * this module too, so the counts it shows before a send are the ones the engine will use (no database, no Node here).
 */

export const VARIANT_KEYS = ['A', 'B', 'C', 'D', 'E'] as const;
export type VariantKey = (typeof VARIANT_KEYS)[number];
export const AB_METRICS = ['opens', 'clicks', 'manual'] as const;
export type AbMetric = (typeof AB_METRICS)[number];

/** The bounds of a test, as the API checks them (api/schemas/campaigns.ts) and the database holds them (migration 20261207000001). */
export const AB_LIMITS = { minVariants: 2, maxVariants: 5, minPercent: 1, maxPercent: 50, minWaitMinutes: 10, maxWaitMinutes: 7 * 24 * 60 } as const;

/**
 * How many recipients a test's sample has: its share of the audience, rounded, and at least one per variant when the
 * audience has that many (none otherwise).
 */
export function sampleSize(audience: number, samplePercent: number, variants: number): number {
  if (audience < variants) return 0;
  return Math.min(audience, Math.max(variants, Math.round((audience * samplePercent) / 100)));
}

/** Where each variant's run of the sample ends (1-based positions): runs of equal length, ±1. */
export function sampleRunEnds(size: number, variants: number): number[] {
  return Array.from({ length: variants }, (_, i) => Math.ceil((size * (i + 1)) / variants));
}

/** How many of the sample each variant gets. */
export function sampleShares(size: number, variants: number): number[] {
  const ends = sampleRunEnds(size, variants);
  return ends.map((end, i) => end - (i === 0 ? 0 : ends[i - 1]!));
}

/** Whether a share of this audience gives every variant at least one recipient (what create, update and send check). */
export function sampleFits(audience: number, samplePercent: number, variants: number): boolean {
  return Math.floor((audience * samplePercent) / 100 / variants) >= 1;
}

/** The least whole share that fits this audience, or null when even the largest does not. */
export function leastFittingPercent(audience: number, variants: number): number | null {
  for (let p = AB_LIMITS.minPercent; p <= AB_LIMITS.maxPercent; p++) if (sampleFits(audience, p, variants)) return p;
  return null;
}
