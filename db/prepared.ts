import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Knex } from 'knex';

export interface PreparedOptions {
  /**
   * Run every execution with PostgreSQL's generic plan (plan_cache_mode = force_generic_plan for this statement
   * only), never a plan made for the execution's values. For statements whose generic plan is the one wanted and whose
   * re-planning is dear: the delivery outcome write on partitioned tables (BENCHMARKS.md section 39) takes 2.0-2.25 ms
   * of backend CPU per email to plan for each execution (every partition of emails and events considered, none pruned
   * since its keys come from the rows) and 0.5 ms with the generic plan, and PostgreSQL's own choice (auto: 5 custom
   * plans per connection, then the generic one only while its estimate beats their average) went either way.
   */
  genericPlan?: boolean;
  /**
   * Planner settings in force when PostgreSQL makes the generic plan (with `genericPlan` only), set and reset around
   * each execution as plan_cache_mode is. A generic plan is made without the parameters' values, from the table's
   * averages: for a list (db/pages.ts) that can mean "this project has few emails, read them all by a bitmap and sort
   * them", which for the project that holds most of them reads millions of rows for a page. `enable_sort` and
   * `enable_bitmapscan` off leave it the index read in the page's order, the plan the statement is written for.
   */
  plannerSettings?: Record<string, string>;
}

/**
 * A named statement (prepared once per connection) run straight on a pooled pg connection, for the hottest
 * statements: knex.raw re-scans the statement's text for its `?` bindings on every call (twice: its raw formatter
 * and the dialect's positional `$n`), and builds a runner, a formatter and a query object around it, which for a
 * 1.5 KB statement run per SMTP message or HTTP request cost more API time than the statement's own round trip
 * (bench/smtp.ts with BENCH_CPU_PROF=1). Here the text is numbered once. Knex's pool is used as knex uses it (checked
 * out, released), and its `query` event is still emitted (bench's BENCH_COUNT_QUERIES counts statements by it).
 *
 * `sql` is written with knex's `?` placeholders (never `??` or an escaped `\?`); the bindings are pg values (an
 * array binds as one PostgreSQL array, as with knex.raw).
 */
export function preparedStatement(name: string, sql: string, opts: PreparedOptions = {}): (db: Knex | Knex.Transaction, bindings: readonly unknown[]) => Promise<{ rows: any[] }> { // eslint-disable-line @typescript-eslint/no-explicit-any -- rows as knex.raw has them
  if (/\?\?|\\\?/.test(sql)) throw new Error(`${name}: a prepared statement takes only plain ? placeholders`);
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  const settings = checkedSettings(name, { plan_cache_mode: 'force_generic_plan', ...opts.plannerSettings });
  return async (db, bindings) => {
    if (bindings.length !== n) throw new Error(`${name}: ${n} bindings expected, ${bindings.length} given`);
    const values = bindings as unknown[];
    return onConnection(db, { sql, bindings: values, options: { name } },
      (connection) => (opts.genericPlan ? settingsQuery(connection, name, text, values, settings) : connection.query({ name, text, values })));
  };
}

/**
 * Runs `run` on a connection of knex's pool, checked out and released as knex does (a transaction's client hands out
 * the transaction's own connection and keeps it on release), after emitting knex's `query` event with `event`, which
 * knex passes on to its instance (bench's BENCH_COUNT_QUERIES and the plan tests read statements by it).
 */
async function onConnection<T>(db: Knex | Knex.Transaction, event: { sql: string; bindings: readonly unknown[]; options?: { name: string } }, run: (connection: PgConnection) => Promise<T>): Promise<T> {
  const client = db.client as PoolClient;
  client.emit('query', { ...event, method: 'raw' });
  const connection = await client.acquireConnection();
  try {
    return await run(connection);
  } finally {
    await client.releaseConnection(connection);
  }
}

/**
 * The runner of a statement whose text is built at run time (a list's shape, a list of partitions), one per text: named
 * `<prefix>_<hash of the text>`, so that each text is prepared once per connection under a name of its own.
 */
const byText = new Map<string, ReturnType<typeof preparedStatement>>();
export function preparedStatementOf(prefix: string, sql: string, opts: PreparedOptions = {}): ReturnType<typeof preparedStatement> {
  const key = `${prefix}\0${sql}`;
  let run = byText.get(key);
  if (!run) byText.set(key, run = preparedStatement(`${prefix}_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`, sql, opts));
  return run;
}

/**
 * A statement's text (numbered: `$1`…, knex's `toSQL().toNative()`) with its values written in as literals, but for
 * those `asParameter` keeps as parameters (numbered anew, in order: `params`). A literal is the text pg would send for
 * the value, quoted (pg.escapeLiteral), of unknown type as an untyped parameter is: PostgreSQL resolves its type from
 * where it stands, as it did the parameter's. Knex's texts hold `$n` only as placeholders (values are never written
 * into them), and the literals written here are not read again.
 */
export function valuedText(text: string, bindings: readonly unknown[], asParameter: (value: unknown) => boolean): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const numbers = new Map<number, number>();
  const out = text.replace(/\$(\d+)(?!\d)/g, (_, k: string) => {
    const i = Number(k) - 1;
    if (i >= bindings.length) throw new Error(`valuedText: $${k} has no binding`);
    const value = bindings[i];
    if (!asParameter(value)) {
      const p = prepareValue(value);
      return p === null || p === undefined ? 'NULL' : pg.escapeLiteral(Buffer.isBuffer(p) ? `\\x${p.toString('hex')}` : String(p));
    }
    if (!numbers.has(i)) { params.push(value); numbers.set(i, params.length); }
    return `$${numbers.get(i)}`;
  });
  return { text: out, params };
}

const keptByFamily = new Map<string, KeptStatements>();

/**
 * A numbered statement (`$1`…) run named with its generic plan, the one PostgreSQL makes for it once per connection
 * (force_generic_plan) under `plannerSettings`, which are in force for each run alone (SettingsQuery). Its texts may
 * be as many as their values, so each connection keeps the `perConnection` of the family `prefix` it ran last
 * (KeptStatements). Two uses:
 * - a text with values written in (valuedText) whose plan turns on values that stay the same from one run to the next
 *   (a segment's condition: db/pages.ts pageStatementCache) and whose planning costs more than its run: the plan made
 *   for those values, without the planning at each run (a page of a segment over events, 2-3 ms to plan across the
 *   events' partitions against 1-2 ms to run: BENCHMARKS.md section 69);
 * - a text of a shape whose generic plan serves every value (a contact search by a term's words: db/queries/contacts.ts).
 */
export function genericStatementOf(prefix: string, text: string, opts: KeptOptions = {}): KeptRunner {
  return keptStatementOf(prefix, text, 'force_generic_plan', opts);
}

interface KeptOptions { plannerSettings?: Record<string, string>; perConnection?: number }
type KeptRunner = (db: Knex | Knex.Transaction, values: readonly unknown[]) => Promise<{ rows: any[] }>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The runners made, by family, plan mode, settings and text: a list runs its statement at every request, and its name
 * (a hash of the text) and checked settings are made once. At most KEPT_RUNNERS, the oldest forgotten first.
 */
const keptRunners = new Map<string, KeptRunner>();
const KEPT_RUNNERS = 2000;

/** A named statement of the family `prefix` (KeptStatements), run under `planCacheMode` and the planner settings. */
function keptStatementOf(prefix: string, text: string, planCacheMode: 'force_generic_plan' | 'force_custom_plan', opts: KeptOptions): KeptRunner {
  const key = `${prefix}\0${planCacheMode}\0${JSON.stringify(opts)}\0${text}`;
  const known = keptRunners.get(key);
  if (known) return known;
  const name = `${prefix}_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
  const settings = checkedSettings(name, { plan_cache_mode: planCacheMode, ...opts.plannerSettings });
  let kept = keptByFamily.get(prefix);
  if (!kept) keptByFamily.set(prefix, kept = new KeptStatements(opts.perConnection ?? 32));
  const family = kept;
  const run: KeptRunner = (db, values) => onConnection(db, { sql: text, bindings: values, options: { name } },
    (connection) => settingsQuery(connection, name, text, [...values], settings, family));
  if (keptRunners.size >= KEPT_RUNNERS) keptRunners.delete(keptRunners.keys().next().value!);
  keptRunners.set(key, run);
  return run;
}

/** Knex's client as these runners use its pool: checked out, released, and its `query` event emitted as knex does. */
type PoolClient = { emit(event: 'query', q: unknown): void; acquireConnection(): Promise<PgConnection>; releaseConnection(c: PgConnection): Promise<unknown> };

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: any[] }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  query(submittable: pg.Submittable): unknown;
}

/** pg's internals that SettingsQuery writes its messages with (pg/lib/query.js and connection.js, pg 8). */
interface PgWire {
  parse(q: { name?: string; text: string }): void;
  bind(b: { statement?: string; values?: unknown[] }): void;
  describe(d: { type: 'P'; name: string }): void;
  execute(e: { portal?: string }): void;
  sync(): void;
  submittedNamedStatements: Record<string, string>;
  parsedStatements: Record<string, string>;
}
type Callback = (err: Error | null, results: unknown) => void;
const PgQuery = pg.Query as unknown as new (config: { name: string; text: string; values: unknown[] }, values: undefined, callback: Callback) => pg.Submittable & {
  name?: string;
  prepare(c: PgWire): void;
  hasBeenParsed(c: PgWire): boolean;
  handleError(err: Error, c: PgWire): void;
};
const { prepareValue } = (pg as unknown as { utils: { prepareValue(v: unknown): unknown } }).utils;

/**
 * A statement run with settings in force for it alone: a named statement with its generic plan (preparedStatement),
 * or an unnamed one planned for its values (withSettings). In the one round trip it takes anyway: the extended protocol's
 * messages up to the Sync are `SET plan_cache_mode = force_generic_plan` (and any plannerSettings), the statement's
 * Bind (where PostgreSQL chooses the plan, reading the settings) and Execute, then `RESET plan_cache_mode` (and the
 * others). They run in one transaction (the
 * caller's, or the implicit one the Sync commits), so the session's setting is as it was afterwards whatever happens:
 * on an error the server skips to the Sync and the transaction's rollback undoes the SET.
 * Why not the pool's connections set once: knex sends its own statements with bindings unnamed, and those would get
 * generic plans too, which cannot use a partial index whose predicate names a value they bind (`status = 'QUEUED'`).
 * Why not a SET in a round trip before and a RESET after: two more round trips per execution, and behind a
 * transaction pooler each could run on another server connection (the setting left behind on one). Why not a
 * statement prepared once under the setting: it does not keep a generic plan, PostgreSQL reads plan_cache_mode at
 * each Bind (plancache.c choose_custom_plan).
 */
class SettingsQuery extends PgQuery {
  /** The results before the statement's own in the Sync's (the DEALLOCATEs and SETs sent first). */
  leading = 0;

  constructor(private readonly statement: { name?: string; text: string; values: unknown[] }, private readonly settings: [string, string][], callback: Callback, private readonly kept?: KeptStatements) {
    super(statement as { name: string; text: string; values: unknown[] }, undefined, callback);
  }

  override prepare(c: PgWire): void {
    // A named statement sent unnamed (DATABASE_PREPARED_STATEMENTS=false: db/database.ts takes the name off): planned
    // at each execution anyway. A generic plan's is sent as pg sends it (its settings are for the generic plan); one
    // planned for its values keeps its settings, but for plan_cache_mode, which only chooses among a named statement's plans.
    const unnamed = this.statement.name !== undefined && !this.name;
    const customPlan = this.settings.some(([k, v]) => k === 'plan_cache_mode' && v === 'force_custom_plan');
    if (unnamed && !customPlan) return super.prepare(c);
    const { text, values } = this.statement;
    const name = unnamed ? undefined : this.statement.name;
    const settings = unnamed ? this.settings.filter(([k]) => k !== 'plan_cache_mode') : this.settings;
    let mapped: unknown[];
    try {
      mapped = values.map((v) => prepareValue(v));
    } catch (err) {
      c.sync(); // nothing was sent: the Sync's ReadyForQuery frees the connection, as pg does
      return this.handleError(err as Error, c);
    }
    // The statements this connection no longer keeps (KeptStatements), closed before the SETs.
    for (const old of name && this.kept ? this.kept.admit(c, name) : []) {
      delete c.submittedNamedStatements[old];
      if (c.parsedStatements[old] === undefined) continue;
      delete c.parsedStatements[old];
      c.parse({ text: `DEALLOCATE ${old}` }); c.bind({}); c.execute({});
      this.leading++;
    }
    for (const [k, v] of settings) { c.parse({ text: `SET ${k} = ${v}` }); c.bind({}); c.execute({}); this.leading++; }
    if (name) {
      if (!this.hasBeenParsed(c)) {
        c.parse({ name, text });
        c.submittedNamedStatements[name] = text;
      }
      c.bind({ statement: name, values: mapped });
    } else {
      // The unnamed statement, parsed after the SETs' own unnamed ones (each Parse of it replaces the one before).
      c.parse({ text });
      c.bind({ values: mapped });
    }
    c.describe({ type: 'P', name: '' });
    c.execute({});
    for (const [k] of settings) { c.parse({ text: `RESET ${k}` }); c.bind({}); c.execute({}); }
    c.sync();
  }
}

/**
 * Which of a family of named statements each connection keeps prepared: the `max` it ran last. A family whose texts a
 * process can make without end (genericStatementOf's with values written in) would otherwise leave every one of them,
 * with its plan, in every server connection that ran it. admit() notes that `name` runs now on `c` and answers the
 * names `c` drops for it (the least recently run), which the run closes first, in its own round trip.
 */
class KeptStatements {
  private readonly byConnection = new WeakMap<PgWire, Map<string, true>>();
  constructor(private readonly max: number) {}

  admit(c: PgWire, name: string): string[] {
    let kept = this.byConnection.get(c);
    if (!kept) this.byConnection.set(c, kept = new Map());
    kept.delete(name);
    kept.set(name, true);
    const dropped: string[] = [];
    for (const old of kept.keys()) {
      if (kept.size <= this.max) break;
      kept.delete(old);
      dropped.push(old);
    }
    return dropped;
  }
}

function settingsQuery(connection: PgConnection, name: string | undefined, text: string, values: unknown[], settings: [string, string][], kept?: KeptStatements): Promise<{ rows: any[] }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const query: SettingsQuery = new SettingsQuery({ name, text, values }, settings, (err, results) => {
      if (err) return reject(err);
      // pg collects a Sync's several results: [the DEALLOCATEs and SETs…, the statement, the RESETs…]; a statement sent unnamed has its own only.
      resolve((Array.isArray(results) ? results[query.leading] : results) as { rows: any[] }); // eslint-disable-line @typescript-eslint/no-explicit-any
    }, kept);
    connection.query(query);
  });
}

/**
 * A statement planned for its values at each run, with `settings` in force for it alone: set and reset around it in its
 * one round trip, as a generic plan's settings are (SettingsQuery). `text` is numbered (`$1`…: knex's
 * `toSQL().toNative()`). Run as a named statement of the family `herald_custom` under force_custom_plan: parsed and
 * analysed once per connection, planned at each Bind for its values. A contact search's statement (1.5 KB of CTEs) cost
 * 0.3 ms less a run so than sent unnamed, parsed at each (2.03 against 2.36 ms a round trip, BENCHMARKS.md section 73);
 * force_custom_plan, because PostgreSQL's own choice (auto) takes the generic plan after five runs when its estimate
 * looks no worse, and a search's generic plan cannot read the address range of `LIKE $1` and reads the project.
 */
export async function withSettings(db: Knex | Knex.Transaction, text: string, values: readonly unknown[], settings: Record<string, string>): Promise<{ rows: any[] }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return keptStatementOf('herald_custom', text, 'force_custom_plan', { plannerSettings: settings, perConnection: 64 })(db, values);
}

/** Settings as SET takes them: a plain name and a plain value each (they are written into SQL). */
function checkedSettings(name: string, settings: Record<string, string>): [string, string][] {
  const entries = Object.entries(settings);
  for (const [k, v] of entries) if (!/^[a-z_]+$/.test(k) || !/^[a-z_0-9]+$/.test(v)) throw new Error(`${name}: a planner setting is a name and a plain value (${k} = ${v})`);
  return entries;
}
