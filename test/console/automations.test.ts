import type { Locator, Page } from 'playwright-core';
import { stepClock } from '../support/automations';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { waitFor } from '../support/processes';

/**
 * The Automations pages in Chromium against a real Herald whose embedded engine runs the executions and delivers to a
 * real SMTP server. A member builds an automation on the graph (a delay, then a condition whose Yes and No each send a
 * template), creates and enables it; a contact tracked through POST /v1/track (the project's public key) starts a
 * journey; once the delay has passed (the clock stepped, as the engine tests do) the execution's page shows the path
 * it took (the delay waited, the branch chosen, the email sent) on the graph and in its trace. A waiting execution is
 * cancelled; a step with a bad field shows the API's message on that step; a viewer is offered no change.
 */
withChromium('the console: automations', (chromium) => {
  let c: ConsoleHarness;
  let proTemplate: string;
  let freeTemplate: string;
  beforeAll(async () => {
    c = await startConsole(chromium, { delivery: true });
    proTemplate = (await api('POST', '/templates', { name: 'Pro welcome', subject: 'Welcome to Pro', body: '<p>Pro</p>', from: 'hello@example.com' })).body.data.id as string;
    freeTemplate = (await api('POST', '/templates', { name: 'Free welcome', subject: 'Welcome', body: '<p>Free</p>', from: 'hello@example.com' })).body.data.id as string;
  }, 90_000);
  afterAll(async () => { await c?.close(); });

  async function api(method: string, path: string, body?: unknown, key: Record<string, string> = c.key) {
    const res = await fetch(c.url(path), { method, headers: { ...key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (res.status === 204 ? { data: {} } : await res.json()) as { data: Record<string, unknown> } };
  }
  const track = async (email: string, event: string, data: object = {}) => {
    const res = await api('POST', '/v1/track', { email, event, data }, { Authorization: `Bearer ${c.project.publicKey}` });
    expect(res.status).toBe(200);
  };
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor();
  const node = (page: Page, id: string): Locator => page.locator(`.flow-canvas [data-node="${id}"]`);
  /** Adds a step of `type` with the "+" named `where` (its accessible name) and answers its node's id. */
  const addStep = async (page: Page, where: string, type: string): Promise<string> => {
    await page.getByRole('button', { name: where, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a step' });
    await dialog.getByRole('button', { name: new RegExp(`^${type}`) }).click();
    await dialog.waitFor({ state: 'hidden' });
    const selected = page.locator('.flow-node[aria-pressed="true"]');
    return (await selected.getAttribute('data-node'))!;
  };
  const panel = (page: Page) => page.locator('.automation-panel');

  test.each(VIEWPORTS)('no automation yet: the page says what automations do and offers a new one (%s)', async (_, viewport) => {
    await c.withPage({ viewport, as: 'member' }, async (page) => {
      await page.goto(c.url('/app/automations'));
      await heading(page, 'Automations');
      await page.getByRole('heading', { name: 'No automations yet' }).waitFor();
      await page.getByRole('button', { name: 'New automation' }).waitFor();
      await checkA11y(page);
      await screenshot(page, 'automations-empty');
    });
  });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const event = `signed_up_${size}`;

    test('a member builds a delay and a condition with two sends, enables it, and sees a tracked contact\'s path and trace', async () => {
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/automations/new'));
        await heading(page, 'New automation');
        await panel(page).getByLabel('Name').fill(`Welcome series ${size}`);
        await panel(page).getByLabel('Trigger event').fill(event);
        await node(page, '@trigger').getByText(event).waitFor();

        // A one-minute delay at the start.
        const delay = await addStep(page, 'Add a step at the start', 'Delay');
        expect(delay).toBe('delay-1');
        await panel(page).getByLabel('Wait for').fill('1');
        await panel(page).getByLabel('Unit').selectOption('minutes');
        await node(page, delay).getByText('Wait 1 minute').waitFor();

        // Then a condition on the contact's plan.
        const check = await addStep(page, `Add a step after ${delay}`, 'Condition');
        const rule = panel(page).getByRole('group', { name: 'Filter 1', exact: true });
        await rule.getByLabel('Field').selectOption('data');
        await rule.getByLabel('Data key').fill('plan');
        await rule.getByLabel('Value', { exact: true }).fill('pro');
        await node(page, check).getByText('If data.plan is pro').waitFor();
        await rule.scrollIntoViewIfNeeded();
        await screenshot(page, 'automation-condition');

        // Yes: the Pro template; No: the Free one.
        const yes = await addStep(page, `Add a step on the Yes path of ${check}`, 'Send email');
        await panel(page).getByLabel('Template').selectOption({ label: 'Pro welcome' });
        const no = await addStep(page, `Add a step on the No path of ${check}`, 'Send email');
        await panel(page).getByLabel('Template').selectOption({ label: 'Free welcome' });
        await node(page, yes).getByText('Pro welcome').waitFor();
        await node(page, no).getByText('Free welcome').waitFor();
        // The branches are drawn side by side under the condition, each path ending. Places on the canvas, not on the
        // screen: at phone size the step's panel is still scrolling smoothly into view while they are read.
        const place = (id: string) => node(page, id).evaluate((el) => { const at = el as unknown as { offsetLeft: number; offsetTop: number }; return { x: at.offsetLeft, y: at.offsetTop }; });
        const [cb, yb, nb] = await Promise.all([place(check), place(yes), place(no)]);
        expect(yb.x).toBeLessThan(nb.x);
        expect(yb.y).toBeGreaterThan(cb.y);
        expect(Math.abs(yb.y - nb.y)).toBeLessThan(1);
        expect(await page.locator('.flow-end').count()).toBe(2);
        await checkA11y(page, 'the builder');
        await screenshot(page, 'automation-builder', { fullPage: true });

        // Create, then enable: the definition stored is the one drawn.
        await page.getByRole('button', { name: 'Create automation' }).click();
        await toast(page, 'Automation created');
        await page.waitForURL(/\/app\/automations\/[0-9a-f-]{36}$/);
        const id = page.url().split('/').pop()!;
        const stored = (await api('GET', `/workflows/${id}`)).body.data;
        expect(stored).toMatchObject({
          name: `Welcome series ${size}`, enabled: false, trigger: { type: 'EVENT', event },
          steps: [
            { id: delay, type: 'DELAY', config: { amount: 1, unit: 'minutes' }, next: check },
            { id: check, type: 'CONDITION', branches: { yes, no } },
            { id: yes, type: 'SEND_EMAIL', config: { template: proTemplate }, next: null },
            { id: no, type: 'SEND_EMAIL', config: { template: freeTemplate }, next: null },
          ],
        });
        await page.getByRole('button', { name: 'Enable' }).click();
        await toast(page, `Enabled: “${event}” now starts a journey`);
        await page.locator('.page-header .badge').filter({ hasText: 'Enabled' }).waitFor();
        expect((await api('GET', `/workflows/${id}`)).body.data.enabled).toBe(true);

        // A contact on the Pro plan is tracked: their journey waits in the delay.
        const who = `pro.${size}@example.org`;
        await track(who, event, { plan: 'pro' });
        await page.getByRole('link', { name: 'Executions' }).click();
        const row = page.locator('.executions-table tbody tr').filter({ hasText: who });
        await waitFor('the execution in the list', async () => {
          if (await row.count()) return true;
          await page.getByRole('button', { name: 'Refresh executions' }).click();
          await page.waitForTimeout(300);
          return undefined;
        }, 20_000);
        await row.getByText('Waiting').waitFor();
        await checkA11y(page, 'the executions');
        await screenshot(page, 'automation-executions');
        await row.getByRole('link', { name: who }).click();
        await heading(page, who);
        await node(page, delay).and(page.locator('.is-current')).waitFor();
        await page.locator('.trace li').filter({ hasText: 'Waiting' }).waitFor();

        // The delay passes: the page follows the execution to its end.
        await stepClock(c.db.knex, 60_000);
        await page.locator('.page-header .badge').filter({ hasText: 'Completed' }).waitFor({ timeout: 20_000 });
        const trace = page.locator('.trace li');
        await trace.nth(2).waitFor();
        expect(await trace.count()).toBe(3);
        expect(await trace.nth(0).innerText()).toContain('Waited 1 minute');
        expect(await trace.nth(1).innerText()).toContain('Matched: took the Yes path');
        expect(await trace.nth(2).innerText()).toContain('Sent “Pro welcome”');
        // On the graph: the Yes path taken to its end, the No send not.
        await node(page, yes).and(page.locator('.is-visited')).waitFor();
        await node(page, no).and(page.locator('.is-dim')).waitFor();
        await page.locator('.flow-label-yes.is-taken').waitFor();
        expect(await page.locator('.flow-label-no.is-taken').count()).toBe(0);
        await checkA11y(page, 'the execution');
        await screenshot(page, 'automation-execution', { fullPage: true });
        const mail = await waitFor('the Pro welcome', () => c.smtp!.received.find((m) => m.envelopeTo[0] === who));
        expect(mail.parsed.subject).toBe('Welcome to Pro');
      });
    });

    test('a waiting execution is cancelled from its page, after a confirmation', async () => {
      const created = await api('POST', '/workflows', {
        name: `Reminder ${size}`, enabled: true, trigger: { type: 'EVENT', event: `cart_${size}` },
        steps: [{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'remind' }, { id: 'remind', type: 'SEND_EMAIL', config: { template: freeTemplate } }],
      });
      expect(created.status).toBe(201);
      const wf = created.body.data.id as string;
      const who = `cart.${size}@example.org`;
      await track(who, `cart_${size}`);
      const x = await waitFor('the waiting execution', async () => {
        const items = (await api('GET', `/workflows/${wf}/executions`)).body.data.items as { id: string; status: string }[];
        return items[0]?.status === 'WAITING' ? items[0] : undefined;
      });
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url(`/app/automations/${wf}/executions/${x.id}`));
        await heading(page, who);
        await page.locator('.page-header .badge').filter({ hasText: 'Waiting' }).waitFor();
        await page.getByRole('button', { name: 'Cancel execution' }).click();
        const dialog = page.getByRole('dialog', { name: 'Cancel this execution?' });
        await dialog.getByText(`${who} takes no further step of Reminder ${size}`).waitFor();
        await checkA11y(page, 'the cancel confirmation');
        await dialog.getByRole('button', { name: 'Cancel execution' }).click();
        await toast(page, 'Execution cancelled');
        await page.locator('.page-header .badge').filter({ hasText: 'Cancelled' }).waitFor();
        await page.locator('.trace li').filter({ hasText: 'Cancelled during this step' }).waitFor();
        await node(page, 'wait').and(page.locator('.is-cancelled')).waitFor();
        expect(await page.getByRole('button', { name: 'Cancel execution' }).count()).toBe(0);
        await screenshot(page, 'automation-cancelled');
      });
      expect((await api('GET', `/workflows/${wf}/executions/${x.id}`)).body.data.status).toBe('CANCELLED');
    });

    desktopOnly(size)('a step with a bad field shows the API\'s message on that step, selected', async () => {
      await c.withPage({ viewport, as: 'member', expectErrors: [/status of 422/] }, async (page) => {
        await page.goto(c.url('/app/automations/new'));
        await heading(page, 'New automation');
        await panel(page).getByLabel('Name').fill(`Broken ${size}`);
        await panel(page).getByLabel('Trigger event').fill(`broken_${size}`);
        const send = await addStep(page, 'Add a step at the start', 'Send email');
        await panel(page).getByLabel('Template').selectOption({ label: 'Pro welcome' });
        const hook = await addStep(page, `Add a step after ${send}`, 'Webhook');
        await panel(page).getByLabel('URL').fill('ftp://example.org/journeys');
        await node(page, '@trigger').click(); // away from the step: the API's answer selects it again
        await page.getByRole('button', { name: 'Create automation' }).click();

        await node(page, hook).and(page.locator('.is-invalid.is-selected')).waitFor();
        const url = panel(page).getByLabel('URL');
        expect(await url.getAttribute('aria-invalid')).toBe('true');
        expect(await page.evaluate('document.activeElement && document.activeElement.getAttribute("aria-invalid")')).toBe('true');
        await panel(page).locator('.field-error').filter({ hasText: 'must be an http or https URL' }).waitFor();
        expect(await node(page, send).getAttribute('class')).not.toContain('is-invalid');
        await page.locator('.form-error').filter({ hasText: 'Not saved: the API found one problem, shown where it is.' }).waitFor();
        await checkA11y(page, 'a refused step');
        await screenshot(page, 'automation-invalid');

        // Fixed, it is created.
        await url.fill('https://example.org/journeys');
        await page.getByRole('button', { name: 'Create automation' }).click();
        await toast(page, 'Automation created');
        expect(await page.locator('.flow-node.is-invalid').count()).toBe(0);
      });
    });

    test('every step type on the graph and in its panel: a wait\'s event and timeout paths, a loop, an exit', async () => {
      const created = await api('POST', '/workflows', {
        name: `Every step ${size}`, trigger: { type: 'EVENT', event: `trial_${size}` },
        steps: [
          { id: 'hello', type: 'SEND_EMAIL', config: { template: proTemplate }, next: 'await' },
          { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'paid', timeout: { amount: 3, unit: 'days' } }, next: 'check' },
          { id: 'check', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'event.paid', operator: 'triggered' }] }] } }, branches: { yes: 'tag', no: 'hook' } },
          { id: 'tag', type: 'UPDATE_CONTACT', config: { data: { customer: true }, subscribed: true }, next: 'done' },
          { id: 'hook', type: 'WEBHOOK', config: { url: 'https://example.org/trials', method: 'PUT', headers: { 'X-Team': 'growth' }, body: { lost: true } }, next: 'week' },
          { id: 'week', type: 'DELAY', config: { amount: 7, unit: 'days' }, next: 'hello' },
          { id: 'done', type: 'EXIT' },
        ],
      });
      expect(created.status).toBe(201);
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url(`/app/automations/${created.body.data.id as string}`));
        await heading(page, `Every step ${size}`);
        const summaries: [string, string][] = [
          ['hello', 'Pro welcome'], ['await', 'For “paid”, at most 3 days'], ['check', 'If event.paid happened'],
          ['tag', 'Set customer, subscribe'], ['hook', 'PUT https://example.org/trials'], ['week', 'Wait 7 days'], ['done', 'The journey ends here'],
        ];
        for (const [id, text] of summaries) await node(page, id).getByText(text).waitFor();
        for (const label of ['Event', 'Timeout', 'Yes', 'No']) await page.locator('.flow-label').getByText(label, { exact: true }).waitFor();
        expect(await page.locator('.flow-edge.is-back').count()).toBe(1); // the week's loop back to the first email
        // Each panel shows its step's fields, filled from the definition.
        const expectations: [string, string, string][] = [
          ['hello', 'Template', proTemplate], ['await', 'Event', 'paid'], ['tag', 'Subscription', 'true'],
          ['hook', 'Method', 'PUT'], ['week', 'Wait for', '7'],
        ];
        for (const [id, label, value] of expectations) {
          await node(page, id).click();
          expect(await panel(page).getByLabel(label, { exact: true }).inputValue()).toBe(value);
        }
        await node(page, 'hook').click();
        expect(await panel(page).getByLabel('Headers').inputValue()).toBe('X-Team: growth');
        expect(JSON.parse(await panel(page).getByLabel('Body').inputValue())).toEqual({ lost: true });
        await node(page, 'done').click();
        await panel(page).getByText('The execution ends here as EXITED').waitFor();
        await checkA11y(page, 'every step type');
        await screenshot(page, 'automation-every-step', { fullPage: true });

        // The choice of a new step in the middle of a path: every type but an EXIT (it would cut the path off).
        await page.getByRole('button', { name: 'Add a step after hello', exact: true }).click();
        const choice = page.getByRole('dialog', { name: 'Add a step' });
        await choice.getByText('The new step goes after hello.').waitFor();
        expect(await choice.getByRole('button', { name: /^Exit/ }).isDisabled()).toBe(true);
        expect(await choice.getByRole('button', { name: /^Webhook/ }).isDisabled()).toBe(false);
        await checkA11y(page, 'the choice of a step');
        await screenshot(page, 'automation-add-step');
        await choice.getByRole('button', { name: 'Cancel' }).click();
        await choice.waitFor({ state: 'hidden' });

        // Deleting the condition keeps its Yes path; its No path (the webhook and the weekly loop) goes with it.
        await node(page, 'check').click();
        await panel(page).getByRole('button', { name: 'Delete step' }).click();
        const confirm = page.getByRole('dialog', { name: 'Delete the step check?' });
        await confirm.getByText('Its No path goes with it: hook, week.').waitFor();
        await confirm.getByRole('button', { name: 'Delete step' }).click();
        await toast(page, 'Deleted 3 steps');
        for (const gone of ['check', 'hook', 'week']) expect(await node(page, gone).count()).toBe(0);

        // Renamed as it is typed (an empty id is refused on the spot), every reference with it; the field keeps the focus.
        await node(page, 'tag').click();
        const stepId = panel(page).getByLabel('Step ID');
        await stepId.fill('');
        await panel(page).getByText('Use 1 to 64 letters, digits, _ and -').waitFor();
        await stepId.pressSequentially('mark-customer');
        await node(page, 'mark-customer').waitFor();
        expect(await stepId.inputValue()).toBe('mark-customer');
        expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe(await stepId.getAttribute('id'));
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await toast(page, 'Automation saved');
        const saved = (await api('GET', `/workflows/${created.body.data.id as string}`)).body.data.steps as { id: string; next?: string | null }[];
        expect(saved.map((s) => s.id)).toEqual(['hello', 'await', 'mark-customer', 'done']);
        expect(saved.find((s) => s.id === 'await')!.next).toBe('mark-customer');
      });
      await c.withPage({ viewport, as: 'member', colorScheme: 'dark' }, async (page) => {
        await page.goto(c.url(`/app/automations/${created.body.data.id as string}`));
        await node(page, 'await').click();
        await checkA11y(page, 'every step type, dark');
        await screenshot(page, 'automation-every-step', { dark: true });
      });
    });

    test('a viewer sees automations, their graph and executions, and is offered no change', async () => {
      const list = (await api('GET', '/workflows?limit=100')).body.data.items as { id: string; name: string }[];
      const wf = list.find((w) => w.name === `Welcome series ${size}`)!;
      const x = ((await api('GET', `/workflows/${wf.id}/executions`)).body.data.items as { id: string }[])[0]!;
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/automations'));
        await heading(page, 'Automations');
        await page.getByRole('link', { name: `Welcome series ${size}` }).click();
        await heading(page, `Welcome series ${size}`);
        await node(page, 'check-1').waitFor();
        for (const name of ['New automation', 'Save', 'Enable', 'Disable', 'Delete']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
        expect(await page.locator('.flow-add').count()).toBe(0);
        await node(page, 'check-1').click();
        expect(await panel(page).getByRole('group', { name: 'Filter 1', exact: true }).getByLabel('Field').isDisabled()).toBe(true);
        expect(await panel(page).getByRole('button', { name: 'Delete step' }).count()).toBe(0);
        await checkA11y(page, 'the builder, read-only');
        await screenshot(page, 'automation-viewer');
        await page.goto(c.url(`/app/automations/${wf.id}/executions/${x.id}`));
        await page.locator('.trace li').first().waitFor();
        expect(await page.getByRole('button', { name: 'Cancel execution' }).count()).toBe(0);
        await page.goto(c.url('/app/automations/new'));
        await page.getByRole('heading', { name: 'Your role cannot create automations' }).waitFor();
      });
    });
  });

  test.each(VIEWPORTS)('the list names each automation with its trigger and status (%s)', async (_, viewport) => {
    await c.withPage({ viewport, as: 'member' }, async (page) => {
      await page.goto(c.url('/app/automations'));
      await heading(page, 'Automations');
      const row = page.locator('.automations-table tbody tr').filter({ hasText: 'Welcome series desktop' });
      await row.locator(':is(code, .sub):visible').getByText('signed_up_desktop').waitFor();
      await row.getByText('Enabled').waitFor();
      await page.getByRole('button', { name: 'New automation' }).waitFor();
      await checkA11y(page);
      await screenshot(page, 'automations');
    });
  });
});
