import type { Knex } from 'knex';
import { bearer } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitFor } from '../support/processes';

/**
 * A contact's data (GET /contacts/:id/export) and its erasure (DELETE /contacts/:id?erase=true): issue 30, point 3.
 * End to end on the embedded engine: the mail is really sent, so the rows erasure must redact are the real ones.
 */
let e2e: EndToEnd;
let knex: Knex;
let projectId: string;

const ADA = 'ada@example.org';
const http = () => e2e.t.http();

beforeAll(async () => {
  e2e = await startEndToEnd();
  knex = e2e.t.db.knex;
  projectId = e2e.t.project.id;
});
afterAll(() => e2e.close());

const pdf = (text: string) => ({ filename: `${text}.pdf`, content: Buffer.from(`%PDF ${text}`).toString('base64'), contentType: 'application/pdf' });

/** Every row of every table of Herald's schema that holds `text` anywhere (its text form: columns, JSON, bytes as escapes). */
async function rowsNaming(text: string): Promise<Record<string, number>> {
  const { rows: tables } = await knex.raw("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
  const found: Record<string, number> = {};
  for (const { tablename } of tables as { tablename: string }[]) {
    // A row's text form shows bytea as hex: look for the text's hex too (raw messages, attachments).
    const hex = Buffer.from(text).toString('hex');
    const { rows } = await knex.raw(`SELECT count(*)::int AS n FROM ?? t WHERE t::text ILIKE ? OR t::text ILIKE ?`, [tablename, `%${text}%`, `%${hex}%`]);
    if (rows[0].n > 0) found[tablename] = rows[0].n;
  }
  return found;
}

describe('a contact\'s data, then its erasure', () => {
  let ada: { id: string };
  let shared: { ada: string; bob: string };
  let own: string;
  let campaignId: string;
  let statsBefore: unknown;

  beforeAll(async () => {
    // An endpoint that wants email.sent: its deliveries' payloads name the recipient.
    await knex('webhook_endpoints').insert({ project_id: projectId, url: 'https://hooks.example.net/herald', events: ['email.sent'], secret: Buffer.alloc(32) });
    // A campaign's test copy to Ada's address before she was a contact: an email that is not hers, to her address.
    campaignId = (await http().post('/campaigns').set(e2e.key).send({ name: 'News', subject: 'News for {{firstName}}', body: '<p>News</p>', from: 'news@example.com', audienceType: 'ALL' }).expect(201)).body.data.id;
    await http().post(`/campaigns/${campaignId}/test`).set(e2e.key).send({ emails: [ADA] }).expect(200);
    ada = (await http().post('/contacts').set(e2e.key).send({ email: ADA, data: { firstName: 'Ada', plan: 'pro' } }).expect(201)).body.data;
    await http().post('/contacts').set(e2e.key).send({ email: 'bob@example.org', data: { plan: 'pro' } }).expect(201);
    // One send to both (its attachment shared by their emails) and one to Ada alone (its attachment hers only).
    const both = await http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: [ADA, 'bob@example.org'], subject: 'Your invoice, Ada', body: '<p>Hello Ada Lovelace</p>', attachments: [pdf('shared')] }).expect(200);
    shared = { ada: both.body.data.emails[0].email, bob: both.body.data.emails[1].email };
    own = (await http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: ADA, subject: 'Private to Ada', body: '<p>Only for Ada</p>', attachments: [pdf('private')], headers: { 'X-Customer': ADA } }).expect(200)).body.data.emails[0].email;
    // A message submitted over SMTP to both keeps its bytes once (raw_messages), naming every recipient.
    const [raw] = await knex('raw_messages').insert({ project_id: projectId, content: Buffer.from(`To: ${ADA}, bob@example.org\r\nReply-To: Ada.Lovelace@Example.org\r\n\r\nHi \xe9\x00 ${ADA}`, 'latin1'), size: 1 }).returning('id');
    await knex('emails').where({ project_id: projectId }).whereIn('id', [shared.ada, shared.bob]).update({ raw_message_id: raw.id });
    // Bob's email names Ada in a header too.
    await knex('emails').where({ project_id: projectId, id: shared.bob }).update({ headers: { Cc: `Ada <${ADA}>` } });

    // The campaign to both, sent.
    await http().post(`/campaigns/${campaignId}/send`).set(e2e.key).send({}).expect(200);
    await waitFor('campaign SENT', async () => ((await http().get(`/campaigns/${campaignId}`).set(e2e.key)).body.data.status === 'SENT' || undefined), 30_000, 100);
    await waitFor('every email sent', async () => ((await knex('emails').where({ project_id: projectId }).whereIn('status', ['QUEUED', 'SENDING'])).length === 0 || undefined), 30_000, 100);
    statsBefore = (await http().get(`/campaigns/${campaignId}/stats`).set(e2e.key).expect(200)).body.data;

    // Her own event, a static segment, an event elsewhere that names her, and a suppression entry (audited by address).
    await http().post('/v1/track').set(e2e.key).send({ email: ADA, event: 'visited-pricing', data: { page: '/pricing' } }).expect(200);
    const seg = await http().post('/segments').set(e2e.key).send({ name: 'VIPs', type: 'STATIC' }).expect(201);
    await http().post(`/segments/${seg.body.data.id}/members`).set(e2e.key).send({ emails: [ADA] }).expect(200);
    await knex('events').insert({ project_id: projectId, name: 'import.note', data: { note: `merged from ${ADA.toUpperCase()}` } });
    await http().post('/suppressions').set(e2e.key).send({ email: ADA, reason: 'manual', note: 'asked to stop' }).expect(201);
  }, 90_000);

  test('GET /contacts/:id/export: the record, her events, her emails with bodies and timelines, the suppression, segments, executions', async () => {
    const res = await http().get(`/contacts/${ada.id}/export`).set(e2e.key).buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="contact-${ada.id}.json"`);
    const doc = res.body;
    expect(doc.contact).toMatchObject({ id: ada.id, email: ADA, data: { firstName: 'Ada', plan: 'pro' } });
    expect(doc.events.map((e: { name: string }) => e.name)).toContain('visited-pricing');
    expect(doc.events.every((e: { name: string }) => !e.name.startsWith('email.'))).toBe(true);
    const emails = new Map(doc.emails.map((e: { id: string }) => [e.id, e]));
    expect(emails.get(own)).toMatchObject({
      to: ADA, subject: 'Private to Ada', html: expect.stringContaining('Only for Ada'), status: 'SENT',
      attachments: [{ filename: 'private.pdf', contentType: 'application/pdf', size: 12 }],
    });
    expect((emails.get(own) as { timeline: { type: string }[] }).timeline.map((t) => t.type)).toEqual(['email.queued', 'email.sent']);
    // The campaign's email to her is there; its test copy, sent before she was a contact, is not hers.
    expect(doc.emails.filter((e: { campaignId: string | null }) => e.campaignId === campaignId)).toHaveLength(1);
    expect(doc.suppressions).toEqual([expect.objectContaining({ email: ADA, reason: 'manual', details: { note: 'asked to stop' } })]);
    expect(doc.segments).toEqual([expect.objectContaining({ name: 'VIPs', type: 'STATIC' })]);
    expect(doc.automationExecutions).toEqual([]);

    const other = await e2e.t.newProject('Other');
    expect((await http().get(`/contacts/${ada.id}/export`).set(bearer(other.secretKey))).status).toBe(404);
    expect((await http().get('/contacts/0190a1b2-0000-7000-8000-000000000000/export').set(e2e.key)).status).toBe(404);
  });

  test('erase: a foreign id is a 404, a sending key a 403, and nothing changes', async () => {
    const other = await e2e.t.newProject('Stranger');
    expect((await http().delete(`/contacts/${ada.id}?erase=true`).set(bearer(other.secretKey))).status).toBe(404);
    const key = await http().post('/keys').set(e2e.key).send({ name: 'sender', scope: 'sending' }).expect(201);
    expect((await http().delete(`/contacts/${ada.id}?erase=true`).set(bearer(key.body.data.key))).status).toBe(403);
    expect((await http().delete(`/contacts/${ada.id}?erase=maybe`).set(e2e.key)).status).toBe(400);
    expect(await knex('contacts').where({ project_id: projectId, id: ada.id }).first()).toBeDefined();
  });

  test('erase: no table holds her address any more; what others were sent stays, redacted; the campaign\'s stats stay', async () => {
    const named = await rowsNaming(ADA);
    expect(Object.keys(named)).toEqual(expect.arrayContaining(['contacts', 'emails', 'events', 'raw_messages', 'suppressions', 'webhook_deliveries', 'audit_log']));

    const res = await http().delete(`/contacts/${ada.id}?erase=true`).set(e2e.key);
    expect(res.status).toBe(204);

    // Nowhere, in any case of letters (her Reply-To was written Ada.Lovelace@Example.org: another address, kept).
    expect(await rowsNaming(ADA)).toEqual({});
    expect(await knex('contacts').where({ project_id: projectId, id: ada.id }).first()).toBeUndefined();
    // Her own emails are gone with her, as a delete does; the test copy to her address stays, with nothing of her.
    expect(await knex('emails').where({ project_id: projectId }).whereIn('id', [own, shared.ada])).toEqual([]);
    const copy = await knex('emails').where({ project_id: projectId, campaign_id: campaignId, is_test: true }).first();
    expect(copy).toMatchObject({ to_email: 'erased@redacted.invalid', to_name: null, subject: null, html: null, headers: {} });
    // Bob's email stays, his header without her; the message submitted to both keeps its bytes but hers.
    const bob = await knex('emails').where({ project_id: projectId, id: shared.bob }).first();
    expect(bob.headers).toEqual({ Cc: 'Ada <erased@redacted.invalid>' });
    const raw = await knex('raw_messages').where({ project_id: projectId, id: bob.raw_message_id }).first();
    expect(raw.content.toString('latin1')).toBe('To: erased@redacted.invalid, bob@example.org\r\nReply-To: Ada.Lovelace@Example.org\r\n\r\nHi \xe9\x00 erased@redacted.invalid');
    expect(raw.size).toBe(raw.content.length);
    // Files: hers alone deleted, the one Bob got too kept.
    expect((await knex('attachments').where({ project_id: projectId }).pluck('filename')).sort()).toEqual(['shared.pdf']);
    // The event elsewhere that named her is redacted (in any case of letters), not deleted.
    expect(await knex('events').where({ project_id: projectId, name: 'import.note' }).first()).toMatchObject({ data: { note: 'merged from erased@redacted.invalid' } });

    // The suppression list: her entry replaced by a keyed hash.
    const entries = await knex('suppressions').where({ project_id: projectId }).select('email', 'reason', 'details');
    expect(entries).toEqual([{ email: expect.stringMatching(/^hmac-sha256:[0-9a-f]{64}$/), reason: 'erased', details: { contactId: ada.id, previousReason: 'manual' } }]);
    const listed = await http().get('/suppressions').set(e2e.key).expect(200);
    expect(listed.body.data.items).toEqual([expect.objectContaining({ email: entries[0].email, reason: 'erased' })]);

    // The campaign's stats are as they were: what it sent stays its history.
    expect((await http().get(`/campaigns/${campaignId}/stats`).set(e2e.key).expect(200)).body.data).toEqual(statsBefore);

    // Audited by the contact's id, with what was redacted; the suppression's own entry is now named by the hash.
    const log = await http().get('/audit-log?operation=eraseContact').set(e2e.key).expect(200);
    expect(log.body.data.items[0]).toMatchObject({
      resourceType: 'contact', resourceId: ada.id,
      details: { emailsDeleted: 3, emailsRedacted: 1, eventsRedacted: 1, attachmentsDeleted: 1, rawMessagesRedacted: 1, rawMessagesDeleted: 0 },
    });
    const suppressionLog = await http().get('/audit-log?operation=createSuppression').set(e2e.key).expect(200);
    expect(suppressionLog.body.data.items[0].resourceId).toBe(entries[0].email);

    expect((await http().delete(`/contacts/${ada.id}?erase=true`).set(e2e.key)).status).toBe(404);
  });

  test('a later send to the erased address is suppressed by its hash (in any case of letters); others are sent', async () => {
    const before = e2e.smtp.received.length;
    const res = await http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: ['Ada@Example.ORG', 'bob@example.org'], subject: 'Again', body: '<p>Again</p>' }).expect(200);
    const [again, bob] = res.body.data.emails;
    expect(again).toMatchObject({ status: 'SUPPRESSED', reason: 'erased' });
    expect(bob).toMatchObject({ status: 'QUEUED' });
    await e2e.smtp.waitFor(before + 1);
    await waitFor('bob SENT', async () => ((await knex('emails').where({ id: bob.email }).first()).status === 'SENT' || undefined), 20_000, 100);
    expect(e2e.smtp.received.slice(before).map((m) => m.envelopeTo[0])).toEqual(['bob@example.org']);

    // The hashed entry is lifted as any other, by its name on the list: then the address is mailed again.
    const [entry] = (await http().get('/suppressions').set(e2e.key).expect(200)).body.data.items;
    expect((await http().delete(`/suppressions/${encodeURIComponent(entry.email)}`).set(e2e.key)).status).toBe(204);
    const after = await http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: ADA, subject: 'Welcome back', body: '<p>Hi</p>' }).expect(200);
    expect(after.body.data.emails[0].status).toBe('QUEUED');
  });
});
