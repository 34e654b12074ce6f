import type { Knex } from 'knex';
import type { Event } from '../db/models/Event';
import type { CappedList, PageRequest } from '../db/pages';
import { eventNames, listEvents as listEventRows, type EventFilter, type EventNameRow } from '../db/queries/events';

/** Events as the dashboard reads them (spec 4.6): a project's events newest first, and the names it has seen. */

export type { EventFilter, EventNameRow };

export function listEvents(db: Knex, projectId: string, filter: EventFilter, page: PageRequest): Promise<CappedList<Event>> {
  return listEventRows(db, projectId, filter, page);
}

export function listEventNames(db: Knex, projectId: string): Promise<EventNameRow[]> {
  return eventNames(db, projectId);
}

/** The functions above as one object over the app's database, the API's way in (like campaignService). */
export function eventService({ knex }: { knex: Knex }) {
  return {
    list: (projectId: string, filter: EventFilter, page: PageRequest) => listEvents(knex, projectId, filter, page),
    names: (projectId: string) => listEventNames(knex, projectId),
  };
}

export type Events = ReturnType<typeof eventService>;
