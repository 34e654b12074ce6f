import type Router from '@koa/router';
import type { Knex } from 'knex';
import { upsertContacts } from '../../db/queries/contacts';
import { recordEvents } from '../../db/queries/events';
import type { AuthState } from '../middleware/auth';
import { idempotent } from '../idempotency';
import { trackSchema, type TrackBody } from '../schemas/events';
import { validateBody } from '../validate';

/**
 * POST /v1/track (public or secret key): upserts the contact and records the event, in one transaction.
 * Two statements for the contact, two for the event: no workflow is started unless an automation listens
 * (decided inside recordEvents).
 */
export function trackRoutes(router: Router, knex: Knex): void {
  router.post('/v1/track', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<TrackBody>(ctx, trackSchema);
    await idempotent(ctx, knex, 'track', body, async (trx) => {
      const [upserted] = await upsertContacts(trx, projectId, [{ email: body.email, subscribed: body.subscribed, data: body.data }], true);
      const contact = upserted!.contact;
      const [event] = await recordEvents(trx, projectId, [{ name: body.event, contactId: contact.id, data: body.data ?? {} }]);
      return { status: 200, body: { success: true, data: { contact: contact.id, event: event!.id, timestamp: event!.createdAt.toISOString() } } };
    });
  });
}
