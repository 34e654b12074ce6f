import { setupLink } from '../../people/setup';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { PASSWORD } from '../people/support';

/**
 * First start in Chromium: a Herald with no account prints a setup link; the page it opens creates the first account
 * (the API's 422 for a short password shown under its field), who lands signed in on Overview as owner. A fresh Herald
 * (its own database, no account) per size.
 */
withChromium('the console setup page', (chromium) => {
  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    let fresh: ConsoleHarness;
    beforeAll(async () => { fresh = await startConsole(chromium, { people: false }); }, 60_000);
    afterAll(async () => { await fresh?.close(); });

    test('the setup link creates the first account, who is signed in as owner of every project', async () => {
        const link = await setupLink({ knex: fresh.db.knex, publicUrl: fresh.baseUrl });
        expect(link).toMatch(/\/app\/setup#token=/);
        await fresh.withPage({ viewport, expectErrors: [/status of 422/] }, async (page) => {
          await page.goto(link!);
          await heading(page, 'Set up Herald');
          // The token left the address bar once read.
          expect(page.url()).toBe(fresh.url('/app/setup'));
          await checkA11y(page);
          await screenshot(page, 'setup');
          await page.getByLabel('Name').fill('Grace Hopper');
          await page.getByLabel('Email').fill(`grace-${size}@acme.test`);
          await page.getByLabel('Password').fill('short');
          await page.getByRole('button', { name: 'Create account' }).click();
          // The API's 422 names the field: its message is under the Password field.
          const passwordError = page.locator('.field-error');
          await passwordError.waitFor();
          expect(await passwordError.innerText()).toMatch(/password/i);
          expect(await page.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');
          await page.getByLabel('Password').fill(PASSWORD);
          await page.getByRole('button', { name: 'Create account' }).click();
          await heading(page, 'Overview');
          await page.locator('#sidebar').getByText(`grace-${size}@acme.test · owner`).waitFor({ state: 'attached' });
        });
    });
  });
});
