import { noEngine, TEST_SECRET } from '../support/app';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { TransientDeliveryError } from '../../activities/delivery';
import { createLogger } from '../../logging/logger';
import { createMailer, type Mailer } from '../../mail/transport';
import { createProject, type CreatedProject } from '../../projects/service';
import { DELIVERY_QUEUE, WORKFLOW_TASK_QUEUE } from '../../workflows/policy';
import { workflowId } from '../../workflows/registry';
import type { Activities, DeliveryOutcome, EmailRef } from '../../workflows/types';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * The activities that Temporal workers register (activities/, via createActivities), run one by one inside Temporal's
 * MockActivityEnvironment (a real activity Context, no Temporal server), against a real PostgreSQL database and a
 * real SMTP server. Temporal's own retries are not exercised here: a thrown error is what makes Temporal retry.
 */

let db: TestDatabase;
let smtp: TestSmtpServer;
let mailer: Mailer;
let activities: Activities;
let project: CreatedProject;

beforeAll(async () => {
  db = await createTestDatabase();
  smtp = await startSmtpServer();
  mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
  activities = createActivities({ knex: db.knex, mailer, log: createLogger('silent'), secret: TEST_SECRET, publicUrl: 'http://herald.test', engine: noEngine });
  project = await createProject('Temporal activities');
});
afterAll(async () => {
  mailer?.close();
  await smtp?.close();
  await db?.close();
});

interface EmailRow {
  id: string;
  project_id: string;
  contact_id: string;
  status: string;
  attempts: number;
  message_id: string | null;
  error: string | null;
  event_id: string;
  sent_at: Date | null;
  subject: string;
  html: string;
}

let seq = 0;
/** A contact and one QUEUED email to it, inserted as POST /v1/send stores them. */
async function queueEmail(overrides: { headers?: Record<string, string> } = {}): Promise<EmailRow> {
  seq += 1;
  const [contact] = await db.knex('contacts').insert({ project_id: project.id, email: `rcpt${seq}@example.org` }).returning('id');
  const [email] = await db.knex('emails').insert({
    project_id: project.id,
    contact_id: contact.id,
    from_email: 'news@example.com',
    from_name: 'Example News',
    reply_to: 'help@example.com',
    to_email: `rcpt${seq}@example.org`,
    to_name: `Recipient ${seq}`,
    subject: `Hello #${seq}`,
    html: `<p>Body of email <b>${seq}</b></p>`,
    headers: JSON.stringify(overrides.headers ?? { 'X-Campaign': 'spring', 'X-Seq': String(seq) }),
  }).returning('*');
  return email as EmailRow;
}

const refOf = (email: EmailRow): EmailRef => ({ projectId: email.project_id, emailId: email.id });
const rowOf = async (email: EmailRow): Promise<EmailRow> => db.knex('emails').where({ project_id: email.project_id, id: email.id }).first();
const eventsOf = async (email: EmailRow) => db.knex('events').where({ project_id: email.project_id, email_id: email.id }).orderBy('id');

/** The SDK logs every failed attempt at WARN (the 451 case fails on purpose); errors still show. */
const temporalLog = new DefaultLogger('ERROR');

/** A fresh MockActivityEnvironment whose Info says what the Worker would give this activity. */
function envFor(activityType: keyof Activities, ref: EmailRef, attempt = 1): MockActivityEnvironment {
  return new MockActivityEnvironment({
    activityType,
    taskQueue: activityType === 'deliverEmail' ? DELIVERY_QUEUE : WORKFLOW_TASK_QUEUE,
    attempt,
    workflowType: 'deliverEmail',
    workflowExecution: { workflowId: workflowId.deliverEmail(ref), runId: '00000000-0000-0000-0000-000000000001' },
  }, { logger: temporalLog });
}

/** One attempt of an activity, as the Worker would run it (the SDK's run() cannot infer the result type by itself). */
const deliver = (ref: EmailRef, attempt = 1) =>
  envFor('deliverEmail', ref, attempt).run<[EmailRef], DeliveryOutcome, Activities['deliverEmail']>(activities.deliverEmail, ref);
const fail = (ref: EmailRef, error: string, attempt = 1) =>
  envFor('failEmail', ref, attempt).run<[EmailRef & { error: string }], DeliveryOutcome, Activities['failEmail']>(activities.failEmail, { ...ref, error });
const cancel = (ref: EmailRef) =>
  envFor('cancelEmail', ref).run<[EmailRef], DeliveryOutcome, Activities['cancelEmail']>(activities.cancelEmail, ref);

describe("Herald's activities under Temporal's MockActivityEnvironment (no Temporal server), real PostgreSQL and SMTP", () => {
  test('deliverEmail sends the stored email, marks it SENT with the Message-ID and records email.sent with the preset event id', async () => {
    const email = await queueEmail();
    const before = smtp.received.length;

    const outcome = await deliver(refOf(email));

    expect(outcome).toEqual({ status: 'SENT', messageId: `<${email.id}@example.com>` });
    const [mail] = await smtp.waitFor(before + 1).then((r) => r.slice(before));
    expect(smtp.received).toHaveLength(before + 1);
    expect(mail!.envelopeTo).toEqual([`rcpt${seq}@example.org`]);
    expect(mail!.envelopeFrom).toBe('news@example.com');
    expect(mail!.parsed.subject).toBe(email.subject);
    expect(String(mail!.parsed.html).trimEnd()).toBe(email.html); // mailparser keeps the MIME part's closing newline
    expect(mail!.parsed.messageId).toBe(`<${email.id}@example.com>`);
    expect(mail!.parsed.from?.value).toEqual([{ name: 'Example News', address: 'news@example.com' }]);
    expect(mail!.parsed.replyTo?.value).toEqual([{ name: '', address: 'help@example.com' }]);
    expect(mail!.parsed.headers.get('x-campaign')).toBe('spring');
    expect(mail!.parsed.headers.get('x-seq')).toBe(String(seq));

    const row = await rowOf(email);
    expect(row).toMatchObject({ status: 'SENT', message_id: `<${email.id}@example.com>`, error: null, attempts: 1 });
    expect(row.sent_at).toBeInstanceOf(Date);

    const events = await eventsOf(email);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: email.event_id, name: 'email.sent', contact_id: email.contact_id, email_id: email.id, data: { messageId: `<${email.id}@example.com>` } });
  });

  test('deliverEmail again (a repeated workflow, a retried activity) is SKIPPED: nothing is sent twice, no second event', async () => {
    const email = await queueEmail();
    await deliver(refOf(email));
    const after = smtp.received.length;

    await expect(deliver(refOf(email), 2)).resolves.toEqual({ status: 'SKIPPED', reason: 'email is SENT' });
    await expect(deliver(refOf(email), 3)).resolves.toEqual({ status: 'SKIPPED', reason: 'email is SENT' });

    expect(smtp.received).toHaveLength(after);
    expect((await rowOf(email)).attempts).toBe(1);
    expect(await eventsOf(email)).toHaveLength(1);
  });

  test('a permanent SMTP failure (550) returns FAILED (no retry), marks the email FAILED with the reason and records email.failed', async () => {
    const email = await queueEmail();
    const before = smtp.received.length;
    smtp.script([{ code: 550, message: 'Mailbox unavailable' }]);

    const outcome = await deliver(refOf(email));

    expect(outcome.status).toBe('FAILED');
    const error = (outcome as { error: string }).error;
    expect(error).toMatch(/550/);
    expect(error).toMatch(/Mailbox unavailable/);
    expect(smtp.received).toHaveLength(before);
    expect(await rowOf(email)).toMatchObject({ status: 'FAILED', error, message_id: null, sent_at: null });
    const events = await eventsOf(email);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: email.event_id, name: 'email.failed', contact_id: email.contact_id, data: { error } });

    // A FAILED email is final: a later delivery does nothing.
    await expect(deliver(refOf(email), 2)).resolves.toEqual({ status: 'SKIPPED', reason: 'email is FAILED' });
    expect(smtp.received).toHaveLength(before);
  });

  test('a transient SMTP failure (451) throws, so that Temporal retries; the email is back to QUEUED with the error, and the retry delivers it once', async () => {
    const email = await queueEmail();
    const before = smtp.received.length;
    smtp.script([{ code: 451, message: 'Try again later' }]);

    const thrown = await deliver(refOf(email)).then(() => undefined, (err: unknown) => err);

    expect(thrown).toBeInstanceOf(TransientDeliveryError);
    expect((thrown as Error).message).toMatch(/451/);
    const row = await rowOf(email);
    expect(row).toMatchObject({ status: 'QUEUED', attempts: 1, message_id: null });
    expect(row.error).toMatch(/451.*Try again later/);
    expect(await eventsOf(email)).toHaveLength(0);
    expect(smtp.received).toHaveLength(before);

    // Temporal's next attempt of the same activity.
    await expect(deliver(refOf(email), 2)).resolves.toEqual({ status: 'SENT', messageId: `<${email.id}@example.com>` });
    await smtp.waitFor(before + 1);
    expect(smtp.received).toHaveLength(before + 1);
    expect(await rowOf(email)).toMatchObject({ status: 'SENT', attempts: 2, error: null });
    expect((await eventsOf(email)).map((e) => e.name)).toEqual(['email.sent']);
  });

  test('failEmail (retries exhausted) marks a queued email FAILED with the reason and records email.failed; on a final email it is SKIPPED', async () => {
    const email = await queueEmail();
    const ref = refOf(email);
    const error = 'gave up after repeated transient failures: 451 Try again later';

    const outcome = await fail(ref, error);

    expect(outcome).toEqual({ status: 'FAILED', error });
    expect(await rowOf(email)).toMatchObject({ status: 'FAILED', error });
    const events = await eventsOf(email);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: email.event_id, name: 'email.failed', data: { error } });

    // Again (a retried activity): no change, no second event.
    await expect(fail(ref, 'other', 2)).resolves.toEqual({ status: 'SKIPPED', reason: 'email is FAILED' });
    expect(await rowOf(email)).toMatchObject({ status: 'FAILED', error });
    expect(await eventsOf(email)).toHaveLength(1);

    // A SENT email is never turned into FAILED.
    const sent = await queueEmail();
    await deliver(refOf(sent));
    await expect(fail(refOf(sent), error)).resolves.toEqual({ status: 'SKIPPED', reason: 'email is SENT' });
    expect((await rowOf(sent)).status).toBe('SENT');
  });

  test('cancelEmail (the delivery workflow was cancelled, e.g. in the Temporal UI) marks a queued email CANCELLED; a sent one stays SENT', async () => {
    const email = await queueEmail();
    await expect(cancel(refOf(email))).resolves.toEqual({ status: 'CANCELLED' });
    expect((await rowOf(email)).status).toBe('CANCELLED');
    const before = smtp.received.length;
    await expect(deliver(refOf(email))).resolves.toEqual({ status: 'SKIPPED', reason: 'email is CANCELLED' });
    expect(smtp.received).toHaveLength(before);
    expect(await eventsOf(email)).toHaveLength(0);

    const sent = await queueEmail();
    await deliver(refOf(sent));
    await expect(cancel(refOf(sent))).resolves.toEqual({ status: 'SKIPPED', reason: 'email is SENT' });
    expect((await rowOf(sent)).status).toBe('SENT');
  });

  test('an email deleted with its contact is SKIPPED by both activities', async () => {
    const email = await queueEmail();
    await db.knex('contacts').where({ project_id: email.project_id, id: email.contact_id }).delete();
    const before = smtp.received.length;

    await expect(deliver(refOf(email))).resolves.toEqual({ status: 'SKIPPED', reason: 'email no longer exists' });
    await expect(fail(refOf(email), 'x')).resolves.toEqual({ status: 'SKIPPED', reason: 'email no longer exists' });
    expect(smtp.received).toHaveLength(before);
  });
});
