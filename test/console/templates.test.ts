import type { Page } from 'playwright-core';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, holdFirstAnswer, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The Templates pages in Chromium against a real Herald (the embedded engine delivering to a real SMTP server): a
 * member writes a Markdown template with Liquid variables in CodeMirror, sees Herald's preview render them for a
 * contact chosen by search and for typed variables (and a syntax error as the API's message, next to the preview),
 * saves it, sends a test to themselves that arrives at the SMTP server, is asked before leaving with unsaved changes,
 * finds it in the list by type, and deletes it after a confirmation. A viewer reads and previews, and is offered no
 * change.
 */
withChromium('the console: templates', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium, { delivery: true }); }, 90_000);
  afterAll(async () => { await c?.close(); });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (res.status === 204 ? { data: {} } : await res.json()) as { data: Record<string, unknown> } };
  };
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor();
  /** The body's editor: CodeMirror's editable element, in the shadow root of its host (Playwright's locators pierce it). */
  const body = (page: Page) => page.getByRole('textbox', { name: /^Body/ });
  /**
   * Replaces the body as a person types it: CodeMirror's select-all, then each line as typed text and Enter (a fill of
   * the editable element would go through the browser's own editing, which writes style attributes the CSP refuses).
   */
  const writeBody = async (page: Page, text: string) => {
    await body(page).click();
    await page.keyboard.press('ControlOrMeta+A');
    const lines = text.split('\n');
    for (const [i, line] of lines.entries()) {
      if (line) await page.keyboard.insertText(line);
      if (i < lines.length - 1) await page.keyboard.press('Enter');
    }
  };
  const preview = (page: Page) => page.frameLocator('iframe.preview-frame');
  const previewSubject = (page: Page) => page.locator('.preview-subject dd');

  test('an empty project says how to make a first template, with the curl of its own endpoint', async () => {
    await c.withPage({ as: 'member' }, async (page) => {
      await page.goto(c.url('/app/templates'));
      await heading(page, 'Templates');
      await page.getByRole('heading', { name: 'No templates yet' }).waitFor();
      expect(await page.locator('.empty pre').innerText()).toContain(`curl ${c.baseUrl}/templates`);
      await page.locator('.empty').getByRole('link', { name: 'New template' }).waitFor();
      await checkA11y(page);
      await screenshot(page, 'templates-empty');
    });
  });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const name = `Welcome ${size}`;
    const address = `ada.${size}@example.org`;

    test('a member writes a Markdown template, previews it for a contact, saves it, sends a test to themselves, finds it and deletes it', async () => {
      await api('POST', '/contacts', { email: address, data: { firstName: `Ada ${size}`, plan: 'team' } });
      // The preview's 422 for a syntax error is answered on purpose (and shown next to the preview).
      await c.withPage({ viewport, as: 'member', expectErrors: [/status of 422/] }, async (page) => {
        await page.goto(c.url('/app/templates'));
        await heading(page, 'Templates');
        await page.getByRole('link', { name: 'New template' }).first().click();
        await heading(page, 'New template');

        // Write it: Markdown, Liquid in the subject and the body.
        await page.getByLabel('Name', { exact: true }).fill(name);
        await page.getByRole('group', { name: 'Format' }).getByRole('button', { name: 'Markdown' }).click();
        await page.getByLabel('Subject', { exact: true }).fill('Welcome, {{ data.firstName }}');
        await writeBody(page, '# Hello {{ data.firstName }}\n\nYour plan: **{{ plan | default: data.plan }}**.');
        await page.getByLabel('From', { exact: true }).fill('hello@example.com');
        await page.getByLabel('From name').fill('Acme');

        // Without a contact, Herald renders it for a recipient with no data.
        await preview(page).getByRole('heading', { name: 'Hello', exact: true }).waitFor();

        // Choose the contact by search; then variables override what the template reads at the top level.
        const search = page.getByRole('combobox', { name: 'Contact' });
        await search.fill(`ada.${size}`);
        await page.getByRole('option', { name: new RegExp(address.replace(/\./g, '\\.')) }).click();
        await page.locator('.contact-chosen').filter({ hasText: address }).waitFor();
        await preview(page).getByRole('heading', { name: `Hello Ada ${size}` }).waitFor();
        await preview(page).getByText('Your plan: team.').waitFor();
        await page.getByLabel('Variables (JSON)').fill('{"plan": "pro"}');
        await preview(page).getByText('Your plan: pro.').waitFor();
        expect(await previewSubject(page).innerText()).toBe(`Welcome, Ada ${size}`);
        // The Liquid in the editor is marked.
        expect(await page.locator('.code-editor').evaluate((host) => host.shadowRoot!.querySelectorAll('.cm-liquid').length)).toBe(2);
        await checkA11y(page, 'the new template with its preview');
        await screenshot(page, 'template-editor', { fullPage: true });

        // A syntax error: the API's message next to the preview, the last good render kept under it.
        await writeBody(page, '# Hello {% if %}');
        const error = page.locator('.preview-error');
        await error.filter({ hasText: 'Body: invalid template syntax' }).waitFor();
        await screenshot(page, 'template-preview-error');
        await writeBody(page, '# Hello {{ data.firstName }}\n\nYour plan: **{{ plan | default: data.plan }}**.');
        await error.waitFor({ state: 'detached' });

        // Save: created, and the address is now the template's own.
        await page.getByRole('button', { name: 'Create template' }).click();
        await toast(page, `Template “${name}” created`);
        await page.waitForURL(/\/app\/templates\/[0-9a-f-]{36}$/);
        await heading(page, name);
        const id = page.url().split('/').pop()!;
        expect((await api('GET', `/templates/${id}`)).body.data).toMatchObject({
          name, subject: 'Welcome, {{ data.firstName }}', body: '# Hello {{ data.firstName }}\n\nYour plan: **{{ plan | default: data.plan }}**.',
          bodyType: 'markdown', type: 'TRANSACTIONAL', from: 'hello@example.com', fromName: 'Acme',
        });

        // A test to themselves, for the contact the preview kept through the save: it arrives at the SMTP server.
        await page.locator('.contact-chosen').filter({ hasText: address }).waitFor();
        await preview(page).getByRole('heading', { name: `Hello Ada ${size}` }).waitFor();
        const before = c.smtp!.received.length;
        await page.getByRole('button', { name: 'Send test' }).click();
        const dialog = page.getByRole('dialog', { name: 'Send a test' });
        expect(await dialog.getByLabel('To').inputValue()).toBe('member@acme.test');
        await checkA11y(page, 'the Send a test dialog');
        await screenshot(page, 'template-test');
        await dialog.getByRole('button', { name: 'Send test' }).click();
        await toast(page, 'Test sent to member@acme.test');
        const [mail] = (await c.smtp!.waitFor(before + 1)).slice(before);
        expect(mail!.envelopeTo).toEqual(['member@acme.test']);
        expect(mail!.parsed.subject).toBe(`[TEST] Welcome, Ada ${size}`);
        expect(mail!.parsed.html).toContain(`<h1>Hello Ada ${size}</h1>`);
        expect(mail!.parsed.from?.text).toBe('"Acme" <hello@example.com>');

        // Unsaved changes: leaving by a link asks first; staying keeps them, leaving drops them.
        await page.getByLabel('Type').selectOption('MARKETING');
        await page.locator('.page-header').getByText('Unsaved changes').waitFor();
        await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Templates' }).click();
        const leave = page.getByRole('dialog', { name: 'Leave without saving?' });
        await leave.waitFor();
        await leave.getByRole('button', { name: 'Cancel' }).click();
        expect(page.url()).toBe(c.url(`/app/templates/${id}`));
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await toast(page, 'Template saved');
        expect((await api('GET', `/templates/${id}`)).body.data.type).toBe('MARKETING');

        // The list: found, by its type.
        await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Templates' }).click();
        await heading(page, 'Templates');
        const row = page.locator('tbody tr').filter({ hasText: name });
        await row.waitFor();
        expect(await row.getByText('Marketing').count()).toBe(1);
        await page.getByLabel('Type').selectOption('TRANSACTIONAL');
        await page.waitForURL(/type=TRANSACTIONAL/);
        await row.waitFor({ state: 'detached' });
        await page.getByLabel('Type').selectOption('MARKETING');
        await row.waitFor();
        await checkA11y(page, 'the templates list');
        await screenshot(page, 'templates');

        // Delete, after a confirmation that names it.
        await page.getByRole('link', { name, exact: true }).click();
        await heading(page, name);
        await page.getByRole('button', { name: 'Delete', exact: true }).click();
        const confirm = page.getByRole('dialog', { name: `Delete ${name}?` });
        await confirm.getByRole('button', { name: 'Delete template' }).click();
        await heading(page, 'Templates');
        await toast(page, `Template “${name}” deleted`);
        expect((await api('GET', `/templates/${id}`)).status).toBe(404);
      });
    }, 120_000);

    test('a viewer reads a template and previews it, and is offered no change', async () => {
      const made = await api('POST', '/templates', {
        name: `Receipt ${size}`, subject: 'Your receipt {{ orderId }}', body: '<h1>Thanks for order {{ orderId }}</h1><p>Total: {{ total }}</p>',
        from: 'billing@example.com', description: 'After each payment',
      });
      const id = (made.body.data as { id: string }).id;
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/templates'));
        await heading(page, 'Templates');
        await page.getByRole('link', { name: `Receipt ${size}` }).waitFor();
        expect(await page.getByRole('link', { name: 'New template' }).count()).toBe(0);
        await page.getByRole('link', { name: `Receipt ${size}` }).click();
        await heading(page, `Receipt ${size}`);
        await page.getByText('Read-only: your role can preview, not edit').waitFor();
        for (const label of ['Save', 'Delete', 'Send test', 'Create template']) expect(await page.getByRole('button', { name: label, exact: true }).count()).toBe(0);
        expect(await page.getByLabel('Name', { exact: true }).getAttribute('readonly')).not.toBeNull();
        expect(await body(page).getAttribute('contenteditable')).toBe('false');
        // Previewing changes nothing: a viewer may.
        await page.getByLabel('Variables (JSON)').fill('{"orderId": "A-1024", "total": "€42"}');
        await preview(page).getByRole('heading', { name: 'Thanks for order A-1024' }).waitFor();
        expect(await previewSubject(page).innerText()).toBe('Your receipt A-1024');
        await checkA11y(page, 'a template, read-only');
        await screenshot(page, 'template-viewer', { fullPage: true });
        // The editor's own address for a new template says what the role cannot do.
        await page.goto(c.url('/app/templates/new'));
        await page.getByRole('heading', { name: 'Your role cannot create templates' }).waitFor();
      });
      await api('DELETE', `/templates/${id}`);
    }, 60_000);

    desktopOnly(size)('the answer to the page\'s own GET, come after the first save, never takes back what was typed since', async () => {
      const name = `Late answer ${size}`;
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        // The answer to the GET begun when the first save moved the page to the template's URL is held back until a
        // new subject is typed (as a loaded machine may do).
        let typed!: () => void;
        const subjectTyped = new Promise<void>((resolve) => { typed = resolve; });
        const { held, delivered } = await holdFirstAnswer(page, /\/templates\/[0-9a-f-]{36}$/, subjectTyped);
        await page.goto(c.url('/app/templates/new'));
        await heading(page, 'New template');
        await page.getByLabel('Name', { exact: true }).fill(name);
        await page.getByLabel('Subject', { exact: true }).fill('First subject');
        await writeBody(page, '<p>Hello</p>');
        await page.getByLabel('From', { exact: true }).fill('hello@example.com');
        await page.getByRole('button', { name: 'Create template' }).click();
        await toast(page, `Template “${name}” created`);
        await page.waitForURL(/\/app\/templates\/[0-9a-f-]{36}$/);
        await page.getByLabel('Subject', { exact: true }).fill('Second subject');
        typed();
        await delivered;
        // Two frames for the answer to be rendered, had it been taken.
        await page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
        expect(held()).toBeGreaterThan(0);
        expect(await page.getByLabel('Subject', { exact: true }).inputValue()).toBe('Second subject');
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await toast(page, 'Template saved');
        const id = page.url().split('/').pop()!;
        expect((await api('GET', `/templates/${id}`)).body.data).toMatchObject({ name, subject: 'Second subject' });
        await api('DELETE', `/templates/${id}`);
      });
    });

    desktopOnly(size)('in the dark, the editor and its preview read well', async () => {
      const made = await api('POST', '/templates', {
        name: `Dark ${size}`, subject: 'Hi {{ data.firstName }}', bodyType: 'markdown', from: 'hello@example.com',
        body: '# Hello {{ data.firstName | default: "there" }}\n\n{% if plan %}Your plan: **{{ plan }}**{% endif %}\n\n<a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      });
      const id = (made.body.data as { id: string }).id;
      await c.withPage({ viewport, as: 'member', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url(`/app/templates/${id}`));
        await heading(page, `Dark ${size}`);
        await preview(page).getByRole('heading', { name: 'Hello there' }).waitFor();
        await checkA11y(page, 'a template, dark');
        await screenshot(page, 'template-editor', { dark: true });
      });
      await api('DELETE', `/templates/${id}`);
    }, 60_000);
  });
});
