import type { Knex } from 'knex';
import { deleteInBatches } from '../db/prune';
import { invalid } from '../core/errors';
import { isTokenShaped, newToken, tokenHash } from './tokens';

/**
 * The single-use tokens of auth_tokens (db/migrations/20261130000001_people.ts) and the links that carry them. The
 * token rides in the link's fragment (`#token=…`): a browser never sends a fragment to a server, so it reaches no
 * access log, proxy or Referer; the console's page reads it and posts it in a JSON body (never logged).
 */
export type TokenKind = 'invitation' | 'password_reset' | 'setup';

/** The console page each kind of link opens. */
const PAGES: Record<TokenKind, string> = { invitation: 'invitation', password_reset: 'reset', setup: 'setup' };

export const linkTo = (publicUrl: string, kind: TokenKind, token: string): string => `${publicUrl}/app/${PAGES[kind]}#token=${token}`;

export interface TokenRow {
  id: string;
  kind: TokenKind;
  project_id: string | null;
  email: string | null;
  role: string | null;
  user_id: string | null;
  created_by: string | null;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
}

/** A fresh token of `kind`, valid for `ttlHours`: its row (stored hashed) and the token itself, for the link. */
export async function insertToken(db: Knex | Knex.Transaction, kind: TokenKind, ttlHours: number, fields: Partial<Pick<TokenRow, 'project_id' | 'email' | 'role' | 'user_id' | 'created_by'>>): Promise<{ row: TokenRow; token: string }> {
  const { token, hash } = newToken();
  const [row] = await db('auth_tokens')
    .insert({ kind, token_hash: hash, ...fields, expires_at: db.raw("now() + make_interval(hours => ?)", [ttlHours]) })
    .returning(['id', 'kind', 'project_id', 'email', 'role', 'user_id', 'created_by', 'created_at', 'expires_at', 'used_at']);
  return { row: row as TokenRow, token };
}

/**
 * One refusal for every token that cannot be used, whatever the reason (unknown, of another kind, used, expired,
 * revoked): the answer tells a guesser nothing, and the person holding it the one thing to do.
 */
const unusable = (kind: TokenKind) => invalid([{ field: 'token', code: 'invalid_token', message: 'This link is invalid, already used or expired' }],
  kind === 'invitation' ? 'Ask an admin of the project for a new invitation.' : kind === 'password_reset' ? 'Ask for a new password reset.' : 'Restart Herald to print a new setup link.');

/**
 * The unused, unexpired token of `kind`, locked in `trx` (FOR UPDATE) so that two uses racing see one winner: the
 * second waits, then finds it used. Refused (422 naming `token`) otherwise; nothing is changed by a refusal.
 */
export async function takeToken(trx: Knex.Transaction, kind: TokenKind, token: string): Promise<TokenRow> {
  if (!isTokenShaped(token)) throw unusable(kind);
  const row = await trx('auth_tokens').where({ token_hash: tokenHash(token), kind }).forUpdate()
    .first<(TokenRow & { live: boolean }) | undefined>('*', trx.raw('(used_at IS NULL AND expires_at > now()) AS live'));
  if (!row || !row.live) throw unusable(kind);
  return row;
}

/** Marks a token used (in the transaction of what it did). */
export async function useToken(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('auth_tokens').where({ id }).update({ used_at: trx.fn.now() });
}

/** How Herald mails people (people/mail.ts builds one from the system sender); absent: links are shown instead. */
export type SystemMail = (message: { to: string; subject: string; text: string }) => Promise<void>;

export interface PeopleDeps {
  knex: Knex;
  publicUrl: string;
  /** INVITATION_TTL_HOURS (72 by default). */
  invitationTtlHours?: number;
  /** The system sender (SYSTEM_PROJECT_ID, SYSTEM_FROM_EMAIL); absent: invitation links go back to the inviter. */
  mail?: SystemMail;
}

/**
 * Deletes the tokens that can no longer be used (worker/housekeeping.ts), a day after they were used or expired: a
 * link then answers as an unknown one does (the same refusal, `unusable`). Who invited whom stays in the audit log.
 */
export function pruneTokens(knex: Knex): Promise<number> {
  return deleteInBatches(knex, 'auth_tokens', `coalesce(used_at, expires_at) < now() - interval '1 day'`, []);
}
