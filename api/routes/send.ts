import { sendCommand } from '../../sending/sender';
import { ok } from '../openapi/operations';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { sendSchema } from '../schemas/send';

/**
 * POST /v1/send: validates, then hands the send to the one send pipeline (sending/sender.ts), which stores the
 * recipients' contacts and one QUEUED email per recipient in one (group-committed) transaction. A request with an
 * Idempotency-Key takes its own transaction, which also stores its answer.
 */
export const sendRoutes = [
  route({ operationId: 'send', method: 'post', path: '/v1/send', summary: 'Send an email', tag: 'Sending', access: 'secret', permission: 'send', body: sendSchema, idempotent: true, largeBody: true,
    description: '`subject` and `body` are required unless `template` is given. Stores one QUEUED email per recipient (or SUPPRESSED, or SKIPPED) and answers at once; delivery is asynchronous. Body limit 15 MB.',
    answers: ok('Stored: one entry per recipient.', A.sendAnswer),
    links: { getEmail: { operationId: 'getEmail', parameters: { id: '$response.body#/data/emails/0/email' } } },
    async handle({ auth, body, services: { send }, once }) {
      // Rendered before the transaction here too; a replay answers its first answer whatever this one came to.
      const prepared = await send.prepare(sendCommand(auth.projectId, body, auth.principal.kind === 'key' ? auth.principal.domains : null)).catch((err: Error) => err);
      return once(async (trx) => {
        if (prepared instanceof Error) throw prepared;
        return reply((await (trx ? send.storeIn(trx, prepared) : send.store(prepared))).data);
      });
    } }),
];
