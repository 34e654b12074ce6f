import type { Knex } from 'knex';
import { groupStatement } from '../db/batch';
import { notFound } from '../core/errors';
import { classifyAgent } from './agents';
import { verifyClickToken, verifyOpenToken } from './links';
import { DEFAULT_EVENT_WINDOW_MS, recordHits, type Hit } from './record';
import { addressThrottle } from './throttle';
import { addressKey } from '../core/addresses';

export interface TrackerOptions {
  /** One `email.opened` per email, one `email.clicked` per email and link, per this window (TRACKING_EVENT_WINDOW_SECONDS). */
  eventWindowMs: number;
  /** Hits recorded per remote address and second; beyond, answered and not recorded (TRACKING_RATE_PER_ADDRESS); 0: no limit. */
  ratePerAddress: number;
}

export const DEFAULT_TRACKER_OPTIONS: TrackerOptions = { eventWindowMs: DEFAULT_EVENT_WINDOW_MS, ratePerAddress: 50 };

/**
 * The open pixel and the click redirect, the hottest public endpoints: a token is verified without the database (a
 * tampered or foreign one is a 404 at once, and records nothing), then the hits that arrive together are recorded in
 * ONE statement (group commit, db/batch.ts groupStatement, as POST /v1/track), so an answer waits for one transaction at most.
 * A remote address over its rate is answered (a valid token: the pixel, the redirect) without recording anything and
 * without the database; an email's events are thinned to one per kind and window by that same statement.
 */
export function createTracker(knex: Knex, secret: Buffer, options: TrackerOptions = DEFAULT_TRACKER_OPTIONS) {
  const together = groupStatement<Hit, boolean>(knex, (db, hits) => recordHits(db, hits, options.eventWindowMs));
  const admit = addressThrottle(options.ratePerAddress);

  /** Records an open; not found for a token that does not verify or whose email is gone. */
  async function open(token: string, userAgent: string | undefined, address: string): Promise<void> {
    const target = verifyOpenToken(secret, token);
    if (!target) throw notFound('Tracking link');
    if (!admit(addressKey(address))) return;
    if (!(await together.load({ kind: 'open', ...target, agent: classifyAgent(userAgent) }))) throw notFound('Tracking link');
  }

  /** Records a click and answers the link's target, which comes from the signed token alone. */
  async function click(token: string, userAgent: string | undefined, address: string): Promise<string> {
    const target = verifyClickToken(secret, token);
    if (!target) throw notFound('Tracking link');
    if (!admit(addressKey(address))) return target.url;
    if (!(await together.load({ kind: 'click', ...target, agent: classifyAgent(userAgent) }))) throw notFound('Tracking link');
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
