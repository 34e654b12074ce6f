import type { Knex } from 'knex';
import { preparedStatementOf } from '../prepared';
import { LIST_COUNT_CAP, LIST_PLAN, cappedTotal, idFloor, listCappedPage, rowLimit, shapedCappedPages, type CappedList, type CappedPageOptions, type PageRequest } from '../pages';
import { Event } from '../models/Event';
import { ident, listPartitions, partitioned, partitionOids, partitionOidsSql, type Partition } from '../partitions';
import { perDatabase } from '../perDatabase';

export interface NewEvent {
  /** Preset id (an email's pre-announced event id); otherwise the database assigns a UUIDv7. */
  id?: string;
  name: string;
  contactId?: string | null;
  emailId?: string | null;
  data?: Record<string, unknown>;
}

/**
 * Each name's total is spread over this many rows, picked by the writer's database session, so that concurrent writers
 * (delivery workers recording `email.sent`, the API tracking a busy event) do not queue on one row lock.
 */
const EVENT_NAME_SHARDS = 8;

/** The events counted per day in project_daily_stats (migration 20261201000001), each in the column of its last word. */
export const DAILY_EVENTS = ['email.sent', 'email.failed', 'email.bounced', 'email.complained', 'email.opened', 'email.clicked'] as const;

/** The events of a campaign's emails that its results count (campaign_hourly_stats, campaign_link_stats). */
const CAMPAIGN_EVENTS = ['email.opened', 'email.clicked', 'email.bounced', 'email.complained', 'contact.unsubscribed'] as const;

/**
 * The events of an email were all recorded after it was made (its sent or failed event's id is made with it, the others
 * later), so their ids are at least its id's time (a day earlier, for clocks that disagree): events are partitioned by
 * id (db/partitions.ts), and this bound keeps a look for an email's earlier events to the partitions since its month.
 * SQL, over the email id `emailId` (an expression).
 */
export function sinceEmailOf(emailId: string): string {
  return `herald_uuid_shift(${emailId}, interval '-1 day')`;
}

/** A timestamp as JSON dates are written (ISO 8601, UTC, milliseconds), in SQL. */
function utcTimestamp(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * The one way events are written, by the API and the workers alike: the common table expressions that insert the
 * events of a CTE named `new_events` (id uuid or null for a new UUIDv7, project_id, name, contact_id, email_id, data
 * jsonb) as `inserted`, bump the per-name totals and hand the events to the automations, all in the caller's
 * statement, so that no trigger is lost:
 * - every enabled workflow of the project whose trigger is one of these event names gets an execution for the
 *   event's contact (its row is the outbox entry the execution dispatcher starts the engine workflow from); one
 *   active execution per workflow and contact unless it allows reentry (a unique index, ON CONFLICT DO NOTHING);
 * - every execution of the contact WAITING for one of these names records the event and is marked for a wake-up.
 * - every enabled webhook endpoint of the project that wants one of these names (and, for `email.received`, the
 *   endpoint its inbound route names) gets its outbox row
 *   (webhook_deliveries) with the exact payload it will carry (webhooks/; worker/webhookQueue.ts delivers it);
 * - the email outcomes (DAILY_EVENTS) are added to the project's day in project_daily_stats, one upsert per project and
 *   day of the statement (not per event), for the overview's chart;
 * - the opens, clicks, bounces, complaints and unsubscribes of a campaign's emails are added to its results
 *   (campaign_hourly_stats, campaign_link_stats), one upsert per campaign and hour and per campaign and link.
 * The automation and webhook parts find nothing through small indexes when nobody listens. One statement: the
 * delivery queue writes a batch of outcomes and their events in one round trip (sending/delivery.ts), the tracker a
 * batch of opens and clicks (tracking/record.ts). The emails and contacts the payloads name are read as they were
 * before the statement: a statement that writes an event writes neither its email's address and subject nor its
 * contact's address, except one that stores the emails themselves and names them (eventEffects, a send's store).
 */
export const EVENT_EFFECTS = eventEffects();

/**
 * EVENT_EFFECTS, where the webhook payloads and the campaigns' results read the emails from `emails`, a relation
 * (project_id, id, to_email, subject, campaign_id, variant, is_test): a statement that writes emails and their events
 * together names the emails it writes. Without it, the events' emails are read from the table, once each
 * (`event_emails`), by their partition key: emails are partitioned by `partition_at` (db/partitions.ts), which a
 * lookup by (project_id, id) alone does not bound, so it probed the primary key of every month's partition for each
 * event. Each email is looked for in the partitions its id's time names (herald_email_lo/hi: one, two near a month's
 * start) and, only when it is not there (a campaign's email written long after its first batch), in all of them: the
 * second branch of the UNION ALL runs only when the first found nothing (LIMIT 1), as findEmail (emails/emails.ts)
 * and recordHits (tracking/record.ts) do it.
 * `emailEvents`: the only names the statement's `new_events` can give an event that names an email (email_id), when
 * it knows them (delivery's outcome write: email.sent and email.failed; a send's store: email.suppressed). The campaign
 * results' parts are then left out unless one of them is counted there (CAMPAIGN_EVENTS): they count only events
 * that name a campaign's email.
 */
export function eventEffects(emails?: string, opts: { emailEvents?: readonly string[] } = {}): string {
  // The campaign results' parts only where one of their events can be written: each initialises look-ups of events
  // (per partition: they are pruned as they run, not before) even when no row reaches them.
  const campaigns = opts.emailEvents === undefined || opts.emailEvents.some((n) => (CAMPAIGN_EVENTS as readonly string[]).includes(n));
  return `
  inserted AS (
    INSERT INTO events (id, project_id, name, contact_id, email_id, data)
    SELECT coalesce(n.id, herald_uuidv7()), n.project_id, n.name, n.contact_id, n.email_id, n.data FROM new_events n
    RETURNING *),${emails !== undefined ? '' : `
  event_emails AS (
    SELECT x.* FROM (SELECT DISTINCT project_id, email_id FROM inserted WHERE email_id IS NOT NULL) ev
    CROSS JOIN LATERAL (
      (SELECT e.project_id, e.id, e.to_email, e.subject, e.campaign_id, e.variant, e.is_test FROM emails e
       WHERE e.project_id = ev.project_id AND e.id = ev.email_id
         AND e.partition_at BETWEEN herald_email_lo(ev.email_id) AND herald_email_hi(ev.email_id))
      UNION ALL
      (SELECT e.project_id, e.id, e.to_email, e.subject, e.campaign_id, e.variant, e.is_test FROM emails e
       WHERE e.project_id = ev.project_id AND e.id = ev.email_id)
      LIMIT 1) x),`}
  started AS (
    INSERT INTO automation_executions (project_id, automation_id, contact_id, exclusive, trigger_event_id, outbox)
    SELECT a.project_id, a.id, ev.contact_id, NOT a.allow_reentry, ev.id, 'START'
    FROM inserted ev JOIN automations a ON a.project_id = ev.project_id AND a.enabled AND a.trigger_event = ev.name
    WHERE ev.contact_id IS NOT NULL
    ORDER BY ev.id, a.id
    -- A workflow deleted (or disabled) by a transaction that commits meanwhile is skipped, not an FK violation.
    FOR KEY SHARE OF a
    ON CONFLICT (automation_id, contact_id) WHERE exclusive AND status IN ('RUNNING', 'WAITING') DO NOTHING
    RETURNING 1),
  woken AS (
    UPDATE automation_executions x SET woken_by_event_id = ev.id, outbox = 'WAKE', updated_at = now()
    FROM inserted ev
    WHERE x.project_id = ev.project_id AND x.contact_id = ev.contact_id AND x.status = 'WAITING' AND x.wait_event = ev.name
      AND x.woken_by_event_id IS NULL
    RETURNING 1),
  -- Totals per name, in a fixed order so that concurrent writers of the same shard lock its rows in the same order.
  named AS (
    INSERT INTO event_names (project_id, name, shard, count, last_seen_at)
    SELECT project_id, name, pg_backend_pid() % ${EVENT_NAME_SHARDS}, count(*), now() FROM inserted GROUP BY project_id, name ORDER BY project_id, name
    ON CONFLICT (project_id, name, shard) DO UPDATE SET count = event_names.count + excluded.count, last_seen_at = excluded.last_seen_at
    RETURNING 1),
  -- The outcomes per UTC day (project_daily_stats, GET /stats/overview): one row per project and day of the batch.
  daily AS (
    INSERT INTO project_daily_stats AS d (project_id, day, shard, sent, failed, bounced, complained, opened, clicked)
    SELECT project_id, (created_at AT TIME ZONE 'UTC')::date, pg_backend_pid() % ${EVENT_NAME_SHARDS},
           count(*) FILTER (WHERE name = 'email.sent'), count(*) FILTER (WHERE name = 'email.failed'),
           count(*) FILTER (WHERE name = 'email.bounced'), count(*) FILTER (WHERE name = 'email.complained'),
           count(*) FILTER (WHERE name = 'email.opened'), count(*) FILTER (WHERE name = 'email.clicked')
    FROM inserted WHERE name IN (${DAILY_EVENTS.map((n) => `'${n}'`).join(', ')})
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (project_id, day, shard) DO UPDATE SET
      sent = d.sent + excluded.sent, failed = d.failed + excluded.failed, bounced = d.bounced + excluded.bounced,
      complained = d.complained + excluded.complained, opened = d.opened + excluded.opened, clicked = d.clicked + excluded.clicked
    RETURNING 1),
${campaigns ? campaignResults(emails ?? 'event_emails') : ''}
  hooked AS (
    INSERT INTO webhook_deliveries (project_id, endpoint_id, type, event_id, payload)
    SELECT ev.project_id, w.id, ev.name, ev.id,
           jsonb_build_object('type', ev.name, 'timestamp', ${utcTimestamp('ev.created_at')}, 'data',
             jsonb_strip_nulls(jsonb_build_object(
               'eventId', ev.id, 'emailId', ev.email_id, 'contactId', ev.contact_id,
               'to', e.to_email, 'subject', e.subject, 'campaignId', e.campaign_id,
               'email', c.email)) || ev.data)
    FROM inserted ev
    -- A received message also goes to its inbound route's endpoint (inbound/receive.ts), subscribed or not.
    JOIN webhook_endpoints w ON w.project_id = ev.project_id AND w.enabled
      AND (ev.name = ANY (w.events) OR (ev.name = 'email.received' AND w.id::text = ev.data->>'endpointId'))
    LEFT JOIN ${emails ?? 'event_emails'} e ON e.project_id = ev.project_id AND e.id = ev.email_id
    LEFT JOIN contacts c ON c.project_id = ev.project_id AND c.id = ev.contact_id AND ev.name LIKE 'contact.%'
    ORDER BY ev.id, w.id
    -- An endpoint deleted by a transaction that commits meanwhile is skipped, not an FK violation.
    FOR KEY SHARE OF w
    RETURNING 1)`;
}

/**
 * EVENT_EFFECTS' part that adds the events of a campaign's emails to its results (CAMPAIGN_EVENTS), the events'
 * emails read from `emails`, a relation (project_id, id, campaign_id, variant, is_test).
 */
function campaignResults(emails: string): string {
  return `
  -- A campaign's results (migration 20261203000001): its emails' opens and clicks by hour (the chart), the emails whose
  -- first bounce, complaint or unsubscribe this is (each email once: no such event of it recorded before this
  -- statement, events_email_idx), and its clicks per link with the emails a person clicked it in for the first time
  -- (events_clicks_idx). Test copies are not counted. Only these five names look their email up.
  campaign_events AS (
    SELECT ev.id, ev.project_id, ev.name, ev.email_id, ev.created_at, ev.data, e.campaign_id, e.variant
    FROM inserted ev JOIN ${emails} e ON e.project_id = ev.project_id AND e.id = ev.email_id
    WHERE ev.name IN (${CAMPAIGN_EVENTS.map((n) => `'${n}'`).join(', ')}) AND ev.email_id IS NOT NULL
      AND e.campaign_id IS NOT NULL AND NOT e.is_test),
  -- Each email's first bounce, complaint and unsubscribe (no such event of it recorded before this statement).
  campaign_firsts AS (
    SELECT DISTINCT ON (c.email_id, c.name) c.* FROM campaign_events c
    WHERE c.name IN ('email.bounced', 'email.complained', 'contact.unsubscribed')
      AND NOT EXISTS (SELECT 1 FROM events o WHERE o.project_id = c.project_id AND o.email_id = c.email_id AND o.name = c.name
                        AND o.id >= ${sinceEmailOf('c.email_id')})),
  campaign_hours AS (
    INSERT INTO campaign_hourly_stats AS h (project_id, campaign_id, hour, shard, opened, clicked, bounced, complained, unsubscribed)
    SELECT project_id, campaign_id, date_trunc('hour', created_at, 'UTC'), pg_backend_pid() % ${EVENT_NAME_SHARDS},
           count(*) FILTER (WHERE name = 'email.opened' AND NOT first), count(*) FILTER (WHERE name = 'email.clicked' AND NOT first),
           count(*) FILTER (WHERE name = 'email.bounced' AND first), count(*) FILTER (WHERE name = 'email.complained' AND first),
           count(*) FILTER (WHERE name = 'contact.unsubscribed' AND first)
    FROM (
      SELECT c.*, false AS first FROM campaign_events c WHERE c.name IN ('email.opened', 'email.clicked')
      UNION ALL
      SELECT f.*, true FROM campaign_firsts f
    ) x
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (project_id, campaign_id, hour, shard) DO UPDATE SET
      opened = h.opened + excluded.opened, clicked = h.clicked + excluded.clicked, bounced = h.bounced + excluded.bounced,
      complained = h.complained + excluded.complained, unsubscribed = h.unsubscribed + excluded.unsubscribed
    RETURNING 1),
  -- The same firsts of an A/B campaign's sample emails, per variant (migration 20261207000001).
  campaign_variant_firsts AS (
    INSERT INTO campaign_variant_stats AS v (project_id, campaign_id, variant, shard, bounce_events, complained, unsubscribed)
    SELECT project_id, campaign_id, variant, pg_backend_pid() % ${EVENT_NAME_SHARDS},
           count(*) FILTER (WHERE name = 'email.bounced'), count(*) FILTER (WHERE name = 'email.complained'),
           count(*) FILTER (WHERE name = 'contact.unsubscribed')
    FROM campaign_firsts WHERE variant IS NOT NULL
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (project_id, campaign_id, variant, shard) DO UPDATE SET
      bounce_events = v.bounce_events + excluded.bounce_events, complained = v.complained + excluded.complained,
      unsubscribed = v.unsubscribed + excluded.unsubscribed
    RETURNING 1),
  campaign_links AS (
    INSERT INTO campaign_link_stats AS l (project_id, campaign_id, url, shard, clicks, unique_clicks)
    SELECT project_id, campaign_id, url, pg_backend_pid() % ${EVENT_NAME_SHARDS}, count(*), count(DISTINCT email_id) FILTER (WHERE first)
    FROM (
      SELECT c.project_id, c.campaign_id, c.email_id, coalesce(c.data->>'url', '') AS url,
             c.data->>'bot' IS DISTINCT FROM 'true' AND NOT EXISTS (
               SELECT 1 FROM events o WHERE o.project_id = c.project_id AND o.email_id = c.email_id AND o.name = 'email.clicked'
                 AND o.id >= ${sinceEmailOf('c.email_id')}
                 AND coalesce(o.data->>'url', '') = coalesce(c.data->>'url', '') AND o.data->>'bot' IS DISTINCT FROM 'true') AS first
      FROM campaign_events c WHERE c.name = 'email.clicked') x
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (project_id, campaign_id, url, shard) DO UPDATE SET clicks = l.clicks + excluded.clicks, unique_clicks = l.unique_clicks + excluded.unique_clicks
    RETURNING 1),`;
}

/**
 * recordEvents' statement (exported for EXPLAIN). Bindings: the project, then per event its id (or null), name,
 * contact id, email id and data as JSON text.
 */
export const RECORD_EVENTS_SQL = `WITH new_events AS (
       SELECT n.id, ?::uuid AS project_id, n.name, n.contact_id, n.email_id, n.data::jsonb AS data
       FROM unnest(?::uuid[], ?::text[], ?::uuid[], ?::uuid[], ?::text[]) WITH ORDINALITY AS n(id, name, contact_id, email_id, data, ord)
       ORDER BY n.ord),
     ${EVENT_EFFECTS}
     SELECT * FROM inserted`;

/** Records events of one project in the caller's transaction (see EVENT_EFFECTS); answers them, in no particular order. */
export async function recordEvents(trx: Knex.Transaction, projectId: string, events: NewEvent[]): Promise<Event[]> {
  if (events.length === 0) return [];
  const { rows } = await trx.raw(
    RECORD_EVENTS_SQL,
    [
      projectId, events.map((e) => e.id ?? null), events.map((e) => e.name), events.map((e) => e.contactId ?? null),
      events.map((e) => e.emailId ?? null), events.map((e) => JSON.stringify(e.data ?? {})),
    ] as Knex.RawBinding[],
  );
  return rows.map((r: Record<string, unknown>) => Event.fromDatabaseJson(r));
}

export interface EventFilter {
  name?: string;
  contactId?: string;
  since?: Date;
  until?: Date;
}

/**
 * A list's total is counted exactly up to this many events; past it the answer says "at least" (`totalExact: false`),
 * as GET /emails does (emails/emails.ts EMAIL_COUNT_CAP: an exact count of a million rows costs ~100 ms however it is
 * indexed), since a project records more events than emails (bench/consoleApi.ts seeds 1.4 per email).
 */
export const EVENT_COUNT_CAP = LIST_COUNT_CAP;

/**
 * How far an event's id (a UUIDv7, the time in its first 48 bits) may be past its `created_at` (the start of the
 * transaction that wrote it): an id made in that transaction (herald_uuidv7()) is at most its length later, and one
 * made before it (an email's event id, announced when the email was queued) is earlier. An hour: far beyond the
 * seconds a transaction that writes events lasts, and beyond any clock skew between an API node and the database.
 * The other way there is no bound: an email queued behind a rate limit or an outage gets its `email.sent` hours or
 * days after its event id was made, so `since` cannot bound the ids.
 */
export const EVENT_ID_LEAD_MS = 60 * 60 * 1000;

/**
 * The events written with an id made before them by any length of time: an email's outcome, which delivery writes with
 * the email's event id, announced when the email was queued (sending/delivery.ts). Every other event's id is made in
 * the transaction that writes it (herald_uuidv7()) or just before, by the process that writes it (a send's
 * email.suppressed, a tracked event: core/ids.ts newId), so it is older than its `created_at` by no more than
 * EVENT_ID_LEAD_MS either (a request's wait for its transaction, clock skew between an API node and the database).
 */
export const OUTCOME_EVENTS = ['email.sent', 'email.failed'] as const;

/**
 * SQL for the lowest id an event created at or after `since` (an SQL timestamptz expression) can have, if its name is
 * not one of OUTCOME_EVENTS. The events are partitioned by id, so a bound on `created_at` prunes none of them, and
 * a read of a window (a segment's "did X in the last 30 days") went through every month's partition, reading whole
 * the index entries of the months with none of the window's events (245 ms a page; BENCHMARKS.md section 68). This
 * bound is an immutable function of a stable value: the executor prunes the partitions below it as it starts.
 */
export const eventIdFloorSql = (since: string): string =>
  `herald_uuid_shift('00000000-0000-0000-0000-000000000000'::uuid, (${since}) - interval '${EVENT_ID_LEAD_MS} milliseconds' - 'epoch'::timestamptz)`;

/** eventIdFloorSql's bound for a time known in the process. */
export const eventIdFloor = (since: Date): string => idFloor(new Date(since.getTime() - EVENT_ID_LEAD_MS));

/** The id every event created before `until` is under, whatever its name: made at most EVENT_ID_LEAD_MS after it. */
const eventIdCeiling = (until: Date): string => idFloor(new Date(until.getTime() + EVENT_ID_LEAD_MS));

/** Whether a window of the events of this name bounds their ids (eventIdFloorSql, eventIdFloor): all but the outcomes'. */
export const idsFollowTime = (name: string): boolean => !(OUTCOME_EVENTS as readonly string[]).includes(name);

/** The events the filter names, by what they are (project, name, contact, time), before any bound of their ids. */
function matchingEvents(db: Knex, projectId: string, filter: EventFilter): Knex.QueryBuilder {
  const q = db('events').where('project_id', projectId);
  if (filter.name !== undefined) q.where('name', filter.name);
  if (filter.contactId !== undefined) q.where('contact_id', filter.contactId);
  if (filter.since) q.where('created_at', '>=', filter.since);
  if (filter.until) q.where('created_at', '<', filter.until);
  return q;
}

/**
 * The filtered, project-scoped query of a list (exported for the EXPLAIN tests of its indexes). `until` also bounds
 * the ids (EVENT_ID_LEAD_MS later, so that no event of the range is left out): the page reads the primary key newest
 * first from the range's end instead of from the project's newest event down to it (a day 80 days back at 1,000,000
 * emails: ~1,000,000 index entries read to skip, half a second; BENCHMARKS.md section 37).
 */
export function filteredEvents(db: Knex, projectId: string, filter: EventFilter, idFrom?: string): () => Knex.QueryBuilder {
  return () => {
    const q = matchingEvents(db, projectId, filter);
    if (filter.until) q.where('id', '<', eventIdCeiling(filter.until));
    // The lowest id worth reading (idFloorSince).
    if (idFrom) q.where('id', '>=', idFrom);
    return q;
  };
}

/**
 * What the count of a time window alone reads (CappedPageOptions `counted`): its events without the id bounds, which
 * every event of the window meets, newest first by `created_at`: an index-only read of `(project_id, created_at)`
 * stopped at the cap, where the bounds made it visit each entry's row to check them, or read the whole window by a
 * bitmap first (a day of 15,000 events: 1.2-3.3 ms for a count of 1,001; BENCHMARKS.md section 61). Undefined for any
 * other filter, whose count reads what its page does: with a name or a contact the bounds let it read a range of ids.
 */
export function countedEvents(db: Knex, projectId: string, filter: EventFilter): CappedPageOptions['counted'] {
  const windowAlone = (filter.since || filter.until) && filter.name === undefined && filter.contactId === undefined;
  return windowAlone ? { rows: () => matchingEvents(db, projectId, filter), newestFirst: 'created_at' } : undefined;
}

/**
 * The events' partitions as this process last read them, per database: they change once a month or so (made ahead,
 * dropped by retention), and reading them took a round trip of its own, ~1 ms, before each list of a time window.
 * idFloorSince checks them in its own statement.
 */
const knownPartitions = perDatabase((): { parts?: Partition[] } => ({}));

/**
 * The lowest id an event created since `since` can have in this project, as far as the partitions say: the lower bound
 * of the oldest partition (by id) whose newest event of the project (one probe of its `(project_id, created_at)` index)
 * is not older than `since`; undefined when no bound holds (the default partition or one from MINVALUE has such an
 * event). Why: a page reads the primary key newest first through every partition under its id bound, and a partition
 * with no event in the window (the older months' one, with a project's hundreds of thousands of events) was read whole
 * to find none, 360 ms for one day of a million events (BENCHMARKS.md section 52). The ids themselves cannot be bounded
 * by `since`: an email.sent keeps the id announced when its email was queued, any time before (EVENT_ID_LEAD_MS).
 * One round trip: the probes run on the process's list of partitions (knownPartitions), and the same statement reads
 * the partitions' oids; when they are not the list's (a month made or dropped since), or a partition named is gone, the
 * list is read again and the probes asked once more.
 */
export async function idFloorSince(db: Knex, projectId: string, since: Date): Promise<string | undefined> {
  return onKnownPartitions(db, async (parts) => {
    const floor = floorSql(parts, projectId, since);
    // One statement per list of partitions (a month or so each), prepared on each connection.
    const { rows } = await preparedStatementOf('herald_event_probe', `SELECT ${floor.sql} AS floor, ${partitionOidsSql(partitioned('events'))} AS oids`, { genericPlan: true })(db, floor.bindings);
    const row = rows[0] as { floor: string | null; oids: string | null };
    return { oids: row.oids, result: row.floor ?? undefined };
  });
}

/**
 * A window's events counted in its first page's statement (windowFirstPage; each to EVENT_COUNT_CAP + 1, an index-only
 * read of `(project_id, created_at)`): `inside` the window, `after` it in the EVENT_ID_LEAD_MS past `until`, the events a page
 * read by the primary key from its id bound down steps over before it reaches the window's (windowNewestFirst).
 */
export interface WindowCounts {
  inside: number;
  after: number;
}

/**
 * Runs `read` on the events' partitions as this process knows them (knownPartitions), and again on them read anew when
 * they changed under it: `read` answers the oids it found beside its work (partitionOidsSql), which must be those of
 * the list it was given, or fails on a partition it names that is gone (42P01: dropped by the retention job since it
 * was listed). Undefined when they changed twice under two reads.
 */
async function onKnownPartitions<T>(db: Knex, read: (parts: readonly Partition[]) => Promise<{ oids: string | null; result: T }>): Promise<T | undefined> {
  const events = partitioned('events');
  const known = knownPartitions(db);
  let parts = known.parts;
  for (let attempt = 0; attempt < 2; attempt++) {
    if (!parts) known.parts = parts = await listPartitions(db, events);
    const got = await read(parts).catch((err: unknown) => {
      if ((err as { code?: string }).code === '42P01') return undefined;
      throw err;
    });
    if (got && got.oids === partitionOids(parts)) return got.result;
    parts = undefined;
  }
  // The partitions changed twice under two reads: no bound this time (the page is right, only slower).
  return undefined;
}

/** The events of a project created in [from, to), counted to EVENT_COUNT_CAP + 1 (windowFirstPage's WindowCounts). */
const windowCountSql = `(SELECT count(*)::int FROM (SELECT 1 FROM events WHERE project_id = ? AND created_at >= ? AND created_at < ? LIMIT ${EVENT_COUNT_CAP + 1}) w)`;

/**
 * Whether a list of events runs with its generic plan (db/pages.ts `genericPlan`): every event, a name's or a contact's
 * (an equality on the leading column of events_name_idx or events_contact_idx, which end in id), read newest first and
 * stopped by the LIMIT, whatever the value. A time window is planned for its values (whether to read it by created_at
 * or by the ids turns on how many events it holds), except a window alone's first page that windowNewestFirst says is
 * read by the ids.
 */
export const eventListGeneric = (filter: EventFilter): boolean => !filter.since && !filter.until;

/**
 * Whether the first page of a window (both ends, no name or contact) is read by the primary key newest first from the
 * window's id bound, with the generic plan, rather than planned for its values: when the events it steps over first
 * (those of the hour past `until`) and the page's own are fewer than the window holds, which a read by `created_at`
 * would visit and sort. The plan made for the values chose the same read for such a window, and planning it took
 * 1-2 ms against 0.3-1.0 of running it (two partitions' and five indexes' worth; BENCHMARKS.md section 62); for a
 * narrow window (minutes) the read by `created_at` is the one, and the planner still picks it.
 */
export const windowNewestFirst = (counts: WindowCounts, limit: number): boolean => counts.after + limit + 1 < counts.inside;

/**
 * idFloorSince's bound as SQL, over `parts` (with its bindings): the lower bound of the oldest partition whose newest
 * event of the project (a probe of its `(project_id, created_at)` index) is not older than `since`; NULL (no bound)
 * when a partition with such an event is the default one or begins at MINVALUE, or when there is no partition; a bound
 * above them all when none has one. A CASE, so the probes stop at the first partition that has one. In a statement it
 * is an initplan, and PostgreSQL prunes the partitions below it as the statement runs (windowFirstPage).
 */
function floorSql(parts: readonly Partition[], projectId: string, since: Date): { sql: string; bindings: unknown[] } {
  if (parts.length === 0) return { sql: 'NULL::uuid', bindings: [] };
  const unbounded = (p: Partition) => p.isDefault || p.from === null;
  // The unbounded first: one of them with an event of the window is no bound, whatever the others.
  const ordered = [...parts.filter(unbounded), ...parts.filter((p) => !unbounded(p)).sort((a, b) => a.from!.getTime() - b.from!.getTime())];
  const bindings: unknown[] = [];
  const whens = ordered.map((p) => {
    bindings.push(projectId, since, ...(unbounded(p) ? [] : [idFloor(p.from!)]));
    return `WHEN (SELECT max(created_at) FROM ONLY ${ident(p.name)} WHERE project_id = ?) >= ? THEN ${unbounded(p) ? 'NULL' : '?'}::uuid`;
  });
  bindings.push(idFloor(new Date(Math.max(...parts.map((p) => p.to?.getTime() ?? 0), since.getTime()))));
  return { sql: `CASE ${whens.join(' ')} ELSE ?::uuid END`, bindings };
}

/**
 * The first page of a window alone (both ends; no name, contact or cursor) in one statement with what decides how it is
 * read: the window's counts (WindowCounts, the total among them), its floor (floorSql, idFloorSince's) and the
 * partitions' oids, and beside them the page read by the ids from the window's id bound, newest first, which runs only
 * when windowNewestFirst says so (a one-time filter on the counts). A named statement with its generic plan made under
 * LIST_PLAN, one per list of partitions and page size. A probe of the partitions and then the page had been two round
 * trips: 0.8-1.1 ms of a day's first page saved (BENCHMARKS.md section 72). `rows` is empty when the window's
 * counts choose the read by `created_at` instead (the caller reads that page, from `idFrom`). The page's conditions
 * are filteredEvents' for the window with `idFrom`, written here as SQL beside the CTEs they read.
 */
async function windowFirstPage(db: Knex, projectId: string, parts: readonly Partition[], since: Date, until: Date, limit: number): Promise<{ oids: string | null; result: { rows: Record<string, unknown>[]; counts: WindowCounts; idFrom: string | undefined } }> {
  const floor = floorSql(parts, projectId, since);
  const hourAfter = new Date(until.getTime() + EVENT_ID_LEAD_MS);
  const sql = `WITH c AS MATERIALIZED (SELECT ${windowCountSql} AS inside, ${windowCountSql} AS after),
    f AS MATERIALIZED (SELECT ${floor.sql} AS floor)
    SELECT c.inside AS __inside, c.after AS __after, f.floor AS __floor, ${partitionOidsSql(partitioned('events'))} AS __oids, e.*
    FROM c CROSS JOIN f
    LEFT JOIN LATERAL (
      SELECT * FROM events
      WHERE project_id = ? AND created_at >= ? AND created_at < ? AND id < ? AND id >= coalesce((SELECT floor FROM f), ?::uuid)
        AND c.after + ? < c.inside -- windowNewestFirst
      ORDER BY id DESC LIMIT ${rowLimit(limit + 1)}) e ON true
    ORDER BY e.id DESC`;
  const bindings = [projectId, since, until, projectId, until, hourAfter, ...floor.bindings,
    projectId, since, until, eventIdCeiling(until), idFloor(new Date(0)), limit + 1];
  const { rows } = await preparedStatementOf('herald_event_window', sql, { genericPlan: true, plannerSettings: LIST_PLAN })(db, bindings);
  const first = rows[0] as { __inside: number; __after: number; __floor: string | null; __oids: string | null };
  return {
    oids: first.__oids,
    result: {
      rows: (rows as Record<string, unknown>[]).filter((r) => r.id !== null).map(({ __inside: _i, __after: _a, __floor: _f, __oids: _o, ...row }) => row),
      counts: { inside: first.__inside, after: first.__after },
      idFrom: first.__floor ?? undefined,
    },
  };
}

/** The pages of events without a window (eventListGeneric), built and compiled once per shape (db/pages.ts shapedCappedPages). */
const eventPages = shapedCappedPages<{ projectId: string; name: string | undefined; contactId: string | undefined }>(EVENT_COUNT_CAP);

/** One page of events, newest first, after `afterId`, and the total matching the filter (capped: EVENT_COUNT_CAP). */
export async function listEvents(db: Knex, projectId: string, filter: EventFilter, page: PageRequest): Promise<CappedList<Event>> {
  if (eventListGeneric(filter)) {
    return eventPages(db, page, { projectId, name: filter.name, contactId: filter.contactId },
      (v) => filteredEvents(db, v.projectId, { name: v.name, contactId: v.contactId }), (row) => Event.fromDatabaseJson(row));
  }
  const rowOf = (row: Record<string, unknown>) => Event.fromDatabaseJson(row);
  const counted = { counted: countedEvents(db, projectId, filter) };
  if (filter.since && filter.until && filter.name === undefined && filter.contactId === undefined && !page.afterId) {
    const { since, until } = filter;
    const first = await onKnownPartitions(db, (parts) => windowFirstPage(db, projectId, parts, since, until, page.limit));
    if (first && windowNewestFirst(first.counts, page.limit)) return { rows: first.rows.map(rowOf), ...cappedTotal(first.counts.inside, EVENT_COUNT_CAP) };
    // A window its hour past outnumbers: planned for its values, its count beside the page, from the floor just read.
    if (first) return listCappedPage(filteredEvents(db, projectId, filter, first.idFrom), page, EVENT_COUNT_CAP, rowOf, 'id', counted);
  }
  // A name's window bounds its ids by itself, but for the outcomes' (OUTCOME_EVENTS): no probe, no round trip of its own.
  const idFrom = !filter.since ? undefined
    : filter.name !== undefined && idsFollowTime(filter.name) ? eventIdFloor(filter.since)
      : await idFloorSince(db, projectId, filter.since);
  return listCappedPage(filteredEvents(db, projectId, filter, idFrom), page, EVENT_COUNT_CAP, rowOf, 'id', counted);
}

export interface EventNameRow {
  name: string;
  count: number;
  lastSeenAt: string;
}

export async function eventNames(db: Knex, projectId: string): Promise<EventNameRow[]> {
  const rows = await db('event_names').where('project_id', projectId).groupBy('name').orderBy('name')
    .select('name', db.raw('sum(count)::bigint AS count'), db.raw('max(last_seen_at) AS last_seen_at'));
  return rows.map((r: { name: string; count: number; last_seen_at: Date }) => ({ name: r.name, count: r.count, lastSeenAt: r.last_seen_at.toISOString() }));
}
