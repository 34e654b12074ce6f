import type { Knex } from 'knex';

/**
 * Keyset pagination, the one way every list reads a page. Lists are ordered newest first by their time-ordered
 * (UUIDv7) id; a page is the rows after the last id of the previous one, so page 1,000 costs what page 1 does. How a
 * cursor is spelled on the wire is the API's business (api/pagination.ts); here a position is an id.
 */
export interface PageRequest {
  limit: number;
  /** The last id of the previous page; none for the first page. */
  afterId?: string;
}

/** Up to `limit + 1` rows, newest first (the extra row only tells that there is more), and how many match in all. */
export interface Listed<R> {
  rows: R[];
  total: number;
}

/**
 * The two queries of a page: `limit + 1` rows after `afterId`, and the filter's count. `filtered` builds the scoped,
 * filtered query afresh for each (it may select columns; the count drops them). `column` is the keyset column, as the
 * query names it (`c.id` in a join).
 */
export function pageQueries(filtered: () => Knex.QueryBuilder, { limit, afterId }: PageRequest, column = 'id') {
  const page = filtered().orderBy(column, 'desc').limit(limit + 1);
  if (afterId) page.where(column, '<', afterId);
  const count = filtered().clearSelect().clearOrder().count('* as n').first() as unknown as Promise<{ n: string | number } | undefined>;
  return { page, count };
}

/** Runs a page's two queries side by side; `rowOf` turns a database row into the caller's type (a model, say). */
export async function listPage<R>(
  filtered: () => Knex.QueryBuilder,
  request: PageRequest,
  rowOf: (row: Record<string, unknown>) => R = (row) => row as R,
  column = 'id',
): Promise<Listed<R>> {
  const { page, count } = pageQueries(filtered, request, column);
  const [rows, c] = await Promise.all([page as Promise<Record<string, unknown>[]>, count]);
  return { rows: rows.map(rowOf), total: Number(c?.n ?? 0) };
}
