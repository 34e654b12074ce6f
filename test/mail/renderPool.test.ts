import { Piscina } from 'piscina';
import { createRenderPool } from '../../mail/renderPool';
import { renderJobs, type RenderJob } from '../../mail/render';

/** The API's renderer: cheap jobs inline, the rest on threads with the full budgets, threads shared fairly. */
const pool = createRenderPool(2);
afterAll(() => pool.close());

const job = (body: string, scopes: Record<string, unknown>[] = [{}]): RenderJob => ({ subject: 'Hi {{ n }}', body, scopes });
const BUSY = '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}';

test('a cheap job answers as a thread would', async () => {
  const jobs = [job('<p>{{ n }}</p>', [{ n: 1 }, { n: 2 }])];
  expect(await pool.render(jobs)).toEqual(renderJobs(jobs));
});

test('a job past the inline budget but within the full budgets is rendered on a thread, whole', async () => {
  const [out] = await pool.render([job(`{% for i in (1..1500) %}${'x'.repeat(1000)}{% endfor %}`)]);
  expect('rendered' in out! && out.rendered[0]!.html.length).toBe(1_500_000);
});

test('a syntax error is answered as such, not retried on a thread', async () => {
  const [out] = await pool.render([job('{% if %}')]);
  expect(out).toMatchObject({ failed: { code: 'invalid_template', part: 'body' } });
});

test("one tenant's costly jobs leave a thread to the others", async () => {
  const done: string[] = [];
  const a1 = pool.render([job(BUSY)], 'a').then(() => done.push('a1'));
  const a2 = pool.render([job(BUSY)], 'a').then(() => done.push('a2'));
  const b = pool.render([job(`{% for i in (1..1500) %}${'y'.repeat(1000)}{% endfor %}`)], 'b').then(() => done.push('b'));
  await Promise.all([a1, a2, b]);
  // Fair: b gets the second thread at once instead of queuing behind both of a's jobs, so it is done before a2 (which
  // waits for a1's thread). Whether b also beats a1 (cut off by its time budget) depends on the machine's load.
  expect(done.indexOf('b')).toBeLessThan(done.indexOf('a2'));
  expect(done.indexOf('a1')).toBeLessThan(done.indexOf('a2'));
});

describe('which templates go straight to a thread', () => {
  // Deterministic past the inline caps (1,000,000 characters), within a thread's full budgets: the size comes from the data.
  const sized = (n: number) => job(`{% for i in (1..n) %}${'x'.repeat(1000)}{% endfor %}`, [{ n }]);
  // A pool whose inline attempt has 2 s, not 5 ms: a strike counts only when the attempt had most of its time to itself,
  // and on a loaded machine 5 ms can go by before a render starts (a CI run lost a strike so). The characters decide.
  const pool = createRenderPool(2, { ms: 2000 });
  afterAll(() => pool.close());
  let runs: jest.SpyInstance;
  beforeEach(() => { runs = jest.spyOn(Piscina.prototype, 'run'); });
  afterEach(() => runs.mockRestore());

  test('a template past the inline budget once (a cold start, a pause) is rendered inline again after', async () => {
    const [big] = await pool.render([{ ...sized(1500), subject: 'once' }]);
    expect('rendered' in big! && big.rendered[0]!.html.length).toBe(1_500_000);
    expect(runs).toHaveBeenCalledTimes(1);
    // Before, one pass marked the template for good: every later render took a thread.
    for (let i = 0; i < 5; i++) await pool.render([{ ...sized(3), subject: 'once' }]);
    expect(runs).toHaveBeenCalledTimes(1);
  });

  test('a template past it three times in a row goes straight to a thread', async () => {
    for (let i = 0; i < 3; i++) await pool.render([{ ...sized(1500), subject: 'thrice' }]);
    expect(runs).toHaveBeenCalledTimes(3);
    const [small] = await pool.render([{ ...sized(3), subject: 'thrice' }]);
    expect(small).toEqual({ rendered: [{ subject: 'thrice', html: 'x'.repeat(3000) }] });
    expect(runs).toHaveBeenCalledTimes(4);
  });
});
