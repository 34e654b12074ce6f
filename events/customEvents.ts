import type { Knex } from 'knex';
import { newId } from '../core/ids';
import { subscriptionWrite } from '../audience/subscription';
import { dataValues, persistentData, type RequestData } from '../core/requestData';
import { groupCommit } from '../db/batch';
import type { ApiKeyType } from '../db/models/ApiKey';
import { upsertContacts } from '../db/queries/contacts';
import { recordEvents } from '../db/queries/events';

/*
 * Custom events: what a client reports of its contacts through POST /v1/track, the events automations listen to.
 * Open and click tracking of the mail Herald sends is another thing, in tracking/.
 */

/** One event a client tracks (POST /v1/track): its contact is upserted, the event recorded. */
export interface TrackInput {
  email: string;
  event: string;
  subscribed?: boolean;
  /** Merged into the contact and recorded with the event; entries may be `{ value, persistent? }` (core/requestData.ts). */
  data?: RequestData;
}

export interface TrackCommand {
  projectId: string;
  /** A public key's `subscribed` applies to a new contact only (audience/subscription.ts). */
  keyType: ApiKeyType;
  input: TrackInput;
}

export interface Tracked {
  contact: string;
  event: string;
  timestamp: string;
}

/**
 * The work of tracking any number of events, in the caller's transaction: per project one contact upsert (events for
 * the same address merge in order, as if one after the other) and one recordEvents call. One call means one update of
 * each event name's running total, instead of one per event on the same hot row. Whether an automation starts is
 * decided inside recordEvents.
 */
export async function storeTracks(trx: Knex.Transaction, commands: readonly TrackCommand[]): Promise<Tracked[]> {
  const results: Tracked[] = new Array(commands.length);
  const byProject = new Map<string, number[]>();
  commands.forEach((c, i) => byProject.set(c.projectId, [...(byProject.get(c.projectId) ?? []), i]));
  for (const [projectId, indexes] of byProject) {
    const inputs = indexes.map((i) => {
      const { input, keyType } = commands[i]!;
      return { email: input.email, ...subscriptionWrite(input.subscribed, keyType), data: persistentData(input.data) };
    });
    const unique = [...new Set(inputs.map((c) => c.email))]; // upsertContacts answers one contact per distinct address, in order
    const upserted = await upsertContacts(trx, projectId, inputs, true);
    const contactOf = new Map(unique.map((email, k) => [email, upserted[k]!.contact.id]));
    // Ids chosen here, so that each command finds its own event whatever order the insert returns them in.
    const events = indexes.map((i) => ({ id: newId(), name: commands[i]!.input.event, contactId: contactOf.get(commands[i]!.input.email)!, data: dataValues(commands[i]!.input.data) }));
    const stored = new Map((await recordEvents(trx, projectId, events)).map((e) => [e.id, e]));
    indexes.forEach((i, k) => {
      const event = stored.get(events[k]!.id)!;
      results[i] = { contact: event.contactId!, event: event.id, timestamp: event.createdAt.toISOString() };
    });
  }
  return results;
}

/**
 * Group commit (db/batch.ts): events that arrive together share one transaction; if it fails, each is retried alone,
 * so a bad one fails alone.
 */
export function createTracker(knex: Knex): CustomEvents {
  const together = groupCommit<TrackCommand, Tracked>(knex, storeTracks);
  return { track: (command) => together.load(command), trackIn: async (trx, command) => (await storeTracks(trx, [command]))[0]! };
}

export interface CustomEvents {
  track(command: TrackCommand): Promise<Tracked>;
  /** In the caller's transaction, alone (a request with an Idempotency-Key, whose answer is stored with it). */
  trackIn(trx: Knex.Transaction, command: TrackCommand): Promise<Tracked>;
}
