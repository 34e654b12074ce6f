import type { Schemas } from '../../api';
import { sampleShares, sampleSize, VARIANT_KEYS, type AbMetric } from '../../../campaigns/abRules';

/**
 * An A/B campaign in words, for the composer and the campaign's page: the variants' letters, the wait, the metric,
 * the sample and the rest, and how sure a difference is. The arithmetic is the engine's own (campaigns/abRules.ts).
 */
export type Significance = NonNullable<Schemas['CampaignStats']['variants']>[number]['significance']['opens'];

/** "A or B", "A, B or C". */
export function keysPhrase(n: number): string {
  const keys = VARIANT_KEYS.slice(0, n);
  return keys.length <= 1 ? keys.join('') : `${keys.slice(0, -1).join(', ')} or ${keys[keys.length - 1]}`;
}

/** "10 minutes", "4 hours", "1 day", "90 minutes": the largest unit that says it exactly. */
export function waitWords(minutes: number): string {
  const [n, unit] = minutes % 1440 === 0 ? [minutes / 1440, 'day'] : minutes % 60 === 0 ? [minutes / 60, 'hour'] : [minutes, 'minute'];
  return `${n.toLocaleString()} ${unit}${n === 1 ? '' : 's'}`;
}

export const METRIC_WORDS: Record<AbMetric, string> = { opens: 'unique opens', clicks: 'unique clicks', manual: 'your choice' };

/** The sample and the rest for an audience of this size now, as the engine will cut it. */
export function samplePlan(audience: number, samplePercent: number, variants: number) {
  const size = sampleSize(audience, samplePercent, variants);
  const shares = sampleShares(size, variants);
  return { size, shares, rest: audience - size, perVariant: Math.min(...shares) };
}

/** "1,241 each", "1,241 or 1,242 each". */
export function eachWords(shares: number[]): string {
  const lo = Math.min(...shares);
  const hi = Math.max(...shares);
  return lo === hi ? `${lo.toLocaleString()} each` : `${lo.toLocaleString()} or ${hi.toLocaleString()} each`;
}

/**
 * The test in one sentence: "20 % test: 2,482 contacts get A or B, then the winner goes to the other 9,926 after 4
 * hours" (the send's confirmation, the composer's summary).
 */
export function testSentence(t: { samplePercent: number; waitMinutes: number; metric: AbMetric }, variants: number, audience: number): string {
  const plan = samplePlan(audience, t.samplePercent, variants);
  const who = `${t.samplePercent} % test: ${plan.size.toLocaleString()} contact${plan.size === 1 ? '' : 's'} get ${keysPhrase(variants)} (${eachWords(plan.shares)})`;
  const rest = `the other ${plan.rest.toLocaleString()}`;
  if (t.metric === 'manual') return `${who}, then the variant you choose goes to ${rest}: choose once the figures are in (give them ${waitWords(t.waitMinutes)})`;
  return `${who}, then the winner (${METRIC_WORDS[t.metric]}) goes to ${rest} after ${waitWords(t.waitMinutes)}`;
}

/** "p = 0.41", "p = 0.004", "p < 0.001". */
export function pWords(p: number): string {
  if (p < 0.001) return 'p < 0.001';
  return `p = ${p < 0.01 ? p.toFixed(3) : p.toFixed(2)}`;
}

/**
 * How sure a variant's difference is, from its `significance` (a two-proportion z-test against `against`):
 * "99 % sure B beats A" below p 0.01, "95 % sure B beats A" below 0.05, else "Not significant yet: p = 0.41" (without
 * "yet" once the test is over). No comparison yet (nothing delivered), or equal rates: said so.
 */
export function certaintyWords(sig: Significance, key: string, over: boolean): { text: string; significant: boolean } {
  if (!sig) return { text: over ? 'No figures to compare' : 'Nothing to compare yet', significant: false };
  const other = VARIANT_KEYS[sig.against] ?? '?';
  // Equal rates (no open on either side, say): nothing to weigh, which a p-value of 1 would say less plainly.
  if (sig.z === 0) return { text: over ? 'No difference' : 'No difference yet', significant: false };
  if (!sig.significant) return { text: `Not significant${over ? '' : ' yet'}: ${pWords(sig.pValue)}`, significant: false };
  const [better, worse] = sig.z >= 0 ? [key, other] : [other, key];
  return { text: `${sig.pValue < 0.01 ? 99 : 95} % sure ${better} beats ${worse}`, significant: true };
}
