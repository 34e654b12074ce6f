import type { Page } from 'playwright-core';
import { createProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, holdFirstAnswer, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { waitFor } from '../support/processes';
import type { Received } from '../support/smtp';
import { PASSWORD, person } from '../people/support';

/**
 * The Campaigns pages in Chromium against a real Herald whose embedded engine delivers to a real SMTP server: compose a
 * campaign to a segment, send a test (it arrives), schedule it in the viewer's zone and cancel it; compose another to a
 * filter and send it now (the confirmation names how many), see it SENT, open and click the delivered message as its
 * recipient would and see the stats move, with the chart and the clicks per link; the composer with the keyboard
 * alone; the list by status; what a viewer is offered (nothing that changes); "Open in Temporal UI". Every test at
 * 1280×800 and 390×844, axe on every page, screenshots looked at.
 */
let c: ConsoleHarness;
let segmentId: string;
let draftId: string;
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const TEMPORAL_UI = 'http://temporal-ui.test:8080';

async function api(path: string, method = 'GET', body?: unknown): Promise<{ status: number; data: any; error?: unknown }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(c.url(path), { method, headers: { ...c.key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const json = res.status === 204 ? {} : await res.json() as { data: unknown };
  return { status: res.status, data: (json as { data: unknown }).data, ...(res.status >= 400 ? { error: json } : {}) };
}

/** The messages the SMTP server received for `to` whose subject matches. */
const received = (to: string, subject: RegExp): Received[] =>
  c.smtp!.received.filter((m) => m.envelopeTo.includes(to) && subject.test(String(m.parsed.subject ?? '')));

/** A URL of the delivered HTML (on PUBLIC_URL, http://herald.test in the engine) as this Herald's. */
const here = (url: string) => { const u = new URL(url); return c.url(u.pathname + u.search); };

/** Focuses the next element (Tab) until `condition` (an expression over `el`) holds. */
async function tabTo(page: Page, condition: string, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`(() => { const el = document.activeElement; return !!el && (${condition}); })()`)) return;
  }
  throw new Error(`no focusable element with ${condition} within ${max} presses of Tab`);
}

/** The stat tile's number ("Opened" → 1). */
async function stat(page: Page, label: string): Promise<number> {
  const tile = page.locator('.campaign-report .stat').filter({ has: page.locator('.stat-label', { hasText: new RegExp(`^${label}$`) }) });
  return Number((await tile.locator('.stat-value').innerText()).replace(/[^\d]/g, ''));
}

withChromium('the console Campaigns pages', (chromium) => {
  beforeAll(async () => {
    c = await startConsole(chromium, { delivery: true, temporalUi: { url: TEMPORAL_UI, namespace: 'default' } });
    // Three on pro, one on free; Eve (pro) unsubscribed. All subscribed: 4; pro: 3; the Beta segment: Ada and Bob.
    for (const [name, plan, subscribed] of [['ada', 'pro', true], ['bob', 'pro', true], ['cy', 'pro', true], ['dee', 'free', true], ['eve', 'pro', false]] as const) {
      expect((await api('/contacts', 'POST', { email: `${name}@example.org`, subscribed, data: { firstName: name[0]!.toUpperCase() + name.slice(1), plan } })).status).toBeLessThan(300);
    }
    const segment = await api('/segments', 'POST', { name: 'Beta readers', type: 'STATIC' });
    expect(segment).toMatchObject({ status: 201 });
    segmentId = segment.data.id;
    expect((await api(`/segments/${segmentId}/members`, 'POST', { emails: ['ada@example.org', 'bob@example.org'] })).status).toBe(200);
    const draft = await api('/campaigns', 'POST', { name: 'Autumn draft', subject: 'Autumn', body: '<p>Soon</p>', from: 'news@example.com', audienceType: 'ALL' });
    expect(draft).toMatchObject({ status: 201 }); // (the whole answer is printed when it is not)
    draftId = draft.data.id;
  }, 120_000);
  afterAll(async () => { await c?.close(); });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('compose to a segment, send a test that arrives, schedule it in the viewer\'s zone, then cancel it', async () => {
      const name = `Beta news (${size})`;
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/campaigns'));
        await heading(page, 'Campaigns');
        await page.getByRole('link', { name: 'New campaign' }).first().click();
        await heading(page, 'New campaign');
        await page.getByLabel('Campaign name').fill(name);
        await page.getByLabel('Subject').fill('News for {{ data.firstName }}');
        // The project's verified domain is the sender's to start with.
        await waitFor('the sender filled in', async () => ((await page.getByLabel('From address').inputValue()) === 'news@example.com' || undefined), 10_000);
        await page.getByLabel('From name').fill('Acme');
        await page.getByLabel('HTML body').fill('<h1>Hello {{ data.firstName }}</h1><p>The beta opens on Monday.</p>');
        // The preview shows the body in its own document.
        await page.frameLocator('iframe.preview-frame').getByRole('heading', { name: 'Hello {{ data.firstName }}' }).waitFor();
        await page.getByLabel('A segment').check();
        await page.getByLabel('Segment', { exact: true }).selectOption({ label: 'Beta readers' });
        await page.getByText('2 contacts would receive it now').waitFor();
        await checkA11y(page);
        await screenshot(page, 'campaign-composer', { fullPage: true });

        // A test to the signed-in person (the default), which saves the draft first.
        await page.getByRole('button', { name: 'Send test…' }).click();
        const testDialog = page.getByRole('dialog', { name: 'Send a test' });
        expect(await testDialog.getByLabel('Send to').inputValue()).toBe(c.people.member.email);
        await checkA11y(page);
        await testDialog.getByRole('button', { name: 'Send test' }).click();
        await page.getByText(`Test sent to ${c.people.member.email}`).waitFor();
        await page.waitForURL(/\/app\/campaigns\/[0-9a-f-]{36}$/);
        const id = new URL(page.url()).pathname.split('/').pop()!;
        const copy = await waitFor('the test copy at the SMTP server', () => received(c.people.member.email, /^\[TEST\] News for/)[0], 30_000);
        expect(copy.parsed.subject).toMatch(/^\[TEST\] News for\s*$/); // the address is no contact: no first name
        expect(copy.parsed.html).toContain('The beta opens on Monday.');
        expect((await api(`/campaigns/${id}`)).data).toMatchObject({ status: 'DRAFT', name, audienceType: 'SEGMENT', segmentId, fromName: 'Acme' });

        // Scheduled for 3 June 2031, 10:00 in the viewer's zone (Europe/Paris, summer time): 08:00 UTC.
        await page.getByRole('button', { name: 'Schedule…' }).click();
        const scheduleDialog = page.getByRole('dialog', { name: 'Schedule the send to 2 contacts' });
        await scheduleDialog.getByText('Europe/Paris').waitFor();
        await scheduleDialog.getByLabel('Send at').fill('2031-06-03T10:00');
        await checkA11y(page);
        await screenshot(page, 'campaign-schedule');
        await scheduleDialog.getByRole('button', { name: 'Schedule' }).click();
        await page.locator('.campaign-lede').getByText('Scheduled', { exact: true }).waitFor();
        expect((await api(`/campaigns/${id}`)).data).toMatchObject({ status: 'SCHEDULED', scheduledAt: '2031-06-03T08:00:00.000Z' });
        await page.locator('.campaign-when').getByText(/Tuesday,? 3 June 2031 at 10:00/).waitFor();
        // On Temporal with its UI configured, the campaign's workflow is a link away.
        expect(await page.getByRole('link', { name: 'Open in Temporal UI' }).getAttribute('href')).toBe(`${TEMPORAL_UI}/namespaces/default/workflows/campaign-${id}`);
        await checkA11y(page);
        await screenshot(page, 'campaign-scheduled', { fullPage: true });

        await page.getByRole('button', { name: 'Cancel campaign' }).click();
        const cancel = page.getByRole('dialog', { name: `Cancel the send of “${name}”?` });
        await cancel.getByRole('button', { name: 'Keep it scheduled' }).waitFor();
        await cancel.getByRole('button', { name: 'Cancel campaign' }).click();
        await page.locator('.campaign-lede').getByText('Cancelled', { exact: true }).waitFor();
        expect((await api(`/campaigns/${id}`)).data.status).toBe('CANCELLED');
        // Nothing but the test left for it.
        expect(received('ada@example.org', /^News for/)).toEqual([]);
      });
    });

    test('send now to a filter: the confirmation names the count, it is SENT, and an open and a click move its stats', async () => {
      const name = `Pro launch (${size})`;
      const subject = `Launch for pros ${size} {{ data.firstName }}`;
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url('/app/campaigns/new'));
        await heading(page, 'New campaign');
        await page.getByLabel('Campaign name').fill(name);
        await page.getByLabel('Subject').fill(subject);
        await page.getByLabel('HTML body').fill('<p>Hi {{ data.firstName }}, it is out.</p><p><a href="https://example.com/launch">See the launch</a></p>');
        await page.getByLabel('A filter').check();
        // The segments' builder: plan is pro. Until the filter has its key and value, nothing is counted.
        const filter = page.getByRole('group', { name: 'Filter 1', exact: true });
        await filter.getByLabel('Data key').fill('plan');
        await filter.getByLabel('Value', { exact: true }).fill('pro');
        await page.getByText('3 contacts would receive it now').waitFor();
        await checkA11y(page);
        await filter.scrollIntoViewIfNeeded();
        await screenshot(page, 'campaign-filter');

        await page.getByRole('button', { name: 'Send now…' }).click();
        const confirm = page.getByRole('dialog', { name: 'Send to 3 contacts now?' });
        await confirm.getByText('the subscribed contacts that match its filter').waitFor();
        await checkA11y(page);
        await screenshot(page, 'campaign-send-now');
        await confirm.getByRole('button', { name: 'Send now' }).click();
        await page.waitForURL(/\/app\/campaigns\/[0-9a-f-]{36}$/);
        const id = new URL(page.url()).pathname.split('/').pop()!;
        // Sending, then SENT: the page follows it by itself.
        await page.locator('.campaign-lede').getByText('Sent', { exact: true }).waitFor({ timeout: 60_000 });
        expect(await stat(page, 'Recipients')).toBe(3);
        expect(await stat(page, 'Delivered')).toBe(3);
        expect(await stat(page, 'Opened')).toBe(0);

        // Ada opens the message and follows its link, as her mail client would.
        const subjectFor = new RegExp(`^Launch for pros ${size} Ada$`);
        const mail = await waitFor('Ada\'s copy at the SMTP server', () => received('ada@example.org', subjectFor)[0], 30_000);
        const html = String(mail.parsed.html);
        const pixel = [...html.matchAll(/<img\b[^>]*?\ssrc="([^"]*\/t\/o\/[^"]*)"/g)][0]![1]!;
        const link = [...html.matchAll(/<a\b[^>]*?\shref="([^"]*\/t\/c\/[^"]*)"/g)][0]![1]!;
        expect((await fetch(here(pixel), { headers: { 'User-Agent': BROWSER } })).status).toBe(200);
        const click = await fetch(here(link), { headers: { 'User-Agent': BROWSER }, redirect: 'manual' });
        expect([click.status, click.headers.get('location')]).toEqual([302, 'https://example.com/launch']);

        await page.reload();
        await heading(page, name);
        await waitFor('the open in the stats', async () => (await stat(page, 'Opened')) === 1 || undefined, 15_000);
        expect(await stat(page, 'Clicked')).toBe(1);
        const links = page.getByRole('table', { name: 'Clicks per link, most clicked first' });
        expect(await links.locator('tbody tr').first().innerText()).toMatch(/https:\/\/example\.com\/launch\s+1\s+1/);
        // The chart of opens and clicks by hour, and its numbers by day.
        await page.locator('.volume-chart canvas').waitFor();
        expect(await page.locator('.volume-chart').getAttribute('aria-label')).toMatch(/1 open, 1 click\./);
        await page.getByRole('button', { name: 'By day' }).click();
        await page.waitForURL(/by=day/);
        await page.locator('.volume-chart canvas').waitFor();
        expect(await page.locator('.volume-chart').getAttribute('aria-label')).toMatch(/per UTC day.*1 open, 1 click\./);
        const api1 = (await api(`/campaigns/${id}/stats?series=day`)).data;
        expect(api1).toMatchObject({ totalRecipients: 3, uniqueOpens: 1, uniqueClicks: 1 });
        await checkA11y(page);
        await screenshot(page, 'campaign-sent', { fullPage: true });
      });
    });

    desktopOnly(size)('the composer with the keyboard alone: fill, send now, confirm', async () => {
      const name = `Keyboard news (${size})`;
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        // The answer to the page's own GET of the campaign, begun when the first save moved it to its URL, is held back
        // until the send has been answered (as a loaded machine may do): so old a reply never takes the page back to the
        // draft.
        const sendAnswered = new Promise<void>((resolve) => page.on('response', (r) => { if (r.url().endsWith('/send')) resolve(); }));
        const { held } = await holdFirstAnswer(page, /\/campaigns\/[0-9a-f-]{36}$/, sendAnswered);
        await page.goto(c.url('/app/campaigns/new'));
        await heading(page, 'New campaign');
        await tabTo(page, "el.tagName === 'INPUT' && el.labels && el.labels[0] && el.labels[0].textContent === 'Campaign name'");
        await page.keyboard.type(name);
        await page.keyboard.press('Tab');
        await page.keyboard.type('Typed with keys');
        await tabTo(page, "el.tagName === 'TEXTAREA'");
        await page.keyboard.press('ControlOrMeta+A');
        await page.keyboard.type('<p>No mouse was used.</p>');
        // The audience stays "All subscribed contacts"; on to the send.
        await page.getByText('4 contacts would receive it now').waitFor();
        await tabTo(page, "el.tagName === 'BUTTON' && el.textContent.includes('Send now')");
        await page.keyboard.press('Enter');
        const confirm = page.getByRole('dialog', { name: 'Send to 4 contacts now?' });
        await confirm.waitFor();
        // The focus is inside the dialog, on its first button (Cancel); the next is the send.
        await page.keyboard.press('Tab');
        expect(await page.evaluate('document.activeElement.textContent')).toBe('Send now');
        await page.keyboard.press('Enter');
        await heading(page, name);
        await page.locator('.campaign-lede').getByText(/^(Scheduled|Sending|Sent)$/).waitFor();
        await page.locator('.campaign-lede').getByText(/^(Sending|Sent)$/).waitFor();
        expect(held()).toBeGreaterThan(0);
        await waitFor('the campaign SENT', async () => ((await api('/campaigns?status=SENT')).data.items.some((x: { name: string }) => x.name === name) || undefined), 60_000);
      });
    });

    test('the list: newest first, by status in the URL, a sent one\'s recipients; an empty project says what to do', async () => {
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/campaigns'));
        await heading(page, 'Campaigns');
        const rows = page.locator('tbody tr');
        await rows.first().waitFor();
        expect(await rows.first().innerText()).toMatch(/Draft|Sent|Sending|Cancelled/);
        await page.getByLabel('Status').selectOption('SENT');
        await page.waitForURL(/status=SENT/);
        await waitFor('only SENT rows', async () => {
          const texts = await rows.allInnerTexts();
          return texts.length > 0 && texts.every((t) => /\bSent\b/.test(t)) ? true : undefined;
        }, 15_000);
        await checkA11y(page);
        await screenshot(page, 'campaigns');
        await page.getByLabel('Status').selectOption('FAILED');
        await page.getByText('No failed campaign').waitFor();
        await page.getByRole('button', { name: 'Show every campaign' }).click();
        await page.waitForURL((u) => !u.search.includes('status='));
      });

      // A draft deleted from its composer, after a confirmation that names it.
      const doomed = (await api('/campaigns', 'POST', { name: `Doomed ${size}`, subject: 'x', body: '<p>x</p>', from: 'news@example.com', audienceType: 'ALL' })).data.id as string;
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url(`/app/campaigns/${doomed}`));
        await heading(page, `Doomed ${size}`);
        await page.getByRole('button', { name: 'Delete draft' }).click();
        const confirm = page.getByRole('dialog', { name: `Delete the draft “Doomed ${size}”?` });
        await confirm.getByRole('button', { name: 'Delete draft' }).click();
        await heading(page, 'Campaigns');
        await page.getByText('Draft deleted').waitFor();
        expect((await api(`/campaigns/${doomed}`)).status).toBe(404);
      });

      const fresh = await createProject(`Fresh ${size}`);
      await addDomain(fresh.id, 'example.com', true);
      const member = await person(c.db.knex, { [fresh.id]: 'member' }, { email: `fresh-${size}@acme.test` });
      await c.withPage({ viewport, as: { ...member, name: 'Fresh', password: PASSWORD } }, async (page) => {
        await page.goto(c.url('/app/campaigns'));
        await page.getByRole('heading', { name: 'No campaign yet' }).waitFor();
        await page.getByRole('link', { name: 'New campaign' }).waitFor();
        await checkA11y(page);
        await screenshot(page, 'campaigns-empty');
      });
    });

    test('a viewer sees campaigns and their results, and is offered no change', async () => {
      // The sent campaign with an open and a click (the send-now test's), so the chart is drawn.
      const sentItems = (await api('/campaigns?status=SENT')).data.items as { id: string; name: string }[];
      const sent = sentItems.find((x) => x.name.startsWith('Pro launch')) ?? sentItems[0];
      expect(sent).toBeDefined();
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/campaigns'));
        await heading(page, 'Campaigns');
        await page.locator('tbody tr').first().waitFor();
        expect(await page.getByRole('link', { name: 'New campaign' }).count()).toBe(0);

        await page.goto(c.url(`/app/campaigns/${sent!.id}`));
        await heading(page, sent!.name);
        await page.locator('.campaign-report .stat').first().waitFor();
        expect(await page.getByRole('button', { name: /Cancel campaign|Delete|Send|Schedule|Save/ }).count()).toBe(0);
        await checkA11y(page);
        await screenshot(page, 'campaign-viewer', { fullPage: true });

        // A draft is shown, not offered for editing; and it has no workflow yet, so no Temporal UI link.
        await page.goto(c.url(`/app/campaigns/${draftId}`));
        await heading(page, 'Autumn draft');
        await page.getByText('Draft, not sent').waitFor();
        expect(await page.getByRole('textbox').count()).toBe(0);
        expect(await page.getByRole('button', { name: /Send|Schedule|Save|Delete/ }).count()).toBe(0);
        expect(await page.getByRole('link', { name: 'Open in Temporal UI' }).count()).toBe(0);

        await page.goto(c.url('/app/campaigns/new'));
        await page.getByRole('heading', { name: 'Your role cannot write campaigns' }).waitFor();
        await checkA11y(page);
      });
      // The report in the dark scheme: its tokens' colours, the chart's too.
      await c.withPage({ viewport, as: 'viewer', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url(`/app/campaigns/${sent!.id}`));
        await heading(page, sent!.name);
        await page.locator('.campaign-report .stat').first().waitFor();
        await checkA11y(page);
        await screenshot(page, 'campaign-viewer', { dark: true });
      });
    });
  });
});
