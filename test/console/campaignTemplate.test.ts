import type { Page } from 'playwright-core';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { waitFor } from '../support/processes';
import type { Received } from '../support/smtp';

/**
 * A campaign written from a template, in Chromium against a real Herald delivering to a real SMTP server: choose
 * "Use a template", find it, see its subject and sender as the fields' placeholders and its Markdown rendered in the
 * preview, override the subject, send a test that arrives rendered, send it, and see on the campaign's page which
 * template it used. The choice with the keyboard alone. At 1280×800 and 390×844, axe on every view, screenshots.
 */
let c: ConsoleHarness;
let digestId: string;

async function api(path: string, method = 'GET', body?: unknown): Promise<{ status: number; data: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const json = res.status === 204 ? {} : await res.json() as { data: unknown };
  return { status: res.status, data: (json as { data: unknown }).data };
}

const received = (to: string, subject: RegExp): Received[] =>
  c.smtp!.received.filter((m) => m.envelopeTo.includes(to) && subject.test(String(m.parsed.subject ?? '')));

/** Focuses the next element (Tab) until `condition` (an expression over `el`) holds. */
async function tabTo(page: Page, condition: string, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`(() => { const el = document.activeElement; return !!el && (${condition}); })()`)) return;
  }
  throw new Error(`no focusable element with ${condition} within ${max} presses of Tab`);
}

withChromium('the campaign composer with a template', (chromium) => {
  beforeAll(async () => {
    c = await startConsole(chromium, { delivery: true });
    for (const [name, firstName] of [['ada', 'Ada'], ['bob', 'Bob']]) {
      expect((await api('/contacts', 'POST', { email: `${name}@example.org`, subscribed: true, data: { firstName } })).status).toBeLessThan(300);
    }
    digestId = (await api('/templates', 'POST', {
      name: 'Monthly digest', type: 'MARKETING', bodyType: 'markdown', subject: 'Your monthly digest, {{ data.firstName | default: "friend" }}',
      body: '# Hello {{ data.firstName | default: "there" }}\n\nHere is what is **new** this month:\n\n- faster sends\n- a template for every campaign',
      from: 'digest@example.com', fromName: 'Acme Digest', replyTo: 'team@example.com',
    })).data.id;
    // Enough templates that the list can be searched.
    for (const [name, subject, type] of [['Password reset', 'Reset your password', 'TRANSACTIONAL'], ['Receipt', 'Your receipt', 'TRANSACTIONAL'],
      ['Welcome', 'Welcome aboard', 'MARKETING'], ['Product launch', 'Something new from Acme', 'MARKETING']] as const) {
      expect((await api('/templates', 'POST', { name, subject, type, body: `<p>${subject}</p>`, from: 'hello@example.com' })).status).toBe(201);
    }
  }, 120_000);
  afterAll(async () => { await c?.close(); });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('pick a template, override its subject, send a test that arrives rendered, send it, see which template it used', async () => {
      const name = `Digest (${size})`;
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/campaigns/new'));
        await heading(page, 'New campaign');
        await page.getByLabel('Campaign name').fill(name);
        await page.getByLabel('Use a template').check();
        await page.getByLabel('Find a template').fill('digest');
        const options = page.locator('.template-option');
        await waitFor('the search to leave one template', async () => ((await options.count()) === 1 || undefined), 10_000);
        await page.getByRole('radio', { name: /Monthly digest/ }).check();

        // The template's subject and sender are the fields' placeholders; its Markdown is rendered in the preview.
        expect(await page.getByLabel('Subject').getAttribute('placeholder')).toBe('Your monthly digest, {{ data.firstName | default: "friend" }}');
        expect(await page.getByLabel('From address').inputValue()).toBe('');
        expect(await page.getByLabel('From address').getAttribute('placeholder')).toBe('digest@example.com');
        expect(await page.getByLabel('From name').getAttribute('placeholder')).toBe('Acme Digest');
        const preview = page.locator('.composer-preview');
        await preview.frameLocator('iframe.preview-frame').getByRole('heading', { name: 'Hello there' }).waitFor();
        await preview.frameLocator('iframe.preview-frame').getByText('a template for every campaign').waitFor();
        await preview.getByText('Acme Digest <digest@example.com>').waitFor();
        expect(await page.getByRole('link', { name: 'Edit “Monthly digest”' }).getAttribute('href')).toBe(`/app/templates/${digestId}`);
        await checkA11y(page);
        await page.locator('.template-picker').scrollIntoViewIfNeeded();
        await screenshot(page, 'campaign-template-picker');

        // Its own subject, over the template's.
        await page.getByLabel('Subject').fill(`Special digest ${size} for {{ data.firstName | default: "you" }}`);
        // The preview's subject is rendered as its message is.
        await preview.getByText(`Special digest ${size} for you`, { exact: true }).waitFor();
        await checkA11y(page);
        await screenshot(page, 'campaign-template-composer', { fullPage: true });

        await page.getByRole('button', { name: 'Send test…' }).click();
        const testDialog = page.getByRole('dialog', { name: 'Send a test' });
        await testDialog.getByRole('button', { name: 'Send test' }).click();
        await page.getByText(`Test sent to ${c.people.member.email}`).waitFor();
        await page.waitForURL(/\/app\/campaigns\/[0-9a-f-]{36}$/);
        const id = new URL(page.url()).pathname.split('/').pop()!;
        const copy = await waitFor('the test copy at the SMTP server', () => received(c.people.member.email, new RegExp(`^\\[TEST\\] Special digest ${size} for you$`))[0], 30_000);
        expect(copy.parsed.html).toContain('<h1>Hello there</h1>');
        expect(copy.parsed.html).toContain('<strong>new</strong>');
        expect(copy.parsed.from?.value[0]).toEqual({ name: 'Acme Digest', address: 'digest@example.com' });
        expect((await api(`/campaigns/${id}`)).data).toMatchObject({ status: 'DRAFT', templateId: digestId, subject: `Special digest ${size} for {{ data.firstName | default: "you" }}`, body: null, from: null });

        // Opened again, the draft is still written from the template.
        await page.reload();
        await heading(page, name);
        expect(await page.getByLabel('Use a template').isChecked()).toBe(true);
        expect(await page.getByRole('radio', { name: /Monthly digest/ }).isChecked()).toBe(true);

        await page.getByRole('button', { name: 'Send now…' }).click();
        const confirm = page.getByRole('dialog', { name: 'Send to 2 contacts now?' });
        await confirm.getByRole('button', { name: 'Send now' }).click();
        await page.locator('.campaign-lede').getByText('Sent', { exact: true }).waitFor({ timeout: 60_000 });
        const mail = await waitFor('Bob\'s copy', () => received('bob@example.org', new RegExp(`^Special digest ${size} for Bob$`))[0], 30_000);
        expect(mail.parsed.html).toContain('<h1>Hello Bob</h1>');

        // The campaign's page names its template, and shows the message it sent, rendered.
        const details = page.locator('.campaign-details-grid');
        expect(await details.getByRole('link', { name: 'Monthly digest' }).getAttribute('href')).toBe(`/app/templates/${digestId}`);
        await details.getByText('Acme Digest <digest@example.com>').waitFor();
        await details.frameLocator('iframe.preview-frame').getByRole('heading', { name: 'Hello there' }).waitFor();
        await checkA11y(page);
        await details.scrollIntoViewIfNeeded();
        await screenshot(page, 'campaign-template-sent');
      });
    });

    desktopOnly(size)('the template choice with the keyboard alone', async () => {
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/campaigns/new'));
        await heading(page, 'New campaign');
        await tabTo(page, "el.tagName === 'INPUT' && el.labels && el.labels[0] && el.labels[0].textContent === 'Campaign name'");
        await page.keyboard.type(`Keyboard digest (${size})`);
        // The content choice is a radio group: Tab reaches the checked one, an arrow moves the choice.
        await tabTo(page, "el.type === 'radio' && el.name === 'content'");
        await page.keyboard.press('ArrowDown');
        expect(await page.getByLabel('Use a template').isChecked()).toBe(true);
        await tabTo(page, "el.type === 'search'");
        await page.keyboard.type('launch');
        await tabTo(page, "el.type === 'radio' && el.name !== 'content'");
        await page.keyboard.press('Space');
        expect(await page.getByRole('radio', { name: /Product launch/ }).isChecked()).toBe(true);
        await page.locator('.composer-preview').frameLocator('iframe.preview-frame').getByText('Something new from Acme').waitFor();
        await tabTo(page, "el.tagName === 'BUTTON' && el.textContent === 'Save draft'");
        await page.keyboard.press('Enter');
        await page.getByText('Draft saved').waitFor();
        const id = new URL(page.url()).pathname.split('/').pop()!;
        const saved = (await api(`/campaigns/${id}`)).data;
        const launch = (await api('/templates?limit=100')).data.items.find((t: { name: string }) => t.name === 'Product launch');
        expect(saved).toMatchObject({ templateId: launch.id, subject: null, body: null, from: null });
        await checkA11y(page);
      });
    });
  });
});
