import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * The Webhooks pages in Chromium against a real Herald whose engine delivers to a real HTTP receiver on loopback
 * (allowed as the webhook tests allow theirs: `allowPrivate`). An admin creates an endpoint with its event types and
 * is shown its secret once (copied with the button); a contact's creation reaches the receiver signed with it; the
 * delivery shows status, response code and latency; the secret is rotated (the new one shown once), the delivery sent
 * again (signed with the new secret), the endpoint disabled and deleted after a confirmation. A viewer is offered
 * none of the changes.
 */
withChromium('the console: webhooks', (chromium) => {
  let c: ConsoleHarness;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    c = await startConsole(chromium, { delivery: true, outboundWebhooks: { http: { allowPrivate: ['127.0.0.1'], timeoutMs: 2000, maxResponseBytes: 1024 }, retryDelaysMs: [300] } });
  }, 90_000);
  afterAll(async () => { await c?.close(); await receiver?.close(); });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: res.status === 204 ? null : (await res.json()) as { data: Record<string, unknown> } };
  };
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor();
  const until = async (what: string, check: () => boolean, ms = 20_000) => {
    const end = Date.now() + ms;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  test('no endpoint yet: the page says what webhooks are for, with the curl of the project\'s endpoint', async () => {
    await c.withPage({ as: 'admin' }, async (page) => {
      await page.goto(c.url('/app/webhooks'));
      await heading(page, 'Webhooks');
      await page.getByRole('heading', { name: 'No webhook endpoints yet' }).waitFor();
      expect(await page.locator('.empty pre').innerText()).toContain(`curl ${c.baseUrl}/webhooks`);
      await checkA11y(page);
      await screenshot(page, 'webhooks-empty');
    });
  });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const path = `/hooks/${size}`;

    test('an admin creates an endpoint, sees its secret once, sees a delivery, rotates the secret, redelivers, disables and deletes it', async () => {
      await c.withPage({ viewport, as: 'admin' }, async (page, context) => {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.baseUrl });
        await page.goto(c.url('/app/webhooks'));
        await heading(page, 'Webhooks');

        // Create: the URL and the event types (at least one, said before sending).
        await page.getByRole('button', { name: 'New endpoint' }).first().click();
        const dialog = page.getByRole('dialog', { name: 'New webhook endpoint' });
        await dialog.getByLabel('URL').fill(`${receiver.url}${path}`);
        await dialog.getByRole('button', { name: 'Create endpoint' }).click();
        await dialog.getByText('Choose at least one event type').waitFor();
        for (const type of ['contact.created', 'contact.updated']) await dialog.getByLabel(type, { exact: true }).check();
        await checkA11y(page, 'the new endpoint dialog');
        await screenshot(page, 'webhooks-new');
        await dialog.getByRole('button', { name: 'Create endpoint' }).click();

        // Its secret, once, with a copy button and a clear word that it will not be shown again.
        const shown = page.getByRole('dialog', { name: 'Endpoint created: its signing secret' });
        await shown.getByText('you will not see it again').waitFor();
        const secret = await shown.locator('[data-copy-value]').innerText();
        expect(secret).toMatch(/^whsec_/);
        await shown.getByRole('button', { name: 'Copy signing secret' }).click();
        await shown.getByRole('button', { name: 'Copied signing secret' }).waitFor();
        expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
        await checkA11y(page, 'the secret dialog');
        await screenshot(page, 'webhooks-secret');
        await shown.getByRole('button', { name: 'I have copied it' }).click();
        await heading(page, 'Webhook endpoint');
        const id = page.url().split('/').pop()!;
        expect(JSON.stringify((await api('GET', `/webhooks/${id}`)).body)).not.toContain('whsec_');

        // A contact is made: the real receiver gets the event, signed with the secret shown.
        const made = await api('POST', '/contacts', { email: `hooked.${size}@example.org` });
        expect(made.status).toBe(201);
        await until('the delivery', () => receiver.received.some((r) => r.path === path));
        const first = receiver.verified(secret, path);
        expect(first.map((d) => d.payload.type)).toEqual(['contact.created']);
        await page.getByRole('button', { name: 'Refresh deliveries' }).click();
        const row = page.locator('tr[data-delivery]').first();
        await row.getByText('Succeeded').waitFor();
        await row.getByText('204').waitFor();
        if (size === 'desktop') await row.getByText(/^\d[\d,]* ms$/).waitFor();
        await row.locator('time:visible').waitFor();
        await checkA11y(page, 'an endpoint with a delivery');
        await screenshot(page, 'webhook', { fullPage: true });

        // Rotate: confirmed, then the new secret shown once.
        await page.getByRole('button', { name: 'Rotate secret' }).click();
        await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate secret' }).click();
        const rotated = page.getByRole('dialog', { name: 'The new signing secret' });
        await rotated.getByText('you will not see it again').waitFor();
        const secret2 = await rotated.locator('[data-copy-value]').innerText();
        expect(secret2).toMatch(/^whsec_/);
        expect(secret2).not.toBe(secret);
        await screenshot(page, 'webhook-rotated');
        await rotated.getByRole('button', { name: 'I have copied it' }).click();
        await toast(page, 'Secret rotated');
        await rotated.waitFor({ state: 'hidden' });

        // Redeliver: progress on the row, then its new result; the receiver gets the same message, newly signed.
        await row.getByRole('button', { name: /^Redeliver/ }).click();
        await toast(page, /^Redelivered: 204 in \d+ ms$/);
        await row.getByText('Succeeded').waitFor();
        if (size === 'desktop') expect(await row.locator('td').nth(4).innerText()).toBe('2');
        const requests = receiver.received.filter((r) => r.path === path);
        expect(requests).toHaveLength(2);
        const last = requests[1]!;
        expect(last.headers['webhook-id']).toBe(first[0]!.id);
        const signed = { 'webhook-id': last.headers['webhook-id']!, 'webhook-timestamp': last.headers['webhook-timestamp']!, 'webhook-signature': last.headers['webhook-signature']! };
        expect(new Webhook(secret2).verify(last.body, signed)).toMatchObject({ type: 'contact.created' });
        expect(() => new Webhook(secret).verify(last.body, signed)).toThrow();

        // Disable, enable.
        await page.getByRole('button', { name: 'Disable', exact: true }).click();
        await toast(page, /Endpoint disabled/);
        expect((await api('GET', `/webhooks/${id}`)).body!.data.enabled).toBe(false);
        await page.getByRole('button', { name: 'Enable', exact: true }).click();
        await toast(page, 'Endpoint enabled');

        // Delete, after a confirmation that names the endpoint.
        await page.getByRole('button', { name: 'Delete', exact: true }).click();
        const confirm = page.getByRole('dialog', { name: `Delete the endpoint ${receiver.url}${path}?` });
        await confirm.waitFor();
        await screenshot(page, 'webhook-delete');
        await confirm.getByRole('button', { name: 'Delete endpoint' }).click();
        await heading(page, 'Webhooks');
        await toast(page, 'Endpoint deleted');
        expect((await api('GET', `/webhooks/${id}`)).status).toBe(404);
      });
    }, 90_000);

    test('a viewer sees the endpoints and their deliveries with no create, change or delete', async () => {
      const hook = await api('POST', '/webhooks', { url: `${receiver.url}/viewer/${size}`, events: ['contact.created'] });
      await api('POST', '/contacts', { email: `seen.${size}@example.org` });
      const hookId = (hook.body!.data as { id: string }).id;
      await until('the delivery', () => receiver.received.some((r) => r.path === `/viewer/${size}`));
      for (const scheme of ['light', 'dark'] as const) {
        await c.withPage({ viewport, as: 'viewer', colorScheme: scheme }, async (page) => {
          await page.goto(c.url('/app/webhooks'));
          await page.getByRole('link', { name: `${receiver.url}/viewer/${size}` }).waitFor();
          expect(await page.getByRole('button', { name: 'New endpoint' }).count()).toBe(0);
          await checkA11y(page, `webhooks as a viewer (${scheme})`);
          await screenshot(page, 'webhooks', { dark: scheme === 'dark' });
          await page.getByRole('link', { name: `${receiver.url}/viewer/${size}` }).click();
          await heading(page, 'Webhook endpoint');
          expect(page.url()).toBe(c.url(`/app/webhooks/${hookId}`));
          await page.locator('tr[data-delivery]').getByText('Succeeded').waitFor();
          for (const name of ['Disable', 'Enable', 'Rotate secret', 'Delete']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
          expect(await page.getByRole('button', { name: /^Redeliver/ }).count()).toBe(0);
          await checkA11y(page, `an endpoint as a viewer (${scheme})`);
          await screenshot(page, 'webhook-viewer', { dark: scheme === 'dark' });
        });
      }
    }, 60_000);
  });
});
