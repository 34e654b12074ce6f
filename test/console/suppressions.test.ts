import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The Suppressions page in Chromium against a real Herald: an admin adds an address (with a reason and a note) and
 * removes one after a confirmation that names it; the list shows reason and date and filters by reason. Adding and
 * removing are admin actions in the route table, so a member and a viewer see the list only.
 */
withChromium('the console: suppressions', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium); }, 60_000);
  afterAll(async () => { await c?.close(); });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: res.status === 204 ? null : (await res.json()) as { data: { items: { email: string; reason: string }[] } } };
  };
  const listed = async () => (await api('GET', '/suppressions?limit=100')).body!.data.items;

  test('an empty list says how addresses get there, with the curl of the project\'s endpoint', async () => {
    await c.withPage({ as: 'admin' }, async (page) => {
      await page.goto(c.url('/app/suppressions'));
      await heading(page, 'Suppressions');
      await page.getByRole('heading', { name: 'No suppressed addresses' }).waitFor();
      expect(await page.locator('.empty pre').innerText()).toContain(`curl ${c.baseUrl}/suppressions`);
      await checkA11y(page);
      await screenshot(page, 'suppressions-empty');
    });
  });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const address = `gone.${size}@example.org`;

    test('an admin adds an address with a reason, filters by reason, and removes it after a confirmation', async () => {
      await api('POST', '/suppressions', { email: `bounced.${size}@example.net`, reason: 'hard_bounce' });
      // The 422 of a bad address is answered on purpose (and shown under the field).
      await c.withPage({ viewport, as: 'admin', expectErrors: [/status of 422/] }, async (page) => {
        await page.goto(c.url('/app/suppressions'));
        await heading(page, 'Suppressions');
        await page.locator('tbody tr', { hasText: `bounced.${size}@example.net` }).waitFor();

        // A bad address is named under its field by the API's 422; then a good one.
        await page.getByRole('button', { name: 'Add address' }).first().click();
        const dialog = page.getByRole('dialog', { name: 'Suppress an address' });
        await dialog.getByLabel('Email').fill('not an address');
        await dialog.getByRole('button', { name: 'Suppress address' }).click();
        await dialog.locator('.field-error').waitFor();
        await dialog.getByLabel('Email').fill(address);
        await dialog.getByLabel('Reason').selectOption('complaint');
        await dialog.getByLabel('Note (optional)').fill('Reported us by phone');
        await checkA11y(page, 'the add dialog');
        await screenshot(page, 'suppressions-add');
        await dialog.getByRole('button', { name: 'Suppress address' }).click();
        await page.locator('.toast').filter({ hasText: `${address} suppressed` }).waitFor();
        const row = page.locator('tbody tr').filter({ hasText: address });
        await row.getByText('Complaint').waitFor();
        if (size === 'desktop') await row.getByText('Reported us by phone').waitFor();
        await row.locator('time:visible').waitFor();
        expect((await listed()).find((s) => s.email === address)?.reason).toBe('complaint');
        await checkA11y(page, 'the list');
        await screenshot(page, 'suppressions');

        // The reason filter, in the URL.
        await page.getByLabel('Reason').selectOption('hard_bounce');
        await page.waitForURL(/reason=hard_bounce/);
        await page.locator('tbody tr', { hasText: `bounced.${size}@example.net` }).waitFor();
        await row.waitFor({ state: 'detached' });
        await page.getByLabel('Reason').selectOption('');
        await row.waitFor();

        // Remove, after a confirmation naming it.
        await row.getByRole('button', { name: `Remove ${address}` }).click();
        const confirm = page.getByRole('dialog', { name: `Remove ${address} from the list?` });
        await confirm.getByText(/sending to it again can hurt/).waitFor();
        await screenshot(page, 'suppressions-remove');
        await confirm.getByRole('button', { name: 'Remove suppression' }).click();
        await page.locator('.toast').filter({ hasText: `${address} can be sent to again` }).waitFor();
        await row.waitFor({ state: 'detached' });
        expect((await listed()).some((s) => s.email === address)).toBe(false);
      });
    }, 60_000);

    desktopOnly(size)('in the dark', async () => {
      await c.withPage({ viewport, as: 'admin', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url('/app/suppressions'));
        await page.locator('tbody tr', { hasText: `bounced.${size}@example.net` }).waitFor();
        await checkA11y(page, 'suppressions, dark');
        await screenshot(page, 'suppressions', { dark: true });
      });
    });

    test.each(['member', 'viewer'] as const)('a %s sees the list with no add or remove', async (role) => {
      await c.withPage({ viewport, as: role }, async (page) => {
        await page.goto(c.url('/app/suppressions'));
        await page.locator('tbody tr', { hasText: `bounced.${size}@example.net` }).waitFor();
        expect(await page.getByRole('button', { name: 'Add address' }).count()).toBe(0);
        expect(await page.getByRole('button', { name: /^Remove/ }).count()).toBe(0);
        await checkA11y(page, `suppressions as a ${role}`);
        if (role === 'viewer') await screenshot(page, 'suppressions-viewer');
      });
    });
  });
});
