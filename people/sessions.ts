import type { Knex } from 'knex';
import { batched } from '../db/batch';
import { deleteInBatches } from '../db/prune';
import { COUNT_UPSERT, countsAfter, positions, windowBindings, type Consumed } from '../projects/access';
import type { Role } from '../projects/roles';
import { newToken, tokenHash } from './tokens';

/**
 * People's sessions (issue 27): a random token in the `herald_session` cookie, stored only as its SHA-256
 * (sessions.token_hash, unique). A session ends when its person logs out or ends it, when it has not been used for
 * `idleMinutes`, or `maxDays` after its login, whichever comes first. Use moves `last_seen_at` at most once a minute,
 * inside the statement that reads the session: no write of its own, and none at all for most requests.
 */

export interface SessionLifetimes {
  idleMinutes: number;
  maxDays: number;
}

/** Opens a session at login: a fresh token every time (never one the client brought), answered once, stored hashed. */
export async function startSession(knex: Knex, userId: string, lifetimes: SessionLifetimes, client: { address?: string; userAgent?: string }):
  Promise<{ token: string; id: string; createdAt: Date; expiresAt: Date }> {
  const { token, hash } = newToken();
  const { rows } = await knex.raw(`INSERT INTO sessions (token_hash, user_id, expires_at, address, user_agent)
    VALUES (?, ?, now() + make_interval(days => ?), ?, ?) RETURNING id, created_at AS "createdAt", expires_at AS "expiresAt"`,
  [hash, userId, lifetimes.maxDays, client.address ?? null, client.userAgent?.slice(0, 512) ?? null]);
  return { token, id: rows[0].id, createdAt: rows[0].createdAt, expiresAt: rows[0].expiresAt };
}

/** A live session, as the /auth routes see it. */
export interface LiveSession {
  sessionId: string;
  userId: string;
  email: string;
  name: string;
  operator: boolean;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * The live session of a cookie token (not ended, not expired either way, its user not disabled), moving its
 * last_seen_at when it is more than a minute old; one statement, by sessions_token_hash_key.
 */
export async function sessionOf(knex: Knex, token: string, lifetimes: Pick<SessionLifetimes, 'idleMinutes'>): Promise<LiveSession | undefined> {
  const { rows } = await knex.raw(SESSION_OF, [tokenHash(token), lifetimes.idleMinutes]);
  return rows[0];
}

export const SESSION_OF = `WITH s AS (
    SELECT s.id, s.user_id, s.created_at, s.expires_at, s.last_seen_at FROM sessions s
    WHERE s.token_hash = ? AND s.ended_at IS NULL AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(mins => ?)),
  touched AS (UPDATE sessions SET last_seen_at = now() WHERE id IN (SELECT id FROM s WHERE last_seen_at < now() - interval '1 minute'))
  SELECT s.id AS "sessionId", s.user_id AS "userId", u.email, u.name, u.operator, s.created_at AS "createdAt", s.expires_at AS "expiresAt"
  FROM s JOIN users u ON u.id = s.user_id WHERE NOT u.disabled`;

/** What a request signed in with a session may do in the project it names. */
export type SessionAdmission =
  | { refused: 'session' }
  | { refused: 'project' }
  | { refused: 'disabled' }
  /** The project requires two-factor and the user has not turned it on. */
  | { refused: 'twoFactor' }
  | { userId: string; sessionId: string; role: Role; projectId: string; rate: Consumed };

interface AdmitRow {
  i: number;
  sessionId: string;
  userId: string;
  role: Role | null;
  projectId: string | null;
  projectDisabled: boolean | null;
  twoFactorMissing: boolean | null;
  rate_key: string | null;
  points: number | null;
  expire: string | null;
}

/**
 * The session check of the API's routes, as projects/access.ts admit is the key's: the sessions of the requests that
 * arrive together, their user, their membership of the project each names, and each admitted request counted against
 * its project's rate budget (the same `api:<project>` window as keys), with last_seen_at moved where stale, all in ONE
 * statement and one round trip (db/batch.ts). Indexes: sessions_token_hash_key, users_pkey, memberships_pkey,
 * projects_pkey, rate_limits_pkey. Never cached: a removed member, a disabled user or an ended session is refused
 * from the next request on.
 *
 * An operator who is no member of the project reads it as a viewer (operators "see all"); changing it takes a
 * membership.
 *
 * A project that requires two-factor (projects.require_two_factor) refuses the sessions of users without it on
 * (two_factor_pkey, in the same statement); such a request is not counted. Keys are not concerned.
 */
export const ADMIT_SESSIONS = `WITH req AS (
    SELECT decode(r.h, 'hex') AS token_hash, r.p AS project_id, r.i FROM unnest(?::text[], ?::uuid[]) WITH ORDINALITY AS r(h, p, i)),
  found AS (
    SELECT r.i, s.id AS "sessionId", s.user_id AS "userId", s.last_seen_at < now() - interval '1 minute' AS stale,
      COALESCE(m.role, CASE WHEN u.operator THEN 'viewer' END) AS role, p.id AS "projectId", p.disabled AS "projectDisabled",
      p.require_two_factor AND t.user_id IS NULL AS "twoFactorMissing"
    FROM req r
    JOIN sessions s ON s.token_hash = r.token_hash AND s.ended_at IS NULL AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(mins => ?::int)
    JOIN users u ON u.id = s.user_id AND NOT u.disabled
    LEFT JOIN projects p ON p.id = r.project_id
    LEFT JOIN memberships m ON m.project_id = r.project_id AND m.user_id = s.user_id
    LEFT JOIN two_factor t ON t.user_id = s.user_id AND t.enabled_at IS NOT NULL),
  touched AS (UPDATE sessions SET last_seen_at = now() WHERE id IN (SELECT "sessionId" FROM found WHERE stale)),
  counts AS (
    SELECT 'api:' || "projectId" AS key, count(*)::int AS n FROM found
    WHERE role IS NOT NULL AND "projectId" IS NOT NULL AND NOT "projectDisabled" AND NOT "twoFactorMissing" GROUP BY 1),
  counted AS (${COUNT_UPSERT})
  SELECT f.i::int AS i, f."sessionId", f."userId", f.role, f."projectId", f."projectDisabled", f."twoFactorMissing", c.key AS rate_key, c.points, c.expire
  FROM found f LEFT JOIN counted c ON c.key = 'api:' || f."projectId"`;

const admitters = new WeakMap<Knex, ReturnType<typeof newAdmitter>>();

interface AdmitRequest { hash: string; projectId: string }

function newAdmitter(knex: Knex, idleMinutes: number) {
  return batched<AdmitRequest, SessionAdmission>(async (requests) => {
    const { rows } = await knex.raw(ADMIT_SESSIONS, [requests.map((r) => r.hash), requests.map((r) => r.projectId), idleMinutes, ...windowBindings(Date.now())])
      // Named (prepared once per connection), as the key's statement: it runs for every request of a session.
      .options({ name: 'herald_admit_session' });
    const byIndex = new Map((rows as AdmitRow[]).map((r) => [r.i, r]));
    const found = requests.map((_r, i) => byIndex.get(i + 1));
    const rates = positions(found.map((r) => r?.rate_key ?? undefined),
      countsAfter((rows as AdmitRow[]).filter((r) => r.rate_key).map((r) => ({ key: r.rate_key!, points: r.points!, expire: r.expire! }))));
    return found.map((row, i): SessionAdmission => {
      if (!row) return { refused: 'session' };
      if (!row.projectId || !row.role) return { refused: 'project' };
      if (row.projectDisabled) return { refused: 'disabled' };
      if (row.twoFactorMissing) return { refused: 'twoFactor' };
      return { userId: row.userId, sessionId: row.sessionId, role: row.role, projectId: row.projectId, rate: rates[i]! };
    });
  });
}

/** Admits a request signed in with the session of `token` to the project `projectId` (a canonical UUID). */
export function admitSession(knex: Knex, token: string, projectId: string, idleMinutes: number): Promise<SessionAdmission> {
  let admitter = admitters.get(knex);
  if (!admitter) admitters.set(knex, (admitter = newAdmitter(knex, idleMinutes)));
  return admitter.load({ hash: tokenHash(token).toString('hex'), projectId });
}

/** Ends one session (logout). Ending an ended one changes nothing. */
export async function endSession(knex: Knex, sessionId: string): Promise<void> {
  await knex.raw('UPDATE sessions SET ended_at = now() WHERE id = ? AND ended_at IS NULL', [sessionId]);
}

/** Ends the session of a cookie token, if it is live (a login that replaces the session the browser had). */
export async function endSessionByToken(knex: Knex, token: string): Promise<void> {
  await knex.raw('UPDATE sessions SET ended_at = now() WHERE token_hash = ? AND ended_at IS NULL', [tokenHash(token)]);
}

/** Ends one of the user's own sessions; false when the user has no live session of that id (another's is not theirs). */
export async function endUserSession(knex: Knex, userId: string, sessionId: string): Promise<boolean> {
  const { rowCount } = await knex.raw('UPDATE sessions SET ended_at = now() WHERE id = ? AND user_id = ? AND ended_at IS NULL', [sessionId, userId]);
  return rowCount > 0;
}

/** Ends every session of a user (a password changed, an account disabled): one statement, by sessions_user_idx. */
export async function endAllSessions(knex: Knex, userId: string): Promise<number> {
  const { rowCount } = await knex.raw('UPDATE sessions SET ended_at = now() WHERE user_id = ? AND ended_at IS NULL', [userId]);
  return rowCount as number;
}

export interface SessionInfo {
  id: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  address: string | null;
  userAgent: string | null;
}

/** The user's live sessions, newest first (sessions_user_idx). At most 100: older ones are ended by their expiries. */
export async function listSessions(knex: Knex, userId: string, lifetimes: SessionLifetimes): Promise<SessionInfo[]> {
  const { rows } = await knex.raw(LIST_SESSIONS, [lifetimes.idleMinutes, userId, lifetimes.idleMinutes]);
  return rows as SessionInfo[];
}

export const LIST_SESSIONS = `SELECT id, created_at AS "createdAt", last_seen_at AS "lastSeenAt",
    LEAST(expires_at, last_seen_at + make_interval(mins => ?)) AS "expiresAt", address, user_agent AS "userAgent"
  FROM sessions WHERE user_id = ? AND ended_at IS NULL AND expires_at > now() AND last_seen_at > now() - make_interval(mins => ?)
  ORDER BY id DESC LIMIT 100`;

/**
 * Deletes sessions that can no longer be used (worker/housekeeping.ts): ended (logout, a password reset), past their
 * absolute expiry, or idle longer than `idleMinutes`, a day after that (a client that still holds the cookie then gets
 * the same 401 from no row as from an ended one). The table holds each person's few sessions: the sweep reads it whole.
 */
export function pruneSessions(knex: Knex, idleMinutes: number): Promise<number> {
  return deleteInBatches(knex, 'sessions',
    `coalesce(ended_at, least(expires_at, last_seen_at + make_interval(mins => ?::int))) < now() - interval '1 day'`, [idleMinutes]);
}
