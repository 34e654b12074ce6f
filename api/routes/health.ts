import type Router from '@koa/router';
import type { Knex } from 'knex';
import { ping } from '../../db/database';

/** GET /health: no key needed; 200 when the database answers, 503 otherwise (for load balancers and compose healthchecks). */
export function healthRoutes(router: Router, knex: Knex): void {
  router.get('/health', async (ctx) => {
    const ok = await ping(knex);
    ctx.status = ok ? 200 : 503;
    ctx.body = ok ? { status: 'ok' } : { status: 'unavailable', checks: { database: 'unreachable' } };
  });
}
