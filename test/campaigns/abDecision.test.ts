import { certainties, leader, normalCdf, significance, twoProportionTest, type VariantFigures } from '../../campaigns/abDecision';
import { decide, sampleShareProblem, sampleSize } from '../../campaigns/abTest';

/** The arithmetic of an A/B test's decision (campaigns/abDecision.ts), against values worked by hand or in R. */
const v = (variant: number, delivered: number, uniqueOpens: number, uniqueClicks = 0): VariantFigures => ({ variant, delivered, uniqueOpens, uniqueClicks });

test('the normal CDF, to 1e-6', () => {
  expect(normalCdf(0)).toBeCloseTo(0.5, 6);
  expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
  expect(normalCdf(-1.644854)).toBeCloseTo(0.05, 6);
  expect(normalCdf(3)).toBeCloseTo(0.998650, 6);
});

test('the two-proportion z-test (pooled, two-sided), as R\'s prop.test(c(120, 90), c(1000, 1000), correct = FALSE) computes it', () => {
  // Pooled p = 0.105, se = √(0.105 · 0.895 · 2/1000) = 0.013710, z = 0.03 / se = 2.1883 (X-squared = z² = 4.7885),
  // p = erfc(z/√2) = 0.02865 (Python's math.erfc).
  expect(twoProportionTest(120, 1000, 90, 1000)).toEqual({ z: 2.188, pValue: 0.0287 });
  expect(twoProportionTest(90, 1000, 120, 1000)).toEqual({ z: -2.188, pValue: 0.0287 });
  // No spread to measure, or nothing to measure.
  expect(twoProportionTest(0, 10, 0, 10)).toEqual({ z: 0, pValue: 1 });
  expect(twoProportionTest(10, 10, 10, 10)).toEqual({ z: 0, pValue: 1 });
  expect(twoProportionTest(1, 0, 1, 10)).toBeNull();
});

test('the leader: the highest rate of delivered emails; a tie (equal rates, not counts) keeps the earliest variant', () => {
  expect(leader([v(0, 100, 10), v(1, 100, 12)], 'opens')).toBe(1);
  expect(leader([v(0, 100, 10), v(1, 200, 20), v(2, 50, 5)], 'opens')).toBe(0); // 10 %, 10 %, 10 %
  expect(leader([v(0, 100, 10), v(1, 90, 10)], 'opens')).toBe(1); // the same count, fewer delivered: a higher rate
  expect(leader([v(0, 0, 0), v(1, 10, 0)], 'opens')).toBe(0); // nothing delivered is a rate of 0
  expect(leader([v(0, 100, 50, 1), v(1, 100, 10, 2)], 'clicks')).toBe(1);
});

test('a small sample\'s winner is flagged as not significant; a large one\'s is', () => {
  const small = significance([v(0, 10, 2), v(1, 10, 1)], 0, 'opens');
  expect(small).toMatchObject({ method: 'two-proportion z-test', against: 1, significant: false });
  expect(small!.pValue).toBeGreaterThan(0.5);
  expect(significance([v(0, 5000, 1100), v(1, 5000, 900), v(2, 5000, 1000)], 0, 'opens')).toMatchObject({ against: 2, significant: true });
  // Each variant's certainty: the best against the runner-up, the others against the best (z < 0).
  const all = certainties([v(0, 5000, 1000), v(1, 5000, 1100)], 'opens');
  expect(all.get(1)).toMatchObject({ against: 0, significant: true });
  expect(all.get(0)!.z).toBeLessThan(0);
});

test('the decision: a person\'s choice wins over the metric; a manual test without one would take the opens\' leader', () => {
  const figures = [v(0, 100, 30, 1), v(1, 100, 20, 9)];
  expect(decide(figures, 'opens', null)).toMatchObject({ winner: 'A', decidedBy: 'metric' });
  expect(decide(figures, 'clicks', null)).toMatchObject({ winner: 'B', decidedBy: 'metric' });
  const chosen = decide(figures, 'opens', 1);
  expect(chosen).toMatchObject({ winner: 'B', decidedBy: 'manual', metric: 'opens' });
  expect(chosen.figures.map((f) => [f.key, f.openRate, f.clickRate])).toEqual([['A', 0.3, 0.01], ['B', 0.2, 0.09]]);
  expect(chosen.significance.opens).toMatchObject({ against: 0, significant: false });
});

test('the sample: its share of the audience, at least one per variant, none when the audience is smaller than the variants', () => {
  expect(sampleSize(1000, 10, 2)).toBe(100);
  expect(sampleSize(15, 10, 2)).toBe(2);
  expect(sampleSize(1, 50, 2)).toBe(0);
  expect(sampleSize(7, 50, 5)).toBe(5);
  // Refused when a variant would get nobody at this audience.
  expect(sampleShareProblem(40, 5, 2, 'abTest.samplePercent')).toBeUndefined(); // 2 recipients, 1 each
  expect(sampleShareProblem(40, 2, 2, 'abTest.samplePercent')).toMatchObject({ field: 'abTest.samplePercent', code: 'too_small' });
  expect(sampleShareProblem(0, 50, 2, 'x')!.message).toContain('at least 4 recipients');
});
