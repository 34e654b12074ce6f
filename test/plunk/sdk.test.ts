import type { AddressInfo } from 'node:net';
import Plunk from '@plunk/node';
import { NotFoundError } from '@plunk/node/dist/errors/NotFound';
import { TokenError } from '@plunk/node/dist/errors/TokenError';
import { createDomain } from '../../domains/rows';
import { TEST_SECRET } from '../support/app';
import { waitForEmails } from '../support/engine';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';

/**
 * Plunk's own Node SDK (@plunk/node, a dev dependency) against a running Herald, as a Plunk user who switches meets it:
 * the one change is the base URL, `…/v1/` with its trailing slash (the SDK resolves "send" and "track" against it with
 * `new URL`). The SDK reads an error's message from the answer's top-level `message` (TokenError on 401, NotFoundError
 * on 404, a plain Error otherwise, "Unknown API Error" when there is none): Herald's second error shape gives it.
 */
let e2e: EndToEnd;
let origin: string;
let baseUrl: string;

beforeAll(async () => {
  e2e = await startEndToEnd();
  // A sending domain with its DKIM key, as POST /domains makes one, marked verified (startEndToEnd's example.com has no key).
  const d = (await createDomain(e2e.t.db.knex, TEST_SECRET, e2e.t.project.id, 'signed.example.net'))!;
  await e2e.t.db.knex('domains').where({ id: d.id }).update({ status: 'VERIFIED', verified_at: new Date() });
  origin = `http://127.0.0.1:${(e2e.t.server.address() as AddressInfo).port}`;
  baseUrl = `${origin}/v1/`;
});
afterAll(() => e2e.close());

const secret = () => new Plunk(e2e.t.project.secretKey, { baseUrl });
const publicKey = () => new Plunk(e2e.t.project.publicKey, { baseUrl });

/** What the SDK threw (or a marker when it did not throw). */
async function thrown(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('the SDK call did not throw');
}

/** Herald's own answer to the same request, read without the SDK. */
async function heraldAnswer(path: string, key: string, body: object) {
  const res = await fetch(`${origin}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { error: { code: string; message: string }; message?: string } };
}

describe('what works through the SDK', () => {
  test('events.track with the public key records the event', async () => {
    const answer = (await publicKey().events.track({ event: 'signed-up', email: 'sdk-track@example.org', data: { plan: 'pro' } })) as {
      success: boolean; data: { contact: string; event: string; timestamp: string };
    };
    expect(answer).toEqual({ success: true, data: { contact: expect.any(String), event: expect.any(String), timestamp: expect.any(String) } });
    const event = await e2e.t.db.knex('events').where({ id: answer.data.event }).first();
    expect(event).toMatchObject({ name: 'signed-up', contact_id: answer.data.contact });
  });

  test('emails.send with the secret key delivers the mail, DKIM-signed', async () => {
    const before = e2e.smtp.received.length;
    const answer = (await secret().emails.send({ to: 'sdk-send@example.org', from: 'team@signed.example.net', name: 'Herald Team', subject: 'Hello from the SDK', body: '<p>It works</p>' })) as {
      success: boolean; data: { emails: { contact: { id: string; email: string }; email: string }[] };
    };
    expect(answer.success).toBe(true);
    expect(answer.data.emails).toEqual([{ contact: { id: expect.any(String), email: 'sdk-send@example.org' }, email: expect.any(String), status: 'QUEUED' }]);
    await waitForEmails(e2e.t.db, answer.data.emails.map((e) => e.email));
    const [mail] = await e2e.smtp.waitFor(before + 1).then((all) => all.slice(before));
    expect(mail!.parsed.subject).toBe('Hello from the SDK');
    expect(mail!.parsed.from?.value).toEqual([{ name: 'Herald Team', address: 'team@signed.example.net' }]);
    expect(mail!.parsed.html).toContain('<p>It works</p>');
    expect(mail!.raw.toString()).toMatch(/^DKIM-Signature: .*\bd=signed\.example\.net;/m);
  });
});

describe('each error surfaces Herald\'s message through the SDK', () => {
  test('422: an invalid body', async () => {
    const body = { to: 'not-an-address', from: 'team@example.com', subject: 's', body: 'b' };
    const herald = await heraldAnswer('/v1/send', e2e.t.project.secretKey, body);
    expect(herald.status).toBe(422);
    const err = await thrown(secret().emails.send(body));
    expect(err.message).not.toBe('Unknown API Error');
    expect(err.message).toBe(herald.body.error.message);
    expect(err.message).toMatch(/to/);
  });

  test('422: a sender at a domain the project has not verified', async () => {
    const err = await thrown(secret().emails.send({ to: 'someone@example.org', from: 'team@unverified.example', subject: 's', body: 'b' }));
    expect(err.message).not.toBe('Unknown API Error');
    expect(err.message).toMatch(/verified/i);
  });

  test('401: an unknown key is a TokenError with Herald\'s message', async () => {
    const err = await thrown(new Plunk(`sk_${'A'.repeat(40)}`, { baseUrl }).events.track({ event: 'x', email: 'a@example.org' }));
    expect(err).toBeInstanceOf(TokenError);
    expect(err.message).toBe('Invalid API key'); // not the SDK's default "Invalid API Credentials Provided"
  });

  test('403: the public key on send', async () => {
    const err = await thrown(publicKey().emails.send({ to: 'someone@example.org', from: 'team@example.com', subject: 's', body: 'b' }));
    expect(err).not.toBeInstanceOf(TokenError);
    expect(err.message).toBe('Public keys (pk_) may only be used with POST /v1/track');
  });

  test('404: a base URL without its trailing slash reaches /send, not /v1/send, and says so', async () => {
    // new URL('send', 'http://host/v1') is http://host/send: the one 404 the SDK's two calls can meet.
    const err = await thrown(new Plunk(e2e.t.project.secretKey, { baseUrl: `${origin}/v1` }).emails.send({ to: 'someone@example.org', from: 'team@example.com', subject: 's', body: 'b' }));
    expect(err).toBeInstanceOf(NotFoundError);
    // Not the SDK's default "That resource could not be found": Herald's own words, naming the right path.
    expect(err.message).toBe('No route for POST /send: the public API is under /v1, as in POST /v1/send');
  });
});
