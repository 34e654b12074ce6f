import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createApp, type AppDeps } from '../../api/app';
import { loadSessionConfig, type DnsConfig } from '../../config';
import { CONSOLE_DIR } from '../../api/console';
import { addDomain } from '../../domains/rows';
import { createProject, type CreatedProject } from '../../projects/service';
import type { Role } from '../../projects/roles';
import { buildWeb } from '../../scripts/buildWeb';
import { bearer, testAppDeps } from './app';
import { launchChromium } from './chromium';
import { createTestDatabase, type TestDatabase } from './db';
import { startTestEngine, type TestEngine, type TestEngineOptions } from './engine';
import { PASSWORD, person } from '../people/support';
import { startSmtpServer, type TestSmtpServer } from './smtp';

/**
 * The console's browser tests (test/console/): a real Herald (the app of api/app.ts on a loopback port, its own
 * PostgreSQL database, optionally the embedded engine delivering to a real SMTP server), Debian's Chromium driven by
 * playwright-core, and people of every role in one project, signed in through the API.
 *
 *   withChromium('the console', (chromium) => {
 *     let c: ConsoleHarness;
 *     beforeAll(async () => { c = await startConsole(chromium); });
 *     afterAll(() => c.close());
 *     test.each(VIEWPORTS)('… at %s', async (_, viewport) => {
 *       await c.withPage({ viewport, as: 'admin' }, async (page) => {
 *         await page.goto(c.url('/app/emails'));
 *         await checkA11y(page);
 *         await screenshot(page, 'emails', viewport);
 *       });
 *     });
 *   });
 *
 * `withPage` fails the test on any console error, uncaught page error or CSP violation the page saw (in any frame),
 * unless the test said it expects it (`expectConsoleError`, e.g. the 401 of a wrong password).
 */

export const VIEWPORTS = [
  ['desktop', { width: 1280, height: 800 }],
  ['phone', { width: 390, height: 844 }],
] as const satisfies readonly (readonly [string, { width: number; height: number }])[];
export type Viewport = (typeof VIEWPORTS)[number][1];

/**
 * `test` at desktop size, nothing at phone size: for a test inside `describe.each(VIEWPORTS)` whose subject does not
 * change with the width (a path taken with the keyboard alone, the dark scheme's colours, an API refusal or a late
 * answer shown in words) and whose pages the file's other tests already show, screenshot and check with axe at phone
 * size. Run twice, such a test only doubled a browser's work: a console file spends about two thirds of its CPU in
 * Chromium. Not registered at phone size, rather than skipped, so that a run reports no skipped test.
 */
export function desktopOnly(size: string): jest.It {
  return size === 'desktop' ? test : ((() => undefined) as unknown as jest.It);
}

export const ARTIFACTS = path.resolve(__dirname, '..', '..', 'artifacts', 'console');
export const CONSOLE_ROLES: readonly Role[] = ['owner', 'admin', 'member', 'viewer'];

export interface Person { id: string; email: string; name: string; password: string }

export interface PageOptions {
  viewport?: Viewport;
  /** Signed in as the person of this role (a session through POST /auth/login, its cookie given to the browser). */
  as?: Role | Person;
  colorScheme?: 'light' | 'dark';
  /** Console errors this test expects (a 401 of a wrong password): matched against each message's text. */
  expectErrors?: RegExp[];
}

export interface ConsoleHarness {
  baseUrl: string;
  url(p: string): string;
  db: TestDatabase;
  server: Server;
  browser: Browser;
  project: CreatedProject;
  /** A signed-in person per role in `project` (password PASSWORD). */
  people: Record<Role, Person>;
  /** Only with `{ delivery: true }`: the engine and the SMTP server mail reaches. */
  smtp?: TestSmtpServer;
  engine?: TestEngine;
  key: { Authorization: string };
  /** A session cookie of `who`, by POST /auth/login from Herald's own origin. */
  signIn(who: Role | Person): Promise<string>;
  /** Runs `body` with a fresh browser context and page; fails on the page's console errors; closes both. */
  withPage<T>(opts: PageOptions, body: (page: Page, context: BrowserContext) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The console's build (dist/web): Jest's global setup made it; a file run alone builds it when it is missing. */
async function ensureBuilt(): Promise<void> {
  if (!fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) await buildWeb({ quiet: true });
}

/**
 * `dns`: the resolver domain checks use (a test's DNS server, test/support/dns.ts); the system's when left out.
 * `outboundWebhooks` (with `delivery`): the engine's webhook settings, e.g. `{ http: { allowPrivate: ['127.0.0.1'], … } }`
 * for a receiver on loopback (outbound HTTP refuses private addresses unless told).
 */
export async function startConsole(chromiumPath: string, opts: {
  delivery?: boolean; db?: TestDatabase; people?: boolean; dns?: DnsConfig; outboundWebhooks?: TestEngineOptions['outboundWebhooks'];
  /** TEMPORAL_UI_URL on Temporal (AppDeps temporalUi): campaigns carry the link to their workflow there. */
  temporalUi?: AppDeps['temporalUi'];
} = {}): Promise<ConsoleHarness> {
  await ensureBuilt();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const db = opts.db ?? (await createTestDatabase());
  const smtp = opts.delivery ? await startSmtpServer() : undefined;
  const engine = smtp ? await startTestEngine(db, smtp.url, opts.outboundWebhooks ? { outboundWebhooks: opts.outboundWebhooks } : {}) : undefined;
  // The app's PUBLIC_URL must be the address the browser uses: a session's changes must come from that origin.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const baseUrl = `http://127.0.0.1:${port}`;
  // Every page of every test signs in from 127.0.0.1: the address's throttle is raised so that the wrong passwords
  // some tests type never slow the others; the account's throttle is the default one (a test locks an account).
  const sessions = { ...loadSessionConfig({}), freeFailuresPerAddress: 100_000 };
  const app = createApp(testAppDeps(db.knex, { publicUrl: baseUrl, sessions, ...(engine ? { engine: engine.engine } : {}), ...(opts.dns ? { dns: opts.dns } : {}), ...(opts.temporalUi ? { temporalUi: opts.temporalUi } : {}) }));
  server.on('request', app.callback());
  const project = await createProject('Acme');
  if (smtp) await addDomain(project.id, 'example.com', true);
  const people = {} as Record<Role, Person>;
  if (opts.people !== false) {
    for (const role of CONSOLE_ROLES) {
      const name = { owner: 'Olivia Owner', admin: 'Ada Admin', member: 'Max Member', viewer: 'Vera Viewer' }[role];
      const created = await person(db.knex, { [project.id]: role }, { email: `${role}@acme.test` });
      await db.knex('users').where({ id: created.id }).update({ name });
      people[role] = { id: created.id, email: created.email, name, password: PASSWORD };
    }
  }
  const browser = await launchChromium(chromiumPath);

  const signIn = async (who: Role | Person): Promise<string> => {
    const p = typeof who === 'string' ? people[who] : who;
    const res = await fetch(`${baseUrl}/auth/login`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Origin: baseUrl }, body: JSON.stringify({ email: p.email, password: p.password }),
    });
    if (res.status !== 200) throw new Error(`sign-in of ${p.email}: ${res.status} ${await res.text()}`);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('herald_session='));
    if (!cookie) throw new Error('no session cookie');
    return cookie.split(';')[0]!.slice('herald_session='.length);
  };

  return {
    baseUrl, url: (p) => `${baseUrl}${p}`, db, server, browser, project, people, smtp, engine, key: bearer(project.secretKey), signIn,
    async withPage(pageOpts, body) {
      const context = await browser.newContext({
        viewport: pageOpts.viewport ?? VIEWPORTS[0][1],
        colorScheme: pageOpts.colorScheme ?? 'light',
        locale: 'en-GB',
        timezoneId: 'Europe/Paris',
        reducedMotion: 'reduce',
      });
      if (pageOpts.as) {
        await context.addCookies([{ name: 'herald_session', value: await signIn(pageOpts.as), url: baseUrl, httpOnly: true, sameSite: 'Lax' }]);
      }
      const page = await context.newPage();
      const errors = captureErrors(page, pageOpts.expectErrors ?? []);
      try {
        const result = await body(page, context);
        await page.waitForTimeout(50); // a violation reported as the test's last step ends
        if (errors.length) throw new Error(`the page logged ${errors.length} error(s):\n${errors.join('\n')}`);
        return result;
      } catch (err) {
        await page.screenshot({ path: path.join(ARTIFACTS, `failure-${Date.now()}.png`) }).catch(() => undefined);
        throw err;
      } finally {
        await context.close();
      }
    },
    async close() {
      await browser.close();
      await engine?.stop();
      await new Promise((r) => server.close(r));
      await smtp?.close();
      await db.close();
    },
  };
}

/**
 * Every console error, uncaught exception and Content-Security-Policy violation of the page and its frames, as lines;
 * `expected` ones (matched by text) are left out.
 */
export function captureErrors(page: Page, expected: RegExp[]): string[] {
  const errors: string[] = [];
  // This harness's own init script (below) is offered to every frame, the email preview's too (/app/preview,
  // sandboxed without scripts), which refuses it and says so: that refusal is the sandbox working, not the page's error.
  const ours = /^console error: Blocked script execution in '[^']*\/app\/preview[^']*' because the document's frame is sandboxed/;
  const keep = (line: string) => { if (!ours.test(line) && !expected.some((re) => re.test(line))) errors.push(line); };
  page.on('console', (msg) => {
    if (msg.type() === 'error') keep(`console error: ${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => keep(`page error: ${err.message}`));
  // A violation is also a console error in Chromium; this names it whatever the browser logs.
  // (A string: the test's TypeScript has no DOM types.)
  void page.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline')));`);
  return errors;
}

const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation { id: string; impact: string | null; help: string; nodes: { target: unknown[]; failureSummary?: string }[] }

/**
 * axe-core in the page (its source injected with page.evaluate, which the page's CSP does not govern): fails on any
 * serious or critical violation, and answers the rest (minor, moderate) for the caller to look at.
 */
export async function checkA11y(page: Page, what = page.url()): Promise<AxeViolation[]> {
  // Injected once per document: a page that stays loaded between checks keeps it (its 550 KB parsed once).
  if (await page.evaluate('typeof axe === "undefined"')) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
  })))`) as AxeViolation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) {
    const lines = bad.map((v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.slice(0, 5).map((n) => `   at ${JSON.stringify(n.target)}: ${n.failureSummary ?? ''}`).join('\n')}`);
    throw new Error(`axe found ${bad.length} serious or critical violation(s) on ${what}:\n${lines.join('\n')}`);
  }
  return violations;
}

/** A screenshot into artifacts/console/<name>-<width>.png (`-dark` for the dark scheme). */
export async function screenshot(page: Page, name: string, opts: { dark?: boolean; fullPage?: boolean } = {}): Promise<string> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const width = page.viewportSize()?.width ?? 0;
  const file = path.join(ARTIFACTS, `${name}${opts.dark ? '-dark' : ''}-${width}.png`);
  if (!opts.fullPage) {
    await page.screenshot({ path: file });
    return file;
  }
  // A whole page is drawn from the top: scrolled, the sticky header would be drawn where the window stood, mid-page.
  const y = await page.evaluate('window.scrollY');
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: file, fullPage: true });
  await page.evaluate(`window.scrollTo(0, ${Number(y)})`);
  return file;
}

/** Waits for the console's page heading (an <h1> with this text): the page has loaded and rendered. */
export async function heading(page: Page, text: string | RegExp): Promise<void> {
  await page.getByRole('heading', { level: 1, name: text }).waitFor({ timeout: 15_000 });
}

/**
 * Holds back the answer to the page's first GET (from its own code, not a navigation) of a URL matching `url` until
 * `release` settles: Herald answers at once, the page hears it after, as a loaded machine may do. `held()` says how
 * many such GETs were seen; `delivered` settles once the held answer reached the page.
 */
export async function holdFirstAnswer(page: Page, url: RegExp, release: Promise<void>): Promise<{ held: () => number; delivered: Promise<void> }> {
  let held = 0;
  let done!: () => void;
  const delivered = new Promise<void>((resolve) => { done = resolve; });
  await page.route(url, async (route) => {
    if (route.request().resourceType() !== 'fetch' || route.request().method() !== 'GET' || held++ > 0) return route.continue();
    const response = await route.fetch();
    await release;
    await route.fulfill({ response });
    done();
  });
  return { held: () => held, delivered };
}
