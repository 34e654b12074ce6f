import type Joi from 'joi';
import type { FieldError } from '../../api/errors';
import {
  createWorkflowSchema, listExecutionsQuerySchema, listWorkflowsQuerySchema, patchWorkflowSchema, type CreateWorkflowBody,
} from '../../api/schemas/workflows';
import { durationMs, templateIdsOf, type Step } from '../../automations/steps';
import { fieldErrors } from '../../api/validate';
import { checkReferences, checkSteps, normaliseSteps } from '../../automations/definition';
import { createTestDatabase, type TestDatabase } from '../support/db';

/** Workflow definitions: the Joi shape of each step type, then the graph checks and the project references. */
const OPTIONS: Joi.ValidationOptions = { abortEarly: false, convert: true, stripUnknown: false, errors: { wrap: { label: false } } };
const TEMPLATE = '01a20131-0000-7000-8000-00000000000a';
const anyone = { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] };

function validate<T>(schema: Joi.ObjectSchema<T>, input: unknown): { value: T; errors: FieldError[] } {
  const { value, error } = schema.validate(input, OPTIONS);
  return { value: value as T, errors: error ? fieldErrors(error) : [] };
}

const workflow = (steps: unknown[], extra: object = {}) => ({ name: 'Welcome', trigger: { type: 'EVENT', event: 'signed_up' }, steps, ...extra });

/** The Joi errors of a workflow with these steps. */
const shapeErrors = (steps: unknown[]) => validate(createWorkflowSchema, workflow(steps)).errors;

/** Joi first, then checkSteps on what Joi returned: every error of the definition. */
function definitionErrors(steps: unknown[]): FieldError[] {
  const { value, errors } = validate(createWorkflowSchema, workflow(steps));
  return errors.length ? errors : checkSteps(value.steps);
}

const fields = (errors: FieldError[]) => errors.map((e) => e.field);
const send = (id: string, next?: string | null) => ({ id, type: 'SEND_EMAIL', config: { template: TEMPLATE }, ...(next !== undefined ? { next } : {}) });
const delay = (id: string, next?: string | null) => ({ id, type: 'DELAY', config: { amount: 1, unit: 'days' }, ...(next !== undefined ? { next } : {}) });
const condition = (id: string, yes: string | null, no: string | null, filter: object = anyone) => ({ id, type: 'CONDITION', config: { filter }, branches: { yes, no } });
const exit = (id: string) => ({ id, type: 'EXIT' });

describe('createWorkflowSchema', () => {
  test('every step type in one valid workflow; defaults filled in', () => {
    const steps = [
      { id: 'welcome', type: 'SEND_EMAIL', config: { template: TEMPLATE.toUpperCase() }, next: 'wait-a-day' },
      { id: 'wait-a-day', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'await_purchase' },
      { id: 'await_purchase', type: 'WAIT_FOR_EVENT', config: { event: 'purchased', timeout: { amount: 48, unit: 'hours' } }, next: 'is-pro' },
      condition('is-pro', 'tag', 'notify'),
      { id: 'tag', type: 'UPDATE_CONTACT', config: { data: { stage: 'onboarded', trial: null }, subscribed: true }, next: 'done' },
      { id: 'notify', type: 'WEBHOOK', config: { url: 'https://hooks.example.com/herald?x=1', headers: { 'X-Token': 'abc', Accept: 'application/json' }, body: { hello: ['world'] } }, next: null },
      { id: 'done', type: 'EXIT' },
      { id: 'wait-forever', type: 'WAIT_FOR_EVENT', config: { event: 'never' } },
      { id: 'exit2', type: 'EXIT', config: {} },
    ];
    // The last two are valid steps but unreachable: the shape passes; only the graph check names them.
    const { value, errors } = validate(createWorkflowSchema, workflow(steps));
    expect(errors).toEqual([]);
    expect(value).toMatchObject({ enabled: false, allowReentry: false });
    expect(value.steps[0]).toEqual({ id: 'welcome', type: 'SEND_EMAIL', config: { template: TEMPLATE }, next: 'wait-a-day' });
    expect(value.steps[5]!.config).toMatchObject({ method: 'POST' });
    expect(fields(checkSteps(value.steps))).toEqual(['steps.7', 'steps.8']);
    expect(checkSteps(value.steps.slice(0, 7))).toEqual([]);
  });

  test('the trigger may be any event name, service events included', () => {
    for (const event of ['contact.unsubscribed', 'email.opened', 'Signed Up']) {
      expect(validate(createWorkflowSchema, workflow([exit('x')], { trigger: { type: 'EVENT', event } })).errors).toEqual([]);
    }
    expect(fields(validate(createWorkflowSchema, workflow([exit('x')], { trigger: { type: 'SCHEDULE', event: 'x' } })).errors)).toEqual(['trigger.type']);
    expect(fields(validate(createWorkflowSchema, workflow([exit('x')], { trigger: { type: 'EVENT', event: 'a\nb' } })).errors)).toEqual(['trigger.event']);
  });

  test('name, description, steps count and step ids are bounded', () => {
    expect(fields(validate(createWorkflowSchema, workflow([exit('x')], { name: '' })).errors)).toEqual(['name']);
    expect(fields(validate(createWorkflowSchema, workflow([exit('x')], { description: 'd'.repeat(1001) })).errors)).toEqual(['description']);
    expect(validate(createWorkflowSchema, workflow([exit('x')], { description: null })).errors).toEqual([]);
    expect(fields(shapeErrors([]))).toEqual(['steps']);
    expect(fields(shapeErrors(Array.from({ length: 101 }, (_, i) => exit(`s${i}`))))).toEqual(['steps']);
    expect(fields(shapeErrors([exit('has space'), exit('x'.repeat(65)), exit('')]))).toEqual(['steps.0.id', 'steps.1.id', 'steps.2.id']);
    expect(fields(validate(createWorkflowSchema, { name: 'x' }).errors)).toEqual(['trigger', 'steps']);
  });

  test('an unknown step type is one error at steps.N.type listing the valid types', () => {
    const errors = shapeErrors([send('a', 'b'), { id: 'b', type: 'SEND_SMS', config: { to: '+1' }, next: null }]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ field: 'steps.1.type', code: 'invalid_enum_value' });
    for (const type of ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'UPDATE_CONTACT', 'WEBHOOK', 'EXIT']) expect(errors[0]!.message).toContain(type);
    expect(shapeErrors([{ id: 'a', config: {} }])).toEqual([expect.objectContaining({ field: 'steps.0.type', code: 'required' })]);
  });

  test('DELAY: whole amount of minutes, hours or days, at most 365 days', () => {
    const d = (amount: unknown, unit: unknown) => shapeErrors([{ id: 'd', type: 'DELAY', config: { amount, unit } }]);
    expect(d(0, 'days')).toEqual([expect.objectContaining({ field: 'steps.0.config.amount', code: 'too_small' })]);
    expect(d(2, 'weeks')).toEqual([expect.objectContaining({ field: 'steps.0.config.unit', code: 'invalid_enum_value' })]);
    expect(d(366, 'days')).toEqual([expect.objectContaining({ field: 'steps.0.config.amount', code: 'too_big' })]);
    expect(d(8761, 'hours')[0]!.message).toContain('365 days');
    expect(d(365, 'days')).toEqual([]);
    expect(d(8760, 'hours')).toEqual([]);
    expect(d(1, 'minutes')).toEqual([]);
    expect(fields(d(1.5, 'hours'))).toEqual(['steps.0.config.amount']);
    expect(fields(shapeErrors([{ id: 'd', type: 'DELAY' }]))).toEqual(['steps.0.config']);
    expect(fields(shapeErrors([{ id: 'd', type: 'DELAY', config: { amount: 1, unit: 'days', extra: 1 } }]))).toEqual(['steps.0.config.extra']);
  });

  test('WAIT_FOR_EVENT: an event name, and a timeout of at most 365 days if any', () => {
    const w = (config: unknown) => shapeErrors([{ id: 'w', type: 'WAIT_FOR_EVENT', config }]);
    expect(w({ event: 'purchased' })).toEqual([]);
    expect(w({ event: 'email.clicked', timeout: { amount: 365, unit: 'days' } })).toEqual([]);
    expect(fields(w({}))).toEqual(['steps.0.config.event']);
    expect(fields(w({ event: 'x', timeout: { amount: 0, unit: 'days' } }))).toEqual(['steps.0.config.timeout.amount']);
    expect(fields(w({ event: 'x', timeout: { amount: 1, unit: 'weeks' } }))).toEqual(['steps.0.config.timeout.unit']);
    expect(w({ event: 'x', timeout: { amount: 525_601, unit: 'minutes' } })).toEqual([expect.objectContaining({ field: 'steps.0.config.timeout.amount', code: 'too_big' })]);
    expect(fields(w({ event: 'x', timeout: 3600 }))).toEqual(['steps.0.config.timeout']);
  });

  test('WEBHOOK: http(s) url, safe headers, a bounded JSON body', () => {
    const hook = (config: object) => shapeErrors([{ id: 'h', type: 'WEBHOOK', config: { url: 'https://example.com/hook', ...config } }]);
    expect(hook({ method: 'PUT', body: [1, { a: 2 }] })).toEqual([]);
    expect(hook({ url: 'ftp://example.com/x' })).toEqual([expect.objectContaining({ field: 'steps.0.config.url', code: 'invalid_string' })]);
    expect(fields(hook({ url: 'not a url' }))).toEqual(['steps.0.config.url']);
    expect(fields(hook({ url: `https://example.com/${'a'.repeat(2048)}` }))).toEqual(['steps.0.config.url']);
    expect(hook({ headers: { 'X-Note': 'a\r\nX-Injected: 1' } })).toEqual([expect.objectContaining({ field: 'steps.0.config.headers.X-Note', code: 'invalid_string' })]);
    const host = hook({ headers: { Host: 'internal.example', 'Content-Length': '1', ok: 'y' } });
    expect(fields(host)).toEqual(['steps.0.config.headers.Host', 'steps.0.config.headers.Content-Length']);
    expect(host[0]!.message).toContain('Host');
    expect(fields(hook({ headers: { 'Bad Name': 'x', 'X-Ok': 'y' } }))).toEqual(['steps.0.config.headers.Bad Name']);
    expect(fields(hook({ headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-${i}`, 'v'])) }))).toEqual(['steps.0.config.headers']);
    expect(fields(hook({ method: 'TRACE' }))).toEqual(['steps.0.config.method']);
    expect(fields(hook({ method: 'GET', body: { a: 1 } }))).toEqual(['steps.0.config.body']);
    expect(hook({ body: { big: 'x'.repeat(17_000) } })).toEqual([expect.objectContaining({ field: 'steps.0.config.body', code: 'too_big' })]);
    expect(hook({ body: 'text' })).toEqual([expect.objectContaining({ field: 'steps.0.config.body', code: 'invalid_type' })]);
  });

  test('UPDATE_CONTACT needs data or subscribed', () => {
    const u = (config: unknown) => shapeErrors([{ id: 'u', type: 'UPDATE_CONTACT', config }]);
    expect(fields(u({}))).toEqual(['steps.0.config']);
    expect(u({})[0]!.message).toContain('data, subscribed');
    expect(fields(u({ data: {} }))).toEqual(['steps.0.config.data']);
    expect(u({ subscribed: false })).toEqual([]);
    expect(u({ data: { plan: null } })).toEqual([]);
    expect(fields(u({ data: { plan: 'pro' }, subscribed: 'yes' }))).toEqual(['steps.0.config.subscribed']);
  });

  test('SEND_EMAIL needs a template id (a UUID)', () => {
    expect(shapeErrors([{ id: 's', type: 'SEND_EMAIL', config: { template: 'welcome' } }])).toEqual([expect.objectContaining({ field: 'steps.0.config.template', code: 'invalid_string' })]);
    expect(fields(shapeErrors([{ id: 's', type: 'SEND_EMAIL', config: { template: `{${TEMPLATE}}` } }]))).toEqual(['steps.0.config.template']);
    expect(fields(shapeErrors([{ id: 's', type: 'SEND_EMAIL', config: {} }]))).toEqual(['steps.0.config.template']);
  });

  test('next and branches apply by type: EXIT has no next, CONDITION has branches only', () => {
    expect(shapeErrors([send('a', 'b'), { ...exit('b'), next: 'a' }])).toEqual([expect.objectContaining({ field: 'steps.1.next', message: 'an EXIT step has no next step' })]);
    expect(fields(shapeErrors([{ ...condition('c', null, null), next: 'x' }]))).toEqual(['steps.0.next']);
    expect(fields(shapeErrors([{ id: 'c', type: 'CONDITION', config: { filter: anyone } }]))).toEqual(['steps.0.branches']);
    expect(fields(shapeErrors([{ id: 'c', type: 'CONDITION', config: { filter: anyone }, branches: { yes: 'x' } }]))).toEqual(['steps.0.branches.no']);
    expect(fields(shapeErrors([{ ...send('a'), branches: { yes: null, no: null } }]))).toEqual(['steps.0.branches']);
    expect(fields(shapeErrors([send('a', 'not valid!')]))).toEqual(['steps.0.next']);
    expect(fields(shapeErrors([{ id: 'c', type: 'CONDITION', config: { filter: { groups: [] } }, branches: { yes: null, no: null } }]))).toEqual(['steps.0.config.filter.groups']);
  });
});

describe('patch and list schemas', () => {
  test('a patch names at least one key and gets no defaults', () => {
    expect(validate(patchWorkflowSchema, {}).errors).toEqual([expect.objectContaining({ code: 'too_small' })]);
    expect(validate(patchWorkflowSchema, { enabled: true }).value).toEqual({ enabled: true });
    expect(validate(patchWorkflowSchema, { name: 'Renamed' }).value).toEqual({ name: 'Renamed' });
    expect(fields(validate(patchWorkflowSchema, { steps: [] }).errors)).toEqual(['steps']);
    expect(fields(validate(patchWorkflowSchema, { steps: [{ id: 'x', type: 'NOPE' }] }).errors)).toEqual(['steps.0.type']);
  });

  test('list queries', () => {
    expect(validate(listWorkflowsQuerySchema, { enabled: 'true' }).value).toEqual({ limit: 20, enabled: true });
    expect(fields(validate(listWorkflowsQuerySchema, { enabled: 'maybe' }).errors)).toEqual(['enabled']);
    expect(validate(listExecutionsQuerySchema, { status: 'WAITING', contactId: TEMPLATE, limit: '5' }).value).toEqual({ status: 'WAITING', contactId: TEMPLATE, limit: 5 });
    expect(fields(validate(listExecutionsQuerySchema, { status: 'DONE', contactId: 'abc' }).errors)).toEqual(['status', 'contactId']);
  });
});

describe('checkSteps', () => {
  test('duplicate step ids', () => {
    const errors = definitionErrors([send('a', 'b'), delay('b', null), exit('a')]);
    expect(errors).toEqual([{ field: 'steps.2.id', message: 'step id "a" is already used by steps.0', code: 'duplicate' }]);
  });

  test('dangling next and branches', () => {
    const errors = definitionErrors([send('a', 'c'), condition('c', 'nowhere', 'gone'), send('b', 'missing')]);
    expect(fields(errors)).toEqual(['steps.1.branches.yes', 'steps.1.branches.no', 'steps.2.next', 'steps.2']);
    expect(errors[0]).toMatchObject({ code: 'not_found', message: expect.stringContaining('"nowhere"') });
    expect(errors[0]!.message).toContain('"c"');
    expect(errors[2]!.message).toContain('"missing"');
  });

  test('steps not reachable from the first step', () => {
    const errors = definitionErrors([send('a', null), delay('orphan', 'b'), exit('b')]);
    expect(errors).toEqual([
      { field: 'steps.1', message: 'step "orphan" is unreachable from the first step', code: 'unreachable' },
      { field: 'steps.2', message: 'step "b" is unreachable from the first step', code: 'unreachable' },
    ]);
    // Reachable through either branch; null ends the execution.
    expect(definitionErrors([condition('c', null, 'x'), send('x', null)])).toEqual([]);
  });

  test('a loop with no DELAY or WAIT_FOR_EVENT is refused, naming its steps', () => {
    const errors = definitionErrors([send('start', 'check'), condition('check', 'mail', null), send('mail', 'hook'), { id: 'hook', type: 'WEBHOOK', config: { url: 'https://x.io' }, next: 'check' }]);
    expect(errors).toEqual([{ field: 'steps.1', code: 'cycle', message: expect.stringContaining('"check" → "mail" → "hook" → "check"') }]);
    const self = definitionErrors([send('a', 'a')]);
    expect(self).toEqual([{ field: 'steps.0', code: 'cycle', message: expect.stringContaining('"a" → "a"') }]);
  });

  test('a loop through a DELAY or a WAIT_FOR_EVENT is a recurring journey', () => {
    expect(definitionErrors([send('mail', 'pause'), delay('pause', 'check'), condition('check', 'mail', null)])).toEqual([]);
    expect(definitionErrors([condition('check', 'mail', null), send('mail', 'await'), { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'clicked' }, next: 'check' }])).toEqual([]);
    // Only the loop that has no pause is reported.
    const errors = definitionErrors([send('a', 'b'), delay('b', 'c'), condition('c', 'a', 'd'), send('d', 'e'), send('e', 'd')]);
    expect(errors).toEqual([{ field: 'steps.3', code: 'cycle', message: expect.stringContaining('"d" → "e" → "d"') }]);
  });

  test('CONDITION filters are checked at steps.N.config.filter', () => {
    const bad = { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }, { filters: [{ field: 'plan', operator: 'equals', value: 'pro' }] }] };
    const errors = definitionErrors([send('a', 'c'), condition('c', null, null, bad)]);
    expect(errors).toEqual([expect.objectContaining({ field: 'steps.1.config.filter.groups.1.filters.0.field', code: 'invalid_field' })]);
    expect(errors[0]!.message).toMatch(/^step "c": unknown field "plan"/);
    const noUnit = { logic: 'AND', groups: [{ filters: [{ field: 'event.purchased', operator: 'triggeredWithin', value: 3 }] }] };
    expect(fields(definitionErrors([condition('c', null, null, noUnit)]))).toEqual(['steps.0.config.filter.groups.0.filters.0.unit']);
  });
});

describe('helpers', () => {
  test('durationMs, templateIdsOf and normaliseSteps', () => {
    expect(durationMs({ amount: 90, unit: 'minutes' })).toBe(5_400_000);
    expect(durationMs({ amount: 2, unit: 'hours' })).toBe(7_200_000);
    expect(durationMs({ amount: 1, unit: 'days' })).toBe(86_400_000);
    const other = '01a20131-0000-7000-8000-00000000000b';
    const steps = [send('a', 'b'), { ...send('b', 'c'), config: { template: TEMPLATE.toUpperCase() } }, { ...send('c'), config: { template: other } }] as Step[];
    expect(templateIdsOf(steps)).toEqual([TEMPLATE, other]);
    const seg = 'segment.01A20131-0000-7000-8000-0000000000CC';
    const normalised = normaliseSteps([...steps, condition('d', null, null, { logic: 'OR', groups: [{ filters: [{ field: seg, operator: 'memberOf' }] }] }) as Step]);
    expect(normalised[1]).toMatchObject({ config: { template: TEMPLATE } });
    expect(normalised[3]).toMatchObject({ config: { filter: { logic: 'OR', groups: [{ filters: [{ field: seg.toLowerCase(), operator: 'memberOf' }] }] } } });
  });
});

describe('checkReferences', () => {
  let db: TestDatabase;
  let project: string;
  let otherProject: string;
  let ownTemplate: string;
  let foreignTemplate: string;
  let segment: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    [project, otherProject] = (await db.knex('projects').insert([{ name: 'Mine' }, { name: 'Theirs' }]).returning('id')).map((r: { id: string }) => r.id) as [string, string];
    const template = (projectId: string) => db.knex('templates').insert({ project_id: projectId, name: 'T', subject: 'Hi', body: '<p>Hi</p>' }).returning('id').then(([r]) => r.id as string);
    ownTemplate = await template(project);
    foreignTemplate = await template(otherProject);
    [{ id: segment }] = await db.knex('segments').insert({ project_id: project, name: 'Pro', type: 'DYNAMIC', condition: JSON.stringify(anyone) }).returning('id');
  });
  afterAll(async () => { await db.close(); });

  const parse = (steps: unknown[]): CreateWorkflowBody['steps'] => {
    const { value, errors } = validate(createWorkflowSchema, workflow(steps));
    expect(errors).toEqual([]);
    return value.steps;
  };
  const memberOf = (id: string) => ({ logic: 'AND', groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOf' }] }] });

  test('own templates and segments pass', async () => {
    const steps = parse([{ ...send('a', 'c'), config: { template: ownTemplate.toUpperCase() } }, condition('c', 'b', null, memberOf(segment.toUpperCase())), { ...send('b'), config: { template: ownTemplate } }]);
    expect(await checkReferences(db.knex, project, steps)).toEqual([]);
    expect(await checkReferences(db.knex, project, parse([delay('d', null)]))).toEqual([]);
  });

  test('a template of another project, or none, is not found', async () => {
    const steps = parse([{ ...send('a', 'b'), config: { template: foreignTemplate } }, { ...send('b', 'c'), config: { template: ownTemplate } }, { ...send('c'), config: { template: TEMPLATE } }]);
    const errors = await checkReferences(db.knex, project, steps);
    expect(errors).toEqual([
      { field: 'steps.0.config.template', code: 'not_found', message: expect.stringContaining('"a"') },
      { field: 'steps.2.config.template', code: 'not_found', message: expect.stringContaining('"c"') },
    ]);
  });

  test('an unknown segment in a CONDITION filter is not found', async () => {
    const unknown = '01a20131-0000-7000-8000-0000000000ff';
    const steps = parse([condition('c', 'd', null, memberOf(unknown)), condition('d', null, null, memberOf(segment))]);
    const errors = await checkReferences(db.knex, project, steps);
    expect(errors).toEqual([{ field: 'steps.0.config.filter.groups.0.filters.0.field', code: 'not_found', message: expect.stringContaining(unknown) }]);
    expect(errors[0]!.message).toContain('step "c"');
    // The other project's view: its segment is unknown there too.
    expect(fields(await checkReferences(db.knex, otherProject, steps))).toEqual(['steps.0.config.filter.groups.0.filters.0.field', 'steps.1.config.filter.groups.0.filters.0.field']);
  });
});
