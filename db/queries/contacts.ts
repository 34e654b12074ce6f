import type { Knex } from 'knex';
import { campaignTally } from './campaignTally';
import { isTransaction } from '../database';
import { Contact, type ContactData } from '../models/Contact';
import { recordEvents } from './events';
import { likeLiteral } from '../like';
import { perDatabase } from '../perDatabase';
import { LIST_COUNT_CAP, MATCH_COUNT_CAP, cappedPageQueries, cappedTotal, rowLimit, shapedPageCache, shapedStatementCache, runListStatement, wholeOf, type CappedList, type CappedPageOptions, type PageRequest } from '../pages';

/** A contact write: `data` keys merge into the stored data, and a `null` value deletes its key. */
export interface ContactInput {
  email: string;
  /** The id a new contact is given (a send renders for it before it exists); an existing contact keeps its own. */
  id?: string;
  /** Omitted: new contacts get the default, existing ones keep theirs. */
  subscribed?: boolean;
  /** `subscribed` is for a new contact only (a public key's request: audience/subscription.ts). */
  onlyNew?: boolean;
  data?: ContactData;
}

export interface UpsertedContact {
  contact: Contact;
  isNew: boolean;
}

/** Splits a data patch into the keys to set and the keys to delete. */
function splitData(data: ContactData | undefined): { set: ContactData; unset: string[] } {
  const set: ContactData = {};
  const unset: string[] = [];
  for (const [k, v] of Object.entries(data ?? {})) {
    if (v === null) unset.push(k);
    else set[k] = v;
  }
  return { set, unset };
}

const MERGED_DATA = '(c.data || v.set) - v.unset';
const CHANGED = `(coalesce(v.subscribed, c.subscribed), ${MERGED_DATA}) IS DISTINCT FROM (c.subscribed, c.data)`;
const UPSERT_CHANGED = `(coalesce(v.change, c.subscribed), ${MERGED_DATA}) IS DISTINCT FROM (c.subscribed, c.data)`;

/**
 * Creates or updates contacts by email, in bulk, safely under concurrency: the INSERT … ON CONFLICT DO NOTHING
 * waits for a concurrent insert of the same email and then skips it, and the UPDATE applies this call's changes
 * to whatever row exists. So concurrent upserts of one email end in one contact, never a unique-violation 500.
 * Runs both statements in the given transaction (or its own). Emails must already be normalised; duplicates
 * in `inputs` are merged in order, as if one came after the other (so an `onlyNew` after the first is no change).
 * An existing contact whose subscription changes records `contact.subscribed` or `contact.unsubscribed` (with
 * `source`) in the same transaction, as patchContact does.
 */
export async function upsertContacts(
  db: Knex | Knex.Transaction,
  projectId: string,
  inputs: ContactInput[],
  defaultSubscribed: boolean,
  source = 'api',
): Promise<UpsertedContact[]> {
  // `subscribed`: what a new contact gets (null: the default); `change`: what an existing one is set to (null: kept).
  const merged = new Map<string, { id: string | null; subscribed: boolean | null; change: boolean | null; set: ContactData; unset: string[] }>();
  for (const input of inputs) {
    const prev = merged.get(input.email);
    const { set, unset } = splitData(input.data);
    if (!prev) {
      merged.set(input.email, { id: input.id ?? null, subscribed: input.subscribed ?? null, change: input.onlyNew ? null : input.subscribed ?? null, set, unset });
    } else {
      for (const k of unset) delete prev.set[k];
      prev.unset = [...prev.unset.filter((k) => !(k in set)), ...unset];
      Object.assign(prev.set, set);
      // The contact exists by now (the earlier input made it): only a change may apply.
      if (input.subscribed !== undefined && !input.onlyNew) prev.subscribed = prev.change = input.subscribed;
    }
  }
  // Sorted by address: concurrent upserts lock the contacts they share in the same order (no deadlock).
  const rows = [...merged].map(([email, v]) => ({ email, id: v.id, subscribed: v.subscribed, change: v.change, set: v.set, unset: v.unset }))
    .sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
  if (rows.length === 0) return [];
  const changes = rows.some((r) => r.change !== null);
  const work = async (trx: Knex.Transaction) => {
    const byEmail = new Map<string, UpsertedContact>();
    // Usually one round. A contact that a concurrent transaction deletes while our INSERT saw it and our UPDATE waited
    // on it is neither inserted nor updated: the next round inserts it again, as if this upsert had come after.
    for (let pending = rows, round = 0; pending.length > 0; pending = pending.filter((r) => !byEmail.has(r.email)), round++) {
      if (round === 3) throw new Error('contacts kept being deleted while they were upserted');
      const payload = JSON.stringify(pending);
      const inserted = await trx.raw(
        `INSERT INTO contacts (id, project_id, email, subscribed, data)
         SELECT coalesce(v.id, herald_uuidv7()), ?::uuid, v.email, coalesce(v.subscribed, ?::boolean), v.set
         FROM jsonb_to_recordset(?::jsonb) AS v(id uuid, email text, subscribed boolean, set jsonb, unset text[])
         ON CONFLICT (project_id, email) DO NOTHING
         RETURNING *`,
        [projectId, defaultSubscribed, payload],
      );
      for (const r of inserted.rows as Record<string, unknown>[]) byEmail.set(r.email as string, { contact: Contact.fromDatabaseJson(r), isNew: true });
      if (inserted.rows.length === pending.length) break;
      // Existing contacts (those not inserted just now): apply the changes; updated_at moves only on a real change.
      // A separate statement on purpose: it takes a new snapshot, so it sees a row that a concurrent upsert committed
      // while our INSERT waited on it (one statement with both would not, and would lose that contact).
      // When a subscription may change, the old one comes from a locked read in the same statement (as in
      // patchContact), in address order, so that a concurrent change cannot slip between and each change is seen once.
      const insertedNow = [...byEmail.keys()];
      const updated = await trx.raw(
        `UPDATE contacts c SET
           subscribed = coalesce(v.change, c.subscribed),
           data = ${MERGED_DATA},
           updated_at = CASE WHEN ${UPSERT_CHANGED} THEN now() ELSE c.updated_at END
         FROM jsonb_to_recordset(?::jsonb) AS v(email text, change boolean, set jsonb, unset text[])
         ${changes ? `, (SELECT id, subscribed AS was FROM contacts
                         WHERE project_id = ?::uuid AND email = ANY(?::text[]) AND NOT (email = ANY(?::text[]))
                         ORDER BY email FOR UPDATE) o` : ''}
         WHERE c.project_id = ?::uuid AND c.email = v.email AND NOT (c.email = ANY(?::text[])) ${changes ? 'AND c.id = o.id' : ''}
         RETURNING c.*${changes ? ', o.was' : ''}`,
        [payload, ...(changes ? [projectId, pending.map((r) => r.email), insertedNow] : []), projectId, insertedNow],
      );
      const flips: { name: string; contactId: string; data: { source: string } }[] = [];
      for (const { was, ...r } of updated.rows as (Record<string, unknown> & { was?: boolean })[]) {
        const contact = Contact.fromDatabaseJson(r);
        byEmail.set(contact.email, { contact, isNew: false });
        if (was !== undefined && was !== contact.subscribed) {
          flips.push({ name: contact.subscribed ? 'contact.subscribed' : 'contact.unsubscribed', contactId: contact.id, data: { source } });
        }
      }
      await recordEvents(trx, projectId, flips);
    }
    return [...merged.keys()].map((email) => byEmail.get(email)!);
  };
  // Both statements must see one consistent outcome: in the caller's transaction, or in one of their own.
  return isTransaction(db) ? work(db) : db.transaction(work);
}

/**
 * Applies a PATCH to one contact of the project (PATCH /contacts/:id, an automation's UPDATE_CONTACT step);
 * undefined when it does not exist there. A change of subscription records `contact.subscribed` or
 * `contact.unsubscribed` in the same transaction, so automations listening to those events hear it.
 */
export async function patchContact(db: Knex | Knex.Transaction, projectId: string, id: string, patch: { subscribed?: boolean; data?: ContactData }, source = 'api'): Promise<Contact | undefined> {
  const { set, unset } = splitData(patch.data);
  const work = async (trx: Knex.Transaction) => {
    // The old subscription comes from a locked read in the same statement, so a concurrent patch cannot slip between.
    const res = await trx.raw(
      `UPDATE contacts c SET
         subscribed = coalesce(v.subscribed, c.subscribed),
         data = ${MERGED_DATA},
         updated_at = CASE WHEN ${CHANGED} THEN now() ELSE c.updated_at END
       FROM (SELECT ?::boolean AS subscribed, ?::jsonb AS set, ?::text[] AS unset) v,
            (SELECT subscribed AS was FROM contacts WHERE project_id = ?::uuid AND id = ?::uuid FOR UPDATE) o
       WHERE c.project_id = ?::uuid AND c.id = ?::uuid
       RETURNING c.*, o.was`,
      [patch.subscribed ?? null, JSON.stringify(set), unset, projectId, id, projectId, id],
    );
    const row = res.rows[0] as (Record<string, unknown> & { was: boolean }) | undefined;
    if (!row) return undefined;
    const { was, ...stored } = row;
    const contact = Contact.fromDatabaseJson(stored);
    if (was !== contact.subscribed) {
      await recordEvents(trx, projectId, [{ name: contact.subscribed ? 'contact.subscribed' : 'contact.unsubscribed', contactId: id, data: { source } }]);
    }
    return contact;
  };
  return isTransaction(db) ? work(db) : db.transaction(work);
}

export interface ContactFilter {
  subscribed?: boolean;
  /** Lower-case substring of the email. */
  search?: string;
}

/** LIKE pattern for a literal substring (the user's % and _ are not wildcards). */
const containsPattern = (s: string): string => `%${likeLiteral(s)}%`;

/**
 * The LIKE pattern a search term asks the trigram index with, when it is not the term itself (the whole term is then
 * checked on the rows found, by holdsTerm: a literal substring, as the plain pattern is); undefined: the term's own
 * pattern, no other check needed.
 *
 * - A term with an address's `@` (a support person pastes one): its local part, since the domain's trigrams (`exa`,
 *   `mpl`, `.co`, `com`…) are in most addresses, and the index read their long lists for every such search (40 ms at
 *   300,000 contacts, 300 ms at 1,000,000: BENCHMARKS.md section 20).
 * - Then, when one of its words is long and holds a digit (`a9ea50495030` of `ruth.a9ea50495030`, an id or a year in
 *   an address), that word alone: the trigrams of the others are common (a first name's), and reading their lists cost
 *   3-9.5 ms against 0.9-1.8 for the word's (BENCHMARKS.md section 61).
 * - Otherwise, when it has two words or more and each has three characters or more (`adele.e87`, `john.smith`), the
 *   words apart (`%adele%e87%`): in the term as it is, each word next to a separator is bounded there, and pg_trgm
 *   asks for the trigrams of a word's edge too, `  e` and ` e8` of `.e87`, whose lists hold every address with a word
 *   that begins with an e (`example`): 13-17 ms for such a term against 3-6 with its words' inner trigrams alone
 *   (BENCHMARKS.md section 63). A word of one or two characters has no inner trigram, and its edges are then all the
 *   index knows of it (`dennis.69`): such a term keeps its own pattern.
 */
export function searchPattern(search: string): string | undefined {
  const at = search.indexOf('@');
  const local = at >= 3 ? search.slice(0, at) : search;
  // pg_trgm's words: runs of letters and digits.
  const words = local.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);
  const telling = words.filter((w) => w.length >= 6 && /\p{N}/u.test(w)).sort((a, b) => b.length - a.length)[0];
  if (telling !== undefined) return telling === search ? undefined : containsPattern(telling);
  if (words.length >= 2 && words.every((w) => w.length >= 3)) return `%${words.join('%')}%`;
  return local === search ? undefined : containsPattern(local);
}

/**
 * The whole term, as a literal substring, checked on the rows that a looser pattern (searchPattern) found through the
 * trigram index. Written on `email || ''`, which no index holds: the check stays out of the index scan (which would
 * otherwise ask for the term's edge trigrams too, what searchPattern avoids), and PostgreSQL estimates it from the
 * pattern's own letters (a long literal is rare) rather than as a third of the rows, strpos's default. With that third,
 * the read of `adele.372` (five addresses begin with it, none holds it further in) was estimated at 3,370 matches of
 * 1,000,000, because one entry of the column's histogram happened to hold `%adele%372%`; PostgreSQL then read the
 * project newest first to find 101 of them, all 1,000,000 rows, in 400 ms, where the trigram index took 1-2 (BENCHMARKS.md
 * section 73). A term that specific is rare: the estimate should say so.
 */
function holdsTerm(q: Knex.QueryBuilder, contains: string): Knex.QueryBuilder {
  return q.whereRaw("(email || '') LIKE ?", [contains]);
}

function searchFor(q: Knex.QueryBuilder, search: string): void {
  const pattern = searchPattern(search);
  if (pattern === undefined) q.where('email', 'like', containsPattern(search));
  else holdsTerm(q.where('email', 'like', pattern), containsPattern(search));
}

/** The filtered, project-scoped query of a list (exported for the EXPLAIN tests of its plans). */
export function filteredContacts(db: Knex, projectId: string, filter: ContactFilter): Knex.QueryBuilder {
  const q = db('contacts').where('project_id', projectId);
  if (filter.subscribed !== undefined) q.where('subscribed', filter.subscribed);
  if (filter.search) searchFor(q, filter.search);
  return q;
}

/**
 * A list's total is counted exactly up to this many contacts; past it the answer says "at least" (`totalExact: false`),
 * as GET /emails does (emails/emails.ts EMAIL_COUNT_CAP: an exact count of a million rows costs ~100 ms however it is
 * indexed); the console's Contacts page lists 1,000,000 contacts in a few ms (BENCHMARKS.md section 20).
 */
export const CONTACT_COUNT_CAP = LIST_COUNT_CAP;

/**
 * How far a list of contacts counts its total: a search to MATCH_COUNT_CAP (a search is for finding someone, and
 * counting further cost more than the page: the matches of a common term are spread over the whole project, and 1,001
 * of `grace` read 25,000 through the trigram index or 40,000 newest first, 23-25 ms, while its page of 50 read 2,000,
 * 0.6 ms; 101 are found among the newest 4,000, 1.5-2.7 ms: BENCHMARKS.md section 60), otherwise CONTACT_COUNT_CAP.
 */
export const contactCountCap = (filter: ContactFilter): number => (filter.search ? MATCH_COUNT_CAP : CONTACT_COUNT_CAP);

/**
 * The two queries of a list page without a search as listContacts sends them (a search's: searchStatement): `limit + 1`
 * rows newest first after `afterId`, and the filter's capped count, read newest first too: with its generic plan it
 * must be (db/pages.ts cappedCount).
 */
export function contactListQueries(db: Knex, projectId: string, filter: ContactFilter, page: PageRequest) {
  return cappedPageQueries(() => filteredContacts(db, projectId, filter), page, contactCountCap(filter), 'id', contactListOptions(filter));
}

/**
 * Whether a list of contacts runs with its generic plan (db/pages.ts `genericPlan`): every contact, or the subscribed or
 * unsubscribed ones (an equality on the leading columns of contacts_project_subscribed_id_idx, which ends in id), read
 * newest first and stopped by the LIMIT whatever the value; planning it afresh took 0.25-0.4 ms of the 0.5-0.65 ms the
 * statement cost (pg_stat_statements, BENCHMARKS.md section 58). A search is planned for its term: how many addresses
 * hold it decides between the trigram index and the newest first read.
 */
export const contactListGeneric = (filter: ContactFilter): boolean => !filter.search;

/** How a list of contacts runs (contactListQueries says why the count is read newest first). */
const contactListOptions = (filter: ContactFilter): CappedPageOptions => ({ genericPlan: contactListGeneric(filter), countNewestFirst: true });

/** plainPage's statements, built and compiled once per shape (with or without `subscribed`, the limit, first page or not). */
const plainPages = shapedPageCache<{ projectId: string; subscribed: boolean | undefined }>();

/** A page of contacts without a search, and its capped count, in one statement (a search's: searchStatement). */
function plainPage(db: Knex, projectId: string, filter: ContactFilter, page: PageRequest) {
  return plainPages(db, page, { projectId, subscribed: filter.subscribed }, (v, r) => {
    const { page: rows, count } = contactListQueries(db, v.projectId, { subscribed: v.subscribed }, r);
    return { page: rows, count, options: { column: 'id', whole: wholeOf(r), genericPlan: true } };
  });
}

/**
 * Where a page of contacts begins: after an id (newest first), or, in a search, after an address that begins with the
 * term (searchStatement: those come first, in address order).
 */
export interface ContactPageRequest extends PageRequest {
  afterEmail?: string;
}

/** The position a search's next page begins after, for one of its rows (the API's cursor of a page's last row). */
export function searchPositionOf(search: string, contact: { id: string; email: string }): { afterEmail: string } | { afterId: string } {
  return contact.email.startsWith(search) ? { afterEmail: contact.email } : { afterId: contact.id };
}

/**
 * A search's page and capped count as one statement, of pageStatement's shape (db/pages.ts). The addresses that begin with
 * the term come first, in address order, then those that hold it elsewhere, newest first.
 *
 * Why two parts: a person searching types the beginning of an address (a name, `niklaus.8`), and the addresses that
 * begin with it are one range of the (project_id, email) B-tree, read in its order and stopped by the LIMIT (a C
 * collation's LIKE 'term%': the embedded cluster's, docker-compose.yml's; README, "How the embedded database works"). Newest
 * first among every match, a term held by 1,500 addresses cost the trigram index all of them and their rows, 21-83 ms at
 * 1,000,000 contacts, for a page of 51 (BENCHMARKS.md section 64). The rest, found through the trigram index as before
 * (searchPattern), is read only as far as the page and the count still need it: not at all when 101 addresses begin
 * with the term.
 *
 * `pre`: up to MATCH_COUNT_CAP + 1 addresses that begin with the term, in address order (the count's first part, and
 * a first page's); `p0`: the page's rows among them; `rest`: the others, newest first, as many as the count still needs,
 * but only when the page itself reads past `p0` (`p1`). A page that addresses beginning with the term fill counts
 * those alone and says "at least" (`__total_whole` false; listContacts' totalExact): the others are read through the
 * trigram index, whose lists of a name's trigrams hold every address with that name, 10-45 ms for `evelyn.ed` at
 * 1,000,000 contacts where its page of 51 beginning with it cost 1-2 ms (BENCHMARKS.md section 68). The page that
 * reaches them counts them.
 */
export function searchStatement(db: Knex, projectId: string, filter: ContactFilter & { search: string }, page: ContactPageRequest, opts: { byteOrder?: boolean; keyless?: boolean } = {}): Knex.Raw {
  return searchStatementOf(db, searchValues(projectId, filter, page, opts.byteOrder ?? false), page.limit, { keyless: opts.keyless });
}

/**
 * A project that holds at least this share of the contacts reads a rare term's other matches from the trigram index
 * without its key (searchStatementOf `keyless`, projectShare).
 */
export const KEYLESS_SHARE = 0.5;

/** How long a process keeps the projects' shares it read (projectShare). */
const SHARES_TTL_MS = 10 * 60_000;

const knownShares = perDatabase((): { read?: Promise<Map<string, number>>; at: number } => ({ at: 0 }));

/**
 * A project's share of the contacts as PostgreSQL's statistics have it (pg_stats' most common values of
 * contacts.project_id and their frequencies, from the last ANALYZE; 0 for a project not among them), read once per
 * database every SHARES_TTL_MS.
 *
 * Why: the trigram index holds the project as a key of its own (btree_gin), whose list is every contact of the project.
 * Asked with it, the index scan steps through that list for each candidate of the term's trigrams; for a project that
 * holds most of the table the key rules out almost nothing and costs most of the read: `%anita%9bc%` at 1,000,000
 * contacts (91 % of the table) took 1.29 ms and 122 pages with the key, 0.70 ms and 81 pages without it, the other
 * projects' candidates (3) dropped by the rows' own check (BENCHMARKS.md section 75). For a project with a small share,
 * the key is what keeps its search to its own candidates, and it stays. Only a term read by searchPattern's pattern
 * (rare: a pasted address, a word with digits, words of three letters or more) goes without it: its statement runs with
 * its generic plan, always the trigram index for the rest, made without the project's value, and this is the one fact
 * about the project that plan cannot know. A term asked with its own pattern keeps the key whatever the project: its
 * statement is planned for its values, and for a common one (`race.`) the plan that reads the project's newest
 * contacts first, by the key's B-tree, is the fast one.
 */
export async function projectShare(db: Knex, projectId: string): Promise<number> {
  const known = knownShares(db);
  if (!known.read || Date.now() - known.at > SHARES_TTL_MS) {
    known.at = Date.now();
    const read = db.raw(
      `SELECT m.project_id::text AS project_id, m.share
       FROM pg_stats s, unnest(s.most_common_vals::text::uuid[], s.most_common_freqs) AS m(project_id, share)
       WHERE s.schemaname = current_schema() AND s.tablename = 'contacts' AND s.attname = 'project_id'`,
    ).then(
      (r: { rows: { project_id: string; share: number }[] }) => new Map(r.rows.map((row) => [row.project_id, Number(row.share)])),
      // Not known: the key stays (share 0), and the next search asks again.
      () => { known.at = 0; return new Map<string, number>(); },
    );
    known.read = read;
  }
  return (await known.read!).get(projectId) ?? 0;
}

const byteOrders = new WeakMap<Knex, Promise<boolean>>();

/**
 * Whether contacts' addresses are compared byte by byte (the C or POSIX collation: the embedded cluster's and
 * docker-compose.yml's database, or the column's own), asked once per database: a search then reads the addresses that
 * begin with its term as the range [term, term + U+10FFFF) (SearchValues `upper`), which a generic plan reads from the
 * address B-tree as well. In another collation that range need not be the prefix's (a locale's order weighs letters,
 * accents and case apart, and may give U+10FFFF no weight at all), and the search asks `LIKE 'term%'`, planned for its
 * values, as before.
 */
export function addressesInByteOrder(db: Knex): Promise<boolean> {
  let known = byteOrders.get(db);
  if (!known) {
    known = db.raw(
      `SELECT coalesce(c.collname IN ('C', 'POSIX')
                OR (c.collname = 'default' AND d.datlocprovider = 'c' AND d.datcollate IN ('C', 'POSIX')), false) AS bytes
       FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation, pg_database d
       WHERE a.attrelid = 'contacts'::regclass AND a.attname = 'email' AND d.datname = current_database()`,
    ).then((r) => r.rows[0]?.bytes === true);
    byteOrders.set(db, known);
    // Asked again after a failure (the database not reachable yet), not answered with it forever.
    known.catch(() => byteOrders.delete(db));
  }
  return known;
}

/**
 * What a search's statement binds, by name: the term's patterns made once (searchPattern), the project, the filter and
 * where the page begins. One text per shape (listContacts' shapedStatementCache): which of these are given (`holds`:
 * whether the trigram read asks with searchPattern's pattern rather than the term's own) and the limit.
 */
type SearchValues = {
  projectId: string;
  subscribed: boolean | undefined;
  /**
   * In a database that compares addresses byte by byte (addressesInByteOrder), the end of the range of addresses that
   * begin with the term (`term` its start): the term followed by U+10FFFF, the last code point, above every string
   * that begins with the term but those in which U+10FFFF (a noncharacter) follows it. A range rather than
   * `LIKE 'term%'`, so that a generic plan reads it from the address B-tree too (runSearch): PostgreSQL turns a LIKE
   * prefix into that range only for a constant. Otherwise undefined, and `prefix` given.
   */
  upper: string | undefined;
  /** In another collation, the addresses that begin with the term: a LIKE prefix. */
  prefix: string | undefined;
  /** The trigram read's pattern: searchPattern's, or the term's own. */
  like: string;
  /** The term's own pattern, checked on what `like` found (holdsTerm) when `like` is searchPattern's; otherwise undefined. */
  holds: string | undefined;
  term: string;
  afterEmail: string | undefined;
  afterId: string | undefined;
};

function searchValues(projectId: string, filter: ContactFilter & { search: string }, page: ContactPageRequest, byteOrder: boolean): SearchValues {
  const { search } = filter;
  const pattern = searchPattern(search);
  return {
    projectId, subscribed: filter.subscribed, upper: byteOrder ? `${search}\u{10FFFF}` : undefined, prefix: byteOrder ? undefined : `${likeLiteral(search)}%`,
    like: pattern ?? containsPattern(search),
    holds: pattern === undefined ? undefined : containsPattern(search), term: search, afterEmail: page.afterEmail, afterId: page.afterId,
  };
}

/** What the part of a search that begins with its term binds (prefixPages). */
type PrefixValues = Omit<SearchValues, 'like' | 'holds'>;

/**
 * searchStatement of its values (searchValues). `prefixOnly`: the part that begins with the term alone (prefixPages),
 * whose `__total_whole` is then true when that part did not fill the page (the whole statement must be run).
 */
function searchStatementOf(db: Knex, v: PrefixValues & Partial<Pick<SearchValues, 'like' | 'holds'>>, limit: number, { prefixOnly = false, keyless = false } = {}): Knex.Raw {
  const cap = rowLimit(MATCH_COUNT_CAP + 1);
  const rowsWanted = rowLimit(limit + 1);
  const contacts = (trigrams = false) => {
    // `IS TRUE`: the same condition, which no index can serve, so the trigram read leaves the project to the rows (keyless).
    const q = trigrams && keyless ? db('contacts').whereRaw('(project_id = ?) IS TRUE', [v.projectId]) : db('contacts').where('project_id', v.projectId);
    if (v.subscribed !== undefined) q.where('subscribed', v.subscribed);
    return q;
  };
  // The two parts as the other lists build their conditions (filteredContacts); strpos > 1: held, and not at the start.
  const begins = () => (v.upper !== undefined ? contacts().where('email', '>=', v.term).where('email', '<', v.upper) : contacts().where('email', 'like', v.prefix!))
    .select('id', 'email');
  const holds = () => {
    const q = contacts(true).where('email', 'like', v.like!);
    if (v.holds !== undefined) holdsTerm(q, v.holds);
    return q.whereRaw('strpos(email, ?) > 1', [v.term]).select('id');
  };
  const bindings: unknown[] = [];
  const sql = (q: Knex.QueryBuilder) => {
    const compiled = q.toSQL();
    bindings.push(...compiled.bindings);
    return compiled.sql;
  };
  // A LIMIT that subtracts what a part before found is not knex's to write: the parts are compiled, then joined here.
  const ctes = [`pre AS MATERIALIZED (${sql(begins().orderBy('email'))} LIMIT ${cap})`];
  if (v.afterId === undefined && v.afterEmail === undefined) ctes.push(`p0 AS MATERIALIZED (SELECT id, email FROM pre ORDER BY email LIMIT ${rowsWanted})`);
  else if (v.afterEmail !== undefined) ctes.push(`p0 AS MATERIALIZED (${sql(begins().where('email', '>', v.afterEmail).orderBy('email'))} LIMIT ${rowsWanted})`);
  else ctes.push('p0 AS MATERIALIZED (SELECT id, email FROM pre WHERE false)');
  // LIMIT 0 when p0 fills the page: PostgreSQL then never starts the part's scan.
  const readsRest = `(SELECT count(*) FROM p0) < ${rowsWanted}`;
  if (!prefixOnly) {
    ctes.push(`rest AS MATERIALIZED (${sql(holds().orderBy('id', 'desc'))} LIMIT CASE WHEN ${readsRest} THEN ${cap} - (SELECT count(*) FROM pre) ELSE 0 END)`);
    if (v.afterId === undefined && v.afterEmail === undefined) ctes.push(`p1 AS (SELECT id FROM rest ORDER BY id DESC LIMIT ${rowsWanted} - (SELECT count(*) FROM p0))`);
    else if (v.afterEmail !== undefined) ctes.push(`p1 AS (${sql(holds().orderBy('id', 'desc'))} LIMIT ${rowsWanted} - (SELECT count(*) FROM p0))`);
    else ctes.push(`p1 AS (${sql(holds().where('id', '<', v.afterId!).orderBy('id', 'desc'))} LIMIT ${rowsWanted})`);
  }
  // The page's keys, fetched by key; a page that is empty is one row of NULLs, and still has its count.
  bindings.push(v.projectId);
  return db.raw(`WITH ${ctes.join(', ')},
      keys AS (SELECT 0 AS part, id FROM p0${prefixOnly ? '' : ' UNION ALL SELECT 1 AS part, id FROM p1'})
      SELECT c.*, (SELECT count(*) FROM pre)${prefixOnly ? '' : ' + (SELECT count(*) FROM rest)'} AS __total, ${readsRest} AS __total_whole
      FROM (SELECT 1) AS one
      LEFT JOIN (keys JOIN contacts c ON c.project_id = ? AND c.id = keys.id) ON true
      ORDER BY keys.part, CASE WHEN keys.part = 0 THEN c.email END, c.id DESC`, bindings as Knex.RawBinding[]);
}

/**
 * Searches' statements, built and compiled once per shape (db/pages.ts shapedStatementCache): knex built one in
 * 0.35 ms, of a search's 4.3-4.8 in the process (BENCHMARKS.md section 70).
 *
 * A term read through the index by searchPattern's pattern (`holds` given: a pasted address, a word with digits, words
 * of three letters or more) runs with its shape's generic plan where addresses are in byte order (`upper` given): such
 * a term is rare (holdsTerm), its plan is always the address range for the part that begins with it and the trigram
 * index for the rest, and planning it for its values cost 0.52-0.56 ms a search (pg_stat_statements, BENCHMARKS.md
 * section 73) of ~3. A term asked with its own pattern
 * (`grace`, `.com`) is planned for its values: how many addresses hold it decides between the trigram index and the
 * project's newest first.
 */
const searches = shapedStatementCache<SearchValues>();

/**
 * A term asked with its own pattern, on a first page or after an address that begins with it, is first asked for the
 * addresses that begin with it alone (searchStatementOf `prefixOnly`), with that statement's generic plan (the range of
 * the address B-tree whatever the term): when they fill the page, which is how a person typing a name's first letters
 * searches a large project (`grace`, the picker's five letters), that is the answer, as the whole statement would give
 * it (its count of those alone, "at least"), without the planning of the whole statement for the term's values
 * (0.52-0.56 ms); when they do not, the whole statement follows, planned for them.
 */
const prefixPages = shapedStatementCache<PrefixValues>();

/** searchStatement as listContacts runs it: compiled once per shape (searches), with the request's values bound, generic or planned for them. */
async function runSearch(db: Knex, projectId: string, filter: ContactFilter & { search: string }, page: ContactPageRequest) {
  const values = searchValues(projectId, filter, page, await addressesInByteOrder(db));
  if (values.upper !== undefined && values.holds === undefined && values.afterId === undefined) {
    const { like: _like, holds: _holds, ...prefixValues } = values;
    const filled = await runListStatement(db, prefixPages(String(page.limit), prefixValues, (standIns) => searchStatementOf(db, standIns, page.limit, { prefixOnly: true })), 'id', { genericPlan: true });
    if (filled.totalWhole === false) return filled;
  }
  const keyless = values.holds !== undefined && (await projectShare(db, projectId)) >= KEYLESS_SHARE;
  const statement = searches(`${page.limit}${keyless ? ' keyless' : ''}`, values, (standIns) => searchStatementOf(db, standIns, page.limit, { keyless }));
  return runListStatement(db, statement, 'id', { genericPlan: values.holds !== undefined && values.upper !== undefined });
}

/** One page of contacts plus the total matching the filter, capped (contactCountCap; db/pages.ts: one statement). */
export async function listContacts(db: Knex, projectId: string, filter: ContactFilter, page: ContactPageRequest): Promise<CappedList<Contact>> {
  const { rows, total, totalWhole } = filter.search
    ? await runSearch(db, projectId, { ...filter, search: filter.search }, page)
    : await plainPage(db, projectId, filter, page);
  const capped = cappedTotal(total, contactCountCap(filter));
  // A search whose page the addresses beginning with the term filled counted those alone: at least `total`.
  return { rows: rows.map((row) => Contact.fromDatabaseJson(row)), total: capped.total, totalExact: capped.totalExact && totalWhole !== false };
}

export async function getContact(db: Knex, projectId: string, id: string): Promise<Contact | undefined> {
  return Contact.query(db).findOne({ project_id: projectId, id });
}

/**
 * Deletes one contact of the project (its emails and events go with it: emails_contact_fkey, events_contact_fkey);
 * false when it does not exist there. Its campaign emails not sent yet leave their campaigns' counts (campaign_stats)
 * in the same statement, since they never will be sent; what was sent stays counted, as the campaign's history.
 */
export async function deleteContact(db: Knex, projectId: string, id: string): Promise<boolean> {
  const { rows } = await db.raw(
    `WITH unsent AS (
       SELECT project_id, campaign_id, variant FROM emails
       WHERE project_id = ?::uuid AND contact_id = ?::uuid AND campaign_id IS NOT NULL AND NOT is_test AND status IN ('QUEUED', 'SENDING')),
     gone AS (DELETE FROM contacts WHERE project_id = ?::uuid AND id = ?::uuid RETURNING 1),
     ${campaignTally('(SELECT u.project_id, u.campaign_id, u.variant, -1 AS total, -1 AS queued FROM unsent u WHERE EXISTS (SELECT 1 FROM gone))', ['total', 'queued'])}
     SELECT count(*)::int AS n FROM gone`,
    [projectId, id, projectId, id],
  );
  return rows[0].n > 0;
}

/** What an erased address is replaced with wherever it stays (a reserved domain: RFC 2606 `.invalid`). */
export const ERASED_ADDRESS = 'erased@redacted.invalid';

export interface Erasure {
  /** Emails to the address that are not the contact's (a campaign's test copies): kept, redacted. */
  emailsRedacted: number;
  /** The contact's own emails, deleted with it (emails_contact_fkey), as deleteContact does. */
  emailsDeleted: number;
  eventsRedacted: number;
  webhookDeliveriesRedacted: number;
  rawMessagesDeleted: number;
  rawMessagesRedacted: number;
  attachmentsDeleted: number;
  auditEntriesRedacted: number;
}

/** A PostgreSQL regular expression matching `text` literally (an address's dots and pluses are not operators). */
const literalRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Erases one contact of the project (DELETE /contacts/:id?erase=true), in the caller's transaction: its address and
 * what its emails said are removed from every row that keeps them after the contact is gone, then the contact is
 * deleted by deleteContact's statement (its emails, events, memberships and executions go with it; the counts of its
 * campaigns stay right). Undefined when the contact is not in the project.
 *
 * - emails to the address that are not the contact's (a campaign's test copies have no contact): address, name,
 *   subject, body and headers replaced; other emails' Reply-To and headers that name the address: the address replaced;
 * - files (attachments, submitted raw messages) of the contact's emails: deleted when no other email uses them; a raw
 *   message shared with other recipients (an SMTP submission to several) keeps its bytes but for the address;
 * - events and webhook deliveries whose data names the address (the contact's own events go with it);
 * - audit entries that name the address (a suppression's entry is named by it): named by `hash` instead.
 * The address is matched without regard to case. Rows are found by the address inside JSON and bytes, which reads the
 * project's events, deliveries and emails once: erasure is rare, and completeness matters more than speed here.
 */
export async function eraseContactRows(trx: Knex.Transaction, projectId: string, id: string, hash: string): Promise<(Erasure & { email: string }) | undefined> {
  const contact = await trx('contacts').where({ project_id: projectId, id }).forUpdate().first('email');
  if (!contact) return undefined;
  const email = contact.email as string;
  const pattern = literalRegex(email);
  const { rows: [files] } = await trx.raw(
    `WITH mine AS (SELECT id, attachment_ids, raw_message_id, created_at FROM emails WHERE project_id = ?::uuid AND (contact_id = ?::uuid OR to_email = ?)),
     -- A file is shared only by the emails of its send request, all stored by one statement (one created_at).
     others AS (SELECT o.attachment_ids, o.raw_message_id FROM emails o
                WHERE o.project_id = ?::uuid AND o.created_at IN (SELECT created_at FROM mine) AND o.id NOT IN (SELECT id FROM mine)),
     gone_files AS (
       DELETE FROM attachments a WHERE a.project_id = ?::uuid AND a.id IN (SELECT unnest(attachment_ids) FROM mine)
         AND NOT EXISTS (SELECT 1 FROM others o WHERE a.id = ANY (o.attachment_ids))
       RETURNING 1),
     gone_raws AS (
       DELETE FROM raw_messages r WHERE r.project_id = ?::uuid AND r.id IN (SELECT raw_message_id FROM mine)
         AND NOT EXISTS (SELECT 1 FROM others o WHERE o.raw_message_id = r.id)
       RETURNING 1),
     shared_raws AS (
       UPDATE raw_messages r SET content = decode(regexp_replace(encode(r.content, 'escape'), ?, ?, 'gi'), 'escape')
       WHERE r.project_id = ?::uuid AND r.id IN (SELECT raw_message_id FROM mine) AND r.id IN (SELECT raw_message_id FROM others)
       RETURNING 1)
     SELECT (SELECT count(*) FROM gone_files)::int AS files, (SELECT count(*) FROM gone_raws)::int AS raws,
            (SELECT count(*) FROM shared_raws)::int AS shared, (SELECT count(*) FROM mine)::int AS mine`,
    [projectId, id, email, projectId, projectId, projectId, pattern, ERASED_ADDRESS, projectId],
  );
  // The bytes changed: their size follows (a separate statement: a row may be updated once per statement).
  if (files.shared > 0) {
    await trx.raw(`UPDATE raw_messages SET size = length(content) WHERE project_id = ?::uuid AND size <> length(content)
                   AND id IN (SELECT raw_message_id FROM emails WHERE project_id = ?::uuid AND (contact_id = ?::uuid OR to_email = ?))`, [projectId, projectId, id, email]);
  }
  const redacted = await trx.raw(
    `UPDATE emails SET to_email = ?, to_name = NULL, subject = NULL, html = NULL, headers = '{}'::jsonb, reply_to = NULL, raw_message_id = NULL, attachment_ids = '{}', updated_at = now()
     WHERE project_id = ?::uuid AND to_email = ? AND contact_id IS DISTINCT FROM ?::uuid`,
    [ERASED_ADDRESS, projectId, email, id],
  );
  await trx.raw(
    `UPDATE emails SET reply_to = CASE WHEN lower(reply_to) = ? THEN ? ELSE reply_to END,
                       headers = regexp_replace(headers::text, ?, ?, 'gi')::jsonb
     WHERE project_id = ?::uuid AND contact_id IS DISTINCT FROM ?::uuid AND (lower(reply_to) = ? OR headers::text ~* ?)`,
    [email, ERASED_ADDRESS, pattern, ERASED_ADDRESS, projectId, id, email, pattern],
  );
  const events = await trx.raw(
    `UPDATE events SET data = regexp_replace(data::text, ?, ?, 'gi')::jsonb
     WHERE project_id = ?::uuid AND contact_id IS DISTINCT FROM ?::uuid AND data::text ~* ?`,
    [pattern, ERASED_ADDRESS, projectId, id, pattern],
  );
  const deliveries = await trx.raw(
    `UPDATE webhook_deliveries SET payload = regexp_replace(payload::text, ?, ?, 'gi')::jsonb
     WHERE project_id = ?::uuid AND payload::text ~* ?`,
    [pattern, ERASED_ADDRESS, projectId, pattern],
  );
  const audit = await trx.raw(
    `UPDATE audit_log SET resource_id = CASE WHEN lower(resource_id) = ? THEN ? ELSE resource_id END,
                          details = regexp_replace(details::text, ?, ?, 'gi')::jsonb
     WHERE project_id = ?::uuid AND (lower(resource_id) = ? OR details::text ~* ?)`,
    [email, hash, pattern, ERASED_ADDRESS, projectId, email, pattern],
  );
  const emailsDeleted = files.mine - (redacted as { rowCount: number }).rowCount;
  await deleteContact(trx, projectId, id);
  return {
    email,
    emailsRedacted: (redacted as { rowCount: number }).rowCount,
    emailsDeleted,
    eventsRedacted: (events as { rowCount: number }).rowCount,
    webhookDeliveriesRedacted: (deliveries as { rowCount: number }).rowCount,
    rawMessagesDeleted: files.raws,
    rawMessagesRedacted: files.shared,
    attachmentsDeleted: files.files,
    auditEntriesRedacted: (audit as { rowCount: number }).rowCount,
  };
}
