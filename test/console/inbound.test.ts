import type { DnsConfig } from '../../config';
import { authenticator } from '../../inbound/auth';
import { inboundReceiver } from '../../inbound/receive';
import { TEST_SECRET } from '../support/app';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { startDnsServer, type TestDnsServer } from '../support/dns';

/**
 * The Inbound page in Chromium against a real Herald, its DNS checks on a loopback DNS server. An admin adds an
 * inbound domain, is shown its MX and TXT records, publishes them (the test's DNS) and verifies it; creates a route,
 * edits its priority; a message then arrives at the route (the listener's receiver, as the inbound listener stores it)
 * and shows in the list with its authentication results, and on its own page with its body in the sandboxed preview
 * and its attachment. A viewer sees the same lists without a button that changes anything.
 */
withChromium('the console: inbound', (chromium) => {
  let c: ConsoleHarness;
  let dns: TestDnsServer;
  let dnsConfig: DnsConfig;
  beforeAll(async () => {
    dns = await startDnsServer();
    dnsConfig = { servers: [dns.address], timeoutMs: 1000, tries: 1, verifyBudgetMs: 2000, domainCheckIntervalMinutes: 60 };
    c = await startConsole(chromium, { dns: dnsConfig });
  }, 90_000);
  afterAll(async () => { await c?.close(); await dns?.close(); });

  const api = async (method: string, path: string) => {
    const res = await fetch(c.url(path), { method, headers: c.key });
    return (await res.json()) as { data: Record<string, unknown> & { items: Record<string, unknown>[] } };
  };

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const domain = `in-${size}.acme-shop.com`;

    test('an admin adds a domain, publishes and verifies its records, makes a route; received mail shows with its authentication and body', async () => {
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url('/app/inbound/domains'));
        await heading(page, 'Inbound');
        if (size === 'desktop') {
          await page.getByRole('heading', { name: 'No inbound domains yet' }).waitFor();
          await checkA11y(page, 'no inbound domain');
          await screenshot(page, 'inbound-domains-empty');
        }
        await page.getByRole('button', { name: 'Add domain' }).first().click();
        const dialog = page.getByRole('dialog', { name: 'Add an inbound domain' });
        await dialog.getByLabel('Domain').fill(domain);
        await dialog.getByRole('button', { name: 'Add domain' }).click();
        await page.locator('.toast').filter({ hasText: `${domain} added` }).first().waitFor();
        const card = page.locator('section.card').filter({ hasText: domain });
        await card.getByText('Not verified').waitFor();
        expect(await card.locator('.record-host').allInnerTexts()).toEqual([domain, `_herald.${domain}`]);

        // Publish what the page shows, then verify.
        const [mx, txt] = await card.locator('.record-value').allInnerTexts();
        expect(txt).toMatch(/^herald-inbound=/);
        dns.set(domain, { MX: [mx!.slice(3)] });
        dns.set(`_herald.${domain}`, { TXT: [txt!] });
        await card.getByRole('button', { name: 'Verify now' }).click();
        await page.locator('.toast').filter({ hasText: `${domain} is verified` }).first().waitFor();
        await card.getByText('Verified', { exact: true }).waitFor();
        expect(await card.getByText('Found').count()).toBe(2);
        await checkA11y(page, 'a verified inbound domain');
        await screenshot(page, 'inbound-domains');

        // A route: created, then its priority changed.
        await page.getByRole('link', { name: 'Routes' }).click();
        await page.getByRole('button', { name: 'New route' }).first().click();
        const routeDialog = page.getByRole('dialog', { name: 'New route' });
        await routeDialog.getByLabel('Match').fill(`support@${domain}`);
        await routeDialog.getByLabel('Action').selectOption('store');
        await checkA11y(page, 'the new route dialog');
        await screenshot(page, 'inbound-route-new');
        await routeDialog.getByRole('button', { name: 'Create route' }).click();
        const row = page.locator('tr').filter({ hasText: `support@${domain}` });
        await row.getByText('Store only').waitFor();
        await row.getByRole('button', { name: `Edit the route support@${domain}` }).click();
        const editDialog = page.getByRole('dialog', { name: 'Edit route' });
        await editDialog.getByLabel('Priority').fill('5');
        await editDialog.getByRole('button', { name: 'Save route' }).click();
        await page.locator('.toast').filter({ hasText: 'Route saved' }).first().waitFor();
        const routes = (await api('GET', '/inbound/routes')).data.items.filter((r) => r.match === `support@${domain}`);
        expect(routes).toMatchObject([{ priority: 5, action: 'store' }]);
        await checkA11y(page, 'the routes');
        await screenshot(page, 'inbound-routes');

        // A message arrives (stored as the listener stores it) and shows in the list, then on its page.
        const receiver = inboundReceiver({ knex: c.db.knex, secret: TEST_SECRET, publicUrl: c.baseUrl, authenticate: authenticator(dnsConfig, 'mx.herald.test') });
        const to = await receiver.resolve(`support@${domain}`);
        expect(to?.kind).toBe('route');
        const raw = Buffer.from([
          'From: Grace Hopper <grace@example.org>', `To: support@${domain}`, `Subject: Order 42 (${size}) has not arrived`, 'MIME-Version: 1.0',
          'Content-Type: multipart/mixed; boundary="b"', '', '--b', 'Content-Type: text/html; charset=utf-8', '',
          '<p>Hello, my <b>order 42</b> has not arrived yet. The receipt is attached.</p>', '--b',
          'Content-Type: text/plain; name="receipt.txt"', 'Content-Disposition: attachment; filename="receipt.txt"', '', 'order 42, paid', '--b--', '',
        ].join('\r\n'));
        await receiver.store(raw, { mailFrom: 'grace@example.org', remoteAddress: '127.0.0.1', helo: 'mail.example.org' }, [{ address: `support@${domain}`, to: to as Extract<typeof to, { kind: 'route' }> }]);
        await page.getByRole('link', { name: 'Received' }).click();
        const msg = page.getByRole('link', { name: `Order 42 (${size}) has not arrived` });
        await msg.waitFor();
        if (size === 'desktop') await page.locator('tr').filter({ hasText: `Order 42 (${size})` }).getByText(/^SPF /).waitFor();
        await checkA11y(page, 'received mail');
        await screenshot(page, 'inbound-messages');
        await msg.click();
        await heading(page, `Order 42 (${size}) has not arrived`);
        await page.getByText('receipt.txt', { exact: true }).waitFor();
        await page.getByRole('button', { name: 'Download receipt.txt' }).waitFor();
        await page.getByRole('button', { name: 'Download raw' }).waitFor();
        const preview = page.frameLocator('iframe').first();
        await preview.getByText('has not arrived yet').waitFor();
        await page.locator('dd').getByText(/^DMARC /).waitFor();
        await checkA11y(page, 'a received message');
        await screenshot(page, 'inbound-message', { fullPage: true });
      });
    });

    test('a viewer sees the domains, routes and mail, and no button that changes them', async () => {
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/inbound/domains'));
        await heading(page, 'Inbound');
        await page.locator('section.card').filter({ hasText: domain }).getByText('Verified', { exact: true }).waitFor();
        expect(await page.getByRole('button', { name: /Verify now|Add domain|Remove/ }).count()).toBe(0);
        await page.getByRole('link', { name: 'Routes' }).click();
        await page.locator('tr').filter({ hasText: `support@${domain}` }).waitFor();
        expect(await page.getByRole('button', { name: /New route|Edit|Delete/ }).count()).toBe(0);
        await page.getByRole('link', { name: 'Received' }).click();
        await page.getByRole('link', { name: `Order 42 (${size}) has not arrived` }).waitFor();
      });
    });
  });
});
