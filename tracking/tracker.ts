import type { Knex } from 'knex';
import { groupStatement } from '../db/batch';
import { notFound } from '../core/errors';
import { classifyAgent } from './agents';
import { verifyClickToken, verifyOpenToken } from './links';
import { recordHits, type Hit } from './record';

/**
 * The open pixel and the click redirect, the hottest public endpoints: a token is verified without the database (a
 * tampered or foreign one is a 404 at once, and records nothing), then the hits that arrive together are recorded in
 * ONE statement (group commit, db/batch.ts groupStatement, as POST /v1/track), so an answer waits for one transaction at most.
 */
export function createTracker(knex: Knex, secret: Buffer) {
  const together = groupStatement<Hit, boolean>(knex, recordHits);

  /** Records an open; not found for a token that does not verify or whose email is gone. */
  async function open(token: string, userAgent: string | undefined): Promise<void> {
    const target = verifyOpenToken(secret, token);
    if (!target || !(await together.load({ kind: 'open', ...target, agent: classifyAgent(userAgent) }))) throw notFound('Tracking link');
  }

  /** Records a click and answers the link's target, which comes from the signed token alone. */
  async function click(token: string, userAgent: string | undefined): Promise<string> {
    const target = verifyClickToken(secret, token);
    if (!target || !(await together.load({ kind: 'click', ...target, agent: classifyAgent(userAgent) }))) throw notFound('Tracking link');
    return target.url;
  }

  /**
   * A HEAD on a tracking link: what link scanners and unfurlers send to look before they fetch. The token is verified
   * (a bad one is a 404) and nothing is recorded: no one saw the image or followed the link. Answers a click's target.
   */
  function peek(kind: 'open' | 'click', token: string): string | undefined {
    if (kind === 'open') {
      if (!verifyOpenToken(secret, token)) throw notFound('Tracking link');
      return undefined;
    }
    const target = verifyClickToken(secret, token);
    if (!target) throw notFound('Tracking link');
    return target.url;
  }

  return { open, click, peek };
}

export type Tracker = ReturnType<typeof createTracker>;
