import { compileMessage, messageScope, RENDER_BUDGET, RenderBudget, renderJob, renderMessage, TemplateError } from '../../mail/render';
import { createRenderPool } from '../../mail/renderPool';
import { unsubscribeToken, unsubscribeUrl, verifyUnsubscribeToken } from '../../mail/unsubscribe';

const contact = { id: 'c1', email: 'ada@example.com', subscribed: true, data: { firstName: 'Ada', plan: 'pro', tags: ['a', 'b'] } };
const render = (subject: string, body: string, data: Record<string, unknown> = {}) =>
  renderMessage(compileMessage(subject, body), messageScope(data, contact, 'https://h.test/unsubscribe/tok'));

describe('rendering', () => {
  test('variables from data, contact fields and the unsubscribe URL', () => {
    const out = render('Hi {{ name }}', '<p>{{ name }} / {{ email }} / {{ data.firstName }} / {{ contact.data.plan }}</p><a href="{{ unsubscribeUrl }}">x</a>', { name: 'Grace' });
    expect(out.subject).toBe('Hi Grace');
    expect(out.html).toBe('<p>Grace / ada@example.com / Ada / pro</p><a href="https://h.test/unsubscribe/tok">x</a>');
  });

  test('HTML is escaped in the body but not in the subject; | raw opts out', () => {
    const out = render('{{ v }}', '{{ v }}|{{ v | raw }}', { v: '<b>"Tom & Jerry"</b>' });
    expect(out.subject).toBe('<b>"Tom & Jerry"</b>');
    expect(out.html).toBe('&lt;b&gt;&#34;Tom &amp; Jerry&#34;&lt;/b&gt;|<b>"Tom & Jerry"</b>');
  });

  test('a missing variable renders as nothing, never as braces', () => {
    expect(render('[{{ nope }}]', '[{{ nope.deeper }}]{{ data.missing }}')).toEqual({ subject: '[]', html: '[]' });
  });

  test('conditionals, loops and filters', () => {
    const out = render('x', '{% if data.plan == "pro" %}PRO{% else %}FREE{% endif %}:{% for t in data.tags %}<{{ t | upcase }}>{% endfor %}:{{ missing | default: "n/a" }}');
    expect(out.html).toBe('PRO:<A><B>:n/a');
  });

  test('the request cannot override contact fields or the unsubscribe URL', () => {
    const out = render('{{ email }}', '{{ unsubscribeUrl }}', { email: 'evil@x.com', unsubscribeUrl: 'https://evil' });
    expect(out).toEqual({ subject: 'ada@example.com', html: 'https://h.test/unsubscribe/tok' });
  });

  test('U+0000 that a filter makes out of plain text is dropped (PostgreSQL text and mail cannot carry it)', () => {
    expect(render('a{{ "%00" | url_decode }}b', 'c{{ "%00" | url_decode }}d')).toEqual({ subject: 'ab', html: 'cd' });
  });

  test('line breaks from variables never reach the subject header', () => {
    expect(render('Hi {{ v }}', 'b', { v: 'x\r\nBcc: victim@example.com' }).subject).toBe('Hi x Bcc: victim@example.com');
  });

  test('syntax errors name the part; unknown filters are refused', () => {
    expect(() => compileMessage('{% if %}', 'ok')).toThrow(TemplateError);
    try { compileMessage('ok', '{{ x | nosuchfilter }}'); } catch (err) { expect((err as TemplateError).part).toBe('body'); }
    expect(() => compileMessage('ok', '{{ x | nosuchfilter }}')).toThrow(/invalid template syntax/);
  });

  test('templates cannot read files (include/render resolve from nothing)', () => {
    const compiled = compileMessage('s', "{% include '/etc/passwd' %}");
    expect(() => renderMessage(compiled, {})).toThrow();
  });

  test('runaway templates are stopped by the render limit', () => {
    const compiled = compileMessage('s', '{% for a in (1..100000) %}{% for b in (1..100000) %}x{% endfor %}{% endfor %}');
    expect(() => renderMessage(compiled, {})).toThrow();
  });
});

describe('markdown bodies (type: "markdown")', () => {
  const scope = messageScope({ name: '<b>Ada</b>', url: 'https://x.test/r?a=1&b=2' }, contact, 'https://h.test/unsubscribe/tok');

  test('Liquid first (variables HTML-escaped), then markdown to HTML; HTML in the markdown passes through as in an HTML body', () => {
    const out = renderJob({ subject: 'Hi {{ name }}', body: '# Hello {{ name }}\n\n[Reset]({{ url }}) **now**\n\n<div class="x">kept</div>', markdown: true, scopes: [scope] });
    expect(out).toEqual({ rendered: [{
      subject: 'Hi <b>Ada</b>',
      html: '<h1>Hello &lt;b&gt;Ada&lt;/b&gt;</h1>\n<p><a href="https://x.test/r?a=1&amp;b=2">Reset</a> <strong>now</strong></p>\n<div class="x">kept</div>',
    }] });
    // Without the flag the same body is HTML, sent as written.
    expect(renderJob({ subject: 's', body: '# Hello', scopes: [scope] })).toEqual({ rendered: [{ subject: 's', html: '# Hello' }] });
  });

  test('the budgets apply to the converted HTML: the per-message cap and the request total', () => {
    // Fits the cap as Liquid output, not once markdown wrapped it in <p>…</p>.
    const big = messageScope({ big: 'a'.repeat(RENDER_BUDGET.htmlChars - 2) }, contact, 'https://h.test/unsubscribe/tok');
    expect(renderJob({ subject: 's', body: '{{ big }}', scopes: [big] })).toHaveProperty('rendered');
    expect(renderJob({ subject: 's', body: '{{ big }}', markdown: true, scopes: [big] })).toEqual({ failed: expect.objectContaining({ part: 'body', code: 'too_big' }) });
    // The request's characters: what markdown adds is taken from them too.
    const small = messageScope({ big: 'a'.repeat(1000) }, contact, 'https://h.test/unsubscribe/tok');
    const budget = () => new RenderBudget(RENDER_BUDGET.requestMs, 1 + 1000 + 4);
    expect(renderJob({ subject: 's', body: '{{ big }}', scopes: [small] }, budget())).toHaveProperty('rendered');
    expect(renderJob({ subject: 's', body: '{{ big }}', markdown: true, scopes: [small] }, budget())).toEqual({ failed: expect.objectContaining({ part: 'body', code: 'too_big' }) });
  });

  test('converted on the render threads too', async () => {
    const pool = createRenderPool(1);
    try {
      // Past the inline caps (mail/renderPool.ts), so that a thread renders it.
      const body = `# Title\n\n${'word '.repeat(30_000)}`;
      const [out] = await pool.render([{ subject: 's', body, markdown: true, scopes: [scope] }]);
      expect(out).toHaveProperty('rendered');
      expect((out as { rendered: { html: string }[] }).rendered[0]!.html.startsWith('<h1>Title</h1>\n<p>word word')).toBe(true);
    } finally {
      await pool.close();
    }
  });
});

describe('unsubscribe tokens', () => {
  const secret = Buffer.from('s'.repeat(32));
  const target = { projectId: '01a20131-8b3f-7c53-88de-e342d7161e91', contactId: '01a20131-8b45-7f86-b95f-b853d0755758' };

  test('round trip', () => {
    expect(verifyUnsubscribeToken(secret, unsubscribeToken(secret, target))).toEqual(target);
    expect(unsubscribeUrl('https://mail.example.com/', secret, target)).toMatch(/^https:\/\/mail\.example\.com\/unsubscribe\/[\w-]+\.[\w-]+$/);
  });

  test('cannot be forged, altered to another contact, or checked with another secret', () => {
    const token = unsubscribeToken(secret, target);
    const [, sig] = token.split('.');
    const other = Buffer.from(`${target.projectId}:01a20131-0000-7000-8000-000000000000`).toString('base64url');
    expect(verifyUnsubscribeToken(secret, `${other}.${sig}`)).toBeNull();
    expect(verifyUnsubscribeToken(Buffer.from('t'.repeat(32)), token)).toBeNull();
    for (const bad of ['', 'abc', `${token}.x`, token.slice(0, -2), `${token.split('.')[0]}.`]) expect(verifyUnsubscribeToken(secret, bad)).toBeNull();
  });
});
