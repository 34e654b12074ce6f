import type Router from '@koa/router';
import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { groupCommit } from '../../db/batch';
import { subscriptionWrite } from '../../audience/subscription';
import type { ApiKeyType } from '../../db/models/ApiKey';
import { upsertContacts } from '../../db/queries/contacts';
import { recordEvents } from '../../db/queries/events';
import type { AuthState } from '../middleware/auth';
import { idempotent } from '../idempotency';
import { dataValues, persistentData } from '../../core/requestData';
import { trackSchema, type TrackBody } from '../schemas/events';
import { validateBody } from '../validate';

interface TrackCommand {
  projectId: string;
  /** A public key's `subscribed` applies to a new contact only (audience/subscription.ts). */
  keyType: ApiKeyType;
  body: TrackBody;
}

interface Tracked {
  contact: string;
  event: string;
  timestamp: string;
}

/**
 * The work of POST /v1/track for any number of requests, in the caller's transaction: per project one contact upsert
 * (requests for the same address merge in request order, as if one after the other) and one recordEvents call. One
 * call means one update of each event name's running total, instead of one per request on the same hot row.
 */
async function storeTracks(trx: Knex.Transaction, commands: readonly TrackCommand[]): Promise<Tracked[]> {
  const results: Tracked[] = new Array(commands.length);
  const byProject = new Map<string, number[]>();
  commands.forEach((c, i) => byProject.set(c.projectId, [...(byProject.get(c.projectId) ?? []), i]));
  for (const [projectId, indexes] of byProject) {
    const inputs = indexes.map((i) => {
      const { body, keyType } = commands[i]!;
      return { email: body.email, ...subscriptionWrite(body.subscribed, keyType), data: persistentData(body.data) };
    });
    const unique = [...new Set(inputs.map((c) => c.email))]; // upsertContacts answers one contact per distinct address, in order
    const upserted = await upsertContacts(trx, projectId, inputs, true);
    const contactOf = new Map(unique.map((email, k) => [email, upserted[k]!.contact.id]));
    // Ids chosen here, so that each request finds its own event whatever order the insert returns them in.
    const events = indexes.map((i) => ({ id: uuidv7(), name: commands[i]!.body.event, contactId: contactOf.get(commands[i]!.body.email)!, data: dataValues(commands[i]!.body.data) }));
    const stored = new Map((await recordEvents(trx, projectId, events)).map((e) => [e.id, e]));
    indexes.forEach((i, k) => {
      const event = stored.get(events[k]!.id)!;
      results[i] = { contact: event.contactId!, event: event.id, timestamp: event.createdAt.toISOString() };
    });
  }
  return results;
}

/**
 * POST /v1/track (public or secret key): upserts the contact and records the event, in one transaction; whether an
 * automation starts is decided inside recordEvents. Group commit as for /v1/send (db/batch.ts): requests that arrive
 * together share one transaction; if it fails, each is retried alone, so a bad request fails alone. A request with an
 * Idempotency-Key takes its own transaction, which also stores its answer.
 */
export function trackRoutes(router: Router, knex: Knex): void {
  const together = groupCommit<TrackCommand, Tracked>(knex, storeTracks);

  router.post('/v1/track', async (ctx) => {
    const { projectId, keyType } = ctx.state.auth as AuthState;
    const body = validateBody<TrackBody>(ctx, trackSchema);
    const command = { projectId, keyType, body };
    if (ctx.get('idempotency-key')) {
      await idempotent(ctx, knex, 'track', body, async (trx) => ({ status: 200, body: { success: true, data: (await storeTracks(trx, [command]))[0] } }));
      return;
    }
    ctx.body = { success: true, data: await together.load(command) };
  });
}
