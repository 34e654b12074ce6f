import fs from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { Page } from 'playwright-core';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * Contacts' export and erasure in the console (issue 30), in Chromium against a real Herald: a member exports a
 * segment's contacts as CSV with the columns chosen (the downloaded file's rows checked), a viewer downloads a
 * contact's data, an admin erases a contact after typing its address; a member and a viewer are offered no Erase.
 */
withChromium('the console: contact export and erasure', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium); }, 90_000);
  afterAll(async () => { await c?.close(); });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (res.status === 204 ? { data: {} } : await res.json()) as { data: Record<string, unknown> } };
  };
  const contact = async (email: string, data: Record<string, unknown>) => {
    const res = await api('POST', '/contacts', { email, data });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor();
  const downloaded = async (page: Page, click: () => Promise<void>) => {
    const [file] = await Promise.all([page.waitForEvent('download'), click()]);
    return { name: file.suggestedFilename(), bytes: fs.readFileSync((await file.path())!) };
  };

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('a member exports a segment\'s contacts as CSV for Excel, with the columns chosen, using the keyboard', async () => {
      const tier = `gold-${size}`;
      await contact(`zoe.${size}@example.org`, { tier, city: 'Zoë-sur-Mer' });
      await contact(`bo.${size}@example.org`, { tier: `silver-${size}`, city: 'Oslo' });
      await contact(`ann.${size}@example.org`, { tier, city: 'Århus' });
      const segment = await api('POST', '/segments', { name: `Gold ${size}`, type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.tier', operator: 'equals', value: tier }] }] } });
      expect(segment.status).toBe(201);

      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await heading(page, 'Contacts');
        await page.getByRole('button', { name: 'Export' }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog', { name: 'Export contacts' });
        await dialog.waitFor();
        // The data keys are the project's, as the audience builder lists them.
        await dialog.getByLabel('data.tier').waitFor();
        await dialog.getByLabel('Contacts').selectOption({ label: `Gold ${size}` });
        expect(await dialog.getByLabel('Format').inputValue()).toBe('csv');
        for (const column of ['createdAt', 'updatedAt', 'data.tier', 'data.city']) {
          await dialog.getByLabel(column, { exact: true }).focus();
          await page.keyboard.press('Space');
        }
        await dialog.getByLabel('For Excel').check();
        await checkA11y(page, 'the Export dialog');
        await screenshot(page, 'contacts-export');

        const file = await downloaded(page, () => dialog.getByRole('button', { name: 'Download' }).click());
        expect(file.name).toMatch(/^contacts-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.csv$/);
        // The byte order mark asked for, then the rows of the segment only, in the columns' order as offered.
        expect([...file.bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
        const rows = parse(file.bytes.subarray(3).toString('utf8'), { columns: true }) as Record<string, string>[];
        expect(Object.keys(rows[0]!)).toEqual(['email', 'subscribed', 'data.city', 'data.tier']);
        expect(rows).toEqual([
          { email: `zoe.${size}@example.org`, subscribed: 'true', 'data.city': 'Zoë-sur-Mer', 'data.tier': tier },
          { email: `ann.${size}@example.org`, subscribed: 'true', 'data.city': 'Århus', 'data.tier': tier },
        ]);
        await toast(page, /Downloaded contacts-/);
        await page.getByRole('dialog', { name: 'Export contacts' }).waitFor({ state: 'detached' });

        // Clearing every column is named before anything is asked; Escape leaves.
        await page.getByRole('button', { name: 'Export' }).click();
        await dialog.getByRole('button', { name: 'Clear' }).click();
        await dialog.getByRole('button', { name: 'Download' }).click();
        await dialog.getByText('Choose at least one column.').waitFor();
        await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'detached' });
      });
    });

    test('a viewer downloads a contact\'s data and is offered no Erase; neither is a member', async () => {
      const id = await contact(`data.${size}@example.org`, { plan: 'pro' });
      expect((await api('POST', '/v1/track', { event: 'signed_up', email: `data.${size}@example.org`, data: { from: 'ads' } })).status).toBeLessThan(300);
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url(`/app/contacts/${id}`));
        await heading(page, `data.${size}@example.org`);
        expect(await page.getByText('Erasure').count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Erase' }).count()).toBe(0);
        const file = await downloaded(page, () => page.getByRole('button', { name: 'Download data' }).click());
        expect(file.name).toBe(`contact-${id}.json`);
        const doc = JSON.parse(file.bytes.toString('utf8')) as { contact: { email: string; data: unknown }; events: { name: string }[] };
        expect(doc.contact).toMatchObject({ email: `data.${size}@example.org`, data: { plan: 'pro' } });
        expect(doc.events.map((e) => e.name)).toContain('signed_up');
        await toast(page, `Downloaded contact-${id}.json`);
      });
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url(`/app/contacts/${id}`));
        await heading(page, `data.${size}@example.org`);
        await page.getByRole('button', { name: 'Delete' }).waitFor();
        expect(await page.getByText('Erasure').count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Erase' }).count()).toBe(0);
      });
    });

    test('an admin erases a contact once its address is typed: back to the list, the contact gone, only its hash suppressed', async () => {
      const address = `erase.${size}@example.org`;
      const id = await contact(address, { plan: 'pro' });
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url(`/app/contacts/${id}`));
        await heading(page, address);
        await page.getByRole('region', { name: 'Erasure' }).getByText('It cannot be undone.').waitFor();
        await page.getByRole('button', { name: 'Erase contact' }).click();
        const dialog = page.getByRole('dialog', { name: `Erase ${address}?` });
        await dialog.getByText('This cannot be undone.').waitFor();
        await dialog.getByText(/keyed hash of the address/).waitFor();
        const confirm = dialog.getByRole('button', { name: 'Erase permanently' });
        expect(await confirm.isDisabled()).toBe(true);
        const typed = dialog.getByLabel(`Type ${address} to confirm`);
        await typed.fill('erase@example.org');
        await page.keyboard.press('Enter');
        expect(await confirm.isDisabled()).toBe(true);
        expect((await api('GET', `/contacts/${id}`)).status).toBe(200);
        await typed.fill(address);
        await checkA11y(page, 'the Erase dialog');
        await screenshot(page, 'contact-erase');
        await page.keyboard.press('Enter');
        await heading(page, 'Contacts');
        expect(new URL(page.url()).pathname).toBe('/app/contacts');
        await toast(page, `${address} erased`);
      });
      expect((await api('GET', `/contacts/${id}`)).status).toBe(404);
      const erased = await api('GET', '/suppressions?reason=erased&limit=100');
      const entries = erased.body.data.items as { email: string; details: { contactId?: string } }[];
      expect(entries.find((e) => e.details.contactId === id)?.email).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
      expect(entries.some((e) => e.email === address)).toBe(false);
    });
  });

  test('the contact page\'s actions at both widths (screenshots)', async () => {
    const id = await contact('shots@example.org', { plan: 'pro' });
    for (const [, viewport] of VIEWPORTS) {
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url(`/app/contacts/${id}`));
        await heading(page, 'shots@example.org');
        await page.getByRole('button', { name: 'Erase contact' }).waitFor();
        await checkA11y(page);
        await screenshot(page, 'contact-actions');
      });
    }
  });
});
