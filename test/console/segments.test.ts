import type { Page } from 'playwright-core';
import { addDomain } from '../../domains/rows';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The Segments pages in Chromium against a real Herald: a member builds a dynamic segment with a data filter, then an
 * event filter (the events tracked through POST /v1/track), watching the live count follow; a value the API refuses
 * is named on its filter; the saved segment's count is in the list. A static segment gets two members by address and
 * loses one by selection. Deleting asks first, and a segment a draft campaign uses says why it stays. A viewer is
 * offered no change.
 */
withChromium('the console: segments', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => {
    c = await startConsole(chromium);
    await addDomain(c.project.id, 'example.com', true); // a campaign's sender (the segment-in-use test)
  }, 90_000);
  afterAll(async () => { await c?.close(); });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (res.status === 204 ? { data: {} } : await res.json()) as { data: Record<string, unknown> & { items?: Record<string, unknown>[] } } };
  };
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor();
  const count = (page: Page, text: string) => page.locator('.audience-count').filter({ hasText: new RegExp(`^${text}$`) }).waitFor();
  const filter = (page: Page, n: number) => page.getByRole('group', { name: `Filter ${n}`, exact: true });

  test('an empty project says what a segment is and offers a first one', async () => {
    await c.withPage({ as: 'member' }, async (page) => {
      await page.goto(c.url('/app/segments'));
      await heading(page, 'Segments');
      await page.getByRole('heading', { name: 'No segments yet' }).waitFor();
      expect(await page.getByRole('button', { name: 'New segment' }).count()).toBe(2);
      await checkA11y(page);
      await screenshot(page, 'segments-empty');
    });
  });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const gold = ['ada', 'grace', 'alan'].map((n) => `${n}.${size}@example.org`);
    const upgraded = `upgraded-${size}`;

    test('a member builds a dynamic segment: a data filter, then an event filter, the count following; a refused value is named on its filter', async () => {
      for (const email of gold) expect((await api('POST', '/contacts', { email, data: { tier: `gold-${size}` } })).status).toBe(201);
      expect((await api('POST', '/contacts', { email: `edsger.${size}@example.org`, data: { tier: `silver-${size}` } })).status).toBe(201);
      // Two of the three gold contacts upgraded (the third did something else).
      for (const email of gold.slice(0, 2)) expect((await api('POST', '/v1/track', { email, event: upgraded })).status).toBe(200);
      expect((await api('POST', '/v1/track', { email: gold[2], event: `downgraded-${size}` })).status).toBe(200);

      // The 422 of the refused value is answered on purpose (and shown on its filter).
      await c.withPage({ viewport, as: 'member', expectErrors: [/status of 422/] }, async (page) => {
        await page.goto(c.url('/app/segments'));
        await heading(page, 'Segments');
        await page.getByRole('button', { name: 'New segment' }).first().click();
        await heading(page, 'New segment');
        await page.getByLabel('Name', { exact: true }).fill(`Gold upgraders ${size}`);
        await page.locator('.audience-count').filter({ hasText: 'Finish the filter' }).waitFor();

        // A data filter: tier is gold.
        const first = filter(page, 1);
        expect(await first.getByLabel('Field').inputValue()).toBe('data');
        await first.getByLabel('Data key').fill('tier');
        await first.getByLabel('Value', { exact: true }).fill(`gold-${size}`);
        // Enter ends the typing; it does not create the segment (the builder is inside the page's form).
        await first.getByLabel('Value', { exact: true }).press('Enter');
        await count(page, '3 contacts match');
        expect(page.url()).toBe(c.url('/app/segments/new'));
        for (const email of gold) await page.locator('.audience-sample').getByRole('link', { name: email }).waitFor();
        expect(await page.locator('.audience-sample li').count()).toBe(3);
        await screenshot(page, 'segment-builder-data');

        // And an event filter: upgraded in the last 7 days.
        await page.getByRole('button', { name: 'Add filter' }).click();
        const second = filter(page, 2);
        await second.getByLabel('Field').selectOption('event');
        await second.getByLabel('Event name').fill(upgraded);
        await second.getByLabel('Operator').selectOption('triggeredWithin');
        await second.getByLabel('How many').fill('7');
        await count(page, '2 contacts match');
        await page.locator('.audience-sample').getByRole('link', { name: gold[2]! }).waitFor({ state: 'detached' });
        expect(await page.locator('.audience-sample li').count()).toBe(2);
        await checkA11y(page, 'the builder');
        await screenshot(page, 'segment-builder', { fullPage: true });

        // A window of 0 days: the API's 422 names the filter's value, and the builder shows its message there.
        await second.getByLabel('How many').fill('0');
        await second.locator('.field-error').filter({ hasText: 'triggeredWithin needs a whole number of units as value' }).waitFor();
        expect(await second.getByLabel('How many').getAttribute('aria-invalid')).toBe('true');
        expect(await first.locator('.field-error').count()).toBe(0);
        await page.locator('.audience-panel').getByText('A filter needs a fix').waitFor();
        await checkA11y(page, 'a filter with the API\'s error');
        await screenshot(page, 'segment-builder-error');
        await second.getByLabel('How many').fill('30');
        await count(page, '2 contacts match');
        expect(await second.locator('.field-error').count()).toBe(0);

        await page.getByRole('button', { name: 'Create segment' }).click();
        await heading(page, `Gold upgraders ${size}`);
        await toast(page, `Segment Gold upgraders ${size} created`);
        const id = page.url().split('/').pop()!;
        const stored = await api('GET', `/segments/${id}`);
        expect(stored.body.data).toMatchObject({
          type: 'DYNAMIC', memberCount: 2,
          condition: { logic: 'AND', groups: [{ filters: [
            { field: 'data.tier', operator: 'equals', value: `gold-${size}` },
            { field: `event.${upgraded}`, operator: 'triggeredWithin', value: 30, unit: 'days' },
          ] }] },
        });
        // The saved segment's page: its members, the builder as it was saved.
        await page.getByRole('heading', { name: 'Members' }).waitFor();
        await count(page, '2 contacts match');
        expect(await filter(page, 2).getByLabel('How many').inputValue()).toBe('30');
        expect(await page.getByRole('button', { name: 'Save changes' }).isDisabled()).toBe(true);

        // The list: its type and its count.
        await page.locator('.breadcrumb').getByRole('link', { name: 'Segments' }).click();
        await heading(page, 'Segments');
        const row = page.locator('tbody tr').filter({ has: page.getByRole('link', { name: `Gold upgraders ${size}` }) });
        await row.waitFor();
        expect(await row.locator('td.num').innerText()).toBe('2');
        expect(await row.innerText()).toContain('Dynamic');
        await checkA11y(page, 'the segments list');
        await screenshot(page, 'segments');
      });
    }, 90_000);

    test('a member widens a segment with a second group (any group), and a change is counted before it is saved', async () => {
      // One copper contact and two tin ones, of this size only.
      for (const [email, tier] of [[`kim.${size}@example.org`, `copper-${size}`], [`lee.${size}@example.org`, `tin-${size}-a`], [`max.${size}@example.org`, `tin-${size}-b`]]) {
        expect((await api('POST', '/contacts', { email, data: { tier } })).status).toBe(201);
      }
      const made = await api('POST', '/segments', { name: `Metals ${size}`, type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.tier', operator: 'equals', value: `copper-${size}` }] }] } });
      const id = made.body.data.id as string;
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url(`/app/segments/${id}`));
        await heading(page, `Metals ${size}`);
        await page.getByRole('heading', { name: 'Members' }).waitFor();
        await count(page, '1 contact matches');
        await page.getByRole('button', { name: 'Add a group' }).click();
        const second = page.getByRole('group', { name: 'Filter 1 of group 2' });
        await second.getByLabel('Data key').fill('tier');
        await second.getByLabel('Operator').selectOption('startsWith');
        await second.getByLabel('Value', { exact: true }).fill(`tin-${size}`);
        // A second group widens: any group, so the copper contact and the two tin ones; counted before it is saved.
        await page.getByRole('heading', { name: 'Matching contacts' }).waitFor();
        await count(page, '3 contacts match');
        expect(await page.getByRole('button', { name: 'any group' }).getAttribute('aria-pressed')).toBe('true');
        await page.getByRole('button', { name: 'every group' }).click();
        await count(page, '0 contacts match');
        await page.getByRole('button', { name: 'any group' }).click();
        await count(page, '3 contacts match');
        await checkA11y(page, 'two groups');
        await screenshot(page, 'segment-groups', { fullPage: true });
        await page.getByRole('button', { name: 'Save changes' }).click();
        await toast(page, 'Segment saved');
        await page.getByRole('heading', { name: 'Members' }).waitFor();
        expect((await api('GET', `/segments/${id}`)).body.data).toMatchObject({ memberCount: 3, condition: { logic: 'OR' } });
      });
    });

    desktopOnly(size)('an answer to an older condition that comes late never replaces the newer one\'s count', async () => {
      for (const [email, tier] of [[`lou.${size}@example.org`, `lead-${size}`], [`liz.${size}@example.org`, `lead-${size}`], [`zoe.${size}@example.org`, `zinc-${size}`]]) {
        expect((await api('POST', '/contacts', { email, data: { tier } })).status).toBe(201);
      }
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        // The preview of "lead" is held back 1.5 s on its way to Herald; that of "zinc" goes at once.
        await page.route('**/segments/preview', async (route) => {
          if (route.request().postData()?.includes(`lead-${size}`)) await new Promise((r) => setTimeout(r, 1500));
          await route.continue().catch(() => undefined); // the builder may have aborted it meanwhile
        });
        await page.goto(c.url('/app/segments/new'));
        await heading(page, 'New segment');
        const first = filter(page, 1);
        await first.getByLabel('Data key').fill('tier');
        const slow = page.waitForRequest((r) => r.url().endsWith('/segments/preview') && Boolean(r.postData()?.includes(`lead-${size}`)));
        await first.getByLabel('Value', { exact: true }).fill(`lead-${size}`);
        await slow;
        await first.getByLabel('Value', { exact: true }).fill(`zinc-${size}`);
        await count(page, '1 contact matches');
        // Past the moment the held answer (2 contacts) would have arrived: the count is still the newer condition's.
        await page.waitForTimeout(2000);
        expect(await page.locator('.audience-count').innerText()).toBe('1\ncontact matches');
        await page.locator('.audience-sample').getByRole('link', { name: `zoe.${size}@example.org` }).waitFor();
      });
    });

    test('a static segment: a member creates it, adds two members by address, and removes one after a confirmation', async () => {
      const known = `known.${size}@example.org`;
      const fresh = `fresh.${size}@example.org`;
      expect((await api('POST', '/contacts', { email: known })).status).toBe(201);
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/segments/new'));
        await heading(page, 'New segment');
        await page.getByLabel('Name', { exact: true }).fill(`Beta testers ${size}`);
        await page.getByLabel('Description').fill('People who asked for early access.');
        await page.getByRole('radio', { name: /Static/ }).check();
        expect(await page.locator('.condition-builder').count()).toBe(0);
        await page.getByRole('button', { name: 'Create segment' }).click();
        await heading(page, `Beta testers ${size}`);
        await page.getByText('No members yet.').waitFor();

        await page.getByRole('button', { name: 'Add members' }).click();
        const dialog = page.getByRole('dialog', { name: `Add members to Beta testers ${size}` });
        await dialog.getByLabel('Email addresses').fill(`${known},\n${fresh}`);
        await dialog.getByRole('button', { name: 'Add 2 members' }).waitFor();
        await checkA11y(page, 'the add members dialog');
        await screenshot(page, 'segment-add-members');
        await dialog.getByRole('button', { name: 'Add 2 members' }).click();
        await toast(page, '2 members added (1 new contact)');
        const members = page.locator('.segment-members');
        await members.getByRole('link', { name: known }).waitFor();
        await members.getByRole('link', { name: fresh }).waitFor();
        await page.locator('.lede').getByText('2 members').waitFor();
        await checkA11y(page, 'a static segment');
        await screenshot(page, 'segment-static');

        await members.getByRole('checkbox', { name: `Select ${fresh}` }).check();
        await members.getByRole('button', { name: 'Remove 1 member' }).click();
        const confirm = page.getByRole('dialog', { name: `Remove 1 member from Beta testers ${size}?` });
        await confirm.getByText(`${fresh} leaves the list.`).waitFor();
        await screenshot(page, 'segment-remove-member');
        await confirm.getByRole('button', { name: 'Remove member' }).click();
        await toast(page, '1 member removed');
        await members.getByRole('link', { name: fresh }).waitFor({ state: 'detached' });
        await page.locator('.lede').getByText('1 member').waitFor();
        const id = page.url().split('/').pop()!;
        const left = await api('GET', `/segments/${id}/contacts`);
        expect(left.body.data.items!.map((x) => x.email)).toEqual([known]);
      });
    });

    desktopOnly(size)('deleting asks first; a segment a draft campaign sends to stays, with the API\'s reason', async () => {
      const used = await api('POST', '/segments', { name: `Newsletter readers ${size}`, type: 'STATIC' });
      const usedId = used.body.data.id as string;
      const campaign = await api('POST', '/campaigns', { name: `Spring news ${size}`, subject: 'Spring', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: usedId });
      expect(campaign.status).toBe(201);
      const free = await api('POST', '/segments', { name: `Old list ${size}`, type: 'STATIC' });
      await c.withPage({ viewport, as: 'member', expectErrors: [/status of 409/] }, async (page) => {
        await page.goto(c.url(`/app/segments/${usedId}`));
        await heading(page, `Newsletter readers ${size}`);
        await page.getByRole('button', { name: 'Delete', exact: true }).click();
        const confirm = page.getByRole('dialog', { name: `Delete the segment Newsletter readers ${size}?` });
        await confirm.getByRole('button', { name: 'Delete segment' }).click();
        await toast(page, `Segment is the audience of campaigns not yet sent: Spring news ${size}`);
        expect(await confirm.isVisible()).toBe(true);
        await screenshot(page, 'segment-delete-in-use');
        await confirm.getByRole('button', { name: 'Cancel' }).click();
        expect((await api('GET', `/segments/${usedId}`)).status).toBe(200);

        await page.goto(c.url(`/app/segments/${free.body.data.id as string}`));
        await heading(page, `Old list ${size}`);
        await page.getByRole('button', { name: 'Delete', exact: true }).click();
        await page.getByRole('dialog', { name: `Delete the segment Old list ${size}?` }).getByRole('button', { name: 'Delete segment' }).click();
        await heading(page, 'Segments');
        await toast(page, `Segment Old list ${size} deleted`);
        expect((await api('GET', `/segments/${free.body.data.id as string}`)).status).toBe(404);
      });
    });

    test('a viewer reads segments, their condition and members, and is offered no change', async () => {
      const dynamic = await api('POST', '/segments', { name: `Viewer sees ${size}`, type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [
        { field: 'data.tier', operator: 'equals', value: `gold-${size}` }, { field: `event.${upgraded}`, operator: 'triggered' },
      ] }] } });
      const list = await api('POST', '/segments', { name: `Viewer list ${size}`, type: 'STATIC' });
      await api('POST', `/segments/${list.body.data.id as string}/members`, { emails: [gold[0]] });
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/segments'));
        await page.getByRole('link', { name: `Viewer sees ${size}` }).waitFor();
        expect(await page.getByRole('button', { name: 'New segment' }).count()).toBe(0);

        await page.getByRole('link', { name: `Viewer sees ${size}` }).click();
        await heading(page, `Viewer sees ${size}`);
        await count(page, '2 contacts match');
        await page.locator('.audience-sample').getByRole('link', { name: gold[0]! }).waitFor();
        expect(await filter(page, 1).getByLabel('Data key').inputValue()).toBe('tier');
        expect(await filter(page, 2).getByLabel('Event name').inputValue()).toBe(upgraded);
        for (const control of await page.locator('.condition-builder').locator('input, select, button').all()) expect(await control.isDisabled()).toBe(true);
        for (const name of ['Delete', 'Save changes', 'Add filter', 'Add a group']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
        expect(await page.getByRole('textbox', { name: 'Name' }).count()).toBe(0);
        await checkA11y(page, 'a dynamic segment, as a viewer');
        await screenshot(page, 'segment-viewer', { fullPage: true });

        await page.goto(c.url(`/app/segments/${list.body.data.id as string}`));
        await heading(page, `Viewer list ${size}`);
        await page.locator('.segment-members').getByRole('link', { name: gold[0]! }).waitFor();
        for (const name of ['Add members', 'Remove selected', 'Delete']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
        expect(await page.getByRole('checkbox').count()).toBe(0);
        await checkA11y(page, 'a static segment, as a viewer');
      });
      expect(dynamic.status).toBe(201);
    });

    desktopOnly(size)('in the dark, the builder reads well', async () => {
      await c.withPage({ viewport, as: 'member', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url('/app/segments/new'));
        await heading(page, 'New segment');
        const first = filter(page, 1);
        await first.getByLabel('Field').selectOption('activity:email.opened');
        await first.getByLabel('Operator').selectOption('notTriggeredWithin');
        await first.getByLabel('How many').fill('30');
        await count(page, '\\d+ contacts? match(es)?');
        await checkA11y(page, 'the builder, dark');
        await screenshot(page, 'segment-builder', { dark: true });
      });
    });

    desktopOnly(size)('a segment that is no segment of the project is a page that says so', async () => {
      await c.withPage({ viewport, as: 'member', expectErrors: [/404/] }, async (page) => {
        await page.goto(c.url('/app/segments/0190a0a0-0000-7000-8000-000000000000'));
        await heading(page, 'Segment not found');
        await page.getByRole('button', { name: 'Back to segments' }).waitFor();
      });
    });
  });
});
