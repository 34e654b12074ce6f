import { openToken, clickToken } from '../../tracking/links';
import { TEST_SECRET, type TestContext } from '../support/app';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';
import type { Received, TestSmtpServer } from '../support/smtp';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { expectStatsKept } from '../support/campaignRecount';

/**
 * Open and click tracking end to end on the embedded engine: POST /v1/send (or a campaign) → delivery adds the pixel
 * and rewrites the links → the real SMTP server receives the HTML → fetching the pixel and following the links (as a
 * mail client would, on the URLs taken from the received HTML) records the events and the counts.
 */
let smtp: TestSmtpServer;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

beforeAll(async () => {
  ({ smtp, t, key } = e2e = await startEndToEnd());
});
afterAll(() => e2e.close());

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const GMAIL_PROXY = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
const APPLE_PROXY = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)';

const BODY = `<html><body><p>Hi {{ email }}</p>
<a href="https://shop.example/items?a=1&amp;b=2">shop</a>
<a class="x" href='https://docs.example/guide#start'>docs</a>
<a href="mailto:help@example.com">mail us</a>
<a href="{{ unsubscribeUrl }}">unsubscribe</a>
</body></html>`;

/** The hrefs of the received HTML's links, and the src of its images, in order. */
const hrefs = (html: string) => [...html.matchAll(/<a\b[^>]*?\shref=(?:"([^"]*)"|'([^']*)')/g)].map((m) => (m[1] ?? m[2])!.replace(/&amp;/g, '&'));
const images = (html: string) => [...html.matchAll(/<img\b[^>]*?\ssrc="([^"]*)"/g)].map((m) => m[1]!);
/** A URL on PUBLIC_URL (http://herald.test in tests) as a path for the test server. */
const pathOf = (url: string) => {
  const u = new URL(url);
  expect(u.origin).toBe('http://herald.test');
  return u.pathname + u.search;
};

async function sendAndReceive(body: object): Promise<{ emailId: string; contactId: string; mail: Received; html: string }> {
  const before = smtp.received.length;
  const res = await t.http().post('/v1/send').set(key).send({ from: 'hi@example.com', subject: 'Hello', body: BODY, ...body });
  expect(res.status).toBe(200);
  const emailId = res.body.data.emails[0].email as string;
  expect((await waitForEmails(t.db, [emailId]))[emailId]!.status).toBe('SENT');
  const to = res.body.data.emails[0].contact.email as string;
  const mail = await waitFor('the email at the SMTP server', () => smtp.received.slice(before).find((m) => m.envelopeTo[0] === to));
  return { emailId, contactId: res.body.data.emails[0].contact.id, mail, html: mail.parsed.html as string };
}

const emailRow = (id: string) => t.db.knex('emails').where({ project_id: t.project.id, id }).first('opens', 'clicks', 'first_opened_at', 'first_clicked_at', 'track_opens', 'track_clicks');
const eventsOf = (emailId: string) => t.db.knex('events').where({ project_id: t.project.id, email_id: emailId }).whereIn('name', ['email.opened', 'email.clicked'])
  .orderBy('id').select('name', 'contact_id', 'email_id', 'data');
const allTrackingEvents = async () => Number((await t.db.knex('events').whereIn('name', ['email.opened', 'email.clicked']).count('* as n').first())!.n);

describe('POST /v1/send', () => {
  test('tracking is off by default: no pixel, links as written, nothing on the row', async () => {
    const { emailId, html } = await sendAndReceive({ to: 'plain@example.net' });
    expect(images(html)).toEqual([]);
    expect(hrefs(html).slice(0, 3)).toEqual(['https://shop.example/items?a=1&b=2', 'https://docs.example/guide#start', 'mailto:help@example.com']);
    expect(html).not.toContain('/t/');
    expect(await emailRow(emailId)).toMatchObject({ track_opens: false, track_clicks: false, opens: 0, clicks: 0 });
  });

  test('track on: the received HTML has the pixel and rewritten links; the pixel and the links record events and counts', async () => {
    const { emailId, contactId, html } = await sendAndReceive({ to: 'reader@example.net', track: { opens: true, clicks: true } });
    expect(await emailRow(emailId)).toMatchObject({ track_opens: true, track_clicks: true });

    // The pixel closes the body; the http(s) links go through /t/c; mailto: and the unsubscribe link are untouched.
    const [pixel] = images(html);
    expect(pixel).toMatch(/^http:\/\/herald\.test\/t\/o\/[\w-]+\.[\w-]+$/);
    expect(html.indexOf(pixel!)).toBeLessThan(html.indexOf('</body>'));
    const links = hrefs(html);
    expect(links).toHaveLength(4);
    expect(links[0]).toMatch(/^http:\/\/herald\.test\/t\/c\/[\w-]+\.[\w-]+$/);
    expect(links[1]).toMatch(/^http:\/\/herald\.test\/t\/c\/[\w-]+\.[\w-]+$/);
    expect(links[2]).toBe('mailto:help@example.com');
    expect(links[3]).toMatch(/^http:\/\/herald\.test\/unsubscribe\/[\w-]+\.[\w-]+$/);
    expect(html).not.toContain('shop.example');

    // Opened by a person's mail client.
    const open = await t.http().get(pathOf(pixel!)).set('User-Agent', BROWSER);
    expect(open.status).toBe(200);
    expect(open.headers['content-type']).toBe('image/gif');
    expect(open.headers['cache-control']).toContain('no-store');
    expect(open.body.subarray(0, 6).toString()).toBe('GIF89a');
    let row = await emailRow(emailId);
    expect(row.opens).toBe(1);
    expect(row.first_opened_at).toBeInstanceOf(Date);
    const firstOpen = row.first_opened_at as Date;

    // Clicked: a 302 to the link as written (entities decoded), never cached.
    const click = await t.http().get(pathOf(links[0]!)).set('User-Agent', BROWSER).redirects(0);
    expect(click.status).toBe(302);
    expect(click.headers.location).toBe('https://shop.example/items?a=1&b=2');
    expect(click.headers['cache-control']).toContain('no-store');
    // A query string naming another target is ignored: the target comes from the signed token alone.
    const steered = await t.http().get(`${pathOf(links[1]!)}?url=https://evil.example/&to=https://evil.example/`).set('User-Agent', BROWSER).redirects(0);
    expect(steered.status).toBe(302);
    expect(steered.headers.location).toBe('https://docs.example/guide#start');

    // A second open counts in the total but does not move the first, and makes no second event within the window (60 s).
    await t.http().get(pathOf(pixel!)).set('User-Agent', BROWSER).expect(200);
    row = await emailRow(emailId);
    expect(row).toMatchObject({ opens: 2, clicks: 2 });
    expect(row.first_opened_at).toEqual(firstOpen);
    expect(row.first_clicked_at).toBeInstanceOf(Date);

    expect(await eventsOf(emailId)).toEqual([
      { name: 'email.opened', contact_id: contactId, email_id: emailId, data: {} },
      { name: 'email.clicked', contact_id: contactId, email_id: emailId, data: { url: 'https://shop.example/items?a=1&b=2' } },
      { name: 'email.clicked', contact_id: contactId, email_id: emailId, data: { url: 'https://docs.example/guide#start' } },
    ]);
    // The events are the project's like any other: GET /events lists them.
    const listed = await t.http().get('/events').query({ name: 'email.clicked', contactId }).set(key);
    expect(listed.body.data.items.map((e: { emailId: string }) => e.emailId)).toEqual([emailId, emailId]);
  });

  test('a tampered, foreign or misused token is a 404 and records nothing', async () => {
    const { emailId, html } = await sendAndReceive({ to: 'tamper@example.net', track: { opens: true, clicks: true } });
    const pixel = pathOf(images(html)[0]!);
    const link = pathOf(hrefs(html)[0]!);
    const before = await allTrackingEvents();
    const flip = (p: string, at: number) => p.slice(0, at) + (p[at] === 'A' ? 'B' : 'A') + p.slice(at + 1);
    const otherProject = await t.newProject();
    const otherSecret = Buffer.from('another-installation-secret-000000000');
    const bad = [
      flip(pixel, '/t/o/'.length + 3), // payload altered
      flip(pixel, pixel.length - 2), // signature altered
      flip(link, '/t/c/'.length + 50), // the link's target altered
      `/t/o/${openToken(otherSecret, { projectId: t.project.id, emailId })}`, // another installation's token
      `/t/c/${clickToken(otherSecret, { projectId: t.project.id, emailId, url: 'https://evil.example/' })}`,
      `/t/c/${pixel.slice('/t/o/'.length)}`, // an open token is no click token
      `/t/o/${link.slice('/t/c/'.length)}`,
      `/t/o/${openToken(TEST_SECRET, { projectId: otherProject.id, emailId })}`, // signed, but the email is not that project's
      '/t/o/not-a-token', '/t/c/a.b.c', '/t/c/.',
    ];
    for (const path of bad) {
      const res = await t.http().get(path).set('User-Agent', BROWSER).redirects(0);
      expect([path, res.status]).toEqual([path, 404]);
      expect(res.headers.location).toBeUndefined();
      expect(res.body.success).toBe(false);
    }
    expect(await allTrackingEvents()).toBe(before);
    expect(await emailRow(emailId)).toMatchObject({ opens: 0, clicks: 0, first_opened_at: null, first_clicked_at: null });
  });

  test('opens by mail proxies and scanners are recorded, flagged, and not unique', async () => {
    const { emailId, html } = await sendAndReceive({ to: 'proxied@example.net', track: { opens: true, clicks: true } });
    const pixel = pathOf(images(html)[0]!);
    for (const ua of [GMAIL_PROXY, APPLE_PROXY, 'curl/8.5.0']) await t.http().get(pixel).set('User-Agent', ua).expect(200);
    await t.http().get(pixel).unset('User-Agent').expect(200);
    // A scanner following the link.
    await t.http().get(pathOf(hrefs(html)[0]!)).set('User-Agent', 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)').redirects(0).expect(302);
    expect(await emailRow(emailId)).toMatchObject({ opens: 4, clicks: 1, first_opened_at: null, first_clicked_at: null });
    // Bots' opens share one event per window (the first's), as do their clicks of one link.
    expect((await eventsOf(emailId)).map((e) => e.data)).toEqual([
      { bot: true, proxy: 'gmail' }, { bot: true, url: 'https://shop.example/items?a=1&b=2' },
    ]);
    // Then a person opens it: now it is a unique open, with an event of its own (bots' window is not people's).
    await t.http().get(pixel).set('User-Agent', BROWSER).expect(200);
    expect((await emailRow(emailId)).first_opened_at).toBeInstanceOf(Date);
    expect((await eventsOf(emailId)).map((e) => e.data)).toEqual([
      { bot: true, proxy: 'gmail' }, { bot: true, url: 'https://shop.example/items?a=1&b=2' }, {},
    ]);
  });

  test('a HEAD (a scanner looking) answers like a GET and records nothing; a bad token is still a 404', async () => {
    const { emailId, html } = await sendAndReceive({ to: 'head@example.net', track: { opens: true, clicks: true } });
    const pixel = pathOf(images(html)[0]!);
    const link = pathOf(hrefs(html)[0]!);
    const pixelHead = await t.http().head(pixel).set('User-Agent', BROWSER);
    expect(pixelHead.status).toBe(200);
    expect(pixelHead.headers['content-type']).toBe('image/gif');
    const linkHead = await t.http().head(link).set('User-Agent', BROWSER).redirects(0);
    expect(linkHead.status).toBe(302);
    expect(linkHead.headers.location).toBe('https://shop.example/items?a=1&b=2');
    expect((await t.http().head('/t/o/not-a-token')).status).toBe(404);
    expect(await emailRow(emailId)).toMatchObject({ opens: 0, clicks: 0, first_opened_at: null, first_clicked_at: null });
    expect(await eventsOf(emailId)).toHaveLength(0);
  });

  test('opens that arrive together share one transaction and each counts; they make one event', async () => {
    const { emailId, html } = await sendAndReceive({ to: 'burst@example.net', track: { opens: true } });
    expect(hrefs(html)[0]).toBe('https://shop.example/items?a=1&b=2'); // opens only: links as written
    const pixel = pathOf(images(html)[0]!);
    // The 40 hits start a second of their own: the per-address limit (50 hits a second, the same address for every
    // test of this file) must not count the earlier tests' hits against them, which it did once sends got faster.
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
    const answers = await Promise.all(Array.from({ length: 40 }, () => t.http().get(pixel).set('User-Agent', BROWSER)));
    expect(answers.map((r) => r.status)).toEqual(Array(40).fill(200));
    expect((await emailRow(emailId)).opens).toBe(40);
    expect(await eventsOf(emailId)).toHaveLength(1);
  });
});

describe('project settings', () => {
  test('GET /settings answers the defaults; PATCH changes what it names; a send\'s own track wins', async () => {
    const other = await t.newProject();
    const got = await t.http().get('/settings').set(key);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ name: expect.any(String), requireTwoFactor: false, retentionDays: null, instanceRetentionDays: 365, tracking: { send: { opens: false, clicks: false }, campaigns: { opens: true, clicks: true } } });

    const patched = await t.http().patch('/settings').set(key).send({ tracking: { send: { opens: true } } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual({ name: got.body.data.name, requireTwoFactor: false, retentionDays: null, instanceRetentionDays: 365, tracking: { send: { opens: true, clicks: false }, campaigns: { opens: true, clicks: true } } });
    // The project's name is a setting too: renamed here, shown wherever the project is named; an empty one is refused.
    const renamed = await t.http().patch('/settings').set(key).send({ name: '  Acme Mail  ' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe('Acme Mail');
    const empty = await t.http().patch('/settings').set(key).send({ name: ' ' });
    expect(empty.status).toBe(422);
    expect(JSON.stringify(empty.body)).toContain('name');
    expect((await t.http().get('/settings').set(key)).body.data.name).toBe('Acme Mail');
    // Another project's settings are its own.
    expect((await t.http().get('/settings').set({ Authorization: `Bearer ${other.secretKey}` })).body.data.tracking.send).toEqual({ opens: false, clicks: false });

    try {
      const byDefault = await sendAndReceive({ to: 'default-on@example.net' });
      expect(images(byDefault.html)).toHaveLength(1);
      expect(hrefs(byDefault.html)[0]).toBe('https://shop.example/items?a=1&b=2');
      const overridden = await sendAndReceive({ to: 'override@example.net', track: { opens: false, clicks: true } });
      expect(images(overridden.html)).toEqual([]);
      expect(hrefs(overridden.html)[0]).toMatch(/^http:\/\/herald\.test\/t\/c\//);
    } finally {
      await t.http().patch('/settings').set(key).send({ tracking: { send: { opens: false } } }).expect(200);
    }
  });

  test.each([
    [{}, ''],
    [{ tracking: {} }, 'tracking'],
    [{ tracking: { send: {} } }, 'tracking.send'],
    [{ tracking: { send: { opens: 'yes' } } }, 'tracking.send.opens'],
    [{ tracking: { campaigns: { clicks: true, pixel: true } } }, 'tracking.campaigns.pixel'],
    [{ theme: 'dark' }, 'theme'],
  ])('PATCH /settings %j is a 422 naming %s', async (body, field) => {
    const res = await t.http().patch('/settings').set(key).send(body);
    expect(res.status).toBe(422);
    expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  test('a bad track on /v1/send is a 422 naming the field', async () => {
    const res = await t.http().post('/v1/send').set(key).send({ to: 'x@example.net', from: 'hi@example.com', subject: 's', body: 'b', track: { opens: 'always' } });
    expect(res.status).toBe(422);
    expect(res.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['track.opens']);
  });
});

describe('campaigns', () => {
  const campaignBody = `<p>News for {{ email }}</p><a href="https://news.example/a">A</a> <a href="https://news.example/b">B</a>`;

  async function sendCampaign(name: string, emails: string[]) {
    for (const email of emails) await t.http().post('/contacts').set(key).send({ email, subscribed: true, data: { list: name } }).expect((r) => expect([200, 201]).toContain(r.status));
    const created = await t.http().post('/campaigns').set(key).send({
      name, subject: 'News', body: campaignBody, from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.list', operator: 'equals', value: name }] }] },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const before = smtp.received.length;
    expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
    await waitFor('campaign SENT', async () => ((await t.http().get(`/campaigns/${id}`).set(key)).body.data.status === 'SENT' ? true : undefined), 30_000, 100);
    const mails = await waitFor('campaign mail', () => {
      const got = smtp.received.slice(before).filter((m) => emails.includes(m.envelopeTo[0]!));
      return got.length === emails.length ? got : undefined;
    });
    const htmlOf = (email: string) => mails.find((m) => m.envelopeTo[0] === email)!.parsed.html as string;
    return { id, htmlOf, mails };
  }

  test('tracked by default: List-Unsubscribe and the unsubscribe link untouched; stats give real opens, clicks and clicks per link', async () => {
    const people = ['s1@example.org', 's2@example.org', 's3@example.org', 's4@example.org'];
    const { id, htmlOf, mails } = await sendCampaign('stats', people);
    for (const m of mails) {
      const raw = m.raw.toString().replace(/\r?\n[ \t]+/g, ' ');
      const listUnsubscribe = /^List-Unsubscribe: <([^>]+)>\r?$/m.exec(raw)![1]!.replace(/\s+/g, '');
      expect(listUnsubscribe).toMatch(/^http:\/\/herald\.test\/unsubscribe\//);
      const links = hrefs(m.parsed.html as string);
      expect(links).toHaveLength(3);
      expect(links.slice(0, 2).every((l) => l.startsWith('http://herald.test/t/c/'))).toBe(true);
      expect(links[2]).toBe(listUnsubscribe); // the footer's unsubscribe link, as in the header
      expect(images(m.parsed.html as string)).toHaveLength(1);
    }
    const open = (email: string, ua = BROWSER) => t.http().get(pathOf(images(htmlOf(email))[0]!)).set('User-Agent', ua).expect(200);
    const click = (email: string, n: number, ua = BROWSER) => t.http().get(pathOf(hrefs(htmlOf(email))[n]!)).set('User-Agent', ua).redirects(0).expect(302);
    // s1 opens twice and clicks A twice and B once; s2 opens and clicks A; s3 only through Apple's proxy (and a
    // scanner clicks B); s4 nothing.
    await open(people[0]!); await open(people[0]!);
    await click(people[0]!, 0); await click(people[0]!, 0); await click(people[0]!, 1);
    await open(people[1]!); await click(people[1]!, 0);
    await open(people[2]!, APPLE_PROXY); await click(people[2]!, 1, 'python-requests/2.31');

    const stats = await t.http().get(`/campaigns/${id}/stats`).set(key);
    expect(stats.status).toBe(200);
    expect(stats.body.data).toEqual({
      totalRecipients: 4, queued: 0, sent: 4, delivered: 4, opened: 2, clicked: 2, bounced: 0, complained: 0, failed: 0, cancelled: 0, suppressed: 0,
      unsubscribed: 0, openRate: 0.5, clickRate: 0.5, opens: 4, uniqueOpens: 2, clicks: 5, uniqueClicks: 2,
      links: [
        // s1's second click of A is within its window: a link's clicks count one per email per window.
        { url: 'https://news.example/a', clicks: 2, uniqueClicks: 2 },
        { url: 'https://news.example/b', clicks: 2, uniqueClicks: 1 },
      ],
    });
    await expectStatsKept(t.db.knex, t.project.id, id); // kept as the hits came, equal to a recount of the rows
  });

  test('a project that turns campaign tracking off gets campaign mail as written', async () => {
    await t.http().patch('/settings').set(key).send({ tracking: { campaigns: { opens: false, clicks: false } } }).expect(200);
    try {
      const { htmlOf } = await sendCampaign('untracked', ['u1@example.org']);
      const html = htmlOf('u1@example.org');
      expect(images(html)).toEqual([]);
      expect(hrefs(html).slice(0, 2)).toEqual(['https://news.example/a', 'https://news.example/b']);
    } finally {
      await t.http().patch('/settings').set(key).send({ tracking: { campaigns: { opens: true, clicks: true } } }).expect(200);
    }
  });
});
