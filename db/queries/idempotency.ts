import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { deleteInBatches } from '../prune';

/** Idempotency keys are honoured for 24 hours (decisions.md), then a key may be used for a new request. */
export const IDEMPOTENCY_TTL_HOURS = 24;

export type IdempotencyClaim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' };

export function requestHash(endpoint: string, body: unknown): Buffer {
  return createHash('sha256').update(endpoint).update('\0').update(JSON.stringify(body)).digest();
}

/**
 * Claims an idempotency key inside the caller's transaction. A concurrent request with the same key blocks on
 * the primary key until this transaction ends, then sees the stored answer: one of them does the work, the other
 * replays it. An expired key is taken over. Call `completeIdempotency` in the same transaction before commit.
 */
export async function claimIdempotency(trx: Knex.Transaction, projectId: string, key: string, endpoint: string, hash: Buffer): Promise<IdempotencyClaim> {
  const inserted = await trx.raw(
    `INSERT INTO idempotency_keys (project_id, key, endpoint, request_hash) VALUES (?, ?, ?, ?)
     ON CONFLICT (project_id, key) DO UPDATE
       SET endpoint = excluded.endpoint, request_hash = excluded.request_hash, response_status = NULL, response_body = NULL, created_at = now()
       WHERE idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
     RETURNING 1`,
    [projectId, key, endpoint, hash],
  );
  if (inserted.rows.length > 0) return { kind: 'claimed' };
  const row = await trx('idempotency_keys').where({ project_id: projectId, key }).first('endpoint', 'request_hash', 'response_status', 'response_body');
  if (!row || row.endpoint !== endpoint || !(row.request_hash as Buffer).equals(hash) || row.response_status === null) return { kind: 'mismatch' };
  return { kind: 'replay', status: row.response_status, body: row.response_body };
}

export async function completeIdempotency(trx: Knex.Transaction, projectId: string, key: string, status: number, body: unknown): Promise<void> {
  await trx('idempotency_keys').where({ project_id: projectId, key }).update({ response_status: status, response_body: JSON.stringify(body) });
}

/** Deletes expired keys (worker/housekeeping.ts), in batches, by idempotency_keys_created_idx. */
export function purgeExpiredIdempotencyKeys(db: Knex): Promise<number> {
  return deleteInBatches(db, 'idempotency_keys', `created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`, []);
}
