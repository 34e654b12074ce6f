import type { Knex } from 'knex';
import type { Event } from '../db/models/Event';
import type { Listed, PageRequest } from '../db/pages';
import { eventNames, listEvents as listEventRows, type EventFilter, type EventNameRow } from '../db/queries/events';

/** Events as the dashboard reads them (spec 4.6): a project's events newest first, and the names it has seen. */

export type { EventFilter, EventNameRow };

export function listEvents(db: Knex, projectId: string, filter: EventFilter, page: PageRequest): Promise<Listed<Event>> {
  return listEventRows(db, projectId, filter, page);
}

export function listEventNames(db: Knex, projectId: string): Promise<EventNameRow[]> {
  return eventNames(db, projectId);
}
