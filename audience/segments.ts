import type { Knex } from 'knex';
import { conflict, invalid, notFound } from '../core/errors';
import { Contact } from '../db/models/Contact';
import type { CappedList, Listed, PageRequest } from '../db/pages';
import { LIST_COUNT_CAP, MATCH_COUNT_CAP, cappedCount, cappedTotal, firstPageOfCount, listPage, pageQueries, pageStatementCache, rowLimit, wholeOf, type PageStatementOptions } from '../db/pages';
import { ownedRow } from '../db/owned';
import { perDatabase } from '../db/perDatabase';
import { upsertContacts } from '../db/queries/contacts';
import {
  claimRecounts, isUnusableCondition, keptCount, recountSegments, SEGMENT_RECOUNT_AFTER_MS, segmentContacts, segmentCountRows, segmentsReferencing,
  unusableCondition, type KeptCountRow, type MemberCount,
} from './segmentQueries';
import { checkCondition, readsContactRowOnly } from './check';
import { loadSegments, loadSegmentsDigested, resolveSegments, SEGMENTS_DIGEST_SQL, type SegmentDef, type SegmentMap } from './compile';
import { normaliseCondition, type AudienceCondition } from './condition';
import { audited, type Actor } from '../audit/log';

/**
 * Segments (spec 4.4): DYNAMIC ones are their condition, evaluated when read; STATIC ones hold members. Every call is
 * scoped to the project; another project's segment is not found.
 */

export type SegmentType = SegmentDef['type'];

export interface SegmentInput {
  name: string;
  description?: string | null;
  type: SegmentType;
  condition?: AudienceCondition;
}

export type SegmentPatch = Partial<Pick<SegmentInput, 'name' | 'description' | 'condition'>>;

export interface SegmentRow extends SegmentDef, KeptCountRow {
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * A segment with its member count as of `countedAt`. `members.memberCount` is null, and `members.error` says why, for
 * a segment whose stored condition cannot be evaluated (stored under older rules, or a value PostgreSQL cannot hold):
 * the segment is still listed, and can be fixed with an update or deleted.
 */
export interface Segment extends SegmentRow {
  members: MemberCount | undefined;
  countedAt: Date | null;
}

/**
 * Runs queries over a segment's contacts (or a previewed condition's): a condition that cannot be evaluated is a 422
 * that says why and names the condition, not a 500.
 */
async function evaluating<T>(run: () => Promise<T>, suggestion?: string): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!isUnusableCondition(err)) throw err;
    throw invalid([{ field: 'condition', message: unusableCondition(err), code: 'invalid_condition' }], suggestion);
  }
}

/** Validates a condition fully (shape is Joi's; fields, operators, values and segment references here): 422 at the path. */
async function checked(db: Knex, projectId: string, condition: AudienceCondition, prefix: string, selfId?: string): Promise<AudienceCondition> {
  const normalised = normaliseCondition(condition);
  const errors = checkCondition(normalised, prefix);
  if (errors.length) throw invalid(errors);
  const resolved = await resolveSegments(db, projectId, normalised, prefix, selfId);
  if (resolved.errors.length) throw invalid(resolved.errors);
  return normalised;
}

const findSegment = (db: Knex, projectId: string, id: string) => ownedRow<SegmentRow>(db, 'segments', 'Segment', projectId, id);

/**
 * The segments with their member counts. A read (`kept`) answers the count kept on each row, with the time it was
 * counted, and counts now only a segment never counted; a kept count older than SEGMENT_RECOUNT_AFTER_MS is recounted
 * after the answer, in the background (claimRecounts: one node counts). Why kept rather than counted when read, or
 * counted up to 1,000 as the lists are: a dynamic segment's count reads every contact its condition may match, and a
 * condition that matches few (a rare `data.*` value: no index serves it) reads all of a project's contacts before it
 * has counted even a handful, so neither an exact nor a capped count keeps a page of segments from costing seconds at
 * 1,000,000 contacts (BENCHMARKS.md sections 37 and 41). A write (`now`: create, update, members added or removed)
 * counts its segment at once and keeps it: the one who changed it sees the count it made.
 */
async function withCounts(db: Knex, projectId: string, rows: SegmentRow[], when: 'kept' | 'now'): Promise<Segment[]> {
  const counted = await recountSegments(db, projectId, when === 'now' ? rows : rows.filter((s) => !s.members_counted_at));
  const stale = Date.now() - SEGMENT_RECOUNT_AFTER_MS;
  const old = when === 'kept' ? rows.filter((s) => s.members_counted_at && s.members_counted_at.getTime() < stale) : [];
  if (old.length) recountLater(db, projectId, old);
  return rows.map((s) => {
    const now = counted.get(s.id);
    return now ? { ...s, members: now.members, countedAt: now.countedAt } : { ...s, members: keptCount(s), countedAt: s.members_counted_at };
  });
}

/** The background recounts under way in this process (a test may wait for them: segmentRecounts). */
const recounting = new Set<Promise<void>>();

/** Recounts these segments after the answer, if no one else is already (claimRecounts); a failure waits for the next read. */
function recountLater(db: Knex, projectId: string, rows: SegmentRow[]): void {
  const run = (async () => {
    const claimed = new Set(await claimRecounts(db, projectId, rows.map((s) => s.id)));
    if (claimed.size === 0) return;
    try {
      await recountSegments(db, projectId, rows.filter((s) => claimed.has(s.id)));
    } catch {
      await db('segments').where('project_id', projectId).whereIn('id', [...claimed]).update({ members_recount_since: null });
    }
  })().catch(() => undefined).finally(() => { recounting.delete(run); });
  recounting.add(run);
}

/** Settles when the background recounts started so far have ended (for tests and a clean shutdown). */
export async function segmentRecounts(): Promise<void> {
  await Promise.all([...recounting]);
}

const STATIC_ONLY = 'Members are added and removed only on STATIC segments; a DYNAMIC segment is its condition';

export async function listSegments(db: Knex, projectId: string, page: PageRequest): Promise<Listed<Segment>> {
  const listed = await listPage<SegmentRow>(() => db('segments').where('project_id', projectId), page);
  // Counted for the page's rows only (not the extra row that only tells there is more).
  const counted = await withCounts(db, projectId, listed.rows.slice(0, page.limit), 'kept');
  return { rows: [...counted, ...listed.rows.slice(page.limit).map((s) => ({ ...s, members: undefined, countedAt: null }))], total: listed.total };
}

/** The segment without its count: that it exists in the project (else a 404), for a route that names it. */
export async function findSegmentRow(db: Knex, projectId: string, id: string): Promise<SegmentRow> {
  return findSegment(db, projectId, id);
}

export async function getSegment(db: Knex, projectId: string, id: string): Promise<Segment> {
  return (await withCounts(db, projectId, [await findSegment(db, projectId, id)], 'kept'))[0]!;
}

export async function createSegment(db: Knex, projectId: string, input: SegmentInput): Promise<Segment> {
  const condition = input.condition ? await checked(db, projectId, input.condition, 'condition') : null;
  const [row] = await db('segments').insert({
    project_id: projectId, name: input.name, description: input.description || null, type: input.type,
    condition: condition ? JSON.stringify(condition) : null,
  }).returning('*');
  return (await withCounts(db, projectId, [row], 'now'))[0]!;
}

/**
 * How long a preview may count before it is given up (its statements cancelled in PostgreSQL, not left running): the
 * console asks again on each pause in typing, so a condition that reads every contact of a huge project must not
 * pile up statements nobody waits for any more. Measured: a data filter over 1,000,000 contacts counts in well under
 * this (BENCHMARKS.md, bench:segment-builder).
 */
export const PREVIEW_TIMEOUT_MS = 10_000;

/** How many contacts a condition matches now, and the newest ten of them, without storing anything. */
export async function previewSegment(db: Knex, projectId: string, condition: AudienceCondition, opts: { timeoutMs?: number } = {}): Promise<{ count: number; contacts: Contact[] }> {
  const normalised = await checked(db, projectId, condition, 'condition');
  const all = await loadSegments(db, projectId);
  const segment: SegmentDef = { id: '00000000-0000-0000-0000-000000000000', type: 'DYNAMIC', condition: normalised };
  const timeoutMs = opts.timeoutMs ?? PREVIEW_TIMEOUT_MS;
  const [count, sample] = await evaluating(() => Promise.all([
    segmentContacts(db, projectId, segment, all).count('* as n').first().timeout(timeoutMs, { cancel: true }),
    segmentContacts(db, projectId, segment, all).orderBy('c.id', 'desc').limit(10).select('c.*').timeout(timeoutMs, { cancel: true }),
  ])).catch((err: unknown) => {
    if ((err as Error).name !== 'KnexTimeoutError') throw err;
    throw invalid([{
      field: 'condition', code: 'condition_too_slow',
      message: `counting the contacts of this condition took longer than ${timeoutMs / 1000} s and was stopped`,
    }], 'Narrow it: filters on email, subscription and events are served by indexes, while a data.* filter reads every contact.');
  });
  return { count: Number(count?.n ?? 0), contacts: sample.map((r: Record<string, unknown>) => Contact.fromDatabaseJson(r)) };
}

export async function updateSegment(db: Knex, projectId: string, id: string, patch: SegmentPatch): Promise<Segment> {
  const current = await findSegment(db, projectId, id);
  if (patch.condition && current.type === 'STATIC') {
    throw invalid([{ field: 'condition', message: 'condition applies only to DYNAMIC segments', code: 'unrecognized_key' }]);
  }
  const condition = patch.condition ? await checked(db, projectId, patch.condition, 'condition', current.id) : undefined;
  const [row] = await db('segments').where({ project_id: projectId, id: current.id }).update({
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(patch.description !== undefined ? { description: patch.description || null } : {}),
    ...(condition ? { condition: JSON.stringify(condition) } : {}),
    updated_at: db.fn.now(),
  }).returning('*');
  if (!row) throw notFound('Segment'); // deleted meanwhile
  return (await withCounts(db, projectId, [row], 'now'))[0]!;
}

/**
 * A segment that other segments name, that is the audience of a campaign not yet sent (or that its filter names), or
 * that a condition step of an enabled workflow names, is in use: 409. (A disabled workflow's steps are checked again
 * when it is enabled.)
 */
export async function deleteSegment(db: Knex, projectId: string, id: string): Promise<void> {
  const current = await findSegment(db, projectId, id);
  const named = `%"segment.${current.id}"%`;
  // One after the other: `db` is the audit's transaction, one connection.
  const users = await segmentsReferencing(db, projectId, current.id);
  const campaigns = await db('campaigns').where({ project_id: projectId }).whereIn('status', ['DRAFT', 'SCHEDULED', 'SENDING'])
    .where((q) => q.where('segment_id', current.id).orWhereRaw('audience_filter::text LIKE ?', [named])).select('name');
  const automations = await db('automations').where({ project_id: projectId, enabled: true }).whereRaw('steps::text LIKE ?', [named]).select('name');
  if (automations.length) {
    throw conflict(`Segment is used by enabled workflows: ${automations.map((a: { name: string }) => a.name).join(', ')}`, 'Disable them or change their condition steps first.');
  }
  if (users.length) {
    throw conflict(`Segment is used by other segments: ${users.map((u) => u.name).join(', ')}`, 'Remove the segment from their conditions first.');
  }
  if (campaigns.length) {
    throw conflict(`Segment is the audience of campaigns not yet sent: ${campaigns.map((c: { name: string }) => c.name).join(', ')}`, 'Change their audience or cancel them first.');
  }
  await db('segments').where({ project_id: projectId, id: current.id }).delete();
}

/**
 * How far a page of a segment's contacts counts them: a dynamic segment's contacts are found by testing its condition
 * on each, to MATCH_COUNT_CAP, though planned as a count to LIST_COUNT_CAP (db/pages.ts plannedRead: planned for a
 * hundred, a condition over events was read by probing each contact's events); a static one's are an index range of
 * its members, to LIST_COUNT_CAP.
 */
export const memberCountCap = (segment: SegmentDef): number => (segment.type === 'DYNAMIC' ? MATCH_COUNT_CAP : LIST_COUNT_CAP);

/**
 * The statement of a page of a segment's contacts and its capped count, as segmentMembers runs it (exported for the
 * EXPLAIN tests). Its total is exact up to memberCountCap, as every list over a table that grows: counted exactly, a
 * dynamic segment of 333,000 contacts read them all for each page (1.4 s; BENCHMARKS.md section 37).
 *
 * A page is its keys newest first, then their contacts by key (`byKey`): a static segment's keys are its rows of
 * segment_members from the cursor down (an index-only range of their primary key), a dynamic segment's first page the
 * newest of the members its count reads (db/pages.ts firstPageOfCount: one read in the count's plan, newest first,
 * whatever the planner would have guessed for a page of 11 alone; section 56). Joined to the keys in their order, the
 * contacts have one way to be read, a probe of their primary key per key: as `c.id IN (keys)` a plan made without the
 * values merged the keys with every contact from the newest down, all of them for a small static segment of old ones.
 *
 * With its generic plan (PageStatementOptions `genericPlan`), prepared once per connection: a static segment's page,
 * and a dynamic one's whose condition reads the contact's row only (audience/check.ts readsContactRowOnly). Planning
 * such a page cost more than running it (1.2-1.6 ms against 1.3-1.5, parsed and planned for each request; section 65).
 * A condition over addresses, events or other segments is planned for its values, once per connection: segmentMembers
 * runs it with its values written into its text (db/pages.ts pageStatementCache).
 */
export function segmentMemberQueries(db: Knex, projectId: string, segment: SegmentDef, all: SegmentMap, page: PageRequest): { page: Knex.QueryBuilder; count: Knex.QueryBuilder; options: PageStatementOptions } {
  const byKey = (keys: Knex.QueryBuilder) => db.from(keys.as('k'))
    .join('contacts as c', (j) => { j.on('c.id', '=', 'k.id').andOnVal('c.project_id', '=', projectId); }).select('c.*');
  if (segment.type === 'STATIC') {
    const keys = db('segment_members as m').where('m.project_id', projectId).where('m.segment_id', segment.id).select('m.contact_id as id')
      .orderBy('m.contact_id', 'desc').limit(rowLimit(page.limit + 1), { skipBinding: true });
    if (page.afterId) keys.where('m.contact_id', '<', page.afterId);
    return {
      page: byKey(keys).orderBy('c.id', 'desc'),
      // Newest first: a static segment's rows of segment_members by their primary key (project, segment, contact) from
      // the top, an index-only read of 1,001 entries. Without an order it was planned as a sequential scan of the table
      // stopped by its LIMIT, which is quick only while the segment's rows lie evenly through the table.
      count: cappedCount(() => segmentCountRows(db, projectId, segment, all), LIST_COUNT_CAP, 'm.contact_id'),
      options: { column: 'c.id', whole: wholeOf(page), genericPlan: true },
    };
  }
  const genericPlan = readsContactRowOnly(segment.condition!);
  if (!page.afterId) {
    const first = firstPageOfCount(() => segmentContacts(db, projectId, segment, all), 'c.id', page.limit, byKey, memberCountCap(segment), LIST_COUNT_CAP);
    return { ...first, options: { ...first.options, genericPlan } };
  }
  return {
    page: pageQueries(() => segmentContacts(db, projectId, segment, all).select('c.*'), page, 'c.id').page,
    count: cappedCount(() => segmentContacts(db, projectId, segment, all), memberCountCap(segment), 'c.id', LIST_COUNT_CAP),
    options: { column: 'c.id', genericPlan },
  };
}

/** Segment pages' statements, compiled once per segment, condition and page shape (db/pages.ts pageStatementCache). */
const segmentPages = pageStatementCache();

/**
 * Each project's segments as this process last read them with their digest (SEGMENTS_DIGEST_SQL), per database: a
 * page of a segment's contacts is built from them and checks them in its own statement, so that it does not read them
 * first in a round trip of its own (0.3-0.5 ms of a segment page's 3-4 ms; BENCHMARKS.md section 74). At most
 * KNOWN_PROJECTS projects, the oldest forgotten first.
 */
const knownSegments = perDatabase(() => new Map<string, KnownSegments>());
const KNOWN_PROJECTS = 1000;

interface KnownSegments {
  all: SegmentMap;
  digest: string;
}

/**
 * A page of `segment`'s contacts built from `known`, the project's segments, with their digest as they are now. The
 * statement is made of the project, this segment and the segments its condition may name: all of them, which their
 * digest names (a project's segments can be many, and the cache keeps a thousand shapes).
 */
async function membersPage(db: Knex, projectId: string, segment: SegmentDef, known: KnownSegments, page: PageRequest): Promise<{ list: CappedList<Contact>; digest: unknown }> {
  const shape = `${projectId}\u0000${segment.id}\u0000${known.digest}`;
  const { rows: found, total, check } = await segmentPages(db, shape, page, (request) => {
    const queries = segmentMemberQueries(db, projectId, segment, known.all, request);
    return { ...queries, options: { ...queries.options, check: { sql: SEGMENTS_DIGEST_SQL, bindings: [projectId] } } };
  });
  return { list: { rows: found.map((r) => Contact.fromDatabaseJson(r)), ...cappedTotal(total, memberCountCap(segment)) }, digest: check };
}

/**
 * A page of the segment's contacts, newest first, and their total. The project's segments (which hold this one, not
 * found otherwise, and those its condition names) as this process kept them when it has them (knownSegments), checked
 * in the page's statement: read again, and the page with them, when they changed since. Read first otherwise.
 */
export async function segmentMembers(db: Knex, projectId: string, id: string, page: PageRequest): Promise<CappedList<Contact>> {
  const segmentId = id.toLowerCase();
  const known = knownSegments(db);
  return evaluating(
    async () => {
      const kept = known.get(projectId);
      const keptSegment = kept?.all.get(segmentId);
      let read: { all: SegmentMap; digest: string | undefined } | undefined;
      if (kept && keptSegment) {
        try {
          const got = await membersPage(db, projectId, keptSegment, kept, page);
          if (got.digest === kept.digest) return got.list;
        } catch (err) {
          // A condition that cannot be evaluated may be one changed since: fails as it is only when it still is.
          read = await loadSegmentsDigested(db, projectId);
          if (read.digest === kept.digest) throw err;
        }
      }
      const { all, digest } = read ?? await loadSegmentsDigested(db, projectId);
      known.delete(projectId);
      const segment = all.get(segmentId);
      // A segment found means a digest read (there is a segment).
      if (!segment || digest === undefined) throw notFound('Segment');
      const fresh = { all, digest };
      if (known.size >= KNOWN_PROJECTS) known.delete(known.keys().next().value!);
      known.set(projectId, fresh);
      return (await membersPage(db, projectId, segment, fresh, page)).list;
    },
    'Fix the segment\'s condition (PATCH /segments/:id), or the segments it names.',
  );
}

/** The segment, for a change of its members: it must be STATIC (409 otherwise). */
export async function staticSegment(db: Knex, projectId: string, id: string): Promise<SegmentRow> {
  const segment = await findSegment(db, projectId, id);
  if (segment.type !== 'STATIC') throw conflict(STATIC_ONLY);
  return segment;
}

/** Adds members by email; unknown emails become contacts, subscribed (decisions.md). */
export async function addMembers(db: Knex, projectId: string, id: string, emails: string[]): Promise<{ added: number; created: number; memberCount: number }> {
  const segment = await staticSegment(db, projectId, id);
  const result = await db.transaction(async (trx) => {
    // The segment stays until this commits (a concurrent delete waits); one deleted meanwhile is gone: 404.
    if (!(await trx('segments').where({ project_id: projectId, id: segment.id }).forKeyShare().first('id'))) throw notFound('Segment');
    const contacts = await upsertContacts(trx, projectId, emails.map((email) => ({ email })), true);
    const added = await trx.raw(
      `INSERT INTO segment_members (project_id, segment_id, contact_id)
       SELECT ?::uuid, ?::uuid, unnest(?::uuid[]) ON CONFLICT DO NOTHING RETURNING contact_id`,
      [projectId, segment.id, contacts.map((c) => c.contact.id)],
    );
    return { added: added.rows.length as number, created: contacts.filter((c) => c.isNew).length };
  });
  const counts = await recountSegments(db, projectId, [segment]);
  return { ...result, memberCount: counts.get(segment.id)?.members.memberCount ?? 0 };
}

export async function removeMembers(db: Knex, projectId: string, id: string, emails: string[]): Promise<{ removed: number; memberCount: number }> {
  const segment = await staticSegment(db, projectId, id);
  const removed = await db.raw(
    `DELETE FROM segment_members m USING contacts c
     WHERE m.project_id = ?::uuid AND m.segment_id = ?::uuid AND c.project_id = m.project_id AND c.id = m.contact_id AND c.email = ANY(?::text[])`,
    [projectId, segment.id, emails],
  );
  const counts = await recountSegments(db, projectId, [segment]);
  return { removed: removed.rowCount ?? 0, memberCount: counts.get(segment.id)?.members.memberCount ?? 0 };
}

/** The functions above as one object over the app's database, the API's way in (like campaignService). */
export function segmentService({ knex }: { knex: Knex }) {
  return {
    list: (projectId: string, page: PageRequest) => listSegments(knex, projectId, page),
    get: (projectId: string, id: string) => getSegment(knex, projectId, id),
    /** That it exists in the project (a 404 otherwise), without counting its members. */
    find: (projectId: string, id: string) => findSegmentRow(knex, projectId, id),
    create: (projectId: string, input: SegmentInput) => createSegment(knex, projectId, input),
    preview: (projectId: string, condition: AudienceCondition) => previewSegment(knex, projectId, condition),
    update: (projectId: string, id: string, patch: SegmentPatch) => updateSegment(knex, projectId, id, patch),
    /** Audited in the transaction of the delete (audit/log.ts). */
    remove: (projectId: string, id: string, actor: Actor) =>
      audited(knex, projectId, actor, { operation: 'deleteSegment', resourceType: 'segment', resourceId: id }, (trx) => deleteSegment(trx, projectId, id)),
    members: (projectId: string, id: string, page: PageRequest) => segmentMembers(knex, projectId, id, page),
    /** The segment if it is STATIC: not found, then a conflict for a DYNAMIC one. */
    getStatic: (projectId: string, id: string) => staticSegment(knex, projectId, id),
    addMembers: (projectId: string, id: string, emails: string[]) => addMembers(knex, projectId, id, emails),
    /** A DELETE, so audited (audit/log.ts): how many left, never their addresses. */
    removeMembers: (projectId: string, id: string, emails: string[], actor: Actor) =>
      audited(knex, projectId, actor, (r: { removed: number }) => ({ operation: 'removeSegmentMembers', resourceType: 'segment', resourceId: id, details: { removed: r.removed } }),
        (trx) => removeMembers(trx, projectId, id, emails)),
  };
}

export type Segments = ReturnType<typeof segmentService>;
