import type { Knex } from 'knex';
import { invalid } from '../core/errors';
import { batched, batchedByGroup, groupStatement } from '../db/batch';
import { checkSends, renderSends, storeSends, storedEmails, type CheckedSend, type PreparedSend, type SendCommand, type SendStoreDeps, type StoredSend } from './sends';
import type { Mailbox, SendBody } from './types';
import { emailsQueued } from '../metrics/queued';

/** Recipients of one send (spec section 4.1), whichever way it comes in. */
export const MAX_RECIPIENTS = 50;

/** The 10 MB rule of spec section 4.1: attachments' decoded bytes together. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/** `to` arrives in three forms; after validation it is always a list of mailboxes (first occurrence of an address wins). */
export function recipientsOf(to: SendBody['to']): Mailbox[] {
  const list = Array.isArray(to) ? to : [to];
  const seen = new Set<string>();
  return list.filter((m) => !seen.has(m.email) && seen.add(m.email));
}

/** A validated body as the send business takes it: recipients listed, attachments decoded and within 10 MB (422). */
export function sendCommand(projectId: string, body: SendBody, domains?: readonly string[] | null): SendCommand {
  const attachments = (body.attachments ?? []).map((a) => ({ ...a, bytes: Buffer.from(a.content, 'base64') }));
  const total = attachments.reduce((n, a) => n + a.bytes.length, 0);
  if (total > MAX_ATTACHMENT_BYTES) {
    throw invalid([{ field: 'attachments', message: `attachments total ${total} bytes; at most ${MAX_ATTACHMENT_BYTES} (10 MB) are allowed`, code: 'too_big' }]);
  }
  return { projectId, body, recipients: recipientsOf(body.to), attachments, domains };
}

/** The send rate (herald_emails_accepted_total): the email rows a committed send stored, by its way in. */
function counted(prepared: PreparedSend, stored: StoredSend): StoredSend {
  emailsQueued(prepared.command.raw ? 'smtp' : 'http', storedEmails(stored));
  return stored;
}

export interface Sender {
  /** Checks and renders a send, outside any transaction (a render holds no connection); refusals are DomainErrors. */
  prepare(command: SendCommand): Promise<PreparedSend>;
  /** Stores a prepared send together with the others that arrive meanwhile (group commit); resolves once committed. */
  store(prepared: PreparedSend): Promise<StoredSend>;
  /** Stores a prepared send in the caller's transaction (one that also stores an idempotent answer, say). */
  storeIn(trx: Knex.Transaction, prepared: PreparedSend): Promise<StoredSend>;
  /** prepare, then store: what every way in (HTTP, SMTP) that needs nothing else calls. */
  send(command: SendCommand): Promise<StoredSend>;
}

/**
 * The one send pipeline, for every way in. Checked together; rendered together per project (one render task per
 * project and batch, so that no project waits for another's renders); stored together: requests that arrive together
 * share ONE statement in autocommit (db/batch.ts groupStatement; sending/sends.ts storeSends). If it fails, each is
 * retried in one of its own, so a bad request fails alone. A batch costs two statements: the check and the store.
 * The committed rows are the delivery queue (worker/deliveryQueue.ts), on either engine: nothing here waits for SMTP.
 */
export function createSender(knex: Knex, deps: SendStoreDeps): Sender {
  const checking = batched<SendCommand, CheckedSend>((commands) => checkSends(knex, commands));
  const rendering = batchedByGroup<CheckedSend, PreparedSend>((c) => c.command.projectId, (checked) => renderSends(deps, checked));
  const together = groupStatement<PreparedSend, StoredSend>(knex, (db, prepared) => storeSends(db, prepared, deps));
  const prepare = async (command: SendCommand): Promise<PreparedSend> => rendering.load(await checking.load(command));
  return {
    prepare,
    store: async (prepared) => counted(prepared, await together.load(prepared)),
    async storeIn(trx, prepared) {
      const [result] = await storeSends(trx, [prepared], deps);
      if (result instanceof Error) throw result; // nothing of it may be kept
      // Counted when written into the caller's transaction (an idempotent send's), which commits right after.
      return counted(prepared, result!);
    },
    send: async (command) => {
      const prepared = await prepare(command);
      return counted(prepared, await together.load(prepared));
    },
  };
}
