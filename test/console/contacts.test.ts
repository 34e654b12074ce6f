import type { Page } from 'playwright-core';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The Contacts pages in Chromium against a real Herald (the embedded engine delivering to a real SMTP server): a
 * member creates a contact, gets its data wrong (named before sending, then by the API's 422) and right, unsubscribes
 * it, finds it by search and filter, opens its page with the email sent to it, and deletes it after a confirmation
 * that names the address. A viewer is offered none of the changes.
 */
withChromium('the console: contacts', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium, { delivery: true }); }, 90_000);
  afterAll(async () => { await c?.close(); });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    // A 204 has no body: an empty data stands for it.
    return { status: res.status, body: (res.status === 204 ? { data: {} } : await res.json()) as { data: Record<string, unknown> } };
  };
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor();

  test('an empty project says how to add a first contact, with the curl of its own endpoint', async () => {
    await c.withPage({ as: 'member' }, async (page) => {
      await page.goto(c.url('/app/contacts'));
      await heading(page, 'Contacts');
      await page.getByRole('heading', { name: 'No contacts yet' }).waitFor();
      expect(await page.locator('.empty pre').innerText()).toContain(`curl ${c.baseUrl}/contacts`);
      await checkA11y(page);
      await screenshot(page, 'contacts-empty');
    });
  });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const address = `ada.${size}@example.org`;

    test('a member creates a contact, edits its data as JSON, unsubscribes it, finds it and opens its emails, then deletes it', async () => {
      // The 422 of a refused key is answered on purpose (and shown under the field).
      await c.withPage({ viewport, as: 'member', expectErrors: [/status of 422/] }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await heading(page, 'Contacts');

        // Create, with data.
        await page.getByRole('button', { name: 'New contact' }).first().click();
        const dialog = page.getByRole('dialog', { name: 'New contact' });
        await dialog.getByLabel('Email', { exact: true }).fill(address);
        await dialog.getByLabel('Data').fill('{"firstName": "Ada", "company": "Analytical"}');
        await checkA11y(page, 'the New contact dialog');
        await screenshot(page, 'contacts-new');
        await dialog.getByRole('button', { name: 'Create contact' }).click();
        await heading(page, address);
        await toast(page, `Contact ${address} created`);
        const id = page.url().split('/').pop()!;
        const stored = await api('GET', `/contacts/${id}`);
        expect(stored.body.data).toMatchObject({ email: address, subscribed: true, data: { firstName: 'Ada', company: 'Analytical' } });

        // An email to them, through the API as an app sends it.
        const sent = await api('POST', '/v1/send', { from: 'app@example.com', to: address, subject: `Welcome aboard, ${size}`, body: '<p>Hello Ada</p>' });
        expect(sent.status).toBe(200);

        // Data: a JSON mistake is named before anything is sent; a key the API refuses comes back under the field.
        const data = page.getByLabel('Data (JSON)');
        let patches = 0;
        page.on('request', (r) => { if (r.method() === 'PATCH' && r.url().includes(`/contacts/${id}`)) patches++; });
        await data.fill('{"plan": "pro",}');
        await page.getByRole('button', { name: 'Save data' }).click();
        await page.locator('.field-error').filter({ hasText: 'Not valid JSON' }).waitFor();
        expect(await data.getAttribute('aria-invalid')).toBe('true');
        expect(patches).toBe(0);
        await screenshot(page, 'contact-json-error');
        await data.fill(JSON.stringify({ plan: 'pro', [`k${'x'.repeat(120)}`]: 1 }));
        await page.getByRole('button', { name: 'Save data' }).click();
        await page.locator('.field-error').filter({ hasText: /kx+/ }).waitFor();
        expect(patches).toBe(1);
        // A good save: "company" removed, "plan" added.
        await data.fill('{\n  "firstName": "Ada",\n  "plan": "pro"\n}');
        await page.getByRole('button', { name: 'Save data' }).click();
        await toast(page, 'Data saved');
        expect((await api('GET', `/contacts/${id}`)).body.data.data).toEqual({ firstName: 'Ada', plan: 'pro' });

        // Unsubscribe.
        await page.getByRole('button', { name: 'Unsubscribe' }).click();
        await toast(page, `${address} unsubscribed`);
        await page.getByRole('button', { name: 'Subscribe', exact: true }).waitFor();
        expect((await api('GET', `/contacts/${id}`)).body.data.subscribed).toBe(false);

        // Find it: `/` focuses the search; the subscription filter narrows it; both live in the URL.
        await page.goto(c.url('/app/contacts'));
        await heading(page, 'Contacts');
        await page.getByRole('link', { name: address }).waitFor();
        await page.evaluate('document.activeElement?.blur()');
        await page.keyboard.press('/');
        expect(await page.evaluate('document.activeElement?.getAttribute("type")')).toBe('search');
        await page.keyboard.type(`ADA.${size}`);
        await page.waitForURL(/search=ADA\./i);
        // The list until then showed every contact: the search's answer leaves this one alone.
        await page.locator('tbody tr').nth(1).waitFor({ state: 'detached' });
        expect(await page.locator('tbody tr').count()).toBe(1);
        await page.locator('tbody tr').filter({ hasText: address }).waitFor();
        await page.getByLabel('Subscription').selectOption('true');
        await page.getByRole('heading', { name: 'No contact matches' }).waitFor();
        await page.getByLabel('Subscription').selectOption('false');
        await page.getByRole('link', { name: address }).waitFor();
        expect(page.url()).toContain('subscribed=false');
        await checkA11y(page, 'the contacts list, searched');
        await screenshot(page, 'contacts');

        // Its page: the email sent to it, which opens the email's page; its events.
        await page.getByRole('link', { name: address }).click();
        await heading(page, address);
        const emails = page.locator('section', { has: page.getByRole('heading', { name: 'Emails' }) });
        const subject = emails.getByRole('link', { name: `Welcome aboard, ${size}` });
        await subject.waitFor();
        const events = page.locator('section', { has: page.getByRole('heading', { name: 'Events' }) });
        await events.getByText('contact.unsubscribed').waitFor();
        await checkA11y(page, 'a contact');
        await screenshot(page, 'contact', { fullPage: true });
        await subject.click();
        await page.waitForURL(/\/app\/emails\/[0-9a-f-]{36}$/);
        expect(page.url()).toBe(c.url(`/app/emails/${(sent.body.data as { emails: { email: string }[] }).emails[0]!.email}`));

        // Delete, after a confirmation that names the address.
        await page.goBack();
        await heading(page, address);
        await page.getByRole('button', { name: 'Delete', exact: true }).click();
        const confirm = page.getByRole('dialog', { name: `Delete ${address}?` });
        await confirm.waitFor();
        await checkA11y(page, 'the delete confirmation');
        await screenshot(page, 'contact-delete');
        await confirm.getByRole('button', { name: 'Delete contact' }).click();
        await heading(page, 'Contacts');
        await toast(page, `${address} deleted`);
        expect((await api('GET', `/contacts/${id}`)).status).toBe(404);
      });
    }, 90_000);

    desktopOnly(size)('in the dark, the list and a contact read well', async () => {
      const made = await api('POST', '/contacts', { email: `grace.${size}@example.org`, data: { firstName: 'Grace', plan: 'team' } });
      await c.withPage({ viewport, as: 'member', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await page.getByRole('link', { name: `grace.${size}@example.org` }).waitFor();
        await checkA11y(page, 'contacts, dark');
        await screenshot(page, 'contacts', { dark: true });
        await page.goto(c.url(`/app/contacts/${(made.body.data as { id: string }).id}`));
        await heading(page, `grace.${size}@example.org`);
        await checkA11y(page, 'a contact, dark');
        await screenshot(page, 'contact', { dark: true });
      });
    });

    test('a viewer sees contacts and a contact page with no create, edit or delete', async () => {
      const made = await api('POST', '/contacts', { email: `vera.sees.${size}@example.org`, data: { source: 'import' } });
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await page.getByRole('link', { name: `vera.sees.${size}@example.org` }).waitFor();
        expect(await page.getByRole('button', { name: 'New contact' }).count()).toBe(0);
        await page.getByRole('link', { name: `vera.sees.${size}@example.org` }).click();
        await heading(page, `vera.sees.${size}@example.org`);
        await page.getByText('"source": "import"').waitFor();
        for (const name of ['Unsubscribe', 'Subscribe', 'Delete', 'Save data']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
        expect(await page.locator('textarea').count()).toBe(0);
        await checkA11y(page, 'a contact, as a viewer');
        await screenshot(page, 'contact-viewer');
      });
      expect(made.status).toBe(201);
    });

    desktopOnly(size)('an address that is no contact of the project is a page that says so', async () => {
      await c.withPage({ viewport, as: 'member', expectErrors: [/404/] }, async (page) => {
        await page.goto(c.url('/app/contacts/0190a0a0-0000-7000-8000-000000000000'));
        await heading(page, 'Contact not found');
        await page.getByRole('button', { name: 'Back to contacts' }).waitFor();
      });
    });
  });
});
