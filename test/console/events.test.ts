import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * The Events page in Chromium against a real Herald: events tracked through POST /v1/track are listed newest first,
 * the names with their counts filter the list, an event opens to its data as formatted JSON, a contact's email and a
 * date range filter too, and an empty project says how to track the first event.
 */
withChromium('the Events page', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium); }, 60_000);
  afterAll(async () => { await c?.close(); });

  const track = async (email: string, event: string, data: Record<string, unknown> = {}) => {
    const res = await fetch(c.url('/v1/track'), { method: 'POST', headers: { ...c.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ email, event, data }) });
    expect(res.status).toBeLessThan(300);
  };

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('an empty project says how to track the first event', async () => {
      await c.db.knex('events').where({ project_id: c.project.id }).del();
      await c.db.knex('event_names').where({ project_id: c.project.id }).del();
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/events'));
        await heading(page, 'Events');
        await page.getByRole('heading', { name: 'No events yet' }).waitFor();
        expect(await page.locator('.empty pre').innerText()).toContain(`curl -X POST ${c.baseUrl}/v1/track`);
        await checkA11y(page);
        await screenshot(page, 'events-empty');
      });
    });

    test('a person filters the events by name, opens one to its data, and by contact and date', async () => {
      await track('ada@acme.test', 'signed-up', { plan: 'pro', seats: 3 });
      await track('grace@acme.test', 'signed-up', { plan: 'free' });
      await track('ada@acme.test', 'upgraded', { from: 'pro', to: 'team' });
      await track('linus@acme.test', 'signed-up', { plan: 'free' });
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/events'));
        await heading(page, 'Events');
        const rows = page.locator('.events-table > tbody > tr');
        await rows.first().waitFor();
        // Newest first, every event of the project, and the names with their counts.
        const names = page.getByRole('complementary', { name: 'Event names' });
        await names.getByRole('button', { name: /signed-up\s*3/ }).waitFor();
        await names.getByRole('button', { name: /upgraded\s*1/ }).waitFor();
        await page.locator('.pager').getByText(/^\d+ events$/).waitFor();
        await checkA11y(page);
        await screenshot(page, 'events');

        // Filter by name with the Event select: only signed-up, and the URL says so.
        await page.getByLabel('Event', { exact: true }).selectOption('signed-up');
        await page.waitForURL(/name=signed-up/);
        await page.locator('.pager').getByText('3 events').waitFor();
        expect(await rows.locator('.badge').allInnerTexts()).toEqual(['signed-up', 'signed-up', 'signed-up']);

        // An event's data, as formatted JSON, under its row.
        await rows.first().getByRole('button').click();
        const data = page.getByLabel('Data of signed-up');
        await data.waitFor();
        expect(JSON.parse(await data.innerText())).toEqual({ plan: 'free' }); // linus, the newest
        expect(await data.innerText()).toContain('\n  "plan": "free"\n');
        await checkA11y(page);
        await screenshot(page, 'events-filtered');

        // And by contact: ada's signed-up only; then clearing the name shows all of ada's events.
        await page.getByLabel('Contact email or ID').fill('ada@acme.test');
        await page.getByLabel('Contact email or ID').press('Enter');
        await page.waitForURL(/contact=ada%40acme\.test/);
        await page.locator('.pager').getByText('1 event').waitFor();
        await page.getByLabel('Event', { exact: true }).selectOption('');
        await page.locator('.pager').getByText('2 events').waitFor();
        expect(await rows.locator('.badge').allInnerTexts()).toEqual(['upgraded', 'signed-up']);

        // A range of dates with no events: said so, with a way back.
        await page.getByLabel('From').fill('2030-01-01');
        await page.getByRole('heading', { name: 'No events match these filters' }).waitFor();
        await page.getByRole('button', { name: 'Clear filters' }).first().click();
        await page.waitForURL((u) => u.search === '');
        await names.getByRole('button', { name: /upgraded\s*1/ }).waitFor();
        await rows.first().waitFor();
      });
      // Dark, for the screenshot.
      await c.withPage({ viewport, as: 'viewer', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url('/app/events?name=signed-up'));
        await heading(page, 'Events');
        await page.locator('.events-table > tbody > tr').first().getByRole('button').click();
        await page.getByLabel('Data of signed-up').waitFor();
        await checkA11y(page);
        await screenshot(page, 'events', { dark: true });
      });
      await c.db.knex('events').where({ project_id: c.project.id }).del();
      await c.db.knex('event_names').where({ project_id: c.project.id }).del();
    }, 60_000);
  });

  test('a contact the project does not have, named in the link, is said so, with a way back to every event', async () => {
    await track('ada@acme.test', 'signed-up', { plan: 'pro' });
    await c.withPage({ viewport: VIEWPORTS[0][1], as: 'viewer' }, async (page) => {
      await page.goto(c.url('/app/events?contact=nobody%40acme.test'));
      await heading(page, 'Events');
      await page.getByRole('heading', { name: 'No such contact' }).waitFor();
      await page.getByRole('button', { name: "Show every contact's events" }).click();
      await page.locator('.events-table > tbody > tr').first().waitFor();
    });
  });
});
