import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The console's frame in Chromium: a person signed in through the API opens /app and finds the shell (the side bar's
 * pages, their name, the project), with no console error, no serious accessibility violation, at both sizes.
 */
const NAV = ['Overview', 'Emails', 'Contacts', 'Events', 'Inbound', 'Campaigns', 'Templates', 'Segments', 'Automations', 'Domains', 'Webhooks', 'Suppressions', 'Settings'];

withChromium('the console shell', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium); }, 60_000);
  afterAll(async () => { await c?.close(); });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('a person signed in sees the shell: the pages by name, who they are, the project, Sign out', async () => {
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url('/app'));
        await heading(page, 'Overview');
        if (size === 'phone') {
          // The side bar is folded behind the menu button.
          await page.getByRole('button', { name: 'Menu' }).click();
        }
        const nav = page.getByRole('navigation', { name: 'Pages' });
        for (const name of NAV) await nav.getByRole('link', { name, exact: true }).waitFor({ state: 'visible' });
        expect(await nav.getByRole('link').allInnerTexts()).toHaveLength(NAV.length);
        await page.getByText('Ada Admin').waitFor();
        await page.locator('#sidebar').getByText('Acme', { exact: true }).waitFor();
        await page.getByRole('button', { name: 'Sign out' }).waitFor({ state: 'visible' });
        await checkA11y(page);
        await screenshot(page, size === 'phone' ? 'shell-menu' : 'shell');
      });
    });

    test('a signed-in visit asks for its session once, while the scripts load; a sign-in page leaves no unused preload', async () => {
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        const asked: string[] = [];
        const warnings: string[] = [];
        page.on('request', (r) => { if (new URL(r.url()).pathname === '/auth/session') asked.push(r.resourceType()); });
        page.on('console', (m) => { if (m.type() === 'warning') warnings.push(m.text()); });
        await page.goto(c.url('/app/emails'));
        await heading(page, 'Emails');
        await page.goto(c.url('/app/login'));
        await page.getByRole('button', { name: 'Sign in' }).waitFor();
        await page.waitForTimeout(3500); // Chromium warns of a preload left unused about 3 s after the load
        // One request per document, each the preload of index.html (Chromium names its type "other", a fetch "fetch").
        expect(asked).toEqual(['other', 'other']);
        expect(warnings.filter((w) => /preload/i.test(w))).toEqual([]);
      });
    });

  });
});
