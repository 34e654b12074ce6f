import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchChromium, withChromium } from '../support/chromium';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';

/**
 * A tracked email as a person's browser sees it: headless Chromium (Debian's, driven by playwright-core, as in
 * test/temporal/ui.test.ts) opens the HTML the SMTP server received, loads the pixel, and follows a link through the
 * redirect to a real HTTP server standing for the sender's site. PUBLIC_URL is http://herald.test in tests: Chromium's
 * requests to it are passed to the test's API server (route.fetch) and its answers handed back as they are.
 */
// A desktop Chrome's user agent: headless Chromium's own says HeadlessChrome, which is (rightly) flagged as a bot.
const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
withChromium('the tracking browser test', (chromiumPath) => {
  let e2e: EndToEnd;
  let browser: Browser;
  let site: http.Server;
  const visits: string[] = [];

  beforeAll(async () => {
    e2e = await startEndToEnd();
    site = http.createServer((req, res) => {
      visits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Landing</title><h1>Welcome</h1>');
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    browser = await launchChromium(chromiumPath);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => site?.close(r));
    await e2e?.close();
  });

  test('the received HTML loads the pixel in Chromium, and a click lands on the link\'s target through the redirect', async () => {
    const { t, smtp, key } = e2e;
    const target = `http://127.0.0.1:${(site.address() as AddressInfo).port}/landing?from=mail&n=1`;
    const before = smtp.received.length;
    const sent = await t.http().post('/v1/send').set(key).send({
      to: 'browser@example.net', from: 'hi@example.com', subject: 'Your order',
      body: `<html><body><p>Your order has shipped.</p><a id="go" href="${target.replace(/&/g, '&amp;')}">Track it</a></body></html>`,
      track: { opens: true, clicks: true },
    });
    expect(sent.status).toBe(200);
    const emailId = sent.body.data.emails[0].email as string;
    await waitForEmails(t.db, [emailId]);
    const mail = await waitFor('the email', () => smtp.received.slice(before).find((m) => m.envelopeTo[0] === 'browser@example.net'));
    const html = mail.parsed.html as string;
    expect(html).not.toContain(target.replace(/&/g, '&amp;'));

    const api = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`;
    const context = await browser.newContext({ userAgent: USER_AGENT });
    const page = await context.newPage();
    const herald: string[] = [];
    await page.route('http://herald.test/**', async (route) => {
      const url = route.request().url();
      herald.push(new URL(url).pathname.slice(0, 5));
      const response = await route.fetch({ url: url.replace('http://herald.test', api), maxRedirects: 0 });
      await route.fulfill({ response });
    });
    try {
      const pixelLoaded = page.waitForResponse((r) => r.url().startsWith('http://herald.test/t/o/'));
      await page.setContent(html);
      const pixel = await pixelLoaded;
      expect(pixel.status()).toBe(200);
      // The browser decoded it as a 1x1 image.
      expect(await page.locator('img[src*="/t/o/"]').evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(1);
      const opened = await waitFor('the open', async () => {
        const row = await t.db.knex('emails').where({ project_id: t.project.id, id: emailId }).first('opens', 'first_opened_at');
        return row.opens > 0 ? row : undefined;
      });
      expect(opened.opens).toBe(1);
      expect(opened.first_opened_at).toBeInstanceOf(Date); // a person's browser: a unique open

      await Promise.all([page.waitForURL(target), page.click('#go')]);
      expect(page.url()).toBe(target);
      expect(await page.title()).toBe('Landing');
      expect(visits).toEqual(['/landing?from=mail&n=1']);
      expect(herald).toEqual(['/t/o/', '/t/c/']);
      const events = await t.db.knex('events').where({ project_id: t.project.id, email_id: emailId }).whereIn('name', ['email.opened', 'email.clicked']).orderBy('id').select('name', 'data');
      expect(events).toEqual([{ name: 'email.opened', data: {} }, { name: 'email.clicked', data: { url: target } }]);
    } finally {
      await context.close();
    }
  });
});
