import Joi from 'joi';
import { isUuid } from '../core/values';
import { badRequest } from './errors';

/**
 * Keyset pagination. Lists are ordered newest first by their time-ordered (UUIDv7) id; a cursor is the last id
 * of the page, wrapped so that clients treat it as opaque and we can change what it holds.
 */
export const limitSchema = Joi.number().integer().min(1).max(100).default(20);
// Up to 400: an address cursor holds an address (up to 254 characters), in base64.
export const cursorSchema = Joi.string().max(400).example('djE6MDE5N2EzYzQtNWUyMS03YzNhLTliNGYtOGQyZTFhNmMwZjUz');


export function encodeCursor(id: string): string {
  return Buffer.from(`v1:${id}`).toString('base64url');
}

/** The id the cursor points after; a cursor we did not make is a 400. */
export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  const id = raw.startsWith('v1:') ? raw.slice(3) : '';
  if (!isUuid(id)) throw badRequest('Invalid cursor', [{ field: 'cursor', message: 'cursor is not one this API returned', code: 'invalid_cursor' }]);
  return id;
}

/**
 * A cursor for a list ordered by a rank first (a route's priority), then by id: it holds both, so that the next page
 * starts after the same place even if that row was changed or deleted meanwhile.
 */
export function encodeRankCursor(rank: number, id: string): string {
  return encodeCursor(`${rank}/${id}`);
}

/** The rank and id a rank cursor points after; a cursor we did not make is a 400. */
export function decodeRankCursor(cursor: string | undefined): { rank: number; id: string } | undefined {
  if (cursor === undefined) return undefined;
  const m = /^v1:(-?\d{1,9})\/(.*)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || !isUuid(m[2]!)) throw badRequest('Invalid cursor', [{ field: 'cursor', message: 'cursor is not one this API returned', code: 'invalid_cursor' }]);
  return { rank: Number(m[1]), id: m[2]! };
}

/**
 * A cursor after an address: a contact search lists the addresses that begin with its term first, in address order,
 * and the next page begins after the last of them shown (db/queries/contacts.ts searchStatement). It holds the address,
 * so that the next page starts at the same place even if that contact was deleted meanwhile.
 */
export function encodeAddressCursor(email: string): string {
  return Buffer.from(`v1:@${email}`).toString('base64url');
}

/** Where a cursor of encodeAddressCursor or encodeCursor points after; a cursor we did not make is a 400. */
export function decodeAddressOrIdCursor(cursor: string | undefined): { afterEmail: string } | { afterId: string } | undefined {
  if (cursor === undefined) return undefined;
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  if (raw.startsWith('v1:@') && raw.length > 4 && !/\p{Cc}/u.test(raw)) return { afterEmail: raw.slice(4) };
  return { afterId: decodeCursor(cursor)! };
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  hasMore: boolean;
  total: number;
}

/**
 * Builds a page from `limit + 1` fetched rows: the extra row only tells that there is more. `cursorOf` writes the
 * cursor of the page's last row (its id, unless the list is ordered by something else first: encodeRankCursor).
 */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, total: number, map: (row: R) => T, cursorOf: (row: R) => string = (row) => encodeCursor(row.id)): Page<T> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { items: pageRows.map(map), nextCursor: hasMore && last ? cursorOf(last) : null, hasMore, total };
}

