import { classifyAgent } from '../../tracking/agents';
import { addTracking, clickToken, openToken, verifyClickToken, verifyOpenToken } from '../../tracking/links';
import { unsubscribeToken, verifyUnsubscribeToken } from '../../mail/unsubscribe';

/** The rewriting and the tokens on their own: what the end-to-end tests see through the SMTP server, case by case. */
const secret = Buffer.from('links-test-secret-links-test-secret!');
const ids = { projectId: '0190a000-0000-7000-8000-000000000001', emailId: '0190a000-0000-7000-8000-0000000000e1' };
const opts = { ...ids, opens: true, clicks: true, publicUrl: 'https://mail.example.com/', secret };
const targets = (html: string) => [...html.matchAll(/href="https:\/\/mail\.example\.com\/t\/c\/([^"]+)"/gi)].map((m) => verifyClickToken(secret, m[1]!)?.url);

test('http(s) links of every quoting are rewritten to signed redirects naming their target; other links stay', () => {
  const html = `<A HREF="https://a.example/x?y=1&amp;z=&#50;">a</A><a data-x="1" href='http://b.example/'>b</a><a href=https://c.example/c>c</a>
<a href="mailto:x@example.com">m</a><a href="tel:+1">t</a><a href="#top">top</a><a href="/relative">r</a><a name="n">n</a>
<a href="https://mail.example.com/unsubscribe/abc.def">unsubscribe</a><a href="javascript:alert(1)">j</a>`;
  const out = addTracking(html, opts);
  expect(targets(out)).toEqual(['https://a.example/x?y=1&z=2', 'http://b.example/', 'https://c.example/c']);
  for (const kept of ['href="mailto:x@example.com"', 'href="tel:+1"', 'href="#top"', 'href="/relative"', 'href="https://mail.example.com/unsubscribe/abc.def"', 'href="javascript:alert(1)"']) {
    expect(out).toContain(kept);
  }
});

test('the pixel goes before the last </body>, or at the end without one; nothing changes with tracking off', () => {
  const withBody = addTracking('<html><body><p>x</p></BODY></html>', { ...opts, clicks: false });
  expect(withBody).toMatch(/<p>x<\/p><img src="https:\/\/mail\.example\.com\/t\/o\/[\w-]+\.[\w-]+" width="1" height="1" alt=""[^>]*><\/BODY><\/html>$/);
  expect(addTracking('<p>x</p>', { ...opts, clicks: false })).toMatch(/^<p>x<\/p><img src=/);
  const html = '<a href="https://a.example/">a</a>';
  expect(addTracking(html, { ...opts, opens: false, clicks: false })).toBe(html);
  expect(addTracking(html, { ...opts, clicks: false })).toContain('href="https://a.example/"');
});

test('tokens: each kind verifies only as itself, only with its secret, and not once altered', () => {
  const open = openToken(secret, ids);
  const click = clickToken(secret, { ...ids, url: 'https://a.example/ü?q=1' });
  expect(verifyOpenToken(secret, open)).toEqual(ids);
  expect(verifyClickToken(secret, click)).toEqual({ ...ids, url: 'https://a.example/ü?q=1' });
  expect(verifyClickToken(secret, open)).toBeNull();
  expect(verifyOpenToken(secret, click)).toBeNull();
  expect(verifyOpenToken(Buffer.from('another-secret-another-secret-000000'), open)).toBeNull();
  expect(verifyOpenToken(secret, `${open.slice(0, 5)}${open[5] === 'A' ? 'B' : 'A'}${open.slice(6)}`)).toBeNull();
  // An unsubscribe token is no tracking token, and the other way round (the purpose is signed).
  const unsub = unsubscribeToken(secret, { projectId: ids.projectId, contactId: ids.emailId });
  expect(verifyOpenToken(secret, unsub)).toBeNull();
  expect(verifyUnsubscribeToken(secret, open)).toBeNull();
  expect(verifyUnsubscribeToken(secret, unsub)).toEqual({ projectId: ids.projectId, contactId: ids.emailId });
  // A click token signed for a target that is not http(s) is refused when followed.
  expect(verifyClickToken(secret, clickToken(secret, { ...ids, url: 'javascript:alert(1)' }))).toBeNull();
});

test.each([
  ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36', { bot: false }],
  ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148', { bot: false }],
  ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)', { bot: true, proxy: 'apple' }],
  ['Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)', { bot: true, proxy: 'gmail' }],
  ['YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html', { bot: true, proxy: 'yahoo' }],
  ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36', { bot: true }],
  ['python-requests/2.31.0', { bot: true }],
  ['', { bot: true }],
])('user agent %j is %j', (ua, expected) => {
  expect(classifyAgent(ua)).toEqual(expected);
});
