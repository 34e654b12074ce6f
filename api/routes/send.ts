import type Router from '@koa/router';
import type { Knex } from 'knex';
import { batched, batchedByGroup, groupCommit } from '../../db/batch';
import { validationFailed } from '../errors';
import { idempotent } from '../idempotency';
import type { AuthState } from '../middleware/auth';
import { MAX_ATTACHMENT_BYTES, recipientsOf, sendSchema, type SendBody } from '../schemas/send';
import type { Renderer } from '../../mail/render';
import { checkSends, renderSends, storeSends, type CheckedSend, type PreparedSend, type SendCommand, type StoredSend } from '../../sending/sends';
import { validateBody } from '../validate';

export interface SendDeps {
  knex: Knex;
  secret: Buffer;
  publicUrl: string;
  render: Renderer;
}

/**
 * POST /v1/send. Validates, then stores the request's emails (sending/sends.ts) in one transaction: the recipients'
 * contacts and one QUEUED email per recipient. The committed rows are the delivery queue (engine/deliveryQueue.ts), on
 * either engine. The answer never waits for SMTP.
 *
 * Group commit: requests without an Idempotency-Key that arrive together share one transaction (db/batch.ts), a few
 * statements for all of them. If that transaction fails, each request is retried in one of its own, so a bad
 * request fails alone. A request with an Idempotency-Key takes its own transaction, which also stores its answer.
 */
export function sendRoutes(router: Router, deps: SendDeps): void {
  const { knex } = deps;
  const store = { publicUrl: deps.publicUrl, secret: deps.secret, render: deps.render };
  // Checked together; rendered together per project (one render task per project and batch, so that no project
  // waits for another's renders); stored together. All outside any transaction but the last: a render holds no
  // connection.
  const checking = batched<SendCommand, CheckedSend>((commands) => checkSends(knex, commands));
  const rendering = batchedByGroup<CheckedSend, PreparedSend>((c) => c.command.projectId, (checked) => renderSends(store, checked));
  const prepare = async (command: SendCommand): Promise<PreparedSend> => rendering.load(await checking.load(command));
  const together = groupCommit<PreparedSend, StoredSend>(knex, (trx, prepared) => storeSends(trx, prepared, store));
  const storeOne = async (trx: Knex.Transaction, prepared: PreparedSend): Promise<StoredSend> => {
    const [result] = await storeSends(trx, [prepared], store);
    if (result instanceof Error) throw result; // nothing of it may be kept
    return result!;
  };

  router.post('/v1/send', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<SendBody>(ctx, sendSchema);
    const attachments = (body.attachments ?? []).map((a) => ({ ...a, bytes: Buffer.from(a.content, 'base64') }));
    const total = attachments.reduce((n, a) => n + a.bytes.length, 0);
    if (total > MAX_ATTACHMENT_BYTES) {
      throw validationFailed([{ field: 'attachments', message: `attachments total ${total} bytes; at most ${MAX_ATTACHMENT_BYTES} (10 MB) are allowed`, code: 'too_big' }]);
    }
    const command: SendCommand = { projectId, body, recipients: recipientsOf(body.to), attachments };

    // Rendered before the transaction here too; a replay answers its first answer whatever this one came to.
    const prepared = await prepare(command).catch((err: Error) => err);
    if (ctx.get('idempotency-key')) {
      await idempotent(ctx, knex, 'send', body, async (trx) => {
        if (prepared instanceof Error) throw prepared;
        const result = await storeOne(trx, prepared);
        return { status: 200, body: { success: true, data: result.data } };
      });
      return;
    }
    if (prepared instanceof Error) throw prepared;
    const result = await together.load(prepared);
    ctx.body = { success: true, data: result.data };
  });
}
