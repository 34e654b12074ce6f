import type { Knex } from 'knex';
import { LIST_COUNT_CAP, cappedPageQueries, listCappedPage, type CappedList, type CappedPageOptions, type PageRequest } from '../db/pages';
import type { Principal } from '../projects/roles';

/**
 * The audit log (issue 27, point 4): who changed what in a project, when and from where. An entry is written with
 * `recordAudit` in the transaction of the change it records, so a change that fails or rolls back leaves no entry and
 * a committed one always has its entry. The hot paths (/v1/send, /v1/track, the pixel, SMTP) write none: their events
 * are their record. Details are small facts (a name, a scope, a status): never a body, a secret or a key.
 */

export type ActorKind = 'key' | 'user' | 'operator';

/** Who made a change, and from which address (the API's `auth.principal` and `auth.address`; the CLI's operator). */
export interface Actor {
  kind: ActorKind;
  /** The key's or the user's id; null for the operator's CLI. */
  id: string | null;
  address: string | null;
}

/** The actor of an authenticated request. */
export function actorOf(auth: { principal: Principal; address: string }): Actor {
  const p = auth.principal;
  return { kind: p.kind, id: p.kind === 'key' ? p.keyId : p.userId, address: auth.address };
}

/** The operator at the command line: no id, no address. */
export const OPERATOR: Actor = { kind: 'operator', id: null, address: null };

export interface AuditEntry {
  projectId: string;
  actor: Actor;
  /** The route's operationId (`deleteContact`), or the CLI's verb (`key.create`). */
  operation: string;
  /** `key`, `contact`, `webhook`, … */
  resourceType: string;
  resourceId: string | null;
  details?: Record<string, unknown>;
}

export async function recordAudit(trx: Knex.Transaction, entry: AuditEntry): Promise<void> {
  await trx('audit_log').insert({
    project_id: entry.projectId,
    actor_kind: entry.actor.kind,
    actor_id: entry.actor.id,
    operation: entry.operation,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    address: entry.actor.address,
    details: JSON.stringify(entry.details ?? {}),
  });
}

/** What the change is, from its result (the id a create made, say). */
export type Describe<T> = Omit<AuditEntry, 'projectId' | 'actor'> | ((result: T) => Omit<AuditEntry, 'projectId' | 'actor'>);

/**
 * Runs `change` in a transaction and records it there: the entry commits with the change or not at all. Inside a
 * transaction already (`db` is one), the change joins it through a savepoint.
 */
export async function audited<T>(db: Knex, projectId: string, actor: Actor, describe: Describe<T>, change: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    const result = await change(trx);
    const what = typeof describe === 'function' ? describe(result) : describe;
    await recordAudit(trx, { ...what, projectId, actor });
    return result;
  });
}

export interface AuditRow {
  id: string;
  actor_kind: ActorKind;
  actor_id: string | null;
  operation: string;
  resource_type: string;
  resource_id: string | null;
  address: string | null;
  at: Date;
  details: Record<string, unknown>;
}

export interface AuditFilter {
  /** A key's or a user's id. */
  actor?: string;
  operation?: string;
  resourceType?: string;
  resourceId?: string;
  since?: Date;
  until?: Date;
}

/** The project's entries that pass the filter: each filter leads with the project in its index (the migration). */
function filteredAudit(db: Knex, projectId: string, filter: AuditFilter): () => Knex.QueryBuilder {
  return () => {
    const q = db('audit_log').where('project_id', projectId)
      .select('id', 'actor_kind', 'actor_id', 'operation', 'resource_type', 'resource_id', 'address', 'at', 'details');
    if (filter.actor) q.where('actor_id', filter.actor);
    if (filter.operation) q.where('operation', filter.operation);
    if (filter.resourceType) q.where('resource_type', filter.resourceType);
    if (filter.resourceId) q.where('resource_id', filter.resourceId);
    if (filter.since) q.where('at', '>=', filter.since);
    if (filter.until) q.where('at', '<', filter.until);
    return q;
  };
}

/**
 * How a list of the log runs: its count read newest first, as its page is: every filter's index ends in the id (the
 * migration), or the filter (a time) is read along the primary key.
 */
const AUDIT_LIST: CappedPageOptions = { countNewestFirst: true };

/** The page and count queries of a list, as listAudit sends them (for test/db's plans: every query path has its index). */
export const auditListQueries = (db: Knex, projectId: string, filter: AuditFilter, page: PageRequest) =>
  cappedPageQueries(filteredAudit(db, projectId, filter), page, LIST_COUNT_CAP, 'id', AUDIT_LIST);

/** A page of the project's log, newest first, and its total: exact up to 1,000 (db/pages.ts LIST_COUNT_CAP). */
export function listAudit(db: Knex, projectId: string, filter: AuditFilter, page: PageRequest): Promise<CappedList<AuditRow>> {
  return listCappedPage<AuditRow>(filteredAudit(db, projectId, filter), page, LIST_COUNT_CAP, undefined, 'id', AUDIT_LIST);
}

export function auditService({ knex }: { knex: Knex }) {
  return {
    list: (projectId: string, filter: AuditFilter, page: PageRequest) => listAudit(knex, projectId, filter, page),
  };
}
