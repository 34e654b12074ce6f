import { createProject } from '../../projects/service';
import { createResetLink } from '../../people/resets';
import { accountKey } from '../../people/throttle';
import { withChromium } from '../support/chromium';
import { checkA11y, desktopOnly, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';
import { PASSWORD, person } from '../people/support';

/**
 * Signing in and out of the console in Chromium, against a real Herald: the login (a wrong password, a locked account,
 * the right one), an invitation accepted, a password reset, "forgot
 * password", the project switcher, sign out. Every test at 1280×800 and 390×844, axe on every page.
 */
const WRONG = [/status of 401/];

withChromium('the console sign-in pages', (chromium) => {
  let c: ConsoleHarness;
  beforeAll(async () => { c = await startConsole(chromium); }, 60_000);
  afterAll(async () => { await c?.close(); });

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    const open = async (page: import('playwright-core').Page) => {
      if (size === 'phone') await page.getByRole('button', { name: 'Menu' }).click();
    };

    test('sign in: a wrong password is told next to the form; the right one lands on Overview', async () => {
      await c.withPage({ viewport, expectErrors: WRONG }, async (page) => {
        await page.goto(c.url('/app/login'));
        await heading(page, 'Sign in to Herald');
        await checkA11y(page);
        await screenshot(page, 'login');
        await page.getByLabel('Email').fill(c.people.member.email);
        await page.getByLabel('Password').fill('not the password at all');
        await page.getByRole('button', { name: 'Sign in' }).click();
        const alert = page.getByRole('alert');
        await alert.waitFor();
        expect(await alert.innerText()).toContain('Wrong email or password');
        expect(await page.locator('form').getAttribute('aria-describedby')).toBe(await alert.getAttribute('id'));
        await checkA11y(page);
        await screenshot(page, 'login-error');

        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await heading(page, 'Overview');
        expect(new URL(page.url()).pathname).toBe('/app');
      });
    });

    test('a signed-out visit to a page goes to sign-in, and back to that page after it', async () => {
      await c.withPage({ viewport, expectErrors: WRONG }, async (page) => {
        await page.goto(c.url('/app/emails?status=SENT'));
        await heading(page, 'Sign in to Herald');
        expect(new URL(page.url()).searchParams.get('next')).toBe('/app/emails?status=SENT');
        await page.getByLabel('Email').fill(c.people.viewer.email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.keyboard.press('Enter');
        await heading(page, 'Emails');
        expect(page.url()).toBe(c.url('/app/emails?status=SENT'));
      });
    });

    desktopOnly(size)('a locked account is told when it may try again (429 Retry-After)', async () => {
      const locked = await person(c.db.knex, { [c.project.id]: 'member' }, { email: `locked-${size}@acme.test` });
      // The account's free failures (LOGIN_FREE_FAILURES_PER_ACCOUNT, 5), and one more that starts its wait.
      for (let i = 0; i < 6; i++) {
        await fetch(c.url('/auth/login'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: locked.email, password: 'wrong password here' }) });
      }
      // Its first wait is a second; made two minutes so that the page's attempt surely meets it.
      await c.db.knex('login_failures').where({ key: accountKey(locked.email) }).update({ locked_until: c.db.knex.raw("now() + interval '2 minutes'") });
      await c.withPage({ viewport, expectErrors: [/status of 429/] }, async (page) => {
        await page.goto(c.url('/app/login'));
        await page.getByLabel('Email').fill(locked.email);
        await page.getByLabel('Password').fill('wrong password again');
        await page.getByRole('button', { name: 'Sign in' }).click();
        const alert = page.getByRole('alert');
        await alert.waitFor();
        expect(await alert.innerText()).toMatch(/Too many failed sign-ins\. You can try again in (\d+ seconds|2 minutes) \(at \d{2}:\d{2}\)\./);
      });
    });

    desktopOnly(size)('a single sign-on failure (?error=) is shown in words', async () => {
      await c.withPage({ viewport }, async (page) => {
        await page.goto(c.url('/app/login?error=no_account'));
        const alert = page.getByRole('alert');
        await alert.waitFor();
        expect(await alert.innerText()).toContain('There is no Herald account for this address');
        // SSO is off in this Herald: no button for it.
        expect(await page.getByRole('link', { name: /single sign-on/ }).count()).toBe(0);
      });
    });

    test('an invited person accepts the invitation and is signed in, in the project', async () => {
      const email = `invited-${size}@acme.test`;
      const res = await fetch(c.url('/invitations'), { method: 'POST', headers: { ...c.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ email, role: 'member' }) });
      expect(res.status).toBe(201);
      const { data } = await res.json() as { data: { link: string } };
      expect(data.link.startsWith(c.url('/app/invitation#token='))).toBe(true);
      await c.withPage({ viewport }, async (page) => {
        await page.goto(data.link);
        await heading(page, 'Join your team on Herald');
        await checkA11y(page);
        await screenshot(page, 'invitation');
        await page.getByLabel('Name').fill('Ivy Invited');
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Accept invitation' }).click();
        await heading(page, 'Overview');
        await open(page);
        await page.locator('#sidebar').getByText('Ivy Invited').waitFor();
        await page.locator('#sidebar').getByText(`${email} · member`).waitFor();
      });
    });

    desktopOnly(size)('a used invitation link is refused in words, with what to do', async () => {
      await c.withPage({ viewport, expectErrors: [/status of 422/] }, async (page) => {
        await page.goto(c.url('/app/invitation#token=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'));
        await page.getByLabel('Name').fill('Someone');
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Accept invitation' }).click();
        const alert = page.getByRole('alert');
        await alert.waitFor();
        expect(await alert.innerText()).toContain('This link is invalid, already used or expired. Ask an admin of the project for a new invitation.');
      });
    });

    test('password reset: forgot password, then the link sets a new one that signs in', async () => {
      const who = await person(c.db.knex, { [c.project.id]: 'member' }, { email: `reset-${size}@acme.test` });
      await c.withPage({ viewport, expectErrors: WRONG }, async (page) => {
        await page.goto(c.url('/app/login'));
        await page.getByRole('link', { name: 'Forgot your password?' }).click();
        await heading(page, 'Reset your password');
        await checkA11y(page);
        await page.getByLabel('Email').fill(who.email);
        await page.getByRole('button', { name: 'Send reset link' }).click();
        await page.getByRole('status').filter({ hasText: 'If this address has an account' }).waitFor();
        await screenshot(page, 'forgot');

        // No system sender here: the operator's link (CLI `user reset`).
        const { link } = await createResetLink({ knex: c.db.knex, publicUrl: c.baseUrl }, who.email);
        await page.goto(link);
        await heading(page, 'Choose a new password');
        await checkA11y(page);
        await screenshot(page, 'reset');
        await page.getByLabel('New password', { exact: true }).fill('a brand new passphrase');
        await page.getByRole('button', { name: 'Set password' }).click();
        await heading(page, 'Password changed');
        await page.getByRole('link', { name: 'Sign in' }).click();
        await heading(page, 'Sign in to Herald');
        await page.getByLabel('Email').fill(who.email);
        await page.getByLabel('Password').fill('a brand new passphrase');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await heading(page, 'Overview');
      });
    });

    test('the project switcher: a person in two projects switches, the role follows, the choice is remembered', async () => {
      const other = await createProject(`Globex ${size}`);
      const both = await person(c.db.knex, { [c.project.id]: 'admin', [other.id]: 'viewer' }, { email: `both-${size}@acme.test` });
      await c.withPage({ viewport, as: { id: both.id, email: both.email, name: both.name, password: PASSWORD } }, async (page) => {
        await page.goto(c.url('/app/emails'));
        await heading(page, 'Emails');
        await open(page);
        const switcher = page.getByLabel('Project', { exact: true });
        const sidebar = page.locator('#sidebar');
        // The first project by name, unless one was chosen.
        const firstRole = (await sidebar.locator('.whoami-email').innerText()).split(' · ')[1];
        const target = firstRole === 'admin' ? other : c.project;
        await switcher.selectOption(target.id);
        await sidebar.getByText(`${both.email} · ${target.id === other.id ? 'viewer' : 'admin'}`).waitFor();
        await checkA11y(page);
        await page.reload();
        await heading(page, 'Emails');
        await open(page);
        expect(await page.getByLabel('Project', { exact: true }).inputValue()).toBe(target.id);
      });
    });

    test('sign out ends the session: the next visit asks to sign in', async () => {
      await c.withPage({ viewport, as: 'member', expectErrors: WRONG }, async (page) => {
        await page.goto(c.url('/app'));
        await heading(page, 'Overview');
        await open(page);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await heading(page, 'Sign in to Herald');
        await page.goto(c.url('/app/emails'));
        await heading(page, 'Sign in to Herald');
      });
    });
  });
});
