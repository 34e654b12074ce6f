import type { Event } from '../../db/models/Event';
import { ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { listEventsQuerySchema } from '../schemas/events';

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

/** Events recorded for the project (events/events.ts). */
export const eventRoutes = [
  route({ operationId: 'listEvents', method: 'get', path: '/events', summary: 'List events', tag: 'Events', access: 'secret', permission: 'read', query: listEventsQuerySchema, answers: ok('A page of events.', A.eventPageAnswer),
    async handle({ auth, query: q, services }) {
      const { rows, total, totalExact } = await services.events.list(auth.projectId, q, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, eventJson), totalExact });
    } }),

  route({ operationId: 'listEventNames', method: 'get', path: '/events/names', summary: 'Event names seen, with counts', tag: 'Events', access: 'secret', permission: 'read', answers: ok('The names.', A.eventNamesAnswer),
    handle: async ({ auth, services }) => reply({ items: await services.events.names(auth.projectId) }) }),
];
