import { subscriptionWrite } from '../audience/subscription';
import { upsertContacts } from '../db/queries/contacts';
import { bearer, type TestContext } from './support/app';
import { waitForEmails } from './support/engine';
import type { TestSmtpServer } from './support/smtp';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';

/** The subscription rules (audience/subscription.ts), end to end: who may change a subscription, who gets marketing mail. */
let smtp: TestSmtpServer;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

beforeAll(async () => {
  ({ smtp, t, key } = e2e = await startEndToEnd());
});
afterAll(() => e2e.close());

const track = (body: object, k: string) => t.http().post('/v1/track').set(bearer(k)).send(body);
const contactOf = (email: string) => t.db.knex('contacts').where({ project_id: t.project.id, email }).first();
const subscriptionEvents = async (contactId: string) =>
  (await t.db.knex('events').where({ project_id: t.project.id, contact_id: contactId }).whereIn('name', ['contact.subscribed', 'contact.unsubscribed']).orderBy('id').select('name', 'data'));

async function template(type: 'MARKETING' | 'TRANSACTIONAL') {
  const res = await t.http().post('/templates').set(key).send({ name: type, subject: `${type} news`, body: '<p>Hi {{ email }}</p>', from: 'news@example.com', type });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

describe('who may change a subscription', () => {
  test('a public key never changes an existing contact\'s subscription (and records nothing); it sets a new contact\'s', async () => {
    await t.http().post('/contacts').set(key).send({ email: 'gone@example.com', subscribed: false });
    const res = await track({ email: 'gone@example.com', event: 'visit', subscribed: true }, t.project.publicKey);
    expect(res.status).toBe(200);
    const contact = await contactOf('gone@example.com');
    expect(contact.subscribed).toBe(false);
    expect(await subscriptionEvents(contact.id)).toEqual([]);

    // The same in a burst that shares one transaction (group commit).
    const burst = await Promise.all([true, true, true].map((subscribed) => track({ email: 'gone@example.com', event: 'visit', subscribed }, t.project.publicKey)));
    expect(burst.map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await contactOf('gone@example.com')).subscribed).toBe(false);
    // Requests merged in one upsert count as one after the other: the first makes the contact, the next cannot change it.
    await upsertContacts(t.db.knex, t.project.id, [false, true].map((subscribed) => ({ email: 'new-pk@example.com', ...subscriptionWrite(subscribed, 'public') })), true);
    expect((await contactOf('new-pk@example.com')).subscribed).toBe(false);
    expect((await track({ email: 'default-pk@example.com', event: 'visit' }, t.project.publicKey)).status).toBe(200);
    expect((await contactOf('default-pk@example.com')).subscribed).toBe(true);
  });

  test('a secret key may: /v1/track, POST /contacts and /v1/send each record contact.subscribed / contact.unsubscribed', async () => {
    await track({ email: 'flip@example.com', event: 'signup', subscribed: false }, t.project.secretKey);
    const id = (await contactOf('flip@example.com')).id;
    expect(await subscriptionEvents(id)).toEqual([]); // a new contact: no change

    expect((await track({ email: 'flip@example.com', event: 'optin', subscribed: true }, t.project.secretKey)).status).toBe(200);
    expect((await contactOf('flip@example.com')).subscribed).toBe(true);
    expect((await t.http().post('/contacts').set(key).send({ email: 'flip@example.com', subscribed: false })).status).toBe(200);
    expect((await contactOf('flip@example.com')).subscribed).toBe(false);
    const sent = await t.http().post('/v1/send').set(key).send({ to: 'flip@example.com', from: 'hi@example.com', subject: 's', body: 'b', subscribed: true });
    expect(sent.status).toBe(200);
    expect((await contactOf('flip@example.com')).subscribed).toBe(true);
    // Sending what it already is records nothing.
    expect((await t.http().post('/contacts').set(key).send({ email: 'flip@example.com', subscribed: true })).status).toBe(200);

    expect(await subscriptionEvents(id)).toEqual([
      { name: 'contact.subscribed', data: { source: 'api' } },
      { name: 'contact.unsubscribed', data: { source: 'api' } },
      { name: 'contact.subscribed', data: { source: 'api' } },
    ]);
  });
});

describe('who gets marketing mail', () => {
  test('a MARKETING template is not sent to an unsubscribed contact (the answer says why); subscribed ones get it with List-Unsubscribe and one-click', async () => {
    const marketing = await template('MARKETING');
    await t.http().post('/contacts').set(key).send({ email: 'out@example.net', subscribed: false });
    await t.http().post('/contacts').set(key).send({ email: 'in@example.net', subscribed: true });
    const before = smtp.received.length;
    const res = await t.http().post('/v1/send').set(key).send({ to: ['out@example.net', 'in@example.net', 'fresh@example.net'], template: marketing });
    expect(res.status).toBe(200);
    const [out, inn, fresh] = res.body.data.emails;
    expect(out).toEqual({ contact: { id: expect.any(String), email: 'out@example.net' }, email: null, status: 'SKIPPED', skipped: 'unsubscribed' });
    expect(inn).toEqual({ contact: { id: expect.any(String), email: 'in@example.net' }, email: expect.any(String), status: 'QUEUED' });
    // A new recipient is not subscribed unless the request says so.
    expect(fresh).toMatchObject({ email: null, skipped: 'unsubscribed' });
    expect(await t.db.knex('emails').where({ project_id: t.project.id }).whereIn('to_email', ['out@example.net', 'fresh@example.net'])).toHaveLength(0);

    await waitForEmails(t.db, [inn.email]);
    await smtp.waitFor(before + 1);
    const mail = smtp.received.slice(before).find((m) => m.envelopeTo[0] === 'in@example.net')!;
    const raw = mail.raw.toString().replace(/\r?\n[ \t]+/g, ' '); // unfolded
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);
    expect(raw).toMatch(/^List-Unsubscribe: <http:\/\/herald\.test\/unsubscribe\/[^>]+>\r?$/m);
    expect(mail.parsed.headers.get('precedence')).toBe('bulk');

    // One recipient, skipped: the overview shape's event is null.
    const alone = await t.http().post('/v1/send').set(key).send({ to: 'out@example.net', template: marketing });
    expect(alone.body.data).toMatchObject({ contact: out.contact.id, event: null, emails: [{ email: null, skipped: 'unsubscribed' }] });
    // With subscribed: true (a secret key's choice) the new recipient gets it.
    const opted = await t.http().post('/v1/send').set(key).send({ to: 'fresh2@example.net', template: marketing, subscribed: true });
    expect(opted.body.data.emails[0]).toEqual({ contact: expect.any(Object), email: expect.any(String), status: 'QUEUED' });
  });

  test('transactional mail goes to an unsubscribed contact, without the bulk-mail headers', async () => {
    const transactional = await template('TRANSACTIONAL');
    await t.http().post('/contacts').set(key).send({ email: 'receipt@example.net', subscribed: false });
    const before = smtp.received.length;
    for (const body of [{ template: transactional }, { from: 'hi@example.com', subject: 'Receipt', body: '<p>Thanks</p>' }]) {
      const res = await t.http().post('/v1/send').set(key).send({ to: 'receipt@example.net', ...body });
      expect(res.body.data.emails[0]).toEqual({ contact: expect.any(Object), email: expect.any(String), status: 'QUEUED' });
      await waitForEmails(t.db, [res.body.data.emails[0].email]);
    }
    await smtp.waitFor(before + 2);
    for (const m of smtp.received.slice(before).filter((r) => r.envelopeTo[0] === 'receipt@example.net')) expect(m.parsed.headers.get('list-unsubscribe')).toBeUndefined();
  });
});
