import type { Knex } from 'knex';
import { Event } from '../models/Event';

export interface NewEvent {
  /** Preset id (an email's pre-announced event id); otherwise the database assigns a UUIDv7. */
  id?: string;
  name: string;
  contactId?: string | null;
  emailId?: string | null;
  data?: Record<string, unknown>;
}

/**
 * The one way events are written, by the API and the workers alike: inserts the events, bumps the per-name totals
 * and hands them to the automations, in the caller's transaction, so that no trigger is lost:
 * - every enabled workflow of the project whose trigger is one of these event names gets an execution for the
 *   event's contact (its row is the outbox entry the execution dispatcher starts the engine workflow from); one
 *   active execution per workflow and contact unless it allows reentry (a unique index, ON CONFLICT DO NOTHING);
 * - every execution of the contact WAITING for one of these names records the event and is marked for a wake-up.
 * All of that is one statement beside the insert, whose automation parts find nothing through two small partial
 * indexes when nobody listens: tracking stays two statements.
 */
export async function recordEvents(trx: Knex.Transaction, projectId: string, events: NewEvent[]): Promise<Event[]> {
  if (events.length === 0) return [];
  const rows = await Event.query(trx).insert(events.map((e) => ({
    ...(e.id ? { id: e.id } : {}),
    projectId,
    name: e.name,
    contactId: e.contactId ?? null,
    emailId: e.emailId ?? null,
    data: e.data ?? {},
  }))).returning('*');
  // Totals per name; sorted so that concurrent writers lock the rows in the same order.
  const counts = new Map<string, number>();
  for (const e of events) counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
  const names = [...counts.keys()].sort();
  const withContact = rows.filter((r) => r.contactId);
  await trx.raw(
    `WITH ev AS (SELECT * FROM unnest(?::uuid[], ?::text[], ?::uuid[]) AS e(id, name, contact_id)),
     started AS (
       INSERT INTO automation_executions (project_id, automation_id, contact_id, exclusive, trigger_event_id, outbox)
       SELECT a.project_id, a.id, ev.contact_id, NOT a.allow_reentry, ev.id, 'START'
       FROM ev JOIN automations a ON a.project_id = ?::uuid AND a.enabled AND a.trigger_event = ev.name
       ORDER BY ev.id, a.id
       ON CONFLICT (automation_id, contact_id) WHERE exclusive AND status IN ('RUNNING', 'WAITING') DO NOTHING
       RETURNING 1),
     woken AS (
       UPDATE automation_executions x SET woken_by_event_id = ev.id, outbox = 'WAKE', updated_at = now()
       FROM ev
       WHERE x.project_id = ?::uuid AND x.contact_id = ev.contact_id AND x.status = 'WAITING' AND x.wait_event = ev.name
         AND x.woken_by_event_id IS NULL
       RETURNING 1)
     INSERT INTO event_names (project_id, name, count, last_seen_at)
     SELECT ?::uuid, n.name, n.count, now() FROM unnest(?::text[], ?::bigint[]) AS n(name, count)
     ON CONFLICT (project_id, name) DO UPDATE SET count = event_names.count + excluded.count, last_seen_at = excluded.last_seen_at`,
    [
      withContact.map((r) => r.id), withContact.map((r) => r.name), withContact.map((r) => r.contactId),
      projectId, projectId, projectId, names, names.map((n) => counts.get(n)!),
    ] as Knex.RawBinding[],
  );
  return rows;
}

export interface EventFilter {
  name?: string;
  contactId?: string;
  since?: Date;
  until?: Date;
}

/** One page of events, newest first, after `afterId`, and the total matching the filter. */
export function eventListQueries(db: Knex, projectId: string, filter: EventFilter, limit: number, afterId?: string) {
  const where = (q: Knex.QueryBuilder) => {
    q.where('project_id', projectId);
    if (filter.name !== undefined) q.where('name', filter.name);
    if (filter.contactId !== undefined) q.where('contact_id', filter.contactId);
    if (filter.since) q.where('created_at', '>=', filter.since);
    if (filter.until) q.where('created_at', '<', filter.until);
    return q;
  };
  const page = Event.query(db).where((q) => { where(q as unknown as Knex.QueryBuilder); }).orderBy('id', 'desc').limit(limit + 1);
  if (afterId) page.where('id', '<', afterId);
  const count = db('events').where((q) => { where(q); }).count('* as n').first() as unknown as Promise<{ n: number }>;
  return { page, count };
}

export async function listEvents(db: Knex, projectId: string, filter: EventFilter, limit: number, afterId?: string): Promise<{ rows: Event[]; total: number }> {
  const { page, count } = eventListQueries(db, projectId, filter, limit, afterId);
  const [rows, c] = await Promise.all([page, count]);
  return { rows, total: c.n };
}

export interface EventNameRow {
  name: string;
  count: number;
  lastSeenAt: string;
}

export async function eventNames(db: Knex, projectId: string): Promise<EventNameRow[]> {
  const rows = await db('event_names').where('project_id', projectId).orderBy('name').select('name', 'count', 'last_seen_at');
  return rows.map((r: { name: string; count: number; last_seen_at: Date }) => ({ name: r.name, count: r.count, lastSeenAt: r.last_seen_at.toISOString() }));
}
