import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { createProject, type CreatedProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import { bearer } from '../support/app';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';
import { PASSWORD, person } from '../people/support';

/**
 * The Emails pages in Chromium against a real Herald delivering to a real SMTP server: find an email by its recipient,
 * open it, read its timeline, see the message in its sandboxed iframe (styled, scripts off), load remote images on
 * request; page by cursor; the sign-in → Emails → email journey with the keyboard alone; what a viewer is offered.
 * Every test at 1280×800 and 390×844; axe on every page, in light and dark.
 */
let c: ConsoleHarness;
/** Ada's message carries a <script>: the sandbox refuses it, and Chromium says so in the console (the proof it is off). */
const ids: Record<string, string> = {};

async function send(key: { Authorization: string }, to: string, subject: string, body: string): Promise<string> {
  const res = await fetch(c.url('/v1/send'), { method: 'POST', headers: { ...key, 'Content-Type': 'application/json' }, body: JSON.stringify({ to, from: 'Acme <hi@example.com>', subject, body }) });
  if (res.status !== 200) throw new Error(`send ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: { emails: { email: string }[] } }).data.emails[0]!.email;
}

withChromium('the console Emails pages', (chromium) => {
  let paged: CreatedProject;
  let empty: CreatedProject;
  beforeAll(async () => {
    c = await startConsole(chromium, { delivery: true });
    ids.ada = await send(c.key, 'Ada Lovelace <ada@example.org>', 'Your receipt',
      '<div style="font-family: Georgia, serif"><h1 style="color: rgb(200, 0, 0)">Thanks, Ada</h1><p>Order 1042: one analytical engine.</p><script>document.title = "ran"</script></div>');
    ids.bob = await send(c.key, 'bob@example.org', 'Welcome aboard', '<p>Hello Bob</p>');
    await waitForEmails(c.db, [ids.ada, ids.bob]);
    c.smtp!.script([{ code: 550, message: 'No such user here' }]);
    ids.nobody = await send(c.key, 'nobody@example.org', 'Password reset', '<p>Reset it</p>');
    ids.remote = await send(c.key, 'remote@example.org', 'Spring newsletter', '<p>Look:</p><img alt="Our logo" src="https://images.example.invalid/logo.png">');
    await waitForEmails(c.db, Object.values(ids));
    // A project with more than a page of emails, and one with none.
    paged = await createProject('Paged');
    await addDomain(paged.id, 'example.com', true);
    const pagedKey = bearer(paged.secretKey);
    for (let i = 0; i < 55; i += 11) await Promise.all(Array.from({ length: 11 }, (_, j) => send(pagedKey, `reader${i + j}@example.org`, `Issue ${i + j}`, '<p>News</p>')));
    empty = await createProject('Empty');
  }, 120_000);
  afterAll(async () => { await c?.close(); });

  const openMenu = async (page: Page, size: string) => {
    if (size === 'phone') await page.getByRole('button', { name: 'Menu' }).click();
  };

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('find an email by its recipient, open it: its timeline, and the message rendered in a sandboxed iframe', async () => {
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/emails'));
        await heading(page, 'Emails');
        const rows = page.locator('tbody tr');
        await rows.first().waitFor();
        expect(await rows.count()).toBe(4);
        await checkA11y(page);
        await screenshot(page, 'emails');

        await page.getByLabel('Recipient', { exact: true }).fill('ada@example.org');
        await page.getByRole('button', { name: 'Apply' }).click();
        await page.waitForURL(/to=ada%40example\.org/);
        await rowsToBe(page, 1);
        const row = rows.first();
        expect(await row.innerText()).toMatch(/ada@example\.org[\s\S]*Your receipt[\s\S]*Sent/);
        await row.getByRole('link', { name: 'ada@example.org' }).click();

        await heading(page, 'Your receipt');
        expect(new URL(page.url()).pathname).toBe(`/app/emails/${ids.ada}`);
        const timeline = page.getByRole('list', { name: 'Timeline' });
        await timeline.getByText('Sent', { exact: true }).waitFor();
        expect(await timeline.locator('li .what').allInnerTexts()).toEqual(['Queued', 'Sent']);
        const details = await page.locator('dl.kv').first().innerText();
        expect(details).toContain('Acme <hi@example.com>');
        expect(details).toContain('Ada Lovelace <ada@example.org>');

        const iframe = page.locator('iframe.preview-frame');
        // Its own document (/app/preview, with its own policy: test/api/console.test.ts), sandboxed without scripts.
        expect(await iframe.getAttribute('sandbox')).toBe('allow-same-origin');
        expect(await iframe.getAttribute('src')).toBe('/app/preview');
        const message = page.frameLocator('iframe.preview-frame');
        const h1 = message.getByRole('heading', { name: 'Thanks, Ada' });
        await h1.waitFor();
        // Styled (the inline style applied), and its script did not run.
        expect(await h1.evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color)).toBe('rgb(200, 0, 0)');
        expect(await message.locator('body').evaluate((b) => (b as unknown as { ownerDocument: { title: string } }).ownerDocument.title)).not.toBe('ran');
        expect(await message.locator('script').count()).toBe(0);
        // Its headers, and the whole message as sent: "Download raw" saves GET /emails/:id/raw as <id>.eml.
        const headers = await page.getByRole('region', { name: 'Headers' }).or(page.locator('section[aria-labelledby="headers-title"]')).first().innerText();
        expect(headers).toContain('Your receipt');
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download raw' }).click()]);
        expect(download.suggestedFilename()).toBe(`${ids.ada}.eml`);
        const raw = fs.readFileSync((await download.path())!, 'utf8');
        expect(raw).toMatch(/^Subject: Your receipt\r?$/m);
        expect(raw).toContain('ada@example.org');
        await checkA11y(page);
        await screenshot(page, 'email-detail', { fullPage: size === 'phone' });
      });
    });

    test('a failed email shows its error and the failure in its timeline', async () => {
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url('/app/emails?status=FAILED'));
        await heading(page, 'Emails');
        await page.getByRole('link', { name: 'nobody@example.org' }).click();
        await heading(page, 'Password reset');
        await page.getByText('Failed', { exact: true }).first().waitFor();
        expect(await page.locator('dl.kv').first().innerText()).toMatch(/550.*No such user here/);
        expect(await page.getByRole('list', { name: 'Timeline' }).locator('li .what').allInnerTexts()).toEqual(['Queued', 'Failed']);
      });
    });

    desktopOnly(size)('remote images load only after "Load remote images"', async () => {
      // Until the click, the preview's policy refuses the image (a CSP report); after it, the image is fetched (and
      // fails here: the host does not exist).
      await c.withPage({ viewport, as: 'member', expectErrors: [/img-src/, /ERR_NAME_NOT_RESOLVED|images\.example\.invalid/] }, async (page) => {
        await page.goto(c.url(`/app/emails/${ids.remote}`));
        await heading(page, 'Spring newsletter');
        const iframe = page.locator('iframe.preview-frame');
        expect(await iframe.getAttribute('src')).toBe('/app/preview');
        await page.frameLocator('iframe.preview-frame').getByText('Look:').waitFor();
        await page.getByRole('button', { name: 'Load remote images' }).click();
        await page.getByText('Remote images loaded').waitFor();
        expect(await iframe.getAttribute('src')).toBe('/app/preview?images=remote');
        expect(await iframe.getAttribute('sandbox')).toBe('allow-same-origin');
        // The message is back in the document that allows remote images.
        await page.frameLocator('iframe.preview-frame').getByText('Look:').waitFor();
      });
    });

    test('paging by cursor: Next, then Previous back to the same first page; filters and cursor in the URL', async () => {
      const admin = await person(c.db.knex, { [paged.id]: 'admin' }, { email: `pager-${size}@acme.test` });
      await c.withPage({ viewport, as: { ...admin, password: PASSWORD } }, async (page) => {
        await page.goto(c.url('/app/emails'));
        await heading(page, 'Emails');
        const rows = page.locator('tbody tr');
        await rows.first().waitFor();
        expect(await rows.count()).toBe(50);
        const first = await rows.first().getByRole('link').innerText();
        await page.getByText('50 shown · 55 in all').waitFor();
        await page.getByRole('button', { name: 'Next' }).click();
        await page.waitForURL(/cursor=/);
        await rowsToBe(page, 5);
        expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
        await page.getByRole('button', { name: 'Previous' }).click();
        await rowsToBe(page, 50);
        expect(await rows.first().getByRole('link').innerText()).toBe(first);
        expect(new URL(page.url()).searchParams.has('cursor')).toBe(false);
      });
    });

    desktopOnly(size)('sign-in → Emails → an email, with the keyboard alone', async () => {
      await c.withPage({ viewport }, async (page) => {
        await page.goto(c.url('/app/login'));
        await heading(page, 'Sign in to Herald');
        // The Email field has the focus.
        await page.keyboard.type(c.people.member.email);
        await page.keyboard.press('Tab');
        await page.keyboard.type(PASSWORD);
        await page.keyboard.press('Enter');
        await heading(page, 'Overview');
        if (size === 'phone') {
          await tabTo(page, "el.getAttribute('aria-label') === 'Menu'");
          await page.keyboard.press('Enter');
        }
        await tabTo(page, "el.tagName === 'A' && el.textContent === 'Emails'");
        await page.keyboard.press('Enter');
        await heading(page, 'Emails');
        await page.locator('tbody tr').first().waitFor();
        // `/` focuses the page's search.
        await page.keyboard.press('/');
        expect(await page.evaluate('document.activeElement && document.activeElement.getAttribute("type")')).toBe('search');
        await page.keyboard.type('bob@example.org');
        await page.keyboard.press('Enter');
        await page.waitForURL(/to=bob%40example\.org/);
        await rowsToBe(page, 1);
        await tabTo(page, "el.tagName === 'A' && el.textContent === 'bob@example.org'");
        await page.keyboard.press('Enter');
        await heading(page, 'Welcome aboard');
        await page.frameLocator('iframe.preview-frame').getByText('Hello Bob').waitFor();
      });
    });

    test('a viewer is offered no change; an empty log tells a member how to send, and a viewer what will appear', async () => {
      const viewer = await person(c.db.knex, { [empty.id]: 'viewer' }, { email: `empty-viewer-${size}@acme.test` });
      const member = await person(c.db.knex, { [empty.id]: 'member' }, { email: `empty-member-${size}@acme.test` });
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        for (const p of ['/app/emails', `/app/emails/${ids.ada}`, '/app', '/app/contacts', '/app/settings']) {
          await page.goto(c.url(p));
          await page.locator('h1').waitFor();
          await openMenu(page, size);
          const buttons = await page.getByRole('button').allInnerTexts();
          const offered = buttons.map((b) => b.trim()).filter((b) => !['Apply', 'Clear', 'Previous', 'Newest', 'Next', 'Sign out', 'Download raw', 'Export', ''].includes(b));
          expect([p, offered]).toEqual([p, []]);
        }
      });
      await c.withPage({ viewport, as: { ...viewer, password: PASSWORD } }, async (page) => {
        await page.goto(c.url('/app/emails'));
        await page.getByText('No email sent yet').waitFor();
        expect(await page.getByText('curl -X POST').count()).toBe(0);
      });
      await c.withPage({ viewport, as: { ...member, password: PASSWORD } }, async (page) => {
        await page.goto(c.url('/app/emails'));
        await page.getByText('No email sent yet').waitFor();
        expect(await page.locator('pre code').innerText()).toContain(`curl -X POST ${c.baseUrl}/v1/send`);
        await checkA11y(page);
        await screenshot(page, 'emails-empty');
      });
    });

    desktopOnly(size)('a recipient that is not an address is told under the field; an unknown email says so', async () => {
      await c.withPage({ viewport, as: 'viewer', expectErrors: [/status of 400/, /status of 404/] }, async (page) => {
        await page.goto(c.url('/app/emails?to=not-an-address'));
        await heading(page, 'Emails');
        const error = page.locator('#to-error');
        await error.waitFor();
        expect(await error.innerText()).toMatch(/to/);
        await page.goto(c.url('/app/emails/0192d7c2-0000-7000-8000-000000000000'));
        await page.getByText('No such email in this project').waitFor();
      });
    }, 60_000);

    desktopOnly(size)('dark: the log and an email read well (axe contrast) in the dark scheme', async () => {
      await c.withPage({ viewport, as: 'admin', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url('/app/emails'));
        await heading(page, 'Emails');
        await page.locator('tbody tr').first().waitFor();
        await checkA11y(page);
        await screenshot(page, 'emails', { dark: true });
        await page.goto(c.url(`/app/emails/${ids.ada}`));
        await heading(page, 'Your receipt');
        await page.frameLocator('iframe.preview-frame').getByText('Thanks, Ada').waitFor();
        await checkA11y(page);
        await screenshot(page, 'email-detail', { dark: true });
      });
    });
  });
});

/** Presses Tab until the focused element `el` satisfies `condition` (at most 40 times): a keyboard user's way there. */
async function tabTo(page: Page, condition: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`(() => { const el = document.activeElement; return !!el && (${condition}); })()`)) return;
  }
  throw new Error(`no focusable element with ${condition} within 40 presses of Tab`);
}

/** Waits until the table shows `n` rows (polled from here: the page's CSP refuses Playwright's string predicates). */
const rowsToBe = (page: Page, n: number) => waitFor(`${n} rows`, async () => ((await page.locator('tbody tr').count()) === n ? true : undefined), 15_000, 50);
