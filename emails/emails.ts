import type { Knex } from 'knex';
import { conflict, notFound } from '../core/errors';
import type { Logger } from '../logging/logger';
import { TemplateError } from '../mail/render';
import { messageBytes } from '../mail/transport';
import { createComposer } from '../sending/delivery';
import { isUuid } from '../core/values';
import { LIST_COUNT_CAP, cappedCount, cappedTotal, idFloor, pageQueries, shapedPageCache, wholeOf, type PageRequest, type PageStatementOptions } from '../db/pages';
import { Email, type EmailStatus } from '../db/models/Email';
import { Event } from '../db/models/Event';
import { sinceEmailOf } from '../db/queries/events';

/**
 * Emails as a resource (issue 16, point 1): the project's messages, one row per recipient, with their status and the
 * events that happened to them. Read only: what writes emails is sending/ and the delivery queue.
 */

export const EMAIL_STATUSES: readonly EmailStatus[] = ['QUEUED', 'SENDING', 'SENT', 'FAILED', 'CANCELLED', 'SUPPRESSED', 'BOUNCED'];

export interface EmailFilter {
  status?: EmailStatus;
  /** The recipient's address, as stored (trimmed, lower-case). */
  to?: string;
  /** The contact's emails (a contact's page). */
  contactId?: string;
  /** Another project's campaign id simply matches nothing, as any id filter of a list does. */
  campaignId?: string;
  /** Created at or after this time. */
  since?: Date;
  /** Created before this time. */
  until?: Date;
}

/**
 * A list's total is counted exactly up to this many emails; past it the answer says "at least" (`totalExact: false`).
 * An exact count(*) over a project's million emails costs ~100 ms however it is indexed; up to the cap it is one
 * short index-only range scan. 1,000 rather than 10,000: counting 10,000 put a page's p99 at 63 ms on a quiet machine
 * (BENCHMARKS.md section 10), where the page alone stays under 16 ms.
 */
export const EMAIL_COUNT_CAP = LIST_COUNT_CAP;

/** The columns of a list row: everything but the body (never in a list) and the headers. */
const LIST_COLUMNS = [
  'id', 'project_id', 'contact_id', 'campaign_id', 'is_test', 'template_id', 'from_email', 'from_name', 'reply_to', 'to_email',
  'to_name', 'subject', 'status', 'attempts', 'message_id', 'error', 'sent_at', 'created_at', 'updated_at',
  'track_opens', 'track_clicks', 'opens', 'first_opened_at', 'clicks', 'first_clicked_at',
];

/**
 * What a list of emails binds, by name: the project, and each filter as its statement compares it (a date range as a
 * range of ids). One statement per set of filters given, whatever their values (listEmails' shapedPageCache).
 */
type EmailBounds = {
  projectId: string;
  status: string | undefined;
  to: string | undefined;
  contactId: string | undefined;
  campaignId: string | undefined;
  sinceId: string | undefined;
  untilId: string | undefined;
};

const boundsOf = (projectId: string, filter: EmailFilter): EmailBounds => ({
  projectId, status: filter.status, to: filter.to, contactId: filter.contactId, campaignId: filter.campaignId,
  sinceId: filter.since && idFloor(filter.since), untilId: filter.until && idFloor(filter.until),
});

/**
 * The filtered, project-scoped query of a list, afresh for each use. Every filter is an equality on the leading
 * column after project_id of one index ending in id (migration 20261124000001), and the date range is a range of ids,
 * so each path is one range scan of one index, newest first.
 */
function filteredEmails(db: Knex, b: EmailBounds): () => Knex.QueryBuilder {
  return () => {
    const q = db('emails').where('project_id', b.projectId).select(LIST_COLUMNS);
    if (b.status !== undefined) q.where('status', b.status);
    if (b.to !== undefined) q.where('to_email', b.to);
    if (b.contactId !== undefined) q.where('contact_id', b.contactId);
    if (b.campaignId !== undefined) q.where('campaign_id', b.campaignId);
    if (b.sinceId !== undefined) q.where('id', '>=', b.sinceId);
    if (b.untilId !== undefined) q.where('id', '<', b.untilId);
    return q;
  };
}

/**
 * A page's two queries, as listEmails runs them (exported for the EXPLAIN tests of their indexes). The count reads
 * newest first, as the page does: the statement runs with its generic plan (listStatementOptions), and so ordered its
 * plan is an index read of the project whatever the project's size.
 */
export function emailListQueries(db: Knex, projectId: string, filter: EmailFilter, request: PageRequest) {
  return pageOfBounds(db, boundsOf(projectId, filter), request);
}

function pageOfBounds(db: Knex, bounds: EmailBounds, request: PageRequest) {
  const filtered = filteredEmails(db, bounds);
  const { page } = pageQueries(filtered, request);
  return { page, count: cappedCount(filtered, EMAIL_COUNT_CAP, 'id') };
}

/**
 * How listEmails runs its statement: with its generic plan always (db/pages.ts `genericPlan`). Every filter is an
 * equality on the leading column of an index ending in id (a status, a campaign, a recipient, a contact), a date range a
 * range of ids, so the plan is one index read newest first, stopped by the LIMIT, whatever the value: a recipient's or a
 * contact's emails, from one to 100,000, read in their index's order. Planning a recipient's page for its value took
 * 0.68 ms against 0.13 ms to run it (EXPLAIN ANALYZE on the bench's cluster, BENCHMARKS.md section 61).
 */
export const listStatementOptions = (request: PageRequest): PageStatementOptions => ({
  whole: wholeOf(request),
  genericPlan: true,
});

export interface EmailList {
  /** Up to `limit + 1` emails, newest first (the extra one only tells that there is more). */
  rows: Email[];
  /** How many match, exactly when `totalExact`, otherwise at least this many (EMAIL_COUNT_CAP). */
  total: number;
  totalExact: boolean;
}

/** listEmails' statements, built and compiled once per set of filters and page shape. */
const emailPages = shapedPageCache<EmailBounds>();

export async function listEmails(db: Knex, projectId: string, filter: EmailFilter, request: PageRequest): Promise<EmailList> {
  const { rows, total: n } = await emailPages(db, request, boundsOf(projectId, filter), (bounds, r) => ({ ...pageOfBounds(db, bounds, r), options: listStatementOptions(r) }));
  return { rows: rows.map((r) => Email.fromDatabaseJson(r)), ...cappedTotal(n, EMAIL_COUNT_CAP) };
}

/** One moment of an email's life. */
export interface TimelineEntry {
  /** `email.queued`, `email.sent`, `email.failed`, `email.opened`, `email.clicked`, … (`email.cancelled`). */
  type: string;
  at: Date;
  /** The event's id when it is a recorded event (GET /events); null for the moments read from the email row. */
  eventId: string | null;
  data: Record<string, unknown>;
}

export interface EmailDetail {
  email: Email;
  timeline: TimelineEntry[];
}

/**
 * The events of one email: every `email.*` event recorded with its id, oldest first (by time: the id of email.sent and
 * email.failed is announced when the email is queued, so ids do not order them). Served by events_email_idx.
 */
export function emailEventsQuery(db: Knex, projectId: string, emailId: string) {
  return Event.query(db).where({ project_id: projectId, email_id: emailId }).where('name', 'like', 'email.%')
    .whereRaw(`id >= ${sinceEmailOf('?::uuid')}`, [emailId])
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
}

/**
 * The email of this project and id, read from the partitions its id's time says (db/partitions.ts herald_email_lo/hi:
 * one, two near a month's start), then, if it is not there (a campaign's email written long after the campaign's first
 * batch, a row written with another partition_at), from all of them: a lookup by id costs one partition.
 */
export async function findEmail(db: Knex, projectId: string, id: string): Promise<Email | undefined> {
  const near = await Email.query(db).where({ project_id: projectId, id }).whereRaw('partition_at BETWEEN herald_email_lo(?::uuid) AND herald_email_hi(?::uuid)', [id, id]).first();
  return near ?? Email.query(db).where({ project_id: projectId, id }).first();
}

/**
 * An email of the project with its timeline: its creation (`email.queued`, from the row), every `email.*` event
 * recorded for it (sent, failed, and whatever later events name it: opened, clicked, bounced…), and its cancellation
 * (from the row: a cancelled email records no event; a final state is never changed afterwards, so its last update
 * is when it was cancelled). A malformed or another project's id is not found.
 */
export async function getEmail(db: Knex, projectId: string, id: string): Promise<EmailDetail> {
  if (!isUuid(id)) throw notFound('Email');
  const [email, events] = await Promise.all([
    findEmail(db, projectId, id),
    emailEventsQuery(db, projectId, id),
  ]);
  if (!email) throw notFound('Email');
  return { email, timeline: timelineOf(email, events) };
}

/** An email's timeline from its row and its `email.*` events, oldest first (as emailEventsQuery orders them). */
export function timelineOf(email: Pick<Email, 'status' | 'createdAt' | 'updatedAt'>, events: Pick<Event, 'id' | 'name' | 'createdAt' | 'data'>[]): TimelineEntry[] {
  // A suppressed email was stored but never queued: its timeline starts with its email.suppressed event.
  const timeline: TimelineEntry[] = email.status === 'SUPPRESSED' ? [] : [{ type: 'email.queued', at: email.createdAt, eventId: null, data: {} }];
  for (const e of events) timeline.push({ type: e.name, at: e.createdAt, eventId: e.id, data: e.data });
  if (email.status === 'CANCELLED') timeline.push({ type: 'email.cancelled', at: email.updatedAt, eventId: null, data: {} });
  return timeline;
}

/** What the raw message needs to compose an email as delivery does (sending/delivery.ts createComposer). */
export interface EmailDeps {
  knex: Knex;
  log: Logger;
  secret: Buffer;
  publicUrl: string;
}

/**
 * An email's message as delivery sends it (or will send it), MIME bytes: composed by delivery's own code
 * (createComposer: the campaign rendered for its contact, tracking links, List-Unsubscribe, attachments, a submitted
 * message's bytes with Herald's headers) and compiled by nodemailer as its SMTP transport does, without the DKIM
 * signature (added at the send). The Message-ID, Date and boundaries derive from the email, so these are the bytes the
 * receiving server got, but for the DKIM-Signature and the Received lines its servers add. A campaign email that would
 * not be sent (its contact unsubscribed or is gone; its campaign is gone) or cannot be rendered is a conflict.
 */
export async function rawEmail(deps: EmailDeps, projectId: string, id: string): Promise<Buffer> {
  if (!isUuid(id)) throw notFound('Email');
  const email = await findEmail(deps.knex, projectId, id);
  if (!email) throw notFound('Email');
  const composer = createComposer(deps);
  const { content } = (await composer.prepare([email])).get(email.id)!;
  if (content === null) throw conflict('This email has no message: its contact unsubscribed or was deleted, or its campaign was deleted, so it is not sent.');
  if (content instanceof TemplateError) throw conflict(`This email has no message: the campaign's ${content.part} could not be rendered for this recipient: ${content.message}`);
  return messageBytes(await composer.build(email, { content }));
}

/** The functions above as one object over the app's database, the API's way in (like campaignService). */
export function emailService(deps: EmailDeps) {
  const { knex } = deps;
  return {
    list: (projectId: string, filter: EmailFilter, page: PageRequest) => listEmails(knex, projectId, filter, page),
    get: (projectId: string, id: string) => getEmail(knex, projectId, id),
    raw: (projectId: string, id: string) => rawEmail(deps, projectId, id),
  };
}

export type Emails = ReturnType<typeof emailService>;
