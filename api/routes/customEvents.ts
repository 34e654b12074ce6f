import { ok } from '../openapi/operations';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { trackSchema } from '../schemas/events';

/**
 * POST /v1/track (public or secret key): upserts the contact and records the event (events/customEvents.ts), group-committed
 * with the requests that arrive together. A request with an Idempotency-Key takes its own transaction, which also
 * stores its answer.
 */
export const customEventRoutes = [
  route({ operationId: 'track', method: 'post', path: '/v1/track', summary: 'Track an event', tag: 'Sending', access: 'secretOrPublic', permission: 'send', body: trackSchema, idempotent: true,
    description: 'Upserts the contact and records the event. A public key (pk_) is accepted here only, and sets `subscribed` only for a contact it creates.',
    answers: ok('Recorded.', A.trackAnswer),
    handle: ({ auth: { projectId, keyType }, body, services: { customEvents }, once }) => once(async (trx) => {
      const command = { projectId, keyType, input: body };
      return reply(await (trx ? customEvents.trackIn(trx, command) : customEvents.track(command)));
    }) }),
];
