import { createHmac, hkdfSync } from 'node:crypto';
import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { shapedCappedPages, type CappedList, type PageRequest } from '../db/pages';
import { audited, type Actor } from '../audit/log';

/**
 * The suppression list of a project (docs/api.md, "Suppressions"): addresses Herald never mails again. Hard bounces and
 * complaints put an address there (issue 17's bounce processing), the user may add and remove entries. Unsubscribes are
 * not suppressions: an unsubscribed contact still gets transactional mail (audience/subscription.ts).
 * Every way of sending checks the list in the statement that stores its emails (db/queries/sends.ts for sends); a
 * campaign's audience query leaves suppressed addresses out (audience/campaignAudience.ts, `notSuppressed`), by the address and by its keyed hash.
 */

/** From the mildest to the gravest: an entry's reason is replaced only by a graver one. */
export const SUPPRESSION_REASONS = ['manual', 'soft_bounce', 'hard_bounce', 'complaint'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export interface Suppression {
  id: string;
  email: string;
  reason: SuppressionReason;
  details: Record<string, unknown>;
  created_at: Date;
}

/** The filtered, project-scoped query of a list (exported for the EXPLAIN tests of its generic plan). */
export const filteredSuppressions = (db: Knex, projectId: string, filter: { reason?: SuppressionReason | typeof ERASED_REASON }) => () => {
  const q = db('suppressions').where('project_id', projectId).select('id', 'email', 'reason', 'details', 'created_at');
  if (filter.reason) q.where('reason', filter.reason);
  return q;
};

/**
 * A page, newest first, and its total: exact up to 1,000 (db/pages.ts LIST_COUNT_CAP). With its generic plan (db/pages.ts
 * `genericPlan`): the project, or a reason, is an equality on the leading columns of an index ending in id.
 */
export function listSuppressions(db: Knex, projectId: string, filter: { reason?: SuppressionReason | typeof ERASED_REASON }, page: PageRequest): Promise<CappedList<Suppression>> {
  return suppressionPages(db, page, { projectId, reason: filter.reason }, (v) => filteredSuppressions(db, v.projectId, { reason: v.reason }), (row) => row as unknown as Suppression);
}

/** listSuppressions' statements, built and compiled once per shape (db/pages.ts shapedCappedPages). */
const suppressionPages = shapedCappedPages<{ projectId: string; reason: SuppressionReason | typeof ERASED_REASON | undefined }>();

/**
 * Suppresses addresses (one statement for any number). An address already there keeps its entry, unless the new reason
 * is graver (SUPPRESSION_REASONS' order): the list says why the address is there now. Answers the
 * entries as stored, with `created` true for new ones.
 */
export async function suppress(db: Knex | Knex.Transaction, projectId: string, given: { email: string; reason: SuppressionReason; details?: Record<string, unknown> }[]): Promise<(Suppression & { created: boolean })[]> {
  if (given.length === 0) return [];
  // One row per address in the statement (an upsert may not touch a row twice): the gravest entry of each.
  const gravest = new Map<string, (typeof given)[number]>();
  for (const e of given) {
    const had = gravest.get(e.email);
    if (!had || SUPPRESSION_REASONS.indexOf(e.reason) >= SUPPRESSION_REASONS.indexOf(had.reason)) gravest.set(e.email, e);
  }
  const entries = [...gravest.values()];
  const { rows } = await db.raw(
    `INSERT INTO suppressions AS s (project_id, email, reason, details)
     SELECT ?::uuid, t.email, t.reason, t.details FROM unnest(?::text[], ?::text[], ?::jsonb[]) AS t(email, reason, details)
     ON CONFLICT (project_id, email) DO UPDATE SET reason = excluded.reason, details = excluded.details
       WHERE array_position(?::text[], excluded.reason) > array_position(?::text[], s.reason)
     RETURNING id, email, reason, details, created_at, (xmax = 0) AS created`,
    [projectId, entries.map((e) => e.email), entries.map((e) => e.reason), entries.map((e) => JSON.stringify(e.details ?? {})), [...SUPPRESSION_REASONS], [...SUPPRESSION_REASONS]],
  );
  const stored = new Map<string, Suppression & { created: boolean }>(rows.map((r: Suppression & { created: boolean }) => [r.email, r]));
  // An entry left as it was (no graver reason) returns no row: read it.
  const missing = entries.filter((e) => !stored.has(e.email)).map((e) => e.email);
  if (missing.length) {
    const kept: Suppression[] = await db('suppressions').where('project_id', projectId).whereIn('email', missing).select('id', 'email', 'reason', 'details', 'created_at');
    for (const k of kept) stored.set(k.email, { ...k, created: false });
  }
  return given.map((e) => stored.get(e.email)!);
}

export async function unsuppress(db: Knex, projectId: string, email: string): Promise<void> {
  const deleted = await db('suppressions').where({ project_id: projectId, email }).delete();
  if (!deleted) throw notFound('Suppression');
}

/**
 * An erased contact's address as the suppression list keeps it (contacts/erase.ts): HMAC-SHA256 under a key derived from
 * the installation's secret (SECRET_KEY or DATA_DIR/secret.key) for this purpose alone, so the list does not say who it
 * was, and one who has the database but not the secret cannot test guesses against it. Stored in `email` with this
 * prefix (no address has a colon before an @), under the reason `erased`; a send looks up the recipient's address and
 * its hash in one probe (db/queries/sends.ts).
 */
export const ADDRESS_HASH_PREFIX = 'hmac-sha256:';
export const ERASED_REASON = 'erased' as const;

const keys = new WeakMap<Buffer, Buffer>();

/** The HMAC key of an installation's secret, derived once per secret (every send hashes its recipients). */
export function addressHashKey(secret: Buffer): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, 'herald', 'suppressed-address-hash', 32));
    keys.set(secret, key);
  }
  return key;
}

/** The hash function of an installation's secret. */
export function addressHasher(secret: Buffer): (email: string) => string {
  const key = addressHashKey(secret);
  return (email) => ADDRESS_HASH_PREFIX + createHmac('sha256', key).update(email.trim().toLowerCase(), 'utf8').digest('hex');
}

/**
 * The condition a query over `contacts AS c` adds to leave suppressed addresses out (a campaign's audience and its
 * count): an entry of the address itself, or of its keyed hash (an erased address that came back as a contact by an
 * import or POST /contacts). PostgreSQL computes the hash as addressHasher does, HMAC-SHA256 from its built-in sha256():
 * sha256((K xor opad) || sha256((K xor ipad) || email)), over the address as stored (trimmed and lower-cased on the way
 * in, so the same text Node hashes). The padded keys are bound parameters, never text of the statement (a server that
 * logs slow statements with their parameters does write them to its log: docs/api.md says so). A project
 * without any erased entry (one probe of suppressions_project_reason_id_idx, evaluated once per statement) hashes
 * nothing; otherwise each contact costs two sha256 and one more probe of the (project_id, email) index.
 */
export function notSuppressed(db: Knex, projectId: string, hashKey: Buffer): Knex.Raw {
  const block = Buffer.alloc(64); // SHA-256's block: a 32-byte key is padded with zeros
  hashKey.copy(block);
  const pad = (byte: number) => Buffer.from(block.map((b) => b ^ byte));
  return db.raw(
    `NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.project_id = c.project_id AND s.email = c.email)
     AND (NOT EXISTS (SELECT 1 FROM suppressions e WHERE e.project_id = ?::uuid AND e.reason = '${ERASED_REASON}')
       OR NOT EXISTS (SELECT 1 FROM suppressions h WHERE h.project_id = c.project_id
         AND h.email = '${ADDRESS_HASH_PREFIX}' || encode(sha256(?::bytea || sha256(?::bytea || convert_to(c.email, 'UTF8'))), 'hex')))`,
    [projectId, pad(0x5c), pad(0x36)],
  );
}

/** The functions above as one object over the app's database, the API's way in (like campaignService). */
export function suppressionService({ knex }: { knex: Knex }) {
  return {
    list: (projectId: string, filter: { reason?: SuppressionReason | typeof ERASED_REASON }, page: PageRequest) => listSuppressions(knex, projectId, filter, page),
    /** One address; `created` is false when it was already on the list. */
    add: (projectId: string, entry: { email: string; reason: SuppressionReason; details?: Record<string, unknown> }, actor: Actor) =>
      audited(knex, projectId, actor,
        // Recorded even when the address was already there (`created: false`): the caller asked for it.
        (s: Suppression & { created: boolean }) => ({ operation: 'createSuppression', resourceType: 'suppression', resourceId: s.email, details: { reason: s.reason, created: s.created } }),
        async (trx) => (await suppress(trx, projectId, [entry]))[0]!),
    /** Audited in the transaction of the delete (audit/log.ts); the entry is named by its address. */
    remove: (projectId: string, email: string, actor: Actor) =>
      audited(knex, projectId, actor, { operation: 'deleteSuppression', resourceType: 'suppression', resourceId: email }, (trx) => unsuppress(trx, projectId, email)),
  };
}

export type Suppressions = ReturnType<typeof suppressionService>;
