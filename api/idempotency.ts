import type { Knex } from 'knex';
import type { Context } from 'koa';
import { claimIdempotency, completeIdempotency, requestHash } from '../db/queries/idempotency';
import { ApiError, badRequest } from './errors';

/** An Idempotency-Key header: 1 to 255 printable ASCII characters (also the document's schema of it, api/openapi/). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export interface Answer {
  status: number;
  body?: unknown;
}

/**
 * Runs `work` in one transaction, honouring an optional `Idempotency-Key` header: the same key with the same
 * body within 24 hours answers the first answer again (and does nothing); the same key with another body is a
 * 409. The answer is stored in the transaction that did the work, so a replay can never see work without its answer.
 */
export async function idempotent(ctx: Context, knex: Knex, projectId: string, endpoint: string, body: unknown, work: (trx: Knex.Transaction) => Promise<Answer>): Promise<Answer> {
  const key = ctx.get('idempotency-key');
  if (key && !IDEMPOTENCY_KEY.test(key)) {
    throw badRequest('Invalid Idempotency-Key header', [{ field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters', code: 'invalid_string' }]);
  }
  const answer = await knex.transaction(async (trx): Promise<Answer> => {
    if (key) {
      const claim = await claimIdempotency(trx, projectId, key, endpoint, requestHash(endpoint, body));
      if (claim.kind === 'mismatch') {
        throw new ApiError(409, 'CONFLICT', 'This Idempotency-Key was already used with a different request', {
          suggestion: 'Use a new Idempotency-Key for a different request.',
        });
      }
      if (claim.kind === 'replay') {
        ctx.set('Idempotent-Replayed', 'true');
        return { status: claim.status, body: claim.body };
      }
    }
    const result = await work(trx);
    if (key) await completeIdempotency(trx, projectId, key, result.status, result.body);
    return result;
  });
  ctx.status = answer.status;
  ctx.body = answer.body;
  return answer;
}
