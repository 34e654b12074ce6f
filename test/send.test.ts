import { addDomain } from '../domains/rows';
import { createDeliverer } from '../sending/delivery';
import { Email } from '../db/models/Email';
import { createLogger } from '../logging/logger';
import { bearer, TEST_SECRET, type TestContext } from './support/app';
import { waitForEmails, type TestEngine } from './support/engine';
import type { TestSmtpServer } from './support/smtp';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';

/** End to end in the embedded engine: API → PostgreSQL → DBOS queue → delivery → a real SMTP server. */
let smtp: TestSmtpServer;
let eng: TestEngine;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

beforeAll(async () => {
  ({ smtp, eng, t, key } = e2e = await startEndToEnd());
});
afterAll(() => e2e.close());

const send = (body: object, k = key) => t.http().post('/v1/send').set(k).send(body);

/** Sends, waits for every email to be delivered, returns the answer and the messages received for it. */
async function sendAndReceive(body: object) {
  const before = smtp.received.length;
  const res = await send(body);
  expect(res.status).toBe(200);
  const ids = res.body.data.emails.map((e: { email: string }) => e.email);
  const rows = await waitForEmails(t.db, ids);
  await smtp.waitFor(before + ids.length);
  const mails = smtp.received.slice(before);
  return { res, rows, mails };
}

describe('delivered mail', () => {
  test('rendered subject and body, From with name, Reply-To, custom headers, Message-ID', async () => {
    const { res, rows, mails } = await sendAndReceive({
      to: 'Ada Lovelace <Ada@Example.org>',
      from: { name: 'Herald Team', email: 'team@example.com' },
      reply: 'support@example.com',
      subject: 'Welcome, {{ firstName }}!',
      body: '<h1>Hello {{ firstName }}</h1><p>{{ note }}</p><p>{{ missing }}|{{ email }}</p>',
      headers: { 'X-Campaign': 'spring', 'X-Entity-Ref-ID': 'abc-123' },
      data: { firstName: 'Ada', note: '<script>alert(1)</script>' },
    });
    const mail = mails[0]!.parsed;
    expect(mail.subject).toBe('Welcome, Ada!');
    expect(mail.from?.value).toEqual([{ name: 'Herald Team', address: 'team@example.com' }]);
    expect(mail.to && !Array.isArray(mail.to) && mail.to.value).toEqual([{ name: 'Ada Lovelace', address: 'ada@example.org' }]);
    expect(mail.replyTo?.value[0]?.address).toBe('support@example.com');
    expect(mail.headers.get('x-campaign')).toBe('spring');
    expect(mail.headers.get('x-entity-ref-id')).toBe('abc-123');
    // Variables are HTML-escaped; a missing one renders as nothing; contact fields are available.
    expect(mail.html).toContain('<h1>Hello Ada</h1>');
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).toContain('<p>|ada@example.org</p>');
    expect(mails[0]!.envelopeTo).toEqual(['ada@example.org']);
    // The answer: one recipient carries the overview shape too.
    const data = res.body.data;
    expect(data.emails).toHaveLength(1);
    expect(data.emails[0].contact.email).toBe('ada@example.org');
    expect(data.contact).toBe(data.emails[0].contact.id);
    const row = rows[data.emails[0].email]!;
    expect(row.status).toBe('SENT');
    expect(mail.messageId).toBe(row.message_id);
    expect(row.message_id).toBe(`<${data.emails[0].email}@example.com>`);
    // The announced event is the email.sent event recorded at delivery.
    const event = await t.db.knex('events').where({ project_id: t.project.id, id: data.event }).first();
    expect(event).toMatchObject({ name: 'email.sent', email_id: data.emails[0].email, contact_id: data.contact });
  });

  test('multiple recipients in all three forms: one email and one contact each, new ones not subscribed', async () => {
    await t.http().post('/contacts').set(key).send({ email: 'existing@example.net', subscribed: true });
    const { res, mails } = await sendAndReceive({
      to: ['one@example.net', { email: 'two@example.net', name: 'Two' }, 'Three <three@example.net>', 'existing@example.net', 'ONE@example.net'],
      from: 'hi@example.com',
      subject: 'Hi {{ email }}',
      body: '<p>Hi</p>',
    });
    expect(res.body.data.emails.map((e: { contact: { email: string } }) => e.contact.email))
      .toEqual(['one@example.net', 'two@example.net', 'three@example.net', 'existing@example.net']);
    expect(res.body.data.contact).toBeUndefined(); // the overview shape is for a single recipient
    expect(mails.map((m) => m.envelopeTo[0]).sort()).toEqual(['existing@example.net', 'one@example.net', 'three@example.net', 'two@example.net']);
    expect(mails.find((m) => m.envelopeTo[0] === 'two@example.net')!.parsed.subject).toBe('Hi two@example.net');
    const contacts = await t.db.knex('contacts').where({ project_id: t.project.id }).whereIn('email', ['one@example.net', 'two@example.net', 'existing@example.net']);
    expect(Object.fromEntries(contacts.map((c) => [c.email, c.subscribed]))).toEqual({ 'one@example.net': false, 'two@example.net': false, 'existing@example.net': true });
  });

  test('subscribed: true subscribes new recipients and changes existing ones only when sent', async () => {
    await t.http().post('/contacts').set(key).send({ email: 'sub-old@example.net', subscribed: false });
    await sendAndReceive({ to: ['sub-new@example.net', 'sub-old@example.net'], from: 'hi@example.com', subject: 's', body: 'b', subscribed: true });
    const rows = await t.db.knex('contacts').where({ project_id: t.project.id }).whereIn('email', ['sub-new@example.net', 'sub-old@example.net']);
    expect(rows.every((r) => r.subscribed)).toBe(true);
  });

  test('attachments arrive with their names, types and bytes; inline ones with their content id', async () => {
    const pdf = Buffer.from('%PDF-1.4 fake pdf bytes');
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const { mails } = await sendAndReceive({
      to: 'files@example.org', from: 'hi@example.com', subject: 'Files', body: '<img src="cid:logo@herald">',
      attachments: [
        { filename: 'invoice.pdf', content: pdf.toString('base64'), contentType: 'application/pdf' },
        { filename: 'logo.png', content: png.toString('base64'), contentType: 'image/png', contentId: 'logo@herald', disposition: 'inline' },
      ],
    });
    // MIME puts inline parts (multipart/related) before attachments: compare by name.
    const atts = Object.fromEntries(mails[0]!.parsed.attachments.map((a) => [a.filename, a]));
    expect(Object.keys(atts).sort()).toEqual(['invoice.pdf', 'logo.png']);
    expect(atts['invoice.pdf']!.contentType).toBe('application/pdf');
    expect(atts['invoice.pdf']!.content.equals(pdf)).toBe(true);
    expect(atts['logo.png']!.contentType).toBe('image/png');
    expect(atts['logo.png']!.content.equals(png)).toBe(true);
    expect(atts['logo.png']!.contentId).toBe('<logo@herald>');
  });

  test('template sends, with per-field overrides and the template sender', async () => {
    const tpl = await t.http().post('/templates').set(key).send({
      name: 'Receipt', subject: 'Receipt #{{ order }}', body: '<p>Thanks {{ data.firstName | default: "friend" }}, order {{ order }}</p>',
      from: 'billing@example.com', fromName: 'Billing', replyTo: 'billing-help@example.com',
    });
    expect(tpl.status).toBe(201);
    await t.http().post('/contacts').set(key).send({ email: 'tpl@example.org', data: { firstName: 'Grace' } });

    const plain = await sendAndReceive({ to: 'tpl@example.org', template: tpl.body.data.id, data: { order: 42 } });
    const m1 = plain.mails[0]!.parsed;
    expect(m1.subject).toBe('Receipt #42');
    expect(m1.html).toContain('Thanks Grace, order 42');
    expect(m1.from?.value).toEqual([{ name: 'Billing', address: 'billing@example.com' }]);
    expect(m1.replyTo?.value[0]?.address).toBe('billing-help@example.com');

    const overridden = await sendAndReceive({
      to: 'tpl@example.org', template: tpl.body.data.id, data: { order: 7 },
      subject: 'Your order {{ order }}', from: 'orders@example.com', name: 'Orders', reply: 'orders-help@example.com',
    });
    const m2 = overridden.mails[0]!.parsed;
    expect(m2.subject).toBe('Your order 7');
    expect(m2.html).toContain('order 7'); // body still from the template
    expect(m2.from?.value).toEqual([{ name: 'Orders', address: 'orders@example.com' }]);
    expect(m2.replyTo?.value[0]?.address).toBe('orders-help@example.com');
  });

  test('type: "markdown" renders Liquid, then markdown to HTML; a markdown template is converted unless the request brings its own body', async () => {
    const direct = await sendAndReceive({ to: 'md@example.org', from: 'hi@example.com', subject: 'MD', type: 'markdown', body: '# Hi {{ name }}\n\nSee [the docs]({{ url }}).', data: { name: '<Ada>', url: 'https://x.test/?a=1&b=2' } });
    expect((direct.mails[0]!.parsed.html || '').trim()).toBe('<h1>Hi &lt;Ada&gt;</h1>\n<p>See <a href="https://x.test/?a=1&amp;b=2">the docs</a>.</p>');
    const html = await sendAndReceive({ to: 'md@example.org', from: 'hi@example.com', subject: 'HTML', type: 'html', body: '# not a title' });
    expect((html.mails[0]!.parsed.html || '').trim()).toBe('# not a title');

    const tpl = await t.http().post('/templates').set(key).send({ name: 'MD', subject: 'T', body: '**{{ word }}**', bodyType: 'markdown', from: 'hi@example.com' });
    expect(tpl.status).toBe(201);
    const fromTemplate = await sendAndReceive({ to: 'md@example.org', template: tpl.body.data.id, data: { word: 'bold' } });
    expect((fromTemplate.mails[0]!.parsed.html || '').trim()).toBe('<p><strong>bold</strong></p>');
    const ownBody = await sendAndReceive({ to: 'md@example.org', template: tpl.body.data.id, body: '**raw**' });
    expect((ownBody.mails[0]!.parsed.html || '').trim()).toBe('**raw**');
    const bad = await send({ to: 'md@example.org', from: 'hi@example.com', subject: 's', body: 'b', type: 'text' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('type');
  });

  test('Plunk\'s { value, persistent } data: the value renders; nothing of data is stored on the contact', async () => {
    const { res, mails } = await sendAndReceive({
      to: 'reset@example.org', from: 'hi@example.com', subject: 'Reset {{ who }}',
      body: '<a href="{{ resetUrl }}">reset</a> {{ plain }} {{ kept }} {{ other.value }}-{{ other.persistent }}',
      data: {
        resetUrl: { value: 'https://app.example.com/reset?t=1', persistent: false },
        who: { value: 'Ada' }, kept: { value: 'k', persistent: true }, plain: 'p',
        other: { value: 'v', persistent: 'no' }, // not the form (persistent is not a boolean): a plain object
      },
    });
    expect(mails[0]!.parsed.subject).toBe('Reset Ada');
    expect((mails[0]!.parsed.html || '').trim()).toBe('<a href="https://app.example.com/reset?t=1">reset</a> p k v-no');
    expect(mails[0]!.parsed.html).not.toContain('[object Object]');
    const contact = await t.db.knex('contacts').where({ project_id: t.project.id, id: res.body.data.contact }).first();
    expect(contact.data).toEqual({});
  });

  test('a sender at a subdomain of a verified domain is accepted', async () => {
    const { mails } = await sendAndReceive({ to: 'x@example.org', from: 'news@mail.example.com', subject: 's', body: 'b' });
    expect(mails[0]!.envelopeFrom).toBe('news@mail.example.com');
  });
});

describe('idempotency', () => {
  test('a retried call with the same Idempotency-Key sends once and answers the same', async () => {
    const body = { to: 'idem@example.org', from: 'hi@example.com', subject: 'Once', body: '<p>once</p>' };
    const before = smtp.received.length;
    const first = await send(body).set('Idempotency-Key', 'order-1001');
    const again = await send(body).set('Idempotency-Key', 'order-1001');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    await waitForEmails(t.db, [first.body.data.emails[0].email]);
    await smtp.waitFor(before + 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.received.slice(before).filter((m) => m.envelopeTo[0] === 'idem@example.org')).toHaveLength(1);
    expect(await t.db.knex('emails').where({ project_id: t.project.id, to_email: 'idem@example.org' })).toHaveLength(1);
    const conflict = await send({ ...body, subject: 'Different' }).set('Idempotency-Key', 'order-1001');
    expect(conflict.status).toBe(409);
  });

  test('a late outcome for a sent email (a worker that came back after its claim was requeued) changes nothing: no resend, no second event', async () => {
    const { res } = await sendAndReceive({ to: 'twice@example.org', from: 'hi@example.com', subject: 's', body: 'b' });
    const emailId = res.body.data.emails[0].email;
    const [row] = await waitForEmails(t.db, [emailId]).then(() => t.db.knex('emails').where({ project_id: t.project.id, id: emailId }));
    const before = smtp.received.length;
    const deliverer = createDeliverer({ knex: t.db.knex, mailer: eng.mailer, log: createLogger('silent'), secret: TEST_SECRET, publicUrl: 'http://herald.test' });
    const changed = await deliverer.record([{ email: Email.fromDatabaseJson(row), status: 'QUEUED', error: '451 late', retryInMs: 0 }]);
    expect(changed.size).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.received.length).toBe(before);
    expect((await t.db.knex('emails').where({ id: emailId }).first()).status).toBe('SENT');
    expect(await t.db.knex('events').where({ project_id: t.project.id, email_id: emailId }).count('* as n').first()).toEqual({ n: 1 });
  });

  test('an outcome never overwrites CANCELLED: a SENT or FAILED written for a cancelled email changes nothing, records no event', async () => {
    const [row] = await t.db.knex('emails').insert({
      project_id: t.project.id, from_email: 'hi@example.com', to_email: 'cancelled@example.org', subject: 's', html: '<p>b</p>', status: 'CANCELLED',
    }).returning('*');
    const deliverer = createDeliverer({ knex: t.db.knex, mailer: eng.mailer, log: createLogger('silent'), secret: TEST_SECRET, publicUrl: 'http://herald.test' });
    const email = Email.fromDatabaseJson(row);
    expect((await deliverer.record([{ email, status: 'SENT', messageId: '<late@herald>' }])).size).toBe(0);
    expect((await deliverer.record([{ email, status: 'FAILED', error: '550 late' }])).size).toBe(0);
    expect((await t.db.knex('emails').where({ id: row.id }).first()).status).toBe('CANCELLED');
    expect(Number((await t.db.knex('events').where({ project_id: t.project.id, email_id: row.id }).count('* as n').first())!.n)).toBe(0);
  });
});

describe('validation (nothing stored, nothing sent)', () => {
  const valid = { to: 'v@example.org', from: 'hi@example.com', subject: 's', body: 'b' };
  const cases: [string, object, string, string?][] = [
    ['missing to', { ...valid, to: undefined }, 'to', 'required'],
    ['bad address string', { ...valid, to: 'not-an-email' }, 'to'],
    ['bad address in a list', { ...valid, to: ['ok@example.org', { email: 'nope' }] }, 'to.1.email'],
    ['empty list', { ...valid, to: [] }, 'to'],
    ['more than 50 recipients', { ...valid, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`) }, 'to'],
    ['no subject without a template', { ...valid, subject: undefined }, 'subject', 'required'],
    ['no body without a template', { ...valid, body: undefined }, 'body', 'required'],
    ['CR/LF in the subject', { ...valid, subject: 'Hi\r\nBcc: victim@example.org' }, 'subject'],
    ['CR/LF in the sender name', { ...valid, from: { email: 'hi@example.com', name: 'x\nBcc: y@z.com' } }, 'from.name'],
    ['CR/LF in a header value', { ...valid, headers: { 'X-A': 'a\r\nBcc: y@z.com' } }, 'headers.X-A'],
    ['a reserved header', { ...valid, headers: { Bcc: 'y@z.com' } }, 'headers'],
    ['a bad header name', { ...valid, headers: { 'Bad Name': 'x' } }, 'headers.Bad Name'],
    ['reply not an email', { ...valid, reply: 'nope' }, 'reply'],
    ['unknown field', { ...valid, cc: 'x@example.org' }, 'cc', 'unrecognized_key'],
    ['template id not a uuid', { ...valid, template: 'abc' }, 'template'],
    ['more than 10 attachments', { ...valid, attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `f${i}.txt`, content: 'aGk=' })) }, 'attachments'],
    ['attachment not base64', { ...valid, attachments: [{ filename: 'a.txt', content: '***' }] }, 'attachments.0.content'],
    ['attachment with a path', { ...valid, attachments: [{ filename: '../etc/passwd', content: 'aGk=' }] }, 'attachments.0.filename'],
    ['executable attachment', { ...valid, attachments: [{ filename: 'setup.exe', content: 'aGk=' }] }, 'attachments.0.filename'],
    // Issue 13: names a mail client shows or saves as .exe once it drops what follows.
    ['executable with a trailing dot', { ...valid, attachments: [{ filename: 'invoice.exe.', content: 'aGk=' }] }, 'attachments.0.filename'],
    ['executable with a trailing space', { ...valid, attachments: [{ filename: 'invoice.exe ', content: 'aGk=' }] }, 'attachments.0.filename'],
    ['executable followed by U+200F', { ...valid, attachments: [{ filename: 'invoice.exe\u200f', content: 'aGk=' }] }, 'attachments.0.filename'],
    ['executable in fullwidth letters', { ...valid, attachments: [{ filename: 'invoice.\uff45\uff58\uff45', content: 'aGk=' }] }, 'attachments.0.filename'],
    ['a file name of invisible characters only', { ...valid, attachments: [{ filename: '\u200f. ', content: 'aGk=' }] }, 'attachments.0.filename'],
    ...['Content-ID', 'Content-Description', 'Content-Language', 'Authentication-Results', 'Resent-Bcc', 'ARC-Seal'].map((h): [string, Record<string, unknown>, string] =>
      [`the reserved header ${h}`, { ...valid, headers: { [h]: 'x' } }, 'headers']),
    ['bad content type', { ...valid, attachments: [{ filename: 'a.txt', content: 'aGk=', contentType: 'text' }] }, 'attachments.0.contentType'],
    ['broken template syntax', { ...valid, body: '{% if %}' }, 'body', 'invalid_template'],
    ['unknown filter', { ...valid, subject: '{{ name | explode }}' }, 'subject', 'invalid_template'],
  ];
  test.each(cases.map(([name, body, field, code]) => ({ name, body, field, code })))('$name → 422 naming $field', async ({ body, field, code }) => {
    const before = await t.db.knex('emails').count('* as n').first();
    const res = await send(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
    if (code) expect(res.body.error.errors.find((e: { field: string }) => e.field === field).code).toBe(code);
    expect(await t.db.knex('emails').count('* as n').first()).toEqual(before);
  });

  test('an attachment is stored under its normalised name (NFKC, no format characters, no trailing dots or spaces)', async () => {
    const res = await send({ ...valid, to: 'normalised@example.org', attachments: [{ filename: 'r\uff45port.pdf\u200f. ', content: 'aGk=' }] });
    expect(res.status).toBe(200);
    const email = await t.db.knex('emails').where({ project_id: t.project.id, to_email: 'normalised@example.org' }).first('attachment_ids');
    const stored = await t.db.knex('attachments').where({ project_id: t.project.id }).whereIn('id', email.attachment_ids).pluck('filename');
    expect(stored).toEqual(['report.pdf']);
  });

  test('attachments over 10 MB decoded in total → 422', async () => {
    // 2 × 5.5 MB = 11 MB decoded, ~14.7 MB of base64: under the 15 MB body limit, over the attachment limit.
    const big = Buffer.alloc(5.5 * 1024 * 1024, 1).toString('base64');
    const res = await send({ ...valid, attachments: [{ filename: 'a.bin', content: big }, { filename: 'b.bin', content: big }] });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'attachments', code: 'too_big' });
  });

  test('from at an unverified domain → 422 on from with a suggestion; nothing half-written', async () => {
    const contactsBefore = await t.db.knex('contacts').where({ project_id: t.project.id }).count('* as n').first();
    const res = await send({ ...valid, to: 'never@example.org', from: 'hi@not-verified.org' });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'from', code: 'unverified_domain' });
    expect(res.body.error.suggestion).toMatch(/verify/i);
    expect(await t.db.knex('contacts').where({ project_id: t.project.id }).count('* as n').first()).toEqual(contactsBefore);
  });

  test('a domain of another project does not count, and a pending one neither', async () => {
    const other = await t.newProject('other sender');
    await addDomain(other.id, 'other-verified.org', true);
    await addDomain(t.project.id, 'pending.org', false);
    for (const from of ['hi@other-verified.org', 'hi@pending.org']) {
      expect((await send({ ...valid, from })).status).toBe(422);
    }
  });

  test('no from and a template without a sender → 422 on from; unknown template → 422 on template', async () => {
    const tpl = await t.http().post('/templates').set(key).send({ name: 'No sender', subject: 's', body: 'b' });
    expect((await send({ to: 'x@example.org', template: tpl.body.data.id })).body.error.errors[0].field).toBe('from');
    const missing = await send({ to: 'x@example.org', template: '01a20131-8b45-7f86-b95f-b853d0755758', from: 'hi@example.com' });
    expect(missing.body.error.errors[0]).toMatchObject({ field: 'template', code: 'not_found' });
  });

  test('another project cannot use my template', async () => {
    const tpl = await t.http().post('/templates').set(key).send({ name: 'Mine', subject: 's', body: 'b', from: 'hi@example.com' });
    const other = await t.newProject('thief');
    const res = await send({ to: 'x@example.org', template: tpl.body.data.id }, bearer(other.secretKey));
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0].field).toBe('template');
  });

  test('public keys cannot send', async () => {
    expect((await send(valid, bearer(t.project.publicKey))).status).toBe(403);
  });
});

describe('group commit (concurrent sends share one transaction)', () => {
  test('concurrent good and bad requests: each gets its own answer, only the good ones are stored', async () => {
    const good = Array.from({ length: 12 }, (_, i) => ({ to: `together-${i}@example.org`, from: 'hi@example.com', subject: 'Hi {{ n }}', body: '<p>{{ n }}</p>', data: { n: i } }));
    const bad = [
      { to: 'unverified@example.org', from: 'hi@not-verified.example', subject: 's', body: 'b' },
      { to: 'notemplate@example.org', template: '00000000-0000-7000-8000-000000000000' },
    ];
    const answers = await Promise.all([...good, ...bad].map((b) => send(b)));
    expect(answers.slice(0, 12).map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(answers[12]!.body.error.errors[0]).toMatchObject({ field: 'from', code: 'unverified_domain' });
    expect(answers[13]!.body.error.errors[0]).toMatchObject({ field: 'template', code: 'not_found' });
    const ids = answers.slice(0, 12).map((r) => r.body.data.emails[0].email);
    const rows = await t.db.knex('emails').whereIn('id', ids).select('id', 'subject', 'to_email');
    expect(rows).toHaveLength(12);
    for (const [i, r] of answers.slice(0, 12).entries()) {
      expect(rows.find((row) => row.id === r.body.data.emails[0].email)).toMatchObject({ subject: `Hi ${i}`, to_email: `together-${i}@example.org` });
    }
    expect(await t.db.knex('contacts').whereIn('email', ['unverified@example.org', 'notemplate@example.org'])).toHaveLength(0);
    await waitForEmails(t.db, ids);
  });

  test('concurrent sends to the same recipients in any order: all stored, one contact per address', async () => {
    const lists = Array.from({ length: 16 }, (_, i) => (i % 2 ? ['shared-a@example.org', 'shared-b@example.org'] : ['shared-b@example.org', 'shared-a@example.org']));
    const answers = await Promise.all(lists.map((to) => send({ to, from: 'hi@example.com', subject: 's', body: 'b' })));
    expect(answers.map((r) => r.status)).toEqual(Array(16).fill(200));
    const contacts = await t.db.knex('contacts').where('project_id', t.project.id).whereIn('email', ['shared-a@example.org', 'shared-b@example.org']);
    expect(contacts).toHaveLength(2);
    const ids = answers.flatMap((r) => r.body.data.emails.map((e: { email: string }) => e.email));
    expect(new Set(ids).size).toBe(32);
    await waitForEmails(t.db, ids);
  });
});
