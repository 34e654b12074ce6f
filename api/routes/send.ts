import type Router from '@koa/router';
import { idempotent } from '../idempotency';
import type { AuthState } from '../middleware/auth';
import { sendSchema, type SendBody } from '../schemas/send';
import { sendCommand, type Sender } from '../../sending/sender';
import type { Knex } from 'knex';
import { validateBody } from '../validate';

/**
 * POST /v1/send: validates, then hands the send to the one send pipeline (sending/sender.ts), which stores the
 * recipients' contacts and one QUEUED email per recipient in one (group-committed) transaction. A request with an
 * Idempotency-Key takes its own transaction, which also stores its answer.
 */
export function sendRoutes(router: Router, { knex, sender }: { knex: Knex; sender: Sender }): void {
  router.post('/v1/send', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<SendBody>(ctx, sendSchema);
    const command = sendCommand(projectId, body);
    // Rendered before the transaction here too; a replay answers its first answer whatever this one came to.
    const prepared = await sender.prepare(command).catch((err: Error) => err);
    if (ctx.get('idempotency-key')) {
      await idempotent(ctx, knex, 'send', body, async (trx) => {
        if (prepared instanceof Error) throw prepared;
        return { status: 200, body: { success: true, data: (await sender.storeIn(trx, prepared)).data } };
      });
      return;
    }
    if (prepared instanceof Error) throw prepared;
    ctx.body = { success: true, data: (await sender.store(prepared)).data };
  });
}
