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
 * The one way events are written, by the API and the workers alike: inserts the events and bumps the per-name
 * totals, in the caller's transaction. This is also the one place to hook automations onto (issue 6): whatever
 * listens for events must be decided here, inside the same transaction, so no trigger is lost.
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
  // Totals per name in one statement; sorted so that concurrent writers lock the rows in the same order.
  const counts = new Map<string, number>();
  for (const e of events) counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
  const names = [...counts.keys()].sort();
  await trx.raw(
    `INSERT INTO event_names (project_id, name, count, last_seen_at)
     SELECT ?::uuid, n.name, n.count, now() FROM unnest(?::text[], ?::bigint[]) AS n(name, count)
     ON CONFLICT (project_id, name) DO UPDATE SET count = event_names.count + excluded.count, last_seen_at = excluded.last_seen_at`,
    [projectId, names, names.map((n) => counts.get(n)!)],
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
