import type { Knex } from 'knex';
import { cappedPageQueries, cappedTotal, listPage, LIST_COUNT_CAP, pageStatementCache, wholeOf, type CappedList, type Listed, type PageRequest } from '../pages';

/** A webhook endpoint row as stored (its secret sealed). */
export interface EndpointRow {
  id: string;
  project_id: string;
  url: string;
  events: string[];
  enabled: boolean;
  secret: Buffer;
  failing_since: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  project_id: string;
  endpoint_id: string;
  type: string;
  event_id: string | null;
  payload: Record<string, unknown>;
  status: 'PENDING' | 'DELIVERING' | 'SUCCEEDED' | 'FAILED';
  attempts: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  created_at: Date;
}

/** Inserts an endpoint whose sealed secret the caller computed for the id it chose. */
export async function insertEndpoint(db: Knex, row: { id: string; projectId: string; url: string; events: string[]; enabled: boolean; secret: Buffer }): Promise<EndpointRow> {
  const [stored] = await db('webhook_endpoints')
    .insert({ id: row.id, project_id: row.projectId, url: row.url, events: row.events, enabled: row.enabled, secret: row.secret })
    .returning('*');
  return stored as EndpointRow;
}

export async function findEndpoint(db: Knex | Knex.Transaction, projectId: string, id: string): Promise<EndpointRow | undefined> {
  return db('webhook_endpoints').where({ project_id: projectId, id }).first() as Promise<EndpointRow | undefined>;
}

export function listEndpoints(db: Knex, projectId: string, page: PageRequest): Promise<Listed<EndpointRow>> {
  return listPage(() => db('webhook_endpoints').where('project_id', projectId), page, (r) => r as unknown as EndpointRow);
}

/** Applies a patch; undefined when the endpoint is not the project's. Re-enabling or a new URL clears the failing mark. */
export async function updateEndpoint(db: Knex, projectId: string, id: string, patch: { url?: string; events?: string[]; enabled?: boolean; secret?: Buffer }): Promise<EndpointRow | undefined> {
  const set: Record<string, unknown> = { updated_at: db.fn.now() };
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.events !== undefined) set.events = patch.events;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  if (patch.secret !== undefined) set.secret = patch.secret;
  if (patch.url !== undefined || patch.enabled === true) {
    set.failing_since = null;
    set.last_error = null;
  }
  const [row] = await db('webhook_endpoints').where({ project_id: projectId, id }).update(set).returning('*');
  return row as EndpointRow | undefined;
}

/** Deletes the endpoint and its deliveries (cascade); false when it is not the project's. */
export async function deleteEndpoint(db: Knex, projectId: string, id: string): Promise<boolean> {
  return (await db('webhook_endpoints').where({ project_id: projectId, id }).delete()) > 0;
}

/**
 * Every attempt of a delivery row `d`, oldest first, as a JSON array (webhook_attempts_delivery_idx): a column of the
 * page itself, so that a page with its attempts is one round trip, not two.
 */
const ATTEMPT_LOG = `(SELECT coalesce(json_agg(json_build_object('delivery_id', a.delivery_id, 'attempt', a.attempt, 'status_code', a.status_code,
    'latency_ms', a.latency_ms, 'error', a.error, 'created_at', a.created_at) ORDER BY a.id), '[]')
  FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempt_log`;

/** An endpoint's deliveries as a list reads them (`d`), each with its attempts (exported for the EXPLAIN tests). */
export const filteredDeliveries = (db: Knex, projectId: string, endpointId: string) => () =>
  db('webhook_deliveries as d').where({ 'd.endpoint_id': endpointId, 'd.project_id': projectId }).select('d.*', db.raw(ATTEMPT_LOG));

/**
 * A page of an endpoint's deliveries, newest first, with every attempt of each, in one statement. Planned for its values,
 * not generically (db/pages.ts `genericPlan`): costed for an average endpoint, the primary key read newest first (its
 * heap in the same order) looks cheaper than webhook_deliveries_endpoint_idx, and for an endpoint with few deliveries
 * among many it would read them all (EXPLAIN (GENERIC_PLAN), 2026-11-29). Its values but the cursor are an endpoint's,
 * the same at each request: planned for them once per connection (`plannedOnce`).
 */
export async function listDeliveries(db: Knex, projectId: string, endpointId: string, page: PageRequest): Promise<CappedList<DeliveryRow & { attempt_log: AttemptRow[] }>> {
  // Its total is exact up to 1,000 (LIST_COUNT_CAP): an endpoint's 200,000 deliveries counted exactly cost a sequential
  // scan. The count drops the page's columns (cappedCount), the attempts with them.
  // Compiled once per endpoint and page shape (db/pages.ts pageStatementCache), and planned once per connection.
  const { rows, total } = await deliveryPages(db, `${projectId}\u0000${endpointId}`, page, (r) => ({
    // Counted newest first, through webhook_deliveries_endpoint_idx (endpoint_id, id) as the page is.
    ...cappedPageQueries(filteredDeliveries(db, projectId, endpointId), r, LIST_COUNT_CAP, 'd.id', { countNewestFirst: true }),
    options: { column: 'd.id', whole: wholeOf(r) },
  }));
  return {
    rows: rows.map((r) => {
      const row = r as unknown as DeliveryRow & { attempt_log: (Omit<AttemptRow, 'created_at'> & { created_at: string })[] };
      return { ...row, attempt_log: row.attempt_log.map((a) => ({ ...a, created_at: new Date(a.created_at) })) };
    }),
    ...cappedTotal(total),
  };
}

/** listDeliveries' statements, one per endpoint and page shape: its values written in, its cursor bound. */
const deliveryPages = pageStatementCache();

/**
 * Puts one delivery back in the queue, due now, keeping its id (the `webhook-id`) and payload; one in flight is left
 * alone (its attempt is under way). Undefined when it is not this endpoint's.
 */
export async function redeliver(db: Knex, projectId: string, endpointId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
  const [row] = await db('webhook_deliveries')
    .where({ project_id: projectId, endpoint_id: endpointId, id: deliveryId })
    .update({
      status: db.raw("CASE WHEN status = 'DELIVERING' THEN status ELSE 'PENDING' END"),
      next_attempt_at: db.fn.now(),
      updated_at: db.fn.now(),
    })
    .returning('*');
  return row as DeliveryRow | undefined;
}
