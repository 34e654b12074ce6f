import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { person, PASSWORD } from '../people/support';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * Settings in Chromium (issue 28, point 8), against a real Herald: API keys (a sending-only key shown once, then
 * listed without its secret, then revoked), members (an invitation whose link a second browser follows, a role
 * changed, the audit log listing both), the person's own account (sessions, two-factor with a real TOTP code, recovery
 * codes), the general settings, and what a viewer is not offered. At both sizes, with axe and no console error.
 */
const codeOf = (secret: string) => new TOTP({ secret: Secret.fromBase32(secret), period: 30, digits: 6, algorithm: 'SHA1' }).generate();

async function copied(page: Page): Promise<string> {
  return page.evaluate('navigator.clipboard.readText()') as Promise<string>;
}

withChromium('the console: settings', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium); }, 90_000);
  afterAll(async () => { await c?.close(); });

  const api = async (path: string) => {
    const res = await fetch(c.url(path), { headers: c.key });
    expect(res.status).toBe(200);
    return (await res.json() as { data: unknown }).data;
  };

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('an admin creates a sending-only key: shown once with a copy button, then listed without its secret; then revokes it', async () => {
      const name = `Checkout ${size}`;
      await c.withPage({ viewport, as: 'admin' }, async (page, context) => {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.baseUrl });
        await page.goto(c.url('/app/settings/keys'));
        await heading(page, 'Settings');
        await page.getByRole('heading', { name: 'API keys' }).waitFor();
        await page.getByRole('button', { name: 'Create API key' }).first().click();
        const form = page.getByRole('dialog', { name: 'Create an API key' });
        await form.getByLabel('Name').fill(name);
        await form.getByLabel('Scope').selectOption('sending');
        await form.getByLabel('Sending domains (optional)').fill('example.com');
        await form.getByRole('button', { name: 'Create key' }).click();

        const shown = page.getByRole('dialog', { name: 'Copy your new API key' });
        await shown.waitFor();
        await shown.getByText('You will not see it again').waitFor();
        const key = (await shown.locator('[data-copy-value]').innerText()).trim();
        expect(key.length).toBeGreaterThan(20);
        await shown.getByRole('button', { name: 'Copy API key' }).click();
        expect(await copied(page)).toBe(key);
        await checkA11y(page, 'the new key dialog');
        await screenshot(page, 'settings-key-secret');
        await shown.getByRole('button', { name: 'I have copied it' }).click();

        // Listed by name and scope, never again with its secret.
        const row = page.getByRole('row').filter({ hasText: name });
        await row.getByText('Sending only').waitFor();
        await row.getByText('example.com').waitFor();
        expect(await page.content()).not.toContain(key);
        const listed = await api('/keys?limit=100') as { items: { name: string; scope: string; domains: string[] }[] };
        expect(listed.items.find((k) => k.name === name)).toMatchObject({ scope: 'sending', domains: ['example.com'] });
        await checkA11y(page, 'the keys');
        await screenshot(page, 'settings-keys');

        await page.getByRole('button', { name: `Revoke ${name}` }).click();
        const confirm = page.getByRole('dialog', { name: `Revoke the key “${name}”?` });
        await confirm.getByText('This cannot be undone').waitFor();
        await confirm.getByRole('button', { name: 'Revoke key' }).click();
        await page.getByText(`Key “${name}” revoked`).waitFor();
        await row.waitFor({ state: 'detached' });
        const after = await api('/keys?limit=100') as { items: { name: string }[] };
        expect(after.items.map((k) => k.name)).not.toContain(name);
      });
    });

    test('an admin invites a member, who joins with the link in a second browser and is offered only what a member may; the admin makes them a viewer; the audit log lists it', async () => {
      const email = `newcomer-${size}@acme.test`;
      const name = `Nia Newcomer ${size}`;
      await c.withPage({ viewport, as: 'admin' }, async (page, context) => {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.baseUrl });
        await page.goto(c.url('/app/settings/members'));
        await heading(page, 'Settings');
        // An admin grants up to admin: no owner on offer; the owner's row is above them and has no controls.
        const role = page.getByLabel('Role', { exact: true });
        await role.waitFor();
        expect(await role.locator('option').allInnerTexts()).toEqual(['Admin', 'Member', 'Viewer']);
        await page.getByRole('row').filter({ hasText: 'Olivia Owner' }).getByText('Owner', { exact: true }).waitFor();
        expect(await page.getByLabel('Role of Olivia Owner').count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Remove Olivia Owner' }).count()).toBe(0);

        await page.getByLabel('Email').fill(email);
        await role.selectOption('member');
        await page.getByRole('button', { name: 'Send invitation' }).click();
        const shown = page.getByRole('dialog', { name: `Send ${email} their invitation link` });
        await shown.waitFor();
        const link = (await shown.locator('[data-copy-value]').innerText()).trim();
        expect(link).toMatch(new RegExp(`^${c.baseUrl}/app/invitation#token=`));
        await shown.getByRole('button', { name: 'Copy invitation link' }).click();
        expect(await copied(page)).toBe(link);
        await screenshot(page, 'settings-invitation-link');
        await shown.getByRole('button', { name: 'Done' }).click();
        await page.getByRole('row').filter({ hasText: email }).getByText('Member').waitFor();

        // The invitee, in a browser of their own.
        await c.withPage({ viewport }, async (theirs) => {
          await theirs.goto(link);
          await theirs.getByLabel('Name').fill(name);
          await theirs.getByLabel('Password').fill(PASSWORD);
          await theirs.getByRole('button', { name: 'Accept invitation' }).click();
          await heading(theirs, 'Overview');
          await theirs.goto(c.url('/app/settings'));
          await heading(theirs, 'Settings');
          const tabs = theirs.getByRole('navigation', { name: 'Settings sections' });
          expect(await tabs.getByRole('link').allInnerTexts()).toEqual(['General', 'Your account']);
          await theirs.getByText('Only admins and owners change these settings.').waitFor();
          expect(await theirs.getByRole('button', { name: 'Save changes' }).count()).toBe(0);
          await theirs.goto(c.url('/app/settings/members'));
          await theirs.getByRole('heading', { name: 'Only admins and owners see the members' }).waitFor();
          expect(await theirs.getByRole('button', { name: 'Send invitation' }).count()).toBe(0);
        });

        // The pending invitation became a member; the admin makes them a viewer.
        await page.reload();
        await heading(page, 'Settings');
        // The heading comes before the members' list: wait for the new member's row, then count it once.
        await page.getByRole('row').filter({ hasText: email }).first().waitFor();
        expect(await page.getByRole('row').filter({ hasText: email }).count()).toBe(1);
        await page.getByLabel(`Role of ${name}`).selectOption('viewer');
        await page.getByText(`${name} is now viewer`).waitFor();
        const members = await api('/members') as { items: { email: string; role: string }[] };
        expect(members.items.find((m) => m.email === email)?.role).toBe('viewer');
        await checkA11y(page, 'the members');
        await screenshot(page, 'settings-members');

        await page.getByRole('navigation', { name: 'Settings sections' }).getByRole('link', { name: 'Audit log' }).click();
        await page.getByText(`Invited ${email} as member`).waitFor();
        await page.getByText(`Changed the role of ${name} to viewer (was member)`).waitFor();
        const who = page.getByRole('row').filter({ hasText: `Changed the role of ${name}` });
        await who.getByText('Ada Admin').waitFor();
        await who.getByText('Person').waitFor();
        await checkA11y(page, 'the audit log');
        await screenshot(page, 'settings-audit-log');

        // A filter is in the URL and narrows the list.
        await page.getByLabel('Action').selectOption('updateMember');
        await page.waitForURL(/operation=updateMember/);
        await page.getByRole('row').filter({ hasText: `Invited ${email}` }).waitFor({ state: 'detached' });
        await page.getByText(`Changed the role of ${name} to viewer`).waitFor();
      });
    });

    test('a person ends another of their sessions, turns two-factor on with a code from their app, sees recovery codes once, and turns it off', async () => {
      const created = await person(c.db.knex, { [c.project.id]: 'member' }, { email: `guarded-${size}@acme.test` });
      const who = { id: created.id, email: created.email, name: '', password: PASSWORD };
      await c.signIn(who); // a second session, as if from another browser
      await c.withPage({ viewport, as: who }, async (page, context) => {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.baseUrl });
        await page.goto(c.url('/app/settings/account'));
        await heading(page, 'Settings');
        const sessions = page.getByRole('region', { name: 'Where you are signed in' }).getByRole('row');
        await page.getByText('This browser').waitFor();
        expect(await sessions.count()).toBe(3); // the header and two sessions
        await page.getByRole('button', { name: /^End session: / }).click();
        await page.getByRole('dialog', { name: /^End the session of/ }).getByRole('button', { name: 'End session' }).click();
        await page.getByText('Session ended').waitFor();
        await expectCount(sessions, 2);

        await page.getByRole('button', { name: 'Set up two-factor' }).click();
        const secret = (await page.locator('.copy-field').filter({ hasText: 'Setup key' }).locator('[data-copy-value]').innerText()).trim();
        expect(secret).toMatch(/^[A-Z2-7]+=*$/);
        await page.getByRole('button', { name: 'Copy otpauth link' }).click();
        expect(await copied(page)).toMatch(/^otpauth:\/\/totp\//);
        await checkA11y(page, 'two-factor enrolment');
        await screenshot(page, 'settings-two-factor', { fullPage: true });
        await page.getByLabel('Authentication code').fill(codeOf(secret));
        await page.getByRole('button', { name: 'Turn on two-factor' }).click();

        const codes = page.getByRole('dialog', { name: 'Save your recovery codes' });
        await codes.getByText('you will not see them again').waitFor();
        expect(await codes.getByRole('listitem').count()).toBe(10);
        await checkA11y(page, 'the recovery codes');
        await screenshot(page, 'settings-recovery-codes');
        await codes.getByRole('button', { name: 'I have saved them' }).click();
        await page.getByRole('region', { name: /Two-factor authentication/ }).getByText('On', { exact: true }).waitFor();
        // Signing in now asks for the second factor.
        const login = await fetch(c.url('/auth/login'), { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: c.baseUrl }, body: JSON.stringify({ email: who.email, password: PASSWORD }) });
        expect((await login.json() as { data: { twoFactorRequired?: boolean } }).data.twoFactorRequired).toBe(true);

        await page.getByRole('button', { name: 'Turn off' }).click();
        const off = page.getByRole('dialog', { name: 'Turn off two-factor authentication?' });
        await off.getByLabel('Password').fill(PASSWORD);
        await off.getByRole('button', { name: 'Turn off two-factor' }).click();
        await page.getByText('Two-factor authentication is off').waitFor();
        await page.getByRole('button', { name: 'Set up two-factor' }).waitFor();
      });
    });

    test('an admin changes a tracking default; the general settings in light and dark', async () => {
      for (const colorScheme of ['light', 'dark'] as const) {
        await c.withPage({ viewport, as: 'admin', colorScheme }, async (page) => {
          await page.goto(c.url('/app/settings'));
          await heading(page, 'Settings');
          await page.getByRole('group', { name: 'Campaigns' }).getByLabel('Track clicks').waitFor();
          await checkA11y(page, `the general settings (${colorScheme})`);
          await screenshot(page, 'settings-general', { dark: colorScheme === 'dark' });
        });
      }
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url('/app/settings/general'));
        await heading(page, 'Settings');
        const before = await api('/settings') as { tracking: { campaigns: { clicks: boolean } } };
        const box = page.getByRole('group', { name: 'Campaigns' }).getByLabel('Track clicks');
        expect(await box.isChecked()).toBe(before.tracking.campaigns.clicks);
        await box.click();
        await page.getByText('You have unsaved changes.').waitFor();
        await page.getByRole('button', { name: 'Save changes' }).click();
        await page.getByText('Settings saved').waitFor();
        const after = await api('/settings') as { tracking: { campaigns: { clicks: boolean } } };
        expect(after.tracking.campaigns.clicks).toBe(!before.tracking.campaigns.clicks);
        // Requiring two-factor is not offered to an admin without it: it would lock them out.
        expect(await page.getByLabel('Require two-factor authentication of every member').isDisabled()).toBe(true);
      });
    });

    test('a viewer sees the settings but no control that changes them: no save, no keys, no invite, no role, no revoke', async () => {
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/settings'));
        await heading(page, 'Settings');
        const tabs = page.getByRole('navigation', { name: 'Settings sections' });
        expect(await tabs.getByRole('link').allInnerTexts()).toEqual(['General', 'Your account']);
        await page.getByText('Only admins and owners change these settings.').waitFor();
        expect(await page.getByRole('checkbox').count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Save changes' }).count()).toBe(0);
        await checkA11y(page, 'the general settings of a viewer');
        await screenshot(page, 'settings-viewer');
        for (const [path, title] of [['keys', 'Only admins and owners see the API keys'], ['members', 'Only admins and owners see the members'], ['audit-log', 'Only admins and owners see the audit log']] as const) {
          await page.goto(c.url(`/app/settings/${path}`));
          await page.getByRole('heading', { name: title }).waitFor();
          for (const control of ['Create API key', 'Send invitation', 'Revoke', 'Remove']) {
            expect(await page.getByRole('button', { name: control }).count()).toBe(0);
          }
          expect(await page.getByRole('combobox').count()).toBe(0);
        }
        await page.goto(c.url('/app/settings/account'));
        await page.getByRole('button', { name: 'Set up two-factor' }).waitFor();
        await checkA11y(page, 'the account of a viewer');
      });
    });
  });
});

async function expectCount(locator: { count(): Promise<number> }, n: number): Promise<void> {
  for (let i = 0; i < 50 && (await locator.count()) !== n; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await locator.count()).toBe(n);
}
