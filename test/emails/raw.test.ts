import { simpleParser } from 'mailparser';
import { bearer } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';

/**
 * GET /emails/:id/raw end to end: the download is composed by delivery's own code, so it must be the very bytes the
 * SMTP server received, but for the DKIM-Signature delivery adds at the send (and the Received lines a relay would add;
 * this server adds none). And GET /emails/:id names the main headers of that message.
 */
let e: EndToEnd;

beforeAll(async () => { e = await startEndToEnd(); }, 60_000);
afterAll(async () => { await e.close(); });

/** A message without its DKIM-Signature and Received header fields (each with its folded continuation lines). */
function withoutTransitHeaders(raw: Buffer): string {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const fields = text.slice(0, end).split(/\r\n(?![ \t])/);
  return [...fields.filter((f) => !/^(dkim-signature|received):/i.test(f)), ''].join('\r\n') + text.slice(end + 2);
}

async function received(to: string) {
  return waitFor(`the message to ${to} at the SMTP server`, () => e.smtp.received.find((m) => m.envelopeTo.includes(to)));
}

test('a transactional email’s download is what the SMTP server received, as an .eml attachment', async () => {
  const res = await e.t.http().post('/v1/send').set(e.key).send({
    from: 'Shop <orders@example.com>', to: 'Ada Lovelace <ada@example.org>', reply: 'help@example.com', subject: 'Your receipt, Ada',
    body: '<p>Thanks for your order. <a href="https://shop.example/orders/1">See it</a></p>', track: { opens: true, clicks: true },
    headers: { 'X-Order': '1042' },
    attachments: [{ filename: 'receipt.txt', content: Buffer.from('Order 1042: 2 items').toString('base64'), contentType: 'text/plain' }],
  }).expect(200);
  const id = res.body.data.emails[0].email as string;
  expect((await waitForEmails(e.t.db, [id]))[id]!.status).toBe('SENT');
  const got = await received('ada@example.org');

  const raw = await e.t.http().get(`/emails/${id}/raw`).set(e.key).buffer(true).parse((r, cb) => {
    const chunks: Buffer[] = [];
    r.on('data', (c: Buffer) => chunks.push(c));
    r.on('end', () => cb(null, Buffer.concat(chunks)));
  });
  expect(raw.status).toBe(200);
  expect(raw.headers['content-type']).toBe('message/rfc822');
  expect(raw.headers['content-disposition']).toBe(`attachment; filename="${id}.eml"`);
  const body = raw.body as Buffer;
  expect(body.toString('latin1')).not.toMatch(/^DKIM-Signature:/im);
  expect(withoutTransitHeaders(body)).toBe(withoutTransitHeaders(got.raw));
  // It is a whole message: the tracked HTML, the attachment, the sender's header.
  const parsed = await simpleParser(body);
  expect(parsed.subject).toBe('Your receipt, Ada');
  expect(parsed.html).toContain('http://herald.test/t/c/');
  expect(parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([['receipt.txt', 'Order 1042: 2 items']]);
  expect(parsed.headers.get('x-order')).toBe('1042');

  // The detail names the main headers of that same message.
  const detail = await e.t.http().get(`/emails/${id}`).set(e.key).expect(200);
  const headers = detail.body.data.headers as Record<string, string>;
  expect(headers).toEqual({
    'Message-ID': parsed.messageId, Date: got.parsed.headers.get('date') ? expect.any(String) : undefined,
    From: '"Shop" <orders@example.com>', To: '"Ada Lovelace" <ada@example.org>', 'Reply-To': 'help@example.com',
    Subject: 'Your receipt, Ada', 'X-Order': '1042',
  });
  expect(new Date(headers.Date!).getTime()).toBe((got.parsed.date as Date).getTime());
  expect(Math.floor(Date.parse(detail.body.data.createdAt) / 1000)).toBe(Math.floor((got.parsed.date as Date).getTime() / 1000));
}, 60_000);

test('a campaign email’s download is its message rendered for its contact, as received', async () => {
  await e.t.http().post('/contacts').set(e.key).send({ email: 'grace@example.org', subscribed: true, data: { firstName: 'Grace' } }).expect(201);
  const campaign = await e.t.http().post('/campaigns').set(e.key)
    .send({ name: 'Spring', subject: 'Hello {{ data.firstName }}', body: '<p>Spring sale, {{ data.firstName }}</p>', from: 'news@example.com', audienceType: 'ALL' }).expect(201);
  await e.t.http().post(`/campaigns/${campaign.body.data.id}/send`).set(e.key).expect(200);
  const email: { id: string } = await waitFor('the campaign email', async () => (await e.t.db.knex('emails').where({ campaign_id: campaign.body.data.id, to_email: 'grace@example.org' }).first('id')) ?? undefined, 30_000, 100);
  expect((await waitForEmails(e.t.db, [email.id]))[email.id]!.status).toBe('SENT');
  const got = await received('grace@example.org');
  const raw = await e.t.http().get(`/emails/${email.id}/raw`).set(e.key).buffer(true).parse((r, cb) => {
    const chunks: Buffer[] = [];
    r.on('data', (c: Buffer) => chunks.push(c));
    r.on('end', () => cb(null, Buffer.concat(chunks)));
  }).expect(200);
  expect(withoutTransitHeaders(raw.body as Buffer)).toBe(withoutTransitHeaders(got.raw));
  const parsed = await simpleParser(raw.body as Buffer);
  expect(parsed.subject).toBe('Hello Grace');
  expect(parsed.html).toContain('Spring sale, Grace');
  expect((raw.body as Buffer).toString('latin1')).toMatch(/^List-Unsubscribe:\s+<http:\/\/herald\.test\/unsubscribe\//m);
  // Its detail has no stored subject (rendered at delivery): no Subject among its headers.
  const detail = await e.t.http().get(`/emails/${email.id}`).set(e.key).expect(200);
  expect(detail.body.data.headers).not.toHaveProperty('Subject');
  expect(detail.body.data.headers['Message-ID']).toBe(parsed.messageId);
}, 90_000);

test('another project’s email is not found; a malformed id too', async () => {
  const res = await e.t.http().post('/v1/send').set(e.key).send({ from: 'orders@example.com', to: 'mine@example.org', subject: 'Hi', body: '<p>x</p>' }).expect(200);
  const id = res.body.data.emails[0].email as string;
  const other = await e.t.newProject('Raw, another project');
  const foreign = await e.t.http().get(`/emails/${id}/raw`).set(bearer(other.secretKey));
  expect(foreign.status).toBe(404);
  expect(foreign.body.error.code).toBe('NOT_FOUND');
  expect((await e.t.http().get('/emails/not-an-id/raw').set(e.key)).status).toBe(404);
  expect((await e.t.http().get(`/emails/${id}/raw`)).status).toBe(401);
  // Queued or sent, the message is there to download (as it will be sent).
  expect((await e.t.http().get(`/emails/${id}/raw`).set(e.key)).status).toBe(200);
});

test('a campaign email whose contact unsubscribed has no message: 409', async () => {
  const contact = await e.t.http().post('/contacts').set(e.key).send({ email: 'leaving@example.org', subscribed: true }).expect(201);
  const campaign = await e.t.http().post('/campaigns').set(e.key)
    .send({ name: 'Later', subject: 'Hi', body: '<p>x</p>', from: 'news@example.com', audienceType: 'ALL' }).expect(201);
  // A campaign email row as a batch leaves it, not yet delivered (held back from the running queue).
  const [row] = await e.t.db.knex('emails').insert({
    project_id: e.t.project.id, contact_id: contact.body.data.id, campaign_id: campaign.body.data.id, from_email: 'news@example.com',
    to_email: 'leaving@example.org', status: 'QUEUED', priority: 1, available_at: new Date('2100-01-01T00:00:00Z'),
  }).returning('id');
  expect((await e.t.http().get(`/emails/${row.id}/raw`).set(e.key)).status).toBe(200);
  await e.t.http().patch(`/contacts/${contact.body.data.id}`).set(e.key).send({ subscribed: false }).expect(200);
  const res = await e.t.http().get(`/emails/${row.id}/raw`).set(e.key);
  expect(res.status).toBe(409);
  expect(res.body.error.message).toMatch(/unsubscribed/);
});
