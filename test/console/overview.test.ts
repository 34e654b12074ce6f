import { addDomain } from '../../domains/rows';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The Overview in Chromium, end to end: a project that has never sent gets its getting-started steps; after real
 * sends through the engine to a real SMTP server (one refused, a hard bounce), the page shows the counts
 * GET /stats/overview answers, for the last 7 and 30 days (a day ten days ago counts in the 30 only), as tiles, a
 * chart and a table; a failing domain is listed with a link to fix it.
 */
interface Overview { totals: Record<'sent' | 'bounced' | 'complained' | 'opened' | 'clicked' | 'failed', number>; queue: { depth: number } }

withChromium('the Overview page', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium, { delivery: true }); }, 60_000);
  afterAll(async () => { await c?.close(); });

  const overview = async (days: number): Promise<Overview> =>
    ((await (await fetch(c.url(`/stats/overview?days=${days}`), { headers: c.key })).json()) as { data: Overview }).data;
  const send = async (to: string) => {
    const res = await fetch(c.url('/v1/send'), {
      method: 'POST', headers: { ...c.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ from: 'hello@example.com', to, subject: 'Welcome to Acme', body: '<p>Hello, thanks for signing up.</p>' }),
    });
    expect(res.status).toBe(200);
  };

  test.each(VIEWPORTS)('a project that has never sent shows how to start, at %s size', async (size, viewport) => {
    await c.withPage({ viewport, as: 'viewer' }, async (page) => {
      await page.goto(c.url('/app'));
      await heading(page, 'Overview');
      await page.getByRole('heading', { name: 'Get started' }).waitFor();
      // The harness's domain example.com is verified: the first step is done, and the curl sends from it.
      await page.getByRole('heading', { name: 'Add and verify a sending domain (done)' }).waitFor();
      const curl = await page.locator('.step-code').innerText();
      expect(curl).toContain(`curl -X POST ${c.baseUrl}/v1/send`);
      expect(curl).toContain('"from": "hello@example.com"');
      // A viewer is not offered to add a domain.
      expect(await page.getByRole('link', { name: 'Add a domain' }).count()).toBe(0);
      await checkA11y(page);
      await screenshot(page, 'overview-start');
    });
  });

  test('after real sends the Overview shows their counts at 7 and 30 days, and the domains to fix', async () => {
    c.smtp!.unknownUsers.add('nobody@acme.test');
    for (const to of ['ada@acme.test', 'grace@acme.test', 'linus@acme.test', 'nobody@acme.test']) await send(to);
    // Wait for the engine's delivery: three accepted; one refused at RCPT TO, which is email.failed at delivery and
    // then email.bounced (hard) when the bounce is processed.
    const deadline = Date.now() + 60_000;
    const settled = (o: Overview) => o.totals.sent === 3 && o.totals.failed === 1 && o.totals.bounced === 1;
    let seven = await overview(7);
    while (!settled(seven) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      seven = await overview(7);
    }
    expect(seven.totals).toEqual({ sent: 3, failed: 1, bounced: 1, complained: 0, opened: 0, clicked: 0 });
    expect(c.smtp!.received).toHaveLength(3);
    // A day ten days ago, as the rollup holds it: in the last 30 days, not in the last 7.
    const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000).toISOString().slice(0, 10);
    await c.db.knex('project_daily_stats').insert({ project_id: c.project.id, day: tenDaysAgo, shard: 0, sent: 5, opened: 2 });
    const thirty = await overview(30);
    expect(thirty.totals.sent).toBe(8);
    // A domain whose check failed needs attention.
    const failing = await addDomain(c.project.id, 'news.acme.test', false);
    await c.db.knex('domains').where({ id: failing!.id }).update({ status: 'FAILED', records: JSON.stringify({ DKIM: 'FAILED' }), checked_at: new Date() });

    for (const [size, viewport] of VIEWPORTS) {
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app'));
        await heading(page, 'Overview');
        const tile = (label: string) => page.locator('.stat', { has: page.locator('.stat-label', { hasText: new RegExp(`^${label}$`) }) }).locator('.stat-value');
        // 30 days by default.
        await page.getByRole('link', { name: '30 days' }).and(page.locator('[aria-current="page"]')).waitFor();
        await tile('Sent').getByText('8', { exact: true }).waitFor();
        expect(await tile('Bounced').innerText()).toBe(String(thirty.totals.bounced));
        expect(await tile('Opened').innerText()).toBe(String(thirty.totals.opened));
        expect(await tile('Failed').innerText()).toBe(String(thirty.totals.failed));
        await page.locator('.volume-chart canvas').first().waitFor();
        expect(await page.locator('.volume-chart').getAttribute('aria-label')).toContain('8 sent');
        // The numbers by day: today's three and the day ten days ago.
        await page.getByText('The numbers by day').click();
        const today = new Date().toISOString().slice(0, 10);
        expect(await page.locator('.volume-table tr', { hasText: today }).locator('td').nth(1).innerText()).toBe('3');
        expect(await page.locator('.volume-table tr', { hasText: tenDaysAgo }).locator('td').nth(1).innerText()).toBe('5');
        expect(await page.locator('.volume-table tbody tr').count()).toBe(30);
        // The queue has drained; the failing domain is listed with its way to the fix.
        await page.getByText('Nothing is waiting').waitFor();
        const attention = page.getByRole('region', { name: /Domains needing attention/ });
        await attention.getByText('news.acme.test', { exact: true }).waitFor();
        await attention.getByText('The DKIM record of news.acme.test is missing or wrong.').waitFor();
        await checkA11y(page);
        await page.evaluate('window.scrollTo(0, 0)');
        await screenshot(page, 'overview', { fullPage: size === 'phone' });

        // 7 days: today's three, not the older five.
        await page.getByRole('link', { name: '7 days' }).click();
        await page.waitForURL(/days=7/);
        await tile('Sent').getByText('3', { exact: true }).waitFor();
        expect(await tile('Bounced').innerText()).toBe(String(seven.totals.bounced));
        expect(await page.locator('.volume-table tbody tr').count()).toBe(7);

        await attention.getByRole('link', { name: 'Fix news.acme.test' }).click();
        await heading(page, 'news.acme.test');
      });
    }
    await c.withPage({ viewport: VIEWPORTS[0][1], as: 'viewer', colorScheme: 'dark' }, async (page) => {
      await page.goto(c.url('/app?days=90'));
      await heading(page, 'Overview');
      await page.locator('.volume-chart canvas').first().waitFor();
      await checkA11y(page);
      await screenshot(page, 'overview', { dark: true });
    });
  }, 120_000);
});
