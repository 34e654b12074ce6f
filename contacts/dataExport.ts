import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { loadSegments } from '../audience/compile';
import { isUnusableCondition, segmentContacts } from '../audience/segmentQueries';
import { audited, type Actor } from '../audit/log';
import { Email } from '../db/models/Email';
import { Event } from '../db/models/Event';
import { timelineOf } from '../emails/emails';
import { getContact } from './contacts';

/**
 * GET /contacts/:id/export (issue 30, point 3; GDPR article 15): everything Herald holds about one contact, as one JSON
 * document: the record, its events (those about the contact itself; an email's events are in that email's timeline),
 * its emails with their bodies and timelines, the suppression entry of its address, the segments it is in now, and
 * its automation executions with their steps. Written as it is read, a page at a time, so a contact with a long history
 * costs no more memory than one with none.
 */

const PAGE = 500;

interface ExecutionRow { id: string; automation_id: string; name: string; status: string; error: string | null; started_at: Date; completed_at: Date | null }

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** `"key":[` … `]`: the items of a keyset-paged read, each as JSON, separated by commas. */
async function* arrayOf<T>(key: string, pages: (after: string | null) => PromiseLike<T[]>, id: (row: T) => string, json: (rows: T[]) => Promise<unknown[]>): AsyncGenerator<string> {
  yield `,${JSON.stringify(key)}:[`;
  let after: string | null = null;
  let first = true;
  for (;;) {
    const rows = await pages(after);
    if (rows.length === 0) break;
    for (const item of await json(rows)) {
      yield `${first ? '' : ','}${JSON.stringify(item)}`;
      first = false;
    }
    if (rows.length < PAGE) break;
    after = id(rows[rows.length - 1]!);
  }
  yield ']';
}

/** The segments the contact is in now: static ones it was added to, dynamic ones whose condition it meets. */
async function segmentsOf(knex: Knex, projectId: string, contactId: string): Promise<{ id: string; name: string; type: string }[]> {
  const all = await loadSegments(knex, projectId);
  const names = new Map((await knex('segments').where('project_id', projectId).select('id', 'name')).map((s: { id: string; name: string }) => [s.id, s.name]));
  const found: { id: string; name: string; type: string }[] = [];
  for (const segment of all.values()) {
    try {
      const hit = await segmentContacts(knex, projectId, segment, all).where('c.id', contactId).first(knex.raw('1 AS hit'));
      if (hit) found.push({ id: segment.id, name: names.get(segment.id) ?? '', type: segment.type });
    } catch (err) {
      // A segment whose stored condition cannot be evaluated holds nobody (GET /segments shows its error).
      if (!isUnusableCondition(err)) throw err;
    }
  }
  return found;
}

async function* documentOf(knex: Knex, projectId: string, contactId: string): AsyncGenerator<string> {
  const contact = await getContact(knex, projectId, contactId);
  yield `{"exportedAt":${JSON.stringify(new Date().toISOString())}`;
  yield `,"contact":${JSON.stringify({
    id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data,
    createdAt: iso(contact.createdAt), updatedAt: iso(contact.updatedAt),
  })}`;

  yield* arrayOf<Event>('events',
    (after) => {
      const q = Event.query(knex).where({ project_id: projectId, contact_id: contactId }).whereNull('email_id').orderBy('id').limit(PAGE);
      return after ? q.where('id', '>', after) : q;
    },
    (e) => e.id,
    async (rows) => rows.map((e) => ({ id: e.id, name: e.name, data: e.data, createdAt: iso(e.createdAt) })));

  yield* arrayOf<Email>('emails',
    (after) => {
      const q = Email.query(knex).where({ project_id: projectId, contact_id: contactId }).orderBy('id').limit(PAGE);
      return after ? q.where('id', '>', after) : q;
    },
    (e) => e.id,
    async (rows) => {
      const events = await Event.query(knex).where('project_id', projectId).whereIn('email_id', rows.map((e) => e.id))
        .where('name', 'like', 'email.%').orderBy([{ column: 'created_at' }, { column: 'id' }]);
      const byEmail = new Map<string, Event[]>();
      for (const ev of events) byEmail.set(ev.emailId!, [...(byEmail.get(ev.emailId!) ?? []), ev]);
      const files = await knex('attachments').where('project_id', projectId).whereIn('id', rows.flatMap((e) => e.attachmentIds))
        .select('id', 'filename', 'content_type', 'size');
      const fileById = new Map(files.map((f: { id: string; filename: string; content_type: string; size: number }) => [f.id, { filename: f.filename, contentType: f.content_type, size: f.size }]));
      return rows.map((e) => ({
        id: e.id, status: e.status, from: e.fromEmail, fromName: e.fromName, replyTo: e.replyTo, to: e.toEmail, toName: e.toName,
        // A campaign email's subject and body are rendered when it is sent, not stored: null here.
        subject: e.subject, html: e.html, headers: e.headers, campaignId: e.campaignId, templateId: e.templateId, isTest: e.isTest,
        attachments: e.attachmentIds.map((id) => fileById.get(id)).filter((f) => f !== undefined),
        messageId: e.messageId, error: e.error, opens: e.opens, clicks: e.clicks,
        createdAt: iso(e.createdAt), sentAt: iso(e.sentAt),
        timeline: timelineOf(e, byEmail.get(e.id) ?? []).map((t) => ({ type: t.type, at: iso(t.at), eventId: t.eventId, data: t.data })),
      }));
    });

  const suppressions = await knex('suppressions').where({ project_id: projectId, email: contact.email }).select('email', 'reason', 'details', 'created_at');
  yield `,"suppressions":${JSON.stringify(suppressions.map((s: { email: string; reason: string; details: unknown; created_at: Date }) => ({ email: s.email, reason: s.reason, details: s.details, createdAt: iso(s.created_at) })))}`;
  yield `,"segments":${JSON.stringify(await segmentsOf(knex, projectId, contactId))}`;

  yield* arrayOf<ExecutionRow>('automationExecutions',
    (after) => {
      const q = knex('automation_executions as x').join('automations as a', function () { this.on('a.project_id', 'x.project_id').andOn('a.id', 'x.automation_id'); })
        .where({ 'x.project_id': projectId, 'x.contact_id': contactId }).orderBy('x.id').limit(PAGE)
        .select('x.id', 'x.automation_id', 'a.name', 'x.status', 'x.error', 'x.started_at', 'x.completed_at');
      return after ? q.where('x.id', '>', after) : q;
    },
    (x) => x.id,
    async (rows) => {
      const steps = await knex('automation_step_runs').where('project_id', projectId).whereIn('execution_id', rows.map((x) => x.id))
        .orderBy(['execution_id', 'seq']).select('execution_id', 'step_id', 'outcome', 'created_at');
      return rows.map((x) => ({
        id: x.id, workflowId: x.automation_id, workflowName: x.name, status: x.status, error: x.error,
        startedAt: iso(x.started_at), completedAt: iso(x.completed_at),
        steps: steps.filter((s: { execution_id: string }) => s.execution_id === x.id)
          .map((s: { step_id: string; outcome: unknown; created_at: Date }) => ({ stepId: s.step_id, outcome: s.outcome, at: iso(s.created_at) })),
      }));
    });
  yield '}\n';
}

export function contactDataService({ knex }: { knex: Knex }) {
  return {
    /**
     * The document as a stream, once the contact is known to be in the project (a 404 otherwise, before anything is
     * written). Audited: a read of one person's data.
     */
    async export(projectId: string, id: string, actor: Actor): Promise<Readable> {
      await audited(knex, projectId, actor, { operation: 'exportContactData', resourceType: 'contact', resourceId: id }, (trx) => getContact(trx, projectId, id));
      return Readable.from(documentOf(knex, projectId, id), { objectMode: false });
    },
  };
}

export type ContactData = ReturnType<typeof contactDataService>;
