import type Router from '@koa/router';
import type { Knex } from 'knex';
import type { Event } from '../../db/models/Event';
import { listEventNames, listEvents } from '../../events/events';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import { listEventsQuerySchema, type ListEventsQuery } from '../schemas/events';
import { validateQuery } from '../validate';

export interface EventJson {
  id: string;
  name: string;
  contactId: string | null;
  emailId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
}

export function eventJson(e: Event): EventJson {
  return { id: e.id, name: e.name, contactId: e.contactId, emailId: e.emailId, data: e.data, createdAt: e.createdAt.toISOString() };
}

export function eventRoutes(router: Router, knex: Knex): void {
  router.get('/events', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListEventsQuery>(ctx, listEventsQuerySchema);
    const { rows, total } = await listEvents(knex, projectId, q, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, eventJson) };
  });

  router.get('/events/names', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: { items: await listEventNames(knex, projectId) } };
  });
}
