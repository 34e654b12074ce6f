import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isUuid } from '../core/values';
import { genericStatementOf, preparedStatement, preparedStatementOf, valuedText, withSettings } from './prepared';

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
 * The two queries of a page: `limit + 1` rows after `afterId`, and the filter's count (one row, `n`). `filtered` builds the scoped,
 * filtered query afresh for each (it may select columns; the count drops them). `column` is the keyset column, as the
 * query names it (`c.id` in a join).
 */
export function pageQueries(filtered: () => Knex.QueryBuilder, { limit, afterId }: PageRequest, column = 'id') {
  const page = filtered().orderBy(column, 'desc').limit(rowLimit(limit + 1), { skipBinding: true });
  if (afterId) page.where(column, '<', afterId);
  const count = filtered().clearSelect().clearOrder().count('* as n');
  return { page, count };
}

/**
 * A LIMIT written into the statement's text, not bound: a statement run with its generic plan (PageStatementOptions
 * `genericPlan`) is planned without its parameters' values, and a bound LIMIT is then taken for a tenth of the rows;
 * on a workflow's 200,000 executions that planned a parallel scan of 20,000 (two workers started for a page of 51:
 * 12.6 ms against 5.7; BENCHMARKS.md section 54). A page's limit has a few values (the API's 1-100), so a statement per
 * value. An integer only, since it is written into SQL.
 */
export function rowLimit(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`a row limit must be a whole number, not ${n}`);
  return n;
}

/**
 * Runs a page's two queries as ONE statement (two CTEs: the page, and its count beside it), so that a list costs one
 * round trip to one database session: two queries side by side wait for the slower of two sessions, and on a busy or
 * virtualised machine each wake-up of a session is a chance of a stall. `rowOf` turns a database row into the
 * caller's type (a model, say). A project's small lists (campaigns, templates, domains, imports, endpoints), whose
 * values but the cursor are the same at each request: planned for them once per connection (`plannedOnce`). Sent
 * unnamed, a page of 20 campaigns took 2.0-2.15 ms from Node, and 0.9 named with its plan kept (BENCHMARKS.md section 69).
 */
export async function listPage<R>(
  filtered: () => Knex.QueryBuilder,
  request: PageRequest,
  rowOf: (row: Record<string, unknown>) => R = (row) => row as R,
  column = 'id',
): Promise<Listed<R>> {
  const { page, count } = pageQueries(filtered, request, column);
  const { rows, total } = await pageWithTotal(page, count, { column, plannedOnce: { cursor: request.afterId } });
  return { rows: rows.map(rowOf), total };
}

/** How pageWithTotal runs a page. */
export interface PageStatementOptions {
  /** The keyset column as the query names it (`c.id` in a join); default `id`. */
  column?: string;
  /** The page's order when it is not `column` newest first (the page query must be ordered the same way). */
  order?: { column: string; order: 'asc' | 'desc' }[];
  /**
   * The page's limit, for a first page (no cursor): when it holds no more than that many rows, they are every row that
   * matches, so their number is the total and the count query is never run (PostgreSQL runs a CTE only when a row is
   * asked of it, and the CASE asks `total` only for a full page). A search that finds one contact then costs one
   * search, not two (the trigram index's posting lists read twice; BENCHMARKS.md section 41).
   */
  whole?: number;
  /**
   * Run the statement with PostgreSQL's generic plan, prepared once per connection and statement shape (db/prepared.ts),
   * instead of planned afresh for each request. For lists whose every filter is an equality on the leading columns of
   * an index ending in the keyset column, or a range of that column: their plan is the same for every value (one index
   * read newest first, per partition of a partitioned table, stopped by the LIMIT), and planning it took as long as
   * running it (GET /emails: 0.9-1.35 ms of planning against 0.4-1.0 of execution, pg_stat_statements; BENCHMARKS.md
   * section 54). The count must then be ordered too (cappedCount's `newestFirst`), so that its plan is that index read
   * whatever the project's size; the LIMITs are written into the text (rowLimit), and the plan is made under LIST_PLAN,
   * so that no estimate from the table's averages turns it into a sort of a project's rows.
   * Never for a search, nor a segment's condition over addresses, events or other segments, whose best plan turns on
   * the values (a condition over the contact's row alone is not such: audience/check.ts readsContactRowOnly).
   */
  genericPlan?: boolean;
  /**
   * A CTE the page and the count both read (before them in the statement): PostgreSQL reads it once. For a first page
   * taken from its capped count's rows (firstPageOfCount).
   */
  shared?: { name: string; query: Knex.QueryBuilder };
  /**
   * For a statement planned for its values (not `genericPlan`) whose values stay the same from one request to the next
   * but for the page's cursor (an endpoint's deliveries, a segment's condition): planned once per connection, not at
   * each request. The values are written into its text and the cursor alone, when there is one, is left a parameter
   * (db/prepared.ts genericStatementOf). Planning an endpoint's page of deliveries cost ~1 ms, a segment's over events
   * 2-3 ms across the events' partitions, against 1-2 ms of running it (BENCHMARKS.md section 69). Not for values that
   * change with each request (a window of time): each text would be prepared and planned once, and then thrown away.
   */
  plannedOnce?: { cursor?: string };
  /**
   * An SQL value (a scalar subquery, with its bindings) selected beside the count as `__check` and answered as
   * ListRows `check`: what the caller compares with what it assumed when it built the statement, read in the same
   * snapshot as the page (a segment's page built from the project's segments as the process kept them, and their
   * digest as they are: audience/segments.ts). It must not turn on the cursor.
   */
  check?: { sql: string; bindings: readonly unknown[] };
}

/** A page's `whole` (PageStatementOptions): its limit when it is a first page, none after a cursor. */
export const wholeOf = (request: PageRequest): number | undefined => (request.afterId ? undefined : request.limit);

/** The statement of pageWithTotal: the page's rows, each with the count beside it (exported for the EXPLAIN tests). */
export function pageStatement(page: Knex.QueryBuilder, count: Knex.QueryBuilder, opts: PageStatementOptions = {}): Knex.QueryBuilder {
  const column = opts.column ?? 'id';
  const order = opts.order ?? [{ column, order: 'desc' }];
  const { whole } = opts;
  // The count's one row, joined to the page's rows: a page that is empty is one row of NULLs, and still has its count.
  return page.client.queryBuilder()
    .modify((q: Knex.QueryBuilder) => { if (opts.shared) q.with(opts.shared.name, opts.shared.query); })
    .with('page', page).with('total', count)
    .modify((q: Knex.QueryBuilder) => {
      if (whole === undefined) q.from('total').select('total.n AS __total');
      else {
        q.fromRaw('(SELECT 1) AS one').select(page.client.raw(
          'CASE WHEN (SELECT count(*) FROM page) <= ? THEN (SELECT count(*) FROM page) ELSE (SELECT n FROM total) END AS __total', [whole]));
      }
    })
    .modify((q: Knex.QueryBuilder) => { if (opts.check) q.select(page.client.raw(`${opts.check.sql} AS __check`, opts.check.bindings)); })
    .joinRaw('LEFT JOIN page ON true')
    .select('page.*')
    .orderBy(order.map((o) => ({ column: `page.${o.column.split('.').pop()!}`, order: o.order })));
}

/**
 * A page query and its count query (one row, `n`) in one statement (pageStatement): the page's rows, and the count.
 * `page` and `count` are built on the same knex (or transaction).
 */
export async function pageWithTotal(page: Knex.QueryBuilder, count: Knex.QueryBuilder, opts: PageStatementOptions = {}): Promise<ListRows> {
  return runCompiledPage({ client: page.client } as Knex, compilePage({ page, count, options: opts }));
}

/** A page statement as it is sent: its text (knex's `?` form for a generic plan, numbered otherwise) and bindings. */
interface CompiledPage {
  sql: string;
  bindings: unknown[];
  /** The row's key column, as the rows name it. */
  key: string;
  genericPlan: boolean;
  /** Its runner when its values are written into its text (`plannedOnce`): planned for them once per connection. */
  valued?: ReturnType<typeof genericStatementOf>;
}

function compilePage({ page, count, options }: { page: Knex.QueryBuilder; count: Knex.QueryBuilder; options: PageStatementOptions }): CompiledPage {
  const statement = pageStatement(page, count, options).toSQL();
  const genericPlan = options.genericPlan ?? false;
  const key = (options.column ?? 'id').split('.').pop()!;
  if (genericPlan) return { sql: statement.sql, bindings: [...statement.bindings], key, genericPlan };
  const { sql, bindings } = statement.toNative();
  if (!options.plannedOnce) return { sql, bindings: [...bindings], key, genericPlan };
  const { cursor } = options.plannedOnce;
  const valued = valuedText(sql, bindings, (v) => cursor !== undefined && v === cursor);
  return { sql: valued.text, bindings: valued.params, key, genericPlan, valued: genericStatementOf('herald_valued', valued.text, { plannerSettings: LIST_SETTINGS }) };
}

/** Runs a compiled page: with its generic plan (genericListStatement), or planned for its values under LIST_SETTINGS. */
async function runCompiledPage(db: Knex, page: CompiledPage): Promise<ListRows> {
  const { rows } = page.valued ? await page.valued(db, page.bindings)
    : page.genericPlan ? await genericListStatement(page.sql)(db, page.bindings) : await withSettings(db, page.sql, page.bindings, LIST_SETTINGS);
  return rowsAndTotal(rows, page.key);
}

/**
 * Stands in for a page's cursor while its statement is compiled (pageStatementCache): a random id of this process,
 * which no request can name, so that the binding it lands in is the cursor's and no other value's.
 */
const CURSOR_STAND_IN = randomUUID();

/**
 * pageWithTotal for statements that knex takes long to build, compiled once per shape: `shape` names everything the
 * statement's text and bindings are made of but the page's cursor (a segment's project, id and the conditions its
 * own may name), and `build` makes its queries for a page request. A segment's page took knex 0.55-1.15 ms to build
 * and compile, a third of what running it cost (BENCHMARKS.md section 68). The `max` newest shapes are kept. A shape
 * planned for its values is planned once per connection (PageStatementOptions `plannedOnce`).
 */
export function pageStatementCache(max = 1000) {
  const cache = new Map<string, { compiled: CompiledPage; slots: Slot[] }>();
  type Build = (request: PageRequest) => Parameters<typeof compilePage>[0];
  const compile = (request: PageRequest, build: Build) => {
    const built = build(request.afterId ? { ...request, afterId: CURSOR_STAND_IN } : request);
    // A shape's values stay the same but for the cursor: one planned for them is planned once per connection.
    const compiled = compilePage({ ...built, options: { ...built.options, plannedOnce: { cursor: request.afterId ? CURSOR_STAND_IN : undefined } } });
    const cursor = new Map(request.afterId ? [[CURSOR_STAND_IN, CURSOR_SLOT]] : []);
    return { compiled, slots: slotsOf('pageStatementCache', compiled.sql, compiled.bindings, cursor, []) };
  };
  return async function run(db: Knex, shape: string, request: PageRequest, build: Build): Promise<ListRows> {
    const { compiled, slots } = remembered(cache, `${request.limit}\u0000${request.afterId ? 'after' : 'first'}\u0000${shape}`, max, () => compile(request, build));
    return runCompiledPage(db, { ...compiled, bindings: filled(compiled.bindings, slots, () => request.afterId) });
  };
}

/** The cursor among a cached statement's slots. */
const CURSOR_SLOT = '\u0000cursor';

/** Where a cached statement binds a request's value: [binding index, the value's name (CURSOR_SLOT: the cursor)]. */
type Slot = [number, string];

/**
 * The stand-ins of the values named `given` as a shape is compiled, each a string no request can send (CURSOR_STAND_IN's):
 * as the values `build` is given, and by stand-in (slotsOf's `standIns`).
 */
function standInsOf<V>(given: string[]): { values: V; byStandIn: Map<string, string> } {
  const of = (name: string) => `${CURSOR_STAND_IN}:${name}`;
  return { values: Object.fromEntries(given.map((k) => [k, of(k)])) as V, byStandIn: new Map(given.map((k) => [of(k), k])) };
}

/** A cached statement's bindings with a request's values in its slots. */
function filled(bindings: readonly unknown[], slots: readonly Slot[], valueOf: (name: string) => unknown): unknown[] {
  const out = [...bindings];
  for (const [i, k] of slots) out[i] = valueOf(k);
  return out;
}

/**
 * Where a statement compiled with stand-ins (`standIns`: stand-in → the value's name) binds each: [binding index, name].
 * `what` names the caller in its refusals: of a value its statement does not bind (its rows would ignore it), of a
 * stand-in written into the text (a statement planned for its values: one text per value, not per shape), and of an id
 * of the request the shape is compiled for bound as it is (`ids`: a build that took the project's id from its caller,
 * not from its stand-in, would serve that project's rows to every request of the shape).
 */
function slotsOf(what: string, sql: string, bindings: readonly unknown[], standIns: Map<string, string>, ids: readonly unknown[]): Slot[] {
  if (sql.includes(CURSOR_STAND_IN)) throw new Error(`${what}: a statement that binds its values, never writes them in`);
  const idsOfRequest = new Set(ids.filter((v): v is string => typeof v === 'string' && isUuid(v)).map((v) => v.toLowerCase()));
  if (bindings.some((b) => typeof b === 'string' && idsOfRequest.has(b.toLowerCase()))) throw new Error(`${what}: the statement binds an id of the request itself, not its stand-in`);
  const slots = bindings.flatMap((b, i): Slot[] => (typeof b === 'string' && standIns.has(b) ? [[i, standIns.get(b)!]] : []));
  const unbound = [...standIns.values()].filter((k) => !slots.some(([, s]) => s === k));
  if (unbound.length > 0) throw new Error(`${what}: the statement does not bind ${unbound.map((k) => (k === CURSOR_SLOT ? 'the cursor' : k)).join(', ')}`);
  return slots;
}

/** The names of the values given (not undefined), in order: with the caller's shape, what a statement's text turns on. */
const givenOf = (values: Record<string, unknown>): string[] => Object.keys(values).filter((k) => values[k] !== undefined).sort();

/** A bounded cache, the oldest entry forgotten first. */
function remembered<T>(cache: Map<string, T>, key: string, max: number, make: () => T): T {
  let entry = cache.get(key);
  if (entry === undefined) {
    entry = make();
    if (cache.size >= max) cache.delete(cache.keys().next().value!);
    cache.set(key, entry);
  }
  return entry;
}

/**
 * pageWithTotal for a list whose statement binds every value (PageStatementOptions `genericPlan`: one text for all
 * projects and filter values), built and compiled by knex once per shape: which of `values` are given, the page's limit,
 * first page or one after a cursor. Knex took 0.3 ms of the API's CPU to build and compile a page of emails at each
 * request, a tenth of the list's time in the process (BENCHMARKS.md section 70). A shape is built once with stand-ins
 * for its values and cursor (strings no request can send), and each run binds the request's own where they were bound.
 * `build` is given the stand-ins (strings) in the values' places, and must bind each as it is given (compared, never
 * computed on nor written into the text): a value its statement does not bind, or a stand-in found in the text, is
 * refused as the shape is compiled, never run.
 */
export function shapedPageCache<V extends Record<string, string | boolean | undefined>>(max = 1000) {
  type Build = (values: V, request: PageRequest) => Parameters<typeof compilePage>[0];
  const cache = new Map<string, { compiled: CompiledPage; slots: Slot[] }>();
  const compile = (given: string[], request: PageRequest, values: V, build: Build) => {
    const standIns = standInsOf<V>(given);
    if (request.afterId) standIns.byStandIn.set(CURSOR_STAND_IN, CURSOR_SLOT);
    // A statement planned for its values writes them into its text (plannedOnce): slotsOf refuses it.
    const compiled = compilePage(build(standIns.values, request.afterId ? { ...request, afterId: CURSOR_STAND_IN } : request));
    return { compiled, slots: slotsOf('shapedPageCache', compiled.sql, compiled.bindings, standIns.byStandIn, [...given.map((k) => values[k]), request.afterId]) };
  };
  return async function run(db: Knex, request: PageRequest, values: V, build: Build): Promise<ListRows> {
    const given = givenOf(values);
    const { compiled, slots } = remembered(cache, `${request.limit}\u0000${request.afterId ? 'after' : 'first'}\u0000${given.join(',')}`, max, () => compile(given, request, values, build));
    return runCompiledPage(db, { ...compiled, bindings: filled(compiled.bindings, slots, (k) => (k === CURSOR_SLOT ? request.afterId : values[k])) });
  };
}

/**
 * A statement knex builds the same way for every request of a shape but for its values, built and compiled once per
 * `shape` (what its text turns on besides which of `values` are given), as shapedPageCache does a page's: for a
 * statement written apart from pageStatement and planned for its values at each run (a contact search: its term's
 * patterns are bound, and PostgreSQL plans them as it would constants). Its text, numbered (`$1`…), and its bindings.
 */
export function shapedStatementCache<V extends Record<string, string | boolean | undefined>>(max = 1000) {
  const cache = new Map<string, { sql: string; bindings: readonly unknown[]; slots: Slot[] }>();
  return function statementOf(shape: string, values: V, build: (values: V) => Knex.QueryBuilder | Knex.Raw): { sql: string; bindings: unknown[] } {
    const given = givenOf(values);
    const { sql, bindings, slots } = remembered(cache, `${shape}\u0000${given.join(',')}`, max, () => {
      const standIns = standInsOf<V>(given);
      const compiled = build(standIns.values).toSQL().toNative();
      return { ...compiled, slots: slotsOf('shapedStatementCache', compiled.sql, compiled.bindings, standIns.byStandIn, given.map((k) => values[k])) };
    });
    return { sql, bindings: filled(bindings, slots, (k) => values[k]) };
  };
}

/**
 * A list statement of pageStatement's shape (the page's rows, each with the count beside it as `__total`; one row of
 * NULLs for an empty page) planned for its values, or with its generic plan (`genericPlan`: a text of a shape whose one
 * plan serves every value), under LIST_SETTINGS: its rows and total. For a statement written apart from pageStatement
 * (a contact search: db/queries/contacts.ts searchStatement) as for pageWithTotal's.
 */
export async function runListStatement(db: Knex | Knex.Transaction, statement: Knex.QueryBuilder | Knex.Raw | { sql: string; bindings: readonly unknown[] }, key = 'id', opts: { genericPlan?: boolean } = {}): Promise<ListRows> {
  const { sql, bindings } = 'toSQL' in statement ? statement.toSQL().toNative() : statement;
  const { rows } = opts.genericPlan
    ? await genericStatementOf('herald_generic', sql, { plannerSettings: LIST_SETTINGS })(db, bindings)
    : await withSettings(db, sql, bindings, LIST_SETTINGS);
  return rowsAndTotal(rows, key);
}

/**
 * A list statement's rows and count. `totalWhole`, when the statement says (a column `__total_whole` beside `__total`):
 * false when its count left out matches it did not read (a contact search: db/queries/contacts.ts searchStatement).
 */
export interface ListRows {
  rows: Record<string, unknown>[];
  total: number;
  totalWhole?: boolean;
  /** The statement's `__check` (PageStatementOptions `check`), when it selects one. */
  check?: unknown;
}

function rowsAndTotal(joined: Record<string, unknown>[], key: string): ListRows {
  const first = joined[0];
  const total = Number(first?.__total ?? 0);
  const rows = joined.filter((r) => r[key] !== null).map(({ __total: _n, __total_whole: _w, __check: _c, ...row }) => row);
  return {
    rows, total,
    ...(first && '__total_whole' in first ? { totalWhole: first.__total_whole === true } : {}),
    ...(first && '__check' in first ? { check: first.__check } : {}),
  };
}

/**
 * What every list statement runs with: no parallel workers. A page and its capped count read a bounded number of rows,
 * and starting workers costs more than that: a dynamic segment's count (a data.* filter, which the planner guesses
 * matches 0.5 % of contacts when a third do) was planned as a Gather Merge of two workers, 10 ms, against 2 ms read
 * on the one backend (BENCHMARKS.md section 56). Set and reset around the statement in its one round trip (db/prepared.ts).
 */
export const LIST_SETTINGS = { max_parallel_workers_per_gather: '0' } as const;

/** How a list's generic plan is made (PageStatementOptions `genericPlan`): LIST_SETTINGS, and the index read in the page's order. */
export const LIST_PLAN = { ...LIST_SETTINGS, enable_sort: 'off', enable_bitmapscan: 'off' } as const;

/**
 * A list statement's runner with its generic plan made under LIST_PLAN, one per statement text (a list has a few
 * shapes: its filters). `sql` with knex's `?` placeholders (`toSQL().sql`). No sort, no bitmap: the index read in the
 * page's order, whatever the averages say of the project (db/prepared.ts).
 */
export const genericListStatement = (sql: string): ReturnType<typeof preparedStatement> =>
  preparedStatementOf('herald_list', sql, { genericPlan: true, plannerSettings: LIST_PLAN });

/**
 * The smallest UUIDv7 of a millisecond: ids are compared byte by byte, and a UUIDv7 begins with its creation time in
 * milliseconds (48 bits), so `id >= idFloor(t)` is "created at or after t" to the millisecond. Times before 1970 have
 * no UUIDv7: they are floored to the first one (and times past 10889 to the last).
 */
export function idFloor(at: Date): string {
  const ms = Math.max(0, Math.min(at.getTime(), 2 ** 48 - 1));
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-0000-0000-000000000000`;
}

/**
 * How far a list's total is counted exactly: past it the answer says "at least" (`totalExact: false`). One rule for
 * every list over a table that grows with use (emails, events, contacts, executions, webhook deliveries, received mail,
 * suppressions, the audit log, a segment's members): an exact count of the rows a filter matches costs what reading
 * them costs, 0.1-5 s at 1,000,000 rows whatever the index (BENCHMARKS.md sections 37 and 41), while a page costs
 * milliseconds.
 */
export const LIST_COUNT_CAP = 1_000;

/**
 * How far a list counts the rows it finds by testing each candidate rather than by reading an index range: a contact
 * search's pattern, a dynamic segment's condition. Their matches lie all over a large project, so a count to 1,000 reads
 * tens of thousands of rows for a page that read a few thousand: a search for `grace` (2.5 % of 1,000,000 contacts),
 * 25,000 through the trigram index, 19-25 ms (BENCHMARKS.md section 60); a segment of the contacts who opened an email
 * in 30 days, ~3,300 contacts and their events, ~5 ms (section 61). Past it the total says "at least" as any capped
 * one; a segment's size is its kept member count (GET /segments/:id).
 */
export const MATCH_COUNT_CAP = 100;

/**
 * A count that stops at `cap`: past it a list's total says "at least" (`totalExact: false`). An exact count(*) over a
 * project's million rows costs ~100 ms however it is indexed; up to the cap it is one short index-only range scan.
 * Counts `cap + 1` rows, so that the caller can tell "exactly cap" from "more". `newestFirst`: the keyset column, to
 * count the rows in the page's order (newest first), so that the count finds its rows the way the page does; without
 * it the planner may pick a plan that starts where the matches are sparse (a dynamic segment over events: a merge
 * join from the oldest contacts, 1.3-3.4 s for its first 1,001 members, against 23-54 ms newest first; section 41).
 * `plannedAs` (above `cap`): the read is planned as a count to that many and run for `cap + 1` rows (plannedRead).
 */
export function cappedCount(filtered: () => Knex.QueryBuilder, cap: number = LIST_COUNT_CAP, newestFirst?: string, plannedAs: number = cap): Knex.QueryBuilder {
  const rows = filtered();
  const read = rows.clearSelect().clearOrder().select(rows.client.raw('1')).limit(rowLimit(Math.max(cap, plannedAs) + 1), { skipBinding: true });
  if (newestFirst) read.orderBy(newestFirst, 'desc');
  const qb = rows.client.queryBuilder();
  if (plannedAs <= cap) return qb.from(read.as('capped')).count('* as n');
  return qb.withMaterialized('planned', read).from(plannedRead(rows.client, 'planned', cap).as('capped')).count('* as n');
}

/**
 * The first `cap + 1` rows of a CTE planned for more. A CTE is planned for all its rows and run only as far as it is
 * read: a dynamic segment's count planned for 101 rows took a nested loop that probed the events of each contact
 * newest first (10,151 probes where the newest contacts had none; test/db/segmentPlans.test.ts), and planned for 1,001
 * a merge join that reads the events once, which then stops at the 101st member (2.9 ms against 13.8 for 1,001 on the
 * bench's 1,000,000 contacts; BENCHMARKS.md section 61).
 */
function plannedRead(client: Knex.Client, cte: string, cap: number): Knex.QueryBuilder {
  return client.queryBuilder().from(cte).select(client.raw('1')).limit(rowLimit(cap + 1), { skipBinding: true });
}

/**
 * A first page and its capped count from one read: the first `cap + 1` keys of `filtered` newest first (what the capped
 * count reads anyway), the page the newest `limit + 1` of them, fetched by `rowsOf` (given the keys as a subquery, newest
 * first: joined in that order, the rows have one plan even when it is made without the values; audience/segments.ts).
 * For a list whose page the planner may read worse than its count: a dynamic segment over events, whose page of 11 was
 * planned as a nested loop probing the events' partitions for each contact newest first (2,041 contacts for 11, 9 ms)
 * while its count's merge join read 1,001 in 2.5 ms (BENCHMARKS.md section 56). Never worse than the two reads: the page
 * is a subset of the count's rows, fetched by key. `key`: the keyset column as `filtered` names it (`c.id`).
 * `plannedAs` (above `cap`): the read is planned for that many keys and run for `cap + 1` (plannedRead).
 */
export function firstPageOfCount(filtered: () => Knex.QueryBuilder, key: string, limit: number, rowsOf: (keys: Knex.QueryBuilder) => Knex.QueryBuilder, cap: number = LIST_COUNT_CAP, plannedAs: number = cap):
  { page: Knex.QueryBuilder; count: Knex.QueryBuilder; options: PageStatementOptions } {
  const rows = filtered();
  const { client } = rows;
  const column = key.split('.').pop()!;
  const capped = rows.clearSelect().clearOrder().select(client.raw('?? AS ??', [key, column])).orderBy(key, 'desc').limit(rowLimit(Math.max(cap, plannedAs) + 1), { skipBinding: true });
  const newest = client.queryBuilder().from('counted').select(column).orderBy(column, 'desc').limit(rowLimit(limit + 1), { skipBinding: true });
  const qb = client.queryBuilder();
  return {
    page: rowsOf(newest).orderBy(key, 'desc'),
    count: plannedAs <= cap ? qb.from('counted').count('* as n') : qb.from(plannedRead(client, 'counted', cap).as('capped')).count('* as n'),
    options: { column: key, shared: { name: 'counted', query: capped } },
  };
}

/** A capped count's answer: `total` exact when `totalExact`, otherwise `cap`, meaning "at least cap". */
export function cappedTotal(counted: number, cap: number = LIST_COUNT_CAP): { total: number; totalExact: boolean } {
  return { total: Math.min(counted, cap), totalExact: counted <= cap };
}

/** Up to `limit + 1` rows, newest first, and how many match: exactly up to `cap`, otherwise at least `cap`. */
export interface CappedList<R> {
  rows: R[];
  total: number;
  totalExact: boolean;
}

/** How listCappedPage plans its statement. */
export interface CappedPageOptions {
  /** PageStatementOptions' `genericPlan`; the count is then read newest first, as a generic plan requires. */
  genericPlan?: boolean;
  /**
   * The count read newest first (by the keyset column) in a plan made for the values too: for a list whose every filter
   * is served by an index that ends in its key, so that the count reads what the page reads. Left to itself the planner
   * may count by a sequential scan stopped by its LIMIT when the matches are most of the table, which is quick only
   * while they lie evenly through it: a project or an endpoint whose rows came after the others' reads all of theirs
   * first (BENCHMARKS.md section 60).
   */
  countNewestFirst?: boolean;
  /**
   * What the count reads, when it is `filtered`'s rows without conditions that only steer the page's read (a window of
   * events' id bounds, which every event of the window meets, and which its count checked in each entry's row), and
   * the column it reads them newest first by (cappedCount's `newestFirst`).
   */
  counted?: { rows: () => Knex.QueryBuilder; newestFirst?: string };
  /** PageStatementOptions' `plannedOnce`, the request's cursor left a parameter. */
  plannedOnce?: boolean;
}

/**
 * The page and capped count queries of listCappedPage, as it sends them (exported for the EXPLAIN tests of a list's
 * plans, so that they read the very statements the list runs).
 */
export function cappedPageQueries(filtered: () => Knex.QueryBuilder, request: PageRequest, cap: number = LIST_COUNT_CAP, column = 'id', options: CappedPageOptions = {}) {
  const { genericPlan = false, countNewestFirst = genericPlan, counted } = options;
  const count = counted ? cappedCount(counted.rows, cap, counted.newestFirst) : cappedCount(filtered, cap, countNewestFirst ? column : undefined);
  return { page: pageQueries(filtered, request, column).page, count };
}

/**
 * A page and its capped count (cappedCount) in one statement, as listPage does with an exact one. `column`: the keyset
 * column as the query names it (`c.id` in a join).
 */
export async function listCappedPage<R>(
  filtered: () => Knex.QueryBuilder,
  request: PageRequest,
  cap: number = LIST_COUNT_CAP,
  rowOf: (row: Record<string, unknown>) => R = (row) => row as R,
  column = 'id',
  options: CappedPageOptions = {},
): Promise<CappedList<R>> {
  const { page, count } = cappedPageQueries(filtered, request, cap, column, options);
  const { rows, total } = await pageWithTotal(page, count, {
    column, whole: wholeOf(request), genericPlan: options.genericPlan ?? false, ...(options.plannedOnce ? { plannedOnce: { cursor: request.afterId } } : {}),
  });
  return { rows: rows.map(rowOf), ...cappedTotal(total, cap) };
}

/**
 * listCappedPage for a list whose statement binds every value (a generic plan, its count read newest first), built and
 * compiled once per shape (shapedPageCache). `filteredOf` makes the list's filtered query of the values it is given
 * (stand-ins, as the shape is compiled), which it must bind as they are. One per list: `cap` and `column` are its own.
 */
export function shapedCappedPages<V extends Record<string, string | boolean | undefined>>(cap: number = LIST_COUNT_CAP, column = 'id') {
  const pages = shapedPageCache<V>();
  return async function list<R>(db: Knex, request: PageRequest, values: V, filteredOf: (values: V) => () => Knex.QueryBuilder, rowOf: (row: Record<string, unknown>) => R): Promise<CappedList<R>> {
    const { rows, total } = await pages(db, request, values, (v, r) => ({
      ...cappedPageQueries(filteredOf(v), r, cap, column, { genericPlan: true }),
      options: { column, whole: wholeOf(r), genericPlan: true },
    }));
    return { rows: rows.map(rowOf), ...cappedTotal(total, cap) };
  };
}
