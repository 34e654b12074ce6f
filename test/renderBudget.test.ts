import { DomainError } from '../core/errors';
import { prepareSend, storeSends } from '../sending/sends';
import { RENDER_BUDGET, renderInline } from '../mail/render';
import { TEST_SECRET, type TestContext } from './support/app';
import { waitFor } from './support/processes';
import type { TestSmtpServer } from './support/smtp';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';

/**
 * Issue 13, point 1: a template is user input, and rendering it must not stall other requests or store without
 * bound. Each cause found by the attack has a named case here.
 */
let smtp: TestSmtpServer;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

beforeAll(async () => {
  ({ smtp, t, key } = e2e = await startEndToEnd());
});
afterAll(() => e2e.close());

/** The reproducer: under 500 bytes of nested loops, megabytes of HTML per recipient. */
const NESTED_LOOPS = '{% for a in (1..3000) %}{% for b in (1..3000) %}<p>{{ a }} {{ b }} xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</p>{% endfor %}{% endfor %}';
/** A loop that passes the body's cap within milliseconds, however busy the machine. */
const FAST_BIG = `{% for a in (1..3000) %}${'x'.repeat(1000)}{% endfor %}`;
/** Nested loops that write nothing: only time. */
const BUSY_LOOPS = '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}';
const twenty = Array.from({ length: 20 }, (_, i) => `victim-${i}@example.org`);
const send = (body: object) => t.http().post('/v1/send').set(key).send({ from: 'a@example.com', subject: 'Hi', ...body });

async function count(table: string, where: Record<string, unknown> = {}) {
  return Number((await t.db.knex(table).where({ project_id: t.project.id, ...where }).count('* as n').first())!.n);
}

describe('render budgets on POST /v1/send', () => {
  test('the attack: nested loops to 20 recipients, 422 on body; nothing stored', async () => {
    const [emails, contacts] = [await count('emails'), await count('contacts')];
    const res = await send({ to: twenty, body: NESTED_LOOPS });
    expect(res.status).toBe(422);
    // The size cap, or on a busy machine the time budget first: either way the request is refused at a budget.
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'body', code: expect.stringMatching(/^too_(big|complex)$/) })]);
    expect(res.body.error.suggestion).toMatch(/Rendering limits/);
    expect([await count('emails'), await count('contacts')]).toEqual([emails, contacts]);
  });

  test('a body over 2,000,000 characters once rendered: 422 on body (too_big)', async () => {
    const res = await send({ to: twenty, body: FAST_BIG });
    expect(res.status).toBe(422);
    expect(res.body.error.errors).toEqual([{ field: 'body', code: 'too_big', message: `the body renders to more than ${RENDER_BUDGET.htmlChars.toLocaleString('en-US')} characters` }]);
  });

  test('a subject over 1,000 characters once rendered: 422 on subject', async () => {
    const res = await send({ to: 'one@example.org', subject: '{% for i in (1..200) %}subject {% endfor %}', body: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'subject', code: 'too_big' });
  });

  test('loops that only take time: 422 too_complex once the request has rendered for its budget', async () => {
    const res = await send({ to: 'one@example.org', body: BUSY_LOOPS });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'too_complex' });
  });

  test('the budget is per request: recipients within the per-message cap, together over the request cap, 422', async () => {
    const big = 'x'.repeat(60_000); // 20 × 60,000 = 1,200,000 characters a recipient; 50 recipients pass the 20,000,000 of a request
    const body = '{% for i in (1..20) %}{{ big }}{% endfor %}';
    const to = Array.from({ length: 50 }, (_, i) => `bulk-${i}@example.org`);
    const res = await send({ to, body, data: { big } });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'too_big' });
    expect(res.body.error.errors[0].message).toMatch(/together/);
    // The same to 5 recipients is within every budget.
    const ok = await send({ to: to.slice(0, 5), body, data: { big } });
    expect(ok.status).toBe(200);
  });

  test('a template of the project that passes the budget with this request\'s data names `template`', async () => {
    const tpl = await t.http().post('/templates').set(key).send({ name: 'loop', subject: 'Hi', body: '{% for i in (1..n) %}{{ pad }}{% endfor %}' });
    expect(tpl.status).toBe(201);
    const res = await send({ to: 'one@example.org', template: tpl.body.data.id, subject: undefined, data: { n: 10_000, pad: 'y'.repeat(1000) } });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'template', code: 'too_big' });
  });

  test('one abusive send among good ones sent together: the good ones are stored, the abusive one stores nothing', async () => {
    const contacts = await count('contacts');
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => send({ to: `together-${i}@example.org`, body: 'hello {{ email }}' })),
      send({ to: 'abuser-victim@example.org', body: FAST_BIG }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 422]);
    expect(await count('contacts')).toBe(contacts + 6);
    expect(await count('contacts', { email: 'abuser-victim@example.org' })).toBe(0);
  });

  test('rendering runs off the event loop: /health answers while an abusive send is still rendering', async () => {
    const order: string[] = [];
    const abusive = send({ to: twenty, body: BUSY_LOOPS }).then((r) => { order.push('send'); return r; });
    await new Promise((r) => setTimeout(r, 50)); // the send is in the render thread by now
    const health = await t.http().get('/health').then((r) => { order.push('health'); return r; });
    expect(health.status).toBe(200);
    expect((await abusive).status).toBe(422);
    expect(order).toEqual(['health', 'send']);
  });
});

describe('render budgets where templates are written and where campaigns deliver', () => {
  test('POST /templates and PATCH /templates: a body over the cap with no data is refused', async () => {
    const res = await t.http().post('/templates').set(key).send({ name: 'abuse', subject: 'Hi', body: FAST_BIG });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'too_big' });
    const ok = await t.http().post('/templates').set(key).send({ name: 'fine', subject: 'Hi', body: 'hello' });
    const patched = await t.http().patch(`/templates/${ok.body.data.id}`).set(key).send({ subject: '{% for i in (1..500) %}subject {% endfor %}' });
    expect(patched.status).toBe(422);
    expect(patched.body.error.errors[0]).toMatchObject({ field: 'subject', code: 'too_big' });
  });

  test('POST /campaigns: the same budgets; nothing stored', async () => {
    const before = await count('campaigns');
    const res = await t.http().post('/campaigns').set(key).send({ name: 'abuse', subject: 'Hi', body: BUSY_LOOPS, from: 'news@example.com', audienceType: 'ALL' });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'too_complex' });
    expect(await count('campaigns')).toBe(before);
  });

  test('a campaign whose body passes the cap only with a contact\'s data: the test send is a 422 naming the address; the delivery fails that email alone', async () => {
    const body = '<p>Hello</p>{% for i in (1..data.n) %}{{ data.pad }}{% endfor %}';
    const pad = 'p'.repeat(1000);
    await t.http().post('/contacts').set(key).send({ email: 'huge@example.org', subscribed: true, data: { n: 3000, pad } });
    await t.http().post('/contacts').set(key).send({ email: 'small@example.org', subscribed: true, data: { n: 2, pad } });
    const created = await t.http().post('/campaigns').set(key).send({
      name: 'data-dependent', subject: 'News', body, from: 'news@example.com', audienceType: 'FILTERED',
      audienceFilter: { logic: 'OR', groups: [{ filters: [{ field: 'email', operator: 'equals', value: 'huge@example.org' }] }, { filters: [{ field: 'email', operator: 'equals', value: 'small@example.org' }] }] },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;

    const test = await t.http().post(`/campaigns/${id}/test`).set(key).send({ emails: ['small@example.org', 'huge@example.org'] });
    expect(test.status).toBe(422);
    expect(test.body.error.errors[0]).toMatchObject({ field: 'body', code: 'too_big' });
    expect(test.body.error.errors[0].message).toContain('huge@example.org');

    const before = smtp.received.length;
    expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
    const emails = await waitFor('both campaign emails final', async () => {
      const rows = await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: id }).select('to_email', 'status', 'error');
      return rows.length === 2 && rows.every((r) => r.status === 'SENT' || r.status === 'FAILED') ? rows : undefined;
    }, 30_000, 100);
    const byAddress = Object.fromEntries(emails.map((e) => [e.to_email, e]));
    expect(byAddress['small@example.org']).toMatchObject({ status: 'SENT' });
    expect(byAddress['huge@example.org']).toMatchObject({ status: 'FAILED' });
    expect(byAddress['huge@example.org'].error).toMatch(/body could not be rendered for this recipient: the body renders to more than 2,000,000 characters/);
    // Only the campaign's two addresses: mail of the tests before (their sends) may still be arriving.
    const campaignMail = await waitFor('the campaign email at the SMTP server', async () => {
      const got = smtp.received.slice(before).map((m) => m.envelopeTo[0]).filter((to) => to === 'small@example.org' || to === 'huge@example.org');
      return got.length ? got : undefined;
    }, 30_000, 50);
    expect(campaignMail).toEqual(['small@example.org']);
  });
});

describe('rendering before the store', () => {
  test('a recipient created by someone else between render and store: rendered again for the contact that exists', async () => {
    const deps = { publicUrl: 'http://herald.test', secret: TEST_SECRET, render: renderInline };
    const command = { projectId: t.project.id, body: { from: { email: 'a@example.com' }, to: 'race@example.org', subject: 'Hi {{ data.name }}', body: '{{ contact.id }}' } as never, recipients: [{ email: 'race@example.org' }], attachments: [] };
    const prepared = await prepareSend(t.db.knex, command, deps);
    if (prepared instanceof Error) throw prepared;
    expect(prepared!.messages[0]!.subject).toBe('Hi'); // rendered for a new contact: no data
    const [other] = await t.db.knex('contacts').insert({ project_id: t.project.id, email: 'race@example.org', data: { name: 'Grace' } }).returning('id');
    const [stored] = await t.db.knex.transaction((trx) => storeSends(trx, [prepared!], deps));
    const email = await t.db.knex('emails').where({ project_id: t.project.id, id: (stored as { data: { emails: { email: string }[] } }).data.emails[0]!.email }).first();
    expect(email).toMatchObject({ contact_id: other.id, subject: 'Hi Grace', html: other.id });
  });

  // The store is one statement in autocommit that writes only if the contacts are as the check read them (herald_retry_unless).
  const deps = () => ({ publicUrl: 'http://herald.test', secret: TEST_SECRET, render: renderInline });
  const commandTo = (email: string, subject: string, extra: Record<string, unknown> = {}) => ({
    projectId: t.project.id, recipients: [{ email }], attachments: [],
    body: { from: { email: 'a@example.com' }, to: email, subject, body: '{{ contact.id }}', ...extra } as never,
  });
  const prepared = async (command: ReturnType<typeof commandTo>) => {
    const p = await prepareSend(t.db.knex, command, deps());
    if (p instanceof Error) throw p;
    return p;
  };
  const emailOf = async (stored: unknown) => t.db.knex('emails')
    .where({ project_id: t.project.id, id: (stored as { data: { emails: { email: string }[] } }).data.emails[0]!.email }).first();

  test('a contact whose data changes between render and store: stored rendered with the new data', async () => {
    const [c] = await t.db.knex('contacts').insert({ project_id: t.project.id, email: 'changed@example.org', data: { name: 'Ada' } }).returning('id');
    const p = await prepared(commandTo('changed@example.org', 'Hi {{ data.name }}'));
    expect(p.messages[0]!.subject).toBe('Hi Ada');
    await t.db.knex('contacts').where({ id: c.id }).update({ data: { name: 'Grace' } });
    const [stored] = await storeSends(t.db.knex, [p], deps());
    expect(await emailOf(stored)).toMatchObject({ contact_id: c.id, subject: 'Hi Grace' });
  });

  test('a contact deleted between render and store: created again, and the email is its', async () => {
    const [c] = await t.db.knex('contacts').insert({ project_id: t.project.id, email: 'deleted@example.org', data: { name: 'Ada' } }).returning('id');
    const p = await prepared(commandTo('deleted@example.org', 'Hi {{ data.name }}'));
    await t.db.knex('contacts').where({ id: c.id }).delete();
    const [stored] = await storeSends(t.db.knex, [p], deps());
    const email = await emailOf(stored);
    expect(email.contact_id).not.toBe(c.id);
    expect(email.subject).toBe('Hi');
    expect(await t.db.knex('contacts').where({ project_id: t.project.id, email: 'deleted@example.org' }).first()).toMatchObject({ id: email.contact_id });
  });

  test('a subscription changed by someone else between render and store: the send\'s own change applies to the contact as it is, once', async () => {
    const [c] = await t.db.knex('contacts').insert({ project_id: t.project.id, email: 'flip@example.org', subscribed: false }).returning('id');
    const p = await prepared(commandTo('flip@example.org', 'Hi', { subscribed: true }));
    await t.db.knex('contacts').where({ id: c.id }).update({ subscribed: true });
    const [stored] = await storeSends(t.db.knex, [p], deps());
    expect((await emailOf(stored)).contact_id).toBe(c.id);
    // Already subscribed when the store ran: no contact.subscribed event of the send's.
    expect(await t.db.knex('events').where({ project_id: t.project.id, contact_id: c.id, name: 'contact.subscribed' })).toHaveLength(0);
  });

  test('a render that fails against the changed contact: the request answers its 422 and nothing of it is written', async () => {
    const [c] = await t.db.knex('contacts').insert({ project_id: t.project.id, email: 'fails@example.org', data: { n: 1 } }).returning('id');
    const p = await prepared(commandTo('fails@example.org', 'Hi {% for i in (1..data.n) %}{{ i }}{% endfor %}'));
    const before = await t.db.knex('emails').where({ project_id: t.project.id }).count('* as n').first();
    // Now the loop passes the render budget.
    await t.db.knex('contacts').where({ id: c.id }).update({ data: { n: 100_000_000 } });
    const [stored] = await storeSends(t.db.knex, [p], deps());
    expect(stored).toBeInstanceOf(DomainError);
    expect(stored).toMatchObject({ kind: 'invalid', details: { errors: [{ field: 'subject', code: 'too_complex' }] } });
    expect(await t.db.knex('emails').where({ project_id: t.project.id }).count('* as n').first()).toEqual(before);
  });

  test('inside a caller\'s transaction the retry runs under a savepoint: the transaction goes on', async () => {
    const [c] = await t.db.knex('contacts').insert({ project_id: t.project.id, email: 'savepoint@example.org', data: { name: 'Ada' } }).returning('id');
    const p = await prepared(commandTo('savepoint@example.org', 'Hi {{ data.name }}'));
    await t.db.knex('contacts').where({ id: c.id }).update({ data: { name: 'Grace' } });
    const email = await t.db.knex.transaction(async (trx) => {
      const [stored] = await storeSends(trx, [p], deps());
      const row = await trx('emails').where({ project_id: t.project.id, id: (stored as { data: { emails: { email: string }[] } }).data.emails[0]!.email }).first();
      return row;
    });
    expect(email).toMatchObject({ contact_id: c.id, subject: 'Hi Grace' });
  });
});
