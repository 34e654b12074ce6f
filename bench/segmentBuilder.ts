/**
 * The audience builder at scale (issue 29): with BENCH_CONTACTS contacts (default 1,000,000) and their email activity
 * in the project, the time from a change in the segment builder to the new count shown, beside the same count's API
 * call alone (POST /segments/preview, timed by this script), as medians over BENCH_EDITS edits; the ratio is the
 * builder's median ÷ the API's median (the bar: ≤ 3).
 *
 *   npx tsx bench/segmentBuilder.ts          (npm run bench:segment-builder)
 *
 * The data: bench/lib/consoleSeed.ts, as bench:console-pages has it (BENCH_CONTACTS contacts with `data.plan` one of
 * free, pro, team; BENCH_EMAILS emails, default as many as contacts, over 90 days, with their events: email.sent,
 * email.opened of 30 % …), then VACUUM ANALYZE. One admin of the project, with a password. The console is built from
 * web/ and served by a real Herald API process (startHerald, as `npm run api`), in a child.
 *
 * The builder: Chromium opens /app/segments/new signed in, and the script builds "plan is pro, and opened an email in
 * the last N days" with the builder's own controls. An edit is one change of N (Playwright's fill: one input event),
 * each N a new value, so that every count is a new question. In the page, an init script notes the time of the input
 * event, then the first animation frame after the count has left its loading state (the frame that paints the new
 * count); the page's Resource Timing says when the preview request started and ended, which splits the time into
 * the builder's wait for typing to pause (its ~300 ms debounce), the request, and the render.
 *
 * The API alone: the same condition, POST /segments/preview with the project's secret key from this process (Node's
 * fetch, the answer read whole). Edits alternate which goes first (builder then API in even ones, API then builder in
 * odd ones), so both see the same cache; BENCH_WARMUP_EDITS (default 2) are left out.
 *
 * Environment: BENCH_CONTACTS, BENCH_EMAILS, BENCH_EDITS (default 15), BENCH_WARMUP_EDITS, BENCH_LOG_LEVEL (default
 * warn), BENCH_JSON=file, CHROMIUM_PATH.
 */
import fs from 'node:fs';
import os from 'node:os';
import type { Browser } from 'playwright-core';
import { createProject } from '../projects/service';
import { createUser } from '../people/users';
import { buildWeb } from '../scripts/buildWeb';
import { CHROMIUM_HOW, findChromium, launchChromium } from '../test/support/chromium';
import { startCluster } from './lib/cluster';
import { seedConsoleProject, withIndexesAfter } from './lib/consoleSeed';
import { startHeraldChild } from './lib/herald';
import { freePort, machine, runBench, stealSince, type Child } from './lib/proc';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const EMAILS = Number(process.env.BENCH_EMAILS ?? CONTACTS);
const EDITS = Number(process.env.BENCH_EDITS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP_EDITS ?? 2);
const DAYS = 90;
const PASSWORD = 'bench-password-0123456789';
const VIEWPORT = { width: 1280, height: 800 };

interface Edit { total: number; wait: number; request: number; render: number }

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const median = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 50);
const p90 = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 90);

/**
 * The init script: each input event starts a measure; it ends at the first animation frame after the count
 * (`.audience-count`) was seen loading and then no longer is. `window.__benchEdit` holds the last one.
 */
const DETECTOR = `(() => {
  let started = null, sawLoading = false;
  document.addEventListener('input', () => { started = performance.now(); sawLoading = false; window.__benchEdit = null; }, true);
  const check = () => {
    if (started === null) return;
    const count = document.querySelector('.audience-count');
    if (!count) return;
    if (count.classList.contains('is-loading')) { sawLoading = true; return; }
    if (!sawLoading) return;
    const from = started;
    started = null;
    requestAnimationFrame(() => { window.__benchEdit = { from, shown: performance.now(), text: count.textContent }; });
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
})();`;

const READ_EDIT = `(() => {
  const e = window.__benchEdit;
  if (!e) return null;
  const previews = performance.getEntriesByType('resource').filter((r) => r.name.endsWith('/segments/preview') && r.startTime >= e.from);
  const r = previews[previews.length - 1];
  return { ...e, requestStart: r ? r.startTime : null, responseEnd: r ? r.responseEnd : null };
})()`;

runBench('bench:segment-builder', 40 * 60_000, async () => {
  const chromiumPath = findChromium();
  if (!chromiumPath) throw new Error(`no Chromium: ${CHROMIUM_HOW}`);
  await buildWeb({ quiet: true });
  const cluster = await startCluster('segment-builder');
  const children: Child[] = [];
  let browser: Browser | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    const { knex } = cluster;
    const project = await createProject('Bench segments');
    console.log(`seeding ${CONTACTS} contacts and ${EMAILS} emails over ${DAYS} days, with their events …`);
    const seedStarted = performance.now();
    await withIndexesAfter(knex, ['contacts', 'emails', 'events'], (db) => seedConsoleProject(db, project.id, { contacts: CONTACTS, emails: EMAILS, days: DAYS, seed: 'a' }));
    await knex.raw('VACUUM ANALYZE');
    const counts = (await knex.raw(
      `SELECT (SELECT count(*) FROM contacts WHERE project_id = ?)::int AS contacts, (SELECT count(*) FROM events WHERE project_id = ?)::int AS events,
              (SELECT count(*) FROM events WHERE project_id = ? AND name = 'email.opened')::int AS opened, pg_size_pretty(pg_database_size(current_database())) AS size`,
      [project.id, project.id, project.id])).rows[0];
    console.log(`seeded and vacuumed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s: ${counts.contacts} contacts, ${counts.events} events (${counts.opened} email.opened); database ${counts.size}`);

    const admin = await createUser(knex, { email: 'ada@bench.example', name: 'Ada Admin', password: PASSWORD });
    await knex('memberships').insert({ project_id: project.id, user_id: admin.id, role: 'admin' });

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: String(port), PUBLIC_URL: base, API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
    children.push(herald);
    await herald.ready;

    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: base }, body: JSON.stringify({ email: admin.email, password: PASSWORD }) });
    if (login.status !== 200) throw new Error(`sign-in: ${login.status} ${await login.text()}`);
    const token = login.headers.getSetCookie().find((c) => c.startsWith('herald_session='))?.split(';')[0]!.slice('herald_session='.length);
    if (!token) throw new Error('no session cookie');

    const condition = (days: number) => ({ logic: 'AND', groups: [{ filters: [
      { field: 'data.plan', operator: 'equals', value: 'pro' },
      { field: 'event.email.opened', operator: 'triggeredWithin', value: days, unit: 'days' },
    ] }] });
    const apiCall = async (days: number): Promise<{ ms: number; count: number }> => {
      const started = performance.now();
      const res = await fetch(`${base}/segments/preview`, { method: 'POST', headers: { Authorization: `Bearer ${project.secretKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ condition: condition(days) }) });
      const body = await res.json() as { data?: { count: number } };
      const ms = performance.now() - started;
      if (res.status !== 200 || !body.data) throw new Error(`POST /segments/preview: ${res.status} ${JSON.stringify(body)}`);
      return { ms, count: body.data.count };
    };

    browser = await launchChromium(chromiumPath);
    const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-GB', timezoneId: 'Europe/Paris', reducedMotion: 'reduce' });
    await context.addCookies([{ name: 'herald_session', value: token, url: base, httpOnly: true, sameSite: 'Lax' }]);
    await context.addInitScript({ content: DETECTOR });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

    // The builder, as a person builds it: plan is pro, and opened an email in the last 30 days.
    await page.goto(`${base}/app/segments/new`);
    const first = page.getByRole('group', { name: 'Filter 1', exact: true });
    await first.getByLabel('Data key').fill('plan', { timeout: 60_000 });
    await first.getByLabel('Value', { exact: true }).fill('pro');
    await page.getByRole('button', { name: 'Add filter' }).click();
    const second = page.getByRole('group', { name: 'Filter 2', exact: true });
    await second.getByLabel('Field').selectOption('activity:email.opened');
    await second.getByLabel('Operator').selectOption('triggeredWithin');
    const days = second.getByLabel('How many');

    /** One edit in the builder: N days typed, until its count is painted. */
    const builderEdit = async (n: number, expected: number | null): Promise<Edit & { text: string }> => {
      await days.fill(String(n));
      await page.waitForFunction(() => (globalThis as { __benchEdit?: unknown }).__benchEdit, undefined, { timeout: 120_000, polling: 10 });
      const e = await page.evaluate(READ_EDIT) as { from: number; shown: number; text: string; requestStart: number | null; responseEnd: number | null };
      if (errors.length) throw new Error(`the page logged: ${errors.join('; ')}`);
      if (expected !== null && !e.text.startsWith(expected.toLocaleString('en-GB'))) throw new Error(`the builder showed "${e.text}" for ${n} days, the API ${expected}`);
      if (e.requestStart === null || e.responseEnd === null) throw new Error('no preview request after the edit');
      return { total: e.shown - e.from, wait: e.requestStart - e.from, request: e.responseEnd - e.requestStart, render: e.shown - e.responseEnd, text: e.text };
    };

    const steal0 = stealSince();
    const loadavg0 = os.loadavg();
    const builder: Edit[] = [];
    const alone: number[] = [];
    let shown = '';
    for (let i = 0; i < WARMUP + EDITS; i++) {
      const n = 10 + i; // a new window each time: a new question for the database
      let edit: Edit & { text: string };
      let api: { ms: number; count: number };
      if (i % 2 === 0) {
        edit = await builderEdit(n, null);
        api = await apiCall(n);
        if (!edit.text.startsWith(api.count.toLocaleString('en-GB'))) throw new Error(`the builder showed "${edit.text}" for ${n} days, the API ${api.count}`);
      } else {
        api = await apiCall(n);
        edit = await builderEdit(n, api.count);
      }
      shown = edit.text;
      if (i >= WARMUP) { builder.push(edit); alone.push(api.ms); }
      process.stdout.write(`edit ${i + 1}/${WARMUP + EDITS}${i < WARMUP ? ' (warm-up)' : ''}: ${n} days, ${api.count} contacts; builder ${edit.total.toFixed(0)} ms (wait ${edit.wait.toFixed(0)}, request ${edit.request.toFixed(0)}, render ${edit.render.toFixed(0)}), API alone ${api.ms.toFixed(0)} ms\n`);
    }
    const steal = stealSince(steal0.at).share;
    await context.close();

    const row = (name: string, xs: number[]) => `| ${name} | ${median(xs).toFixed(0)} | ${p90(xs).toFixed(0)} |`;
    console.log(`\n${counts.contacts} contacts, ${counts.events} events in the project; condition: plan is pro and opened an email in the last N days (N = 10…${9 + WARMUP + EDITS}); ${EDITS} edits after ${WARMUP} warm-up; last shown: "${shown}"`);
    console.log('\n| measure | median ms | p90 ms |');
    console.log('|---|---|---|');
    console.log(row('builder: change → new count painted', builder.map((e) => e.total)));
    console.log(row('  of which: waiting for typing to pause (debounce) and sending', builder.map((e) => e.wait)));
    console.log(row('  of which: the preview request (browser, Resource Timing)', builder.map((e) => e.request)));
    console.log(row('  of which: answer → painted', builder.map((e) => e.render)));
    console.log(row('API alone: POST /segments/preview (Node fetch)', alone));
    const ratio = median(builder.map((e) => e.total)) / median(alone);
    console.log(`\nratio: builder median ÷ API median = **${ratio.toFixed(2)}** (the bar: ≤ 3); without the debounce wait: ${((median(builder.map((e) => e.total)) - median(builder.map((e) => e.wait))) / median(alone)).toFixed(2)}`);
    console.log(`steal during the edits: ${(steal * 100).toFixed(1)} % of the machine's CPU time; load average before ${loadavg0.map((x) => x.toFixed(1)).join(' ')}, after ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), counts, builder, alone, ratio }, null, 2));
  } finally {
    await browser?.close().catch(() => undefined);
    await Promise.all(children.map((ch) => ch.stop()));
    await cluster.stop();
  }
});
