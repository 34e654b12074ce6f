import type { Knex } from 'knex';
import { executionListStatement } from '../../automations/automations';
import { pageStatement } from '../../db/pages';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { belowTheTop, genericPlanOf } from '../support/plans';

/**
 * Every query path of automations is served by an index (the automations migration names which), read from EXPLAIN
 * on enough rows that a sequential scan would lose: 20 projects, 10 workflows each, 200,000 executions.
 */
let db: TestDatabase;
let projectId: string;
let automationId: string;
let contactId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 20; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  const k = db.knex;
  await k.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT p, 'c' || g || '@example.com', true, '{}'::jsonb FROM unnest(?::uuid[]) p, generate_series(1, 1000) g`, [projects]);
  await k.raw(`INSERT INTO automations (project_id, name, enabled, trigger_event, steps)
    SELECT p, 'w' || g, g % 2 = 0, 'event-' || g, '[]'::jsonb FROM unnest(?::uuid[]) p, generate_series(1, 10) g`, [projects]);
  await k.raw(`INSERT INTO automation_executions (project_id, automation_id, contact_id, status, exclusive, wait_event, wait_until)
    SELECT a.project_id, a.id, c.id,
           (ARRAY['RUNNING','WAITING','COMPLETED','COMPLETED','EXITED','FAILED','CANCELLED'])[1 + (row_number() OVER ()) % 7],
           false, CASE WHEN random() < 0.2 THEN 'paid' END, now() + interval '1 day'
    FROM automations a JOIN LATERAL (SELECT id FROM contacts c WHERE c.project_id = a.project_id ORDER BY id LIMIT 1000) c ON true`);
  // One project with many workflows, where matching by project alone would read them all.
  await k.raw(`INSERT INTO automations (project_id, name, enabled, trigger_event, steps)
    SELECT ?::uuid, 'many' || g, g % 2 = 0, 'many-' || g, '[]'::jsonb FROM generate_series(1, 2000) g`, [projects[1]!]);
  await vacuumAnalyze(k, ['contacts', 'automations', 'automation_executions']);
  automationId = (await k('automations').where({ project_id: projectId }).first('id')).id;
  contactId = (await k('contacts').where({ project_id: projectId }).first('id')).id;
}, 120_000);
afterAll(async () => { await db.close(); });

async function plan(sql: string, bindings: Knex.RawBinding[]): Promise<string> {
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings);
  return res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
}

test.each([
  ['the executions list', 'automation_executions_list_idx', 'SELECT * FROM automation_executions WHERE project_id = ? AND automation_id = ? ORDER BY id DESC LIMIT 21'],
  ['the executions list by status', 'automation_executions_status_idx', "SELECT * FROM automation_executions WHERE project_id = ? AND automation_id = ? AND status = 'FAILED' ORDER BY id DESC LIMIT 21"],
])('%s uses %s', async (_name, index, sql) => {
  const p = await plan(sql, [projectId, automationId]);
  expect(p).toContain(index);
  expect(p).not.toMatch(/Seq Scan/);
});

// GET /workflows/:id/executions runs with its generic plan when no contact is asked (executionListStatement).
test.each<[string, RegExp, { status?: 'FAILED' }, boolean]>([
  ['first page', /automation_executions_list_idx/, {}, false],
  ['after a cursor', /automation_executions_list_idx/, {}, true],
  ['a status', /automation_executions_status_idx/, { status: 'FAILED' }, false],
])('the executions list, %s: its generic plan reads %s newest first, page and count, no scan, no sort', async (_name, index, filter, cursor) => {
  const afterId = cursor ? '01900000-0000-7000-8000-000000000000' : undefined;
  const { page, count, options } = executionListStatement(db.knex, projectId, automationId, filter, { limit: 20, afterId });
  expect(options.genericPlan).toBe(true);
  const p = await genericPlanOf(db.knex, pageStatement(page, count, options));
  expect(p).toMatch(index);
  expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Gather/);
  expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
});

// Made from the table's averages alone, a generic plan can take one workflow's executions of a status for a few (here
// ~8 of 200,000 in 200 workflows) and read them all by a bitmap to sort them (what this file's statistics give turns on
// ANALYZE's sample): for a workflow that holds most of them, every page would read them all. The list's planner settings
// (db/pages.ts LIST_PLAN) rule that out: the index in order, whatever the estimate.
test('the executions list\'s generic plan reads the status index in order under the list\'s planner settings', async () => {
  const { page, count, options } = executionListStatement(db.knex, projectId, automationId, { status: 'FAILED' }, { limit: 20 });
  const listed = await genericPlanOf(db.knex, pageStatement(page, count, options));
  expect(belowTheTop(listed)).not.toMatch(/Sort\s+\(|Bitmap/);
  expect(listed).toMatch(/Index (Only )?Scan( Backward)? using automation_executions_status_idx/);
});

test('the executions list of a contact is planned for its value', () => {
  expect(executionListStatement(db.knex, projectId, automationId, { contactId }, { limit: 20 }).options.genericPlan).toBe(false);
});

test('the executions list by contact reads the contact index', async () => {
  const p = await plan('SELECT * FROM automation_executions WHERE project_id = ? AND automation_id = ? AND contact_id = ? ORDER BY id DESC LIMIT 21', [projectId, automationId, contactId]);
  expect(p).toMatch(/automation_executions_(contact|one_active)_idx|automation_executions_list_idx/);
  expect(p).not.toMatch(/Seq Scan/);
});

test('the trigger match inside every event write reads the partial trigger index', async () => {
  const busy = (await db.knex('automations').where('name', 'many1').first('project_id')).project_id;
  const p = await plan("SELECT id FROM automations WHERE project_id = ? AND enabled AND trigger_event = 'many-2'", [busy]);
  expect(p).toContain('automations_trigger_idx');
});

test('the wake-up match inside every event write reads the partial waiting index', async () => {
  const p = await plan("SELECT id FROM automation_executions WHERE project_id = ? AND contact_id = ? AND status = 'WAITING' AND wait_event = 'paid' AND woken_by_event_id IS NULL", [projectId, contactId]);
  expect(p).toContain('automation_executions_waiting_idx');
});

test('the dispatcher\'s poll of the outbox, and its count of running executions, read their partial indexes', async () => {
  const p = await plan("SELECT project_id, id, outbox FROM automation_executions WHERE outbox = 'START' ORDER BY id LIMIT 200 FOR UPDATE SKIP LOCKED", []);
  expect(p).toContain('automation_executions_outbox_idx');
  const c = await plan("SELECT count(*)::int AS n FROM automation_executions WHERE status = 'RUNNING' AND outbox IS NULL", []);
  expect(c).toContain('automation_executions_running_idx');
  const live = await plan("SELECT count(*)::int AS n FROM automation_executions WHERE status IN ('RUNNING', 'WAITING') AND NOT parked AND outbox IS DISTINCT FROM 'START'", []);
  expect(live).toContain('automation_executions_live_idx');
  await db.knex('automation_executions').where({ project_id: projectId }).where('status', 'WAITING').update({ parked: true });
  await db.knex.raw('ANALYZE automation_executions');
  const due = await plan("SELECT id FROM automation_executions WHERE parked = true AND status = 'WAITING' AND outbox IS NULL AND wait_until <= now() ORDER BY id LIMIT 200 FOR UPDATE SKIP LOCKED", []);
  expect(due).toContain('automation_executions_parked_idx');
});

test('the template-in-use check can read an index of enabled workflows', async () => {
  await db.knex.raw('SET enable_seqscan = off');
  const p = await plan("SELECT name FROM automations WHERE project_id = ? AND enabled AND template_ids @> ARRAY['0190a5a0-0000-7000-8000-000000000000']::uuid[]", [projectId]);
  await db.knex.raw('RESET enable_seqscan');
  expect(p).toMatch(/automations_templates_idx|automations_trigger_idx|automations_pkey/);
});
