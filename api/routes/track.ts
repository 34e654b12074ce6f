import type Router from '@koa/router';
import type { Knex } from 'knex';
import { createTracker, storeTracks } from '../../events/customEvents';
import type { AuthState } from '../middleware/auth';
import { idempotent } from '../idempotency';
import { trackSchema, type TrackBody } from '../schemas/events';
import { validateBody } from '../validate';

/**
 * POST /v1/track (public or secret key): upserts the contact and records the event (events/customEvents.ts), group-committed
 * with the requests that arrive together. A request with an Idempotency-Key takes its own transaction, which also
 * stores its answer.
 */
export function trackRoutes(router: Router, knex: Knex): void {
  const tracker = createTracker(knex);

  router.post('/v1/track', async (ctx) => {
    const { projectId, keyType } = ctx.state.auth as AuthState;
    const body = validateBody<TrackBody>(ctx, trackSchema);
    const command = { projectId, keyType, input: body };
    if (ctx.get('idempotency-key')) {
      await idempotent(ctx, knex, 'track', body, async (trx) => ({ status: 200, body: { success: true, data: (await storeTracks(trx, [command]))[0] } }));
      return;
    }
    ctx.body = { success: true, data: await tracker.track(command) };
  });
}
