import { checkCondition } from '../../audience/check';
import { compileCondition, resolveSegments } from '../../audience/compile';
import type { AudienceCondition, FilterRule } from '../../audience/condition';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';

/** Every field and operator, evaluated by PostgreSQL against seeded contacts, events and segments. */
let db: TestDatabase;
let projectId: string;
let otherProjectId: string;
const ids: Record<string, string> = {};
let staticSegment: string;
let dynamicSegment: string;

const day = 24 * 3600 * 1000;
const ago = (ms: number) => new Date(Date.now() - ms);

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await createProject('audience')).id;
  otherProjectId = (await createProject('other')).id;
  const contacts = [
    { email: 'ada@acme.io', subscribed: true, data: { plan: 'pro', seats: 10, city: 'London', signup: ago(2 * day).toISOString(), tags: ['a'] }, created_at: ago(40 * day) },
    { email: 'bob@example.com', subscribed: true, data: { plan: 'free', seats: 1, signup: ago(60 * day).toISOString(), nested: { level: 3 } }, created_at: ago(1 * day) },
    { email: 'cy@acme.io', subscribed: false, data: { plan: 'pro', seats: '12', city: null }, created_at: ago(3 * 3600 * 1000) },
    { email: 'dee_50%@example.org', subscribed: true, data: { signup: 'not a date' }, created_at: ago(400 * day) },
  ];
  for (const c of contacts) {
    const [row] = await db.knex('contacts').insert({ ...c, project_id: projectId, data: JSON.stringify(c.data), updated_at: c.created_at }).returning('id');
    ids[c.email.split('@')[0]!] = row.id;
  }
  // Same emails in another project: never part of this project's audiences.
  await db.knex('contacts').insert({ project_id: otherProjectId, email: 'ada@acme.io', data: JSON.stringify({ plan: 'pro' }) });
  await db.knex('events').insert([
    { project_id: projectId, contact_id: ids.ada, name: 'purchase', created_at: ago(2 * 3600 * 1000) },
    { project_id: projectId, contact_id: ids.bob, name: 'purchase', created_at: ago(10 * day) },
    { project_id: projectId, contact_id: ids.cy, name: 'login', created_at: ago(60 * 1000) },
  ]);
  [staticSegment] = (await db.knex('segments').insert({ project_id: projectId, name: 'vip', type: 'STATIC' }).returning('id')).map((r) => r.id);
  await db.knex('segment_members').insert([{ project_id: projectId, segment_id: staticSegment, contact_id: ids.bob }]);
  [dynamicSegment] = (await db.knex('segments').insert({
    project_id: projectId, name: 'acme', type: 'DYNAMIC',
    condition: JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'endsWith', value: '@acme.io' }] }] }),
  }).returning('id')).map((r) => r.id);
});
afterAll(async () => { await db.close(); });

async function audience(condition: AudienceCondition): Promise<string[]> {
  expect(checkCondition(condition, 'c')).toEqual([]);
  const { segments, errors } = await resolveSegments(db.knex, projectId, condition, 'c');
  expect(errors).toEqual([]);
  const q = db.knex('contacts as c').where('c.project_id', projectId);
  compileCondition(q, condition, segments);
  const rows = await q.orderBy('c.email').select('c.email');
  return rows.map((r) => r.email.split('@')[0]);
}
const one = (rule: FilterRule) => audience({ logic: 'AND', groups: [{ filters: [rule] }] });

test.each<[string, FilterRule, string[]]>([
  ['email equals (case-insensitive input)', { field: 'email', operator: 'equals', value: 'ADA@acme.io' }, ['ada']],
  ['email notEquals', { field: 'email', operator: 'notEquals', value: 'ada@acme.io' }, ['bob', 'cy', 'dee_50%']],
  ['email contains', { field: 'email', operator: 'contains', value: 'acme' }, ['ada', 'cy']],
  ['email contains treats % and _ literally', { field: 'email', operator: 'contains', value: '_50%' }, ['dee_50%']],
  ['email notContains', { field: 'email', operator: 'notContains', value: 'acme' }, ['bob', 'dee_50%']],
  ['email startsWith', { field: 'email', operator: 'startsWith', value: 'b' }, ['bob']],
  ['email endsWith', { field: 'email', operator: 'endsWith', value: '.org' }, ['dee_50%']],
  ['subscribed equals', { field: 'subscribed', operator: 'equals', value: false }, ['cy']],
  ['subscribed notEquals', { field: 'subscribed', operator: 'notEquals', value: false }, ['ada', 'bob', 'dee_50%']],
  ['createdAt within', { field: 'createdAt', operator: 'within', value: 2, unit: 'days' }, ['bob', 'cy']],
  ['createdAt within hours', { field: 'createdAt', operator: 'within', value: 5, unit: 'hours' }, ['cy']],
  ['createdAt olderThan', { field: 'createdAt', operator: 'olderThan', value: 30, unit: 'days' }, ['ada', 'dee_50%']],
  ['createdAt greaterThan', { field: 'createdAt', operator: 'greaterThan', value: ago(10 * day).toISOString() }, ['bob', 'cy']],
  ['updatedAt lessThanOrEqual', { field: 'updatedAt', operator: 'lessThanOrEqual', value: ago(100 * day).toISOString() }, ['dee_50%']],
  ['data equals string', { field: 'data.plan', operator: 'equals', value: 'pro' }, ['ada', 'cy']],
  ['data equals number (not the string "12")', { field: 'data.seats', operator: 'equals', value: 12 }, []],
  ['data equals nested', { field: 'data.nested.level', operator: 'equals', value: 3 }, ['bob']],
  ['data notEquals (missing counts as different)', { field: 'data.plan', operator: 'notEquals', value: 'pro' }, ['bob', 'dee_50%']],
  ['data contains (case-insensitive)', { field: 'data.city', operator: 'contains', value: 'LOND' }, ['ada']],
  ['data notContains', { field: 'data.plan', operator: 'notContains', value: 'pr' }, ['bob', 'dee_50%']],
  ['data startsWith', { field: 'data.plan', operator: 'startsWith', value: 'fr' }, ['bob']],
  ['data endsWith', { field: 'data.plan', operator: 'endsWith', value: 'ro' }, ['ada', 'cy']],
  ['data greaterThan number (strings ignored)', { field: 'data.seats', operator: 'greaterThan', value: 5 }, ['ada']],
  ['data lessThan number', { field: 'data.seats', operator: 'lessThan', value: 5 }, ['bob']],
  ['data greaterThanOrEqual', { field: 'data.seats', operator: 'greaterThanOrEqual', value: 10 }, ['ada']],
  ['data lessThanOrEqual date', { field: 'data.signup', operator: 'lessThanOrEqual', value: ago(30 * day).toISOString() }, ['bob']],
  ['data exists (JSON null does not count)', { field: 'data.city', operator: 'exists' }, ['ada']],
  ['data notExists', { field: 'data.city', operator: 'notExists' }, ['bob', 'cy', 'dee_50%']],
  ['data within (malformed dates ignored)', { field: 'data.signup', operator: 'within', value: 7, unit: 'days' }, ['ada']],
  ['data olderThan', { field: 'data.signup', operator: 'olderThan', value: 30, unit: 'days' }, ['bob']],
  ['event triggered', { field: 'event.purchase', operator: 'triggered' }, ['ada', 'bob']],
  ['event notTriggered', { field: 'event.purchase', operator: 'notTriggered' }, ['cy', 'dee_50%']],
  ['event triggeredWithin', { field: 'event.purchase', operator: 'triggeredWithin', value: 1, unit: 'days' }, ['ada']],
  ['event notTriggeredWithin', { field: 'event.purchase', operator: 'notTriggeredWithin', value: 1, unit: 'days' }, ['bob', 'cy', 'dee_50%']],
  ['event triggeredWithin minutes', { field: 'event.login', operator: 'triggeredWithin', value: 5, unit: 'minutes' }, ['cy']],
])('%s', async (_name, rule, expected) => {
  expect(await one(rule)).toEqual(expected);
});

test('segments: static membership, dynamic by its condition, and their negations', async () => {
  expect(await one({ field: `segment.${staticSegment}`, operator: 'memberOf' })).toEqual(['bob']);
  expect(await one({ field: `segment.${staticSegment}`, operator: 'notMemberOf' })).toEqual(['ada', 'cy', 'dee_50%']);
  expect(await one({ field: `segment.${dynamicSegment}`, operator: 'memberOf' })).toEqual(['ada', 'cy']);
  expect(await one({ field: `segment.${dynamicSegment}`, operator: 'notMemberOf' })).toEqual(['bob', 'dee_50%']);
});

test('groups: AND within a group, logic between groups', async () => {
  const pro = { field: 'data.plan', operator: 'equals', value: 'pro' } as const;
  const subscribed = { field: 'subscribed', operator: 'equals', value: true } as const;
  const bob = { field: 'email', operator: 'startsWith', value: 'bob' } as const;
  expect(await audience({ logic: 'AND', groups: [{ filters: [pro, subscribed] }] })).toEqual(['ada']);
  expect(await audience({ logic: 'OR', groups: [{ filters: [pro, subscribed] }, { filters: [bob] }] })).toEqual(['ada', 'bob']);
  expect(await audience({ logic: 'AND', groups: [{ filters: [pro] }, { filters: [subscribed] }] })).toEqual(['ada']);
});

test('checkCondition names the offending path', () => {
  const errs = checkCondition({ logic: 'AND', groups: [{ filters: [
    { field: 'email', operator: 'equals', value: 'a@b.c' },
    { field: 'nope', operator: 'equals', value: 1 },
    { field: 'subscribed', operator: 'contains', value: 'x' },
    { field: 'createdAt', operator: 'within', value: 3 },
    { field: 'data.plan', operator: 'greaterThan', value: 'abc' },
    { field: 'event.x', operator: 'triggered', value: 1 },
    { field: 'data.bad key', operator: 'exists' },
  ] }] }, 'audienceFilter');
  expect(errs.map((e) => [e.field, e.code])).toEqual([
    ['audienceFilter.groups.0.filters.1.field', 'invalid_field'],
    ['audienceFilter.groups.0.filters.2.operator', 'invalid_operator'],
    ['audienceFilter.groups.0.filters.3.unit', 'required'],
    ['audienceFilter.groups.0.filters.4.value', 'invalid_type'],
    ['audienceFilter.groups.0.filters.5.value', 'unrecognized_key'],
    ['audienceFilter.groups.0.filters.6.field', 'invalid_field'],
  ]);
});

test('resolveSegments refuses unknown segments and cycles', async () => {
  const ref = (id: string): AudienceCondition => ({ logic: 'AND', groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOf' }] }] });
  const missing = await resolveSegments(db.knex, projectId, ref('01a20131-0000-7000-8000-000000000000'), 'condition');
  expect(missing.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0.field', code: 'not_found' });
  // A segment of another project is unknown here.
  const [foreign] = await db.knex('segments').insert({ project_id: otherProjectId, name: 'x', type: 'STATIC' }).returning('id');
  expect((await resolveSegments(db.knex, projectId, ref(foreign.id), 'condition')).errors[0]?.code).toBe('not_found');
  // A → B, and B would refer to A: refused when saving B's condition.
  const [a] = await db.knex('segments').insert({ project_id: projectId, name: 'A', type: 'DYNAMIC', condition: JSON.stringify(ref(dynamicSegment)) }).returning('id');
  const selfLoop = await resolveSegments(db.knex, projectId, ref(a.id), 'condition', dynamicSegment);
  expect(selfLoop.errors[0]).toMatchObject({ code: 'cycle' });
  expect((await resolveSegments(db.knex, projectId, ref(dynamicSegment), 'condition', dynamicSegment)).errors[0]?.code).toBe('cycle');
});
