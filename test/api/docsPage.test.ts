import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchChromium, withChromium } from '../support/chromium';
import { createTestContext, type TestContext } from '../support/app';

/**
 * GET /docs in a browser: headless Chromium (Debian's, driven by playwright-core, as in test/tracking/chromium.test.ts)
 * loads the page from Herald alone (every request to another origin is refused and recorded), Redoc renders the
 * document, and the page shows the routes. Under CI=true a missing Chromium fails the test rather than skipping it.
 */
withChromium('the reference page test', (chromiumPath) => {
  let t: TestContext;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestContext();
    browser = await launchChromium(chromiumPath);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  test('the page is served with a strict Content-Security-Policy, and its script from Herald', async () => {
    const page = await t.http().get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'.*script-src 'self'/);
    expect(page.text).toContain('src="docs/redoc.standalone.js"');
    expect(page.text).not.toMatch(/https?:\/\//);
    const script = await t.http().get('/docs/redoc.standalone.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/^application\/javascript/);
    expect(script.body.length ?? script.text.length).toBeGreaterThan(100_000);
  });

  test('Chromium renders the reference from Herald alone: route names and tags, nothing from another origin', async () => {
    const base = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`;
    const context = await browser.newContext();
    const elsewhere: string[] = [];
    const problems: string[] = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); });
    page.on('pageerror', (err) => problems.push(err.message));
    const res = await page.goto(`${base}/docs`);
    expect(res?.status()).toBe(200);
    // Redoc shows each operation's path in its request panel, and the tags in the side menu.
    await page.getByText('/v1/send', { exact: false }).first().waitFor({ timeout: 30_000 });
    const text = await page.locator('body').innerText();
    for (const shown of ['Herald API', 'Sending', 'Contacts', 'Campaigns', 'Webhooks', 'Send an email', 'List contacts']) expect(text).toContain(shown);
    await page.getByText('/contacts/{id}', { exact: false }).first().waitFor({ timeout: 10_000 });
    expect(elsewhere).toEqual([]);
    // Redoc's side menu links to Redocly with a logo from their CDN: the policy blocks it, as it blocks any other origin.
    // Nothing else is refused: the page, its script, its styles and the document come from Herald.
    const refused = problems.filter((p) => /Content Security Policy|Refused/i.test(p));
    expect(refused.filter((p) => !p.includes('https://cdn.redoc.ly/'))).toEqual([]);
    await context.close();
  }, 90_000);
});
