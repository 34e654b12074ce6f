import type { DnsConfig } from '../../config';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { startDnsServer, type TestDnsServer } from '../support/dns';

/**
 * The Domains pages in Chromium against a real Herald and a real DNS server on loopback: a developer adds a domain
 * (its 422 under the field), copies a record's value to the clipboard, publishes the records and verifies the domain,
 * then deletes it with a confirmation; a viewer and a member are offered none of the changes.
 */
interface RecordJson { purpose: string; type: string; name: string; value: string; status: string }
interface DomainJson { id: string; domain: string; status: string; records: RecordJson[] }

withChromium('the Domains pages', (chromium) => {
  let c: ConsoleHarness;
  let dns: TestDnsServer;
  beforeAll(async () => {
    dns = await startDnsServer();
    const config: DnsConfig = { servers: [dns.address], timeoutMs: 1000, tries: 1, verifyBudgetMs: 2000, domainCheckIntervalMinutes: 60 };
    c = await startConsole(chromium, { dns: config });
  }, 60_000);
  afterAll(async () => {
    await c?.close();
    await dns?.close();
  });

  const apiGet = async (path: string): Promise<{ data: DomainJson }> => (await fetch(c.url(path), { headers: c.key })).json() as Promise<{ data: DomainJson }>;
  const apiAdd = async (domain: string): Promise<DomainJson> => {
    const res = await fetch(c.url('/domains'), { method: 'POST', headers: { ...c.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ domain }) });
    expect(res.status).toBe(201);
    return ((await res.json()) as { data: DomainJson }).data;
  };

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('a developer adds a domain, copies its DKIM value, verifies it against DNS, and deletes it', async () => {
      await c.db.knex('domains').where({ project_id: c.project.id }).del();
      const name = `mail-${size}.example.com`;
      // The 422 of the first try is an answer the page shows, not a fault.
      await c.withPage({ viewport, as: 'admin', expectErrors: [/status of 422/] }, async (page, context) => {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.baseUrl });
        await page.goto(c.url('/app/domains'));
        await heading(page, 'Domains');
        // The empty list says what to do next, with the curl a script would run.
        await page.getByRole('heading', { name: 'No sending domain yet' }).waitFor();
        expect(await page.locator('.empty pre').innerText()).toContain(`curl -X POST ${c.baseUrl}/domains`);
        await checkA11y(page);
        await screenshot(page, 'domains-empty');

        await page.getByRole('button', { name: 'Add domain' }).click();
        const field = page.getByLabel('Domain', { exact: true });
        await field.fill('localhost');
        await page.getByRole('button', { name: 'Add domain' }).click();
        // The 422 of POST /domains, next to its field.
        await page.getByText('must be a registrable domain name').waitFor();
        expect(await field.getAttribute('aria-invalid')).toBe('true');
        await checkA11y(page);

        await field.fill(name);
        await page.getByRole('button', { name: 'Add domain' }).click();
        await heading(page, name);
        await page.getByText(`${name} added: publish its records`).waitFor();
        const id = page.url().split('/').pop()!;
        const added = (await apiGet(`/domains/${id}`)).data;
        const dkim = added.records.find((r) => r.purpose === 'DKIM')!;

        // Every record's type, host and value is in the table, the status "Not checked" before the first check.
        const rows = page.locator('.records-table tbody tr');
        expect(await rows.count()).toBe(added.records.length);
        const dkimRow = page.locator('tr[data-purpose="DKIM"]');
        expect(await dkimRow.locator('.record-host').innerText()).toBe(dkim.name);
        expect(await dkimRow.locator('.record-value').innerText()).toBe(dkim.value);
        await dkimRow.getByText('Not checked').waitFor();
        await checkA11y(page);
        await screenshot(page, 'domain-pending');

        // Copy: the value lands on the clipboard, and a toast says so.
        await page.getByRole('button', { name: 'Copy the value of the DKIM signing key record' }).click();
        await page.locator('.toast').getByText('Copied', { exact: true }).waitFor();
        expect(await page.evaluate('navigator.clipboard.readText()')).toBe(dkim.value);

        // The owner publishes DKIM, SPF and DMARC; Verify now shows its progress, then the result per record.
        for (const r of added.records) if (['DKIM', 'SPF', 'DMARC'].includes(r.purpose)) dns.add(r.name, { TXT: [r.value] });
        await page.getByRole('button', { name: 'Verify now' }).click();
        await page.getByText(`${name} is verified`).waitFor();
        for (const purpose of ['DKIM', 'SPF', 'DMARC']) await page.locator(`tr[data-purpose="${purpose}"]`).getByText('Found', { exact: true }).waitFor();
        await page.locator('.page-header').getByText('Verified', { exact: true }).waitFor();
        expect((await apiGet(`/domains/${id}`)).data.status).toBe('VERIFIED');
        await checkA11y(page);
        await screenshot(page, 'domain', { fullPage: size === 'phone' });

        // Back on the list: the domain, verified, with its last check.
        await page.getByRole('link', { name: 'Domains', exact: true }).first().click();
        await heading(page, 'Domains');
        const row = page.locator('.domains-table tbody tr', { hasText: name });
        await row.getByText('Verified').waitFor();
        await row.getByText('3 of 3 found').waitFor();
        await screenshot(page, 'domains');

        // Delete, with a confirmation that names what happens.
        await row.getByRole('link', { name }).click();
        await heading(page, name);
        await page.getByRole('button', { name: 'Delete' }).click();
        const dialog = page.getByRole('dialog', { name: `Delete ${name}?` });
        await dialog.getByText('Herald stops sending mail from').waitFor();
        await checkA11y(page);
        await dialog.getByRole('button', { name: 'Delete domain' }).click();
        await heading(page, 'Domains');
        await page.getByText(`${name} deleted`).waitFor();
        expect(await c.db.knex('domains').where({ project_id: c.project.id, id }).first()).toBeUndefined();
      });
    }, 90_000);

    test('a viewer sees the domains and can copy a record, but is offered no Add domain, Verify now or Delete', async () => {
      const d = await apiAdd(`viewer-${size}.example.com`);
      await c.withPage({ viewport, as: 'viewer', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url('/app/domains'));
        await heading(page, 'Domains');
        await page.getByRole('link', { name: d.domain }).waitFor();
        expect(await page.getByRole('button', { name: 'Add domain' }).count()).toBe(0);
        await page.getByRole('link', { name: d.domain }).click();
        await heading(page, d.domain);
        await page.getByRole('button', { name: 'Copy the value of the DKIM signing key record' }).waitFor();
        for (const name of ['Verify now', 'Delete']) expect(await page.getByRole('button', { name }).count()).toBe(0);
        await checkA11y(page);
        await screenshot(page, 'domain', { dark: true, fullPage: size === 'phone' });
      });
      // A member may send but not change domains (admin): no Add domain either.
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/domains'));
        await heading(page, 'Domains');
        await page.getByRole('link', { name: d.domain }).waitFor();
        expect(await page.getByRole('button', { name: 'Add domain' }).count()).toBe(0);
      });
    }, 60_000);
  });
});
