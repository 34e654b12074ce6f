import { campaignBatches } from '../campaigns/batches';
import { CAMPAIGN_FAILED_EMAIL_ERROR } from '../campaigns/lifecycle';
import { dispatchCampaign } from '../campaigns/dispatch';
import { createLogger } from '../logging/logger';
import { bearer, TEST_SECRET, type TestContext } from './support/app';
import { waitForExecutions, type ExecutionJson } from './support/automations';
import type { TestEngine } from './support/engine';
import { waitFor } from './support/processes';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';
import { backfillCampaignStats } from '../db/migrations/20261206000010_campaign_outcomes';

/**
 * Issue 13, "Failed is a state": rows that can no longer be compiled or run (stored before the API refused such
 * values, or by hand) do not break the lists they sit in, and a workflow that gives up ends FAILED with its reason and
 * an event, at once for a permanent failure, instead of staying SENDING or RUNNING after ten retries. The poisoned
 * rows are written with knex, past the API's validation. On the embedded engine (DBOS); test/temporal/failedState.test.ts
 * runs the campaign and the execution on Temporal.
 */
let eng: TestEngine;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

/** A condition PostgreSQL cannot evaluate: year 0 is no timestamptz (SQLSTATE 22008, whatever the contacts). */
const POISON = { logic: 'AND', groups: [{ filters: [{ field: 'updatedAt', operator: 'greaterThan', value: '0000-01-01T00:00:00Z' }] }] };
/** What a stored POISON is reported as: the database's reason, or (once the API's rules refuse year 0) theirs. */
const POISON_REASON = /0000-01-01|updatedAt/;
/** ACTIVITY_RETRY's 10 attempts take about two minutes: a permanent failure must be reported well before. */
const FAIL_FAST_MS = 20_000;

beforeAll(async () => {
  ({ eng, t, key } = e2e = await startEndToEnd());
  for (let i = 0; i < 6; i++) {
    await t.http().post('/contacts').set(key).send({ email: `c${i}@example.org`, subscribed: true, data: { plan: i < 2 ? 'pro' : 'free' } });
  }
});
afterAll(() => e2e.close());

/** A segment row as it could have been stored before the API's rules refused its condition. */
async function storedSegment(name: string, condition: object | null, type = 'DYNAMIC'): Promise<string> {
  const [row] = await t.db.knex('segments').insert({ project_id: t.project.id, name, type, condition: condition ? JSON.stringify(condition) : null }).returning('id');
  return row.id as string;
}

const memberOf = (id: string) => ({ logic: 'AND', groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOf' }] }] });

async function events(name: string): Promise<{ name: string; contactId: string | null; data: Record<string, unknown> }[]> {
  const res = await t.http().get(`/events?name=${encodeURIComponent(name)}&limit=100`).set(key);
  expect(res.status).toBe(200);
  return res.body.data.items;
}

async function campaignIn(id: string, status: string, timeoutMs = 30_000) {
  return waitFor(`campaign ${status}`, async () => {
    const res = await t.http().get(`/campaigns/${id}`).set(key);
    return res.body.data.status === status ? res.body.data : undefined;
  }, timeoutMs, 100);
}

describe('segments whose stored condition cannot be evaluated', () => {
  test('poisoned segment row: GET /segments answers 200 with the other rows, the bad one (and one nesting it) with memberCount null and an error', async () => {
    const pro = (await t.http().post('/segments').set(key).send({
      name: 'Pro', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    })).body.data.id;
    const poisoned = await storedSegment('Year zero', POISON);
    const nesting = await storedSegment('Nests year zero', memberOf(poisoned));

    const list = await t.http().get('/segments?limit=100').set(key);
    expect(list.status).toBe(200);
    const byId = new Map(list.body.data.items.map((s: { id: string }) => [s.id, s]));
    expect(byId.get(pro)).toMatchObject({ name: 'Pro', memberCount: 2, error: null });
    for (const id of [poisoned, nesting]) {
      const s = byId.get(id) as { memberCount: unknown; error: string };
      expect(s.memberCount).toBeNull();
      expect(s.error).toMatch(/^the condition cannot be evaluated: /);
      expect(s.error).toMatch(POISON_REASON);
      expect(s.error).not.toMatch(/select|project_id/i); // the database's reason, not the statement and its values
    }

    const one = await t.http().get(`/segments/${poisoned}`).set(key);
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: poisoned, memberCount: null, error: expect.stringMatching(POISON_REASON) });
    expect((await t.http().get(`/segments/${pro}`).set(key)).body.data).toMatchObject({ memberCount: 2, error: null });
  });

  test('poisoned segment row: its contacts (and a preview naming it) are a 422 saying why, not a 500', async () => {
    const poisoned = await storedSegment('Year zero again', POISON);
    const contacts = await t.http().get(`/segments/${poisoned}/contacts`).set(key);
    expect(contacts.status).toBe(422);
    expect(contacts.body.error).toMatchObject({ code: 'VALIDATION_ERROR', errors: [{ field: 'condition', code: 'invalid_condition' }] });
    expect(contacts.body.error.message).toMatch(/^the condition cannot be evaluated: /);
    expect(contacts.body.error.message).toMatch(POISON_REASON);
    expect(contacts.body.error.suggestion).toMatch(/PATCH \/segments/);

    const preview = await t.http().post('/segments/preview').set(key).send({ condition: memberOf(poisoned) });
    expect(preview.status).toBe(422);
    expect(preview.body.error.errors[0]).toMatchObject({ field: 'condition', code: 'invalid_condition' });

    // Fixed with PATCH, it counts again.
    const fixed = await t.http().patch(`/segments/${poisoned}`).set(key).send({ condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] } });
    expect(fixed.status).toBe(200);
    expect(fixed.body.data).toMatchObject({ memberCount: 4, error: null });
    expect((await t.http().get(`/segments/${poisoned}/contacts`).set(key)).body.data.total).toBe(4);
  });

  test('segment rows that no longer compile (unknown field, a segment gone, no condition) are flagged the same way', async () => {
    const unknownField = await storedSegment('Unknown field', { logic: 'AND', groups: [{ filters: [{ field: 'shoeSize', operator: 'equals', value: 42 }] }] });
    const gone = await storedSegment('Names a deleted segment', memberOf('0190d7a0-0000-7000-8000-000000000000'));
    const empty = await storedSegment('No condition', null);
    const list = await t.http().get('/segments?limit=100').set(key);
    expect(list.status).toBe(200);
    const byId = new Map(list.body.data.items.map((s: { id: string }) => [s.id, s]));
    expect(byId.get(unknownField)).toMatchObject({ memberCount: null, error: expect.stringMatching(/unknown field "shoeSize"/) });
    expect(byId.get(gone)).toMatchObject({ memberCount: null, error: expect.stringMatching(/segment 0190d7a0-0000-7000-8000-000000000000 does not exist/) });
    expect(byId.get(empty)).toMatchObject({ memberCount: null, error: expect.stringMatching(/cannot be evaluated/) });
    expect((await t.http().get(`/segments/${unknownField}/contacts`).set(key)).status).toBe(422);
  });
});

describe('campaigns', () => {
  test('lists of campaigns and workflows holding filters that cannot be evaluated answer 200', async () => {
    const [campaign] = await t.db.knex('campaigns').insert({
      project_id: t.project.id, name: 'Stored filter', subject: 'Hi', body: '<p>Hi</p>', from_email: 'news@example.com',
      audience_type: 'FILTERED', audience_filter: JSON.stringify(POISON),
    }).returning('id');
    const wf = (await t.http().post('/workflows').set(key).send({
      name: 'stored condition', trigger: { type: 'EVENT', event: 'never' },
      steps: [{ id: 'check', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] } }, branches: { yes: null, no: null } }],
    })).body.data.id;
    await t.db.knex('automations').where({ id: wf }).update({
      steps: JSON.stringify([{ id: 'check', type: 'CONDITION', config: { filter: POISON }, branches: { yes: null, no: null } }]),
    });
    expect((await t.http().get('/campaigns?limit=100').set(key)).status).toBe(200);
    expect((await t.http().get(`/campaigns/${campaign.id}`).set(key)).body.data).toMatchObject({ audienceFilter: POISON, status: 'DRAFT' });
    expect((await t.http().get('/workflows?limit=100').set(key)).status).toBe(200);
    expect((await t.http().get(`/workflows/${wf}/executions`).set(key)).status).toBe(200);
  });

  test('poisoned campaign audience (a segment that cannot be evaluated) sent: FAILED at once with its error, and a campaign.failed event', async () => {
    const poisoned = await storedSegment('Year zero audience', POISON);
    const created = await t.http().post('/campaigns').set(key).send({
      name: 'To year zero', subject: 'Hi', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: poisoned,
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);

    const failed = await campaignIn(id, 'FAILED', FAIL_FAST_MS);
    expect(failed.error).toMatch(/^the audience cannot be evaluated: /);
    expect(failed.error).toMatch(POISON_REASON);
    expect(failed.error).not.toMatch(/gave up after|select|project_id/i); // not retried; no statement in the reason

    const [event] = (await events('campaign.failed')).filter((e) => e.data.campaignId === id);
    expect(event).toMatchObject({ name: 'campaign.failed', contactId: null, data: { campaignId: id, name: 'To year zero', error: failed.error, cancelledEmails: 0 } });
    expect((await t.http().get('/campaigns?status=FAILED').set(key)).body.data.items.map((c: { id: string }) => c.id)).toContain(id);
    // Final: neither sent again nor cancelled.
    expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(409);
    expect((await t.http().post(`/campaigns/${id}/cancel`).set(key)).status).toBe(409);
  });

  test('a FILTERED campaign stored with a filter PostgreSQL cannot evaluate (before validation existed) ends FAILED at once too', async () => {
    const [row] = await t.db.knex('campaigns').insert({
      project_id: t.project.id, name: 'Stored year zero', subject: 'Hi', body: '<p>Hi</p>', from_email: 'news@example.com',
      audience_type: 'FILTERED', audience_filter: JSON.stringify(POISON), status: 'SCHEDULED', scheduled_at: t.db.knex.fn.now(),
    }).returning('*');
    expect(await dispatchCampaign(eng.engine, t.db.knex, row, createLogger('silent'), TEST_SECRET)).toBe(true);
    const failed = await campaignIn(row.id, 'FAILED', FAIL_FAST_MS);
    expect(failed.error).toMatch(/^the audience cannot be evaluated: /);
    expect(failed.error).toMatch(POISON_REASON);
    expect((await events('campaign.failed')).some((e) => e.data.campaignId === row.id)).toBe(true);
  });

  test('a failed campaign cancels its still-queued emails (they are not delivered later); sent ones stay sent; once only', async () => {
    // As beginCampaign and the first batch leave it: all of a campaign's emails in the partition its row names.
    const partitionAt = new Date();
    const [row] = await t.db.knex('campaigns').insert({
      project_id: t.project.id, name: 'Half sent', subject: 'Hi', body: '<p>Hi</p>', from_email: 'news@example.com',
      audience_type: 'ALL', status: 'SENDING', started_at: t.db.knex.fn.now(), emails_partition_at: partitionAt,
    }).returning('id');
    const contacts = await t.db.knex('contacts').where({ project_id: t.project.id }).orderBy('email').limit(3).select('id', 'email');
    // Not yet available to the delivery queue (available_at in an hour): they stay QUEUED until the campaign fails.
    await t.db.knex('emails').insert(contacts.map((c, i) => ({
      project_id: t.project.id, contact_id: c.id, campaign_id: row.id, from_email: 'news@example.com', to_email: c.email,
      status: i === 0 ? 'SENT' : 'QUEUED', priority: 1, available_at: t.db.knex.raw("now() + interval '1 hour'"), partition_at: partitionAt,
    })));
    await backfillCampaignStats(t.db.knex, { projectId: t.project.id, campaignId: row.id }); // its counts, as the writers keep them
    const activities = campaignBatches({ knex: t.db.knex, secret: TEST_SECRET });
    await expect(activities.failCampaign({ projectId: t.project.id, campaignId: row.id, error: 'boom' })).resolves.toBe('FAILED');
    const emails = await t.db.knex('emails').where({ campaign_id: row.id }).select('status', 'error');
    expect(emails.map((e) => e.status).sort()).toEqual(['CANCELLED', 'CANCELLED', 'SENT']);
    expect(emails.filter((e) => e.status === 'CANCELLED').every((e) => e.error === CAMPAIGN_FAILED_EMAIL_ERROR)).toBe(true);
    const data = (await t.http().get(`/campaigns/${row.id}`).set(key)).body.data;
    expect(data).toMatchObject({ status: 'FAILED', error: 'boom' });
    const stats = (await t.http().get(`/campaigns/${row.id}/stats`).set(key)).body.data;
    expect(stats).toMatchObject({ totalRecipients: 3, sent: 1, queued: 0 });
    // A repeated call (a retried activity) changes nothing and records no second event.
    await expect(activities.failCampaign({ projectId: t.project.id, campaignId: row.id, error: 'again' })).resolves.toBe('FAILED');
    expect((await t.http().get(`/campaigns/${row.id}`).set(key)).body.data.error).toBe('boom');
    expect((await events('campaign.failed')).filter((e) => e.data.campaignId === row.id)).toEqual([
      expect.objectContaining({ contactId: null, data: { campaignId: row.id, name: 'Half sent', error: 'boom', cancelledEmails: 2 } }),
    ]);
  });
});

describe('automation executions', () => {
  const failed = (x: ExecutionJson) => !['RUNNING', 'WAITING'].includes(x.status);

  /** A workflow created through the API, whose steps are then replaced by `steps` as if stored before validation. */
  async function storedWorkflow(event: string, steps: object[]): Promise<string> {
    const res = await t.http().post('/workflows').set(key).send({
      name: `on ${event}`, enabled: true, trigger: { type: 'EVENT', event }, steps: [{ id: 'placeholder', type: 'EXIT' }],
    });
    expect(res.status).toBe(201);
    await t.db.knex('automations').where({ id: res.body.data.id }).update({ steps: JSON.stringify(steps) });
    return res.body.data.id;
  }

  const track = async (email: string, event: string) => {
    const res = await t.http().post('/v1/track').set(bearer(t.project.publicKey)).send({ email, event });
    expect(res.status).toBe(200);
    return res.body.data.contact as string;
  };

  test('an execution whose CONDITION step cannot be evaluated: FAILED at once, naming the step and why, with an execution.failed event', async () => {
    const wf = await storedWorkflow('poisoned_condition', [{ id: 'check', type: 'CONDITION', config: { filter: POISON }, branches: { yes: null, no: null } }]);
    const contact = await track('c1@example.org', 'poisoned_condition');
    const [x] = await waitForExecutions(t.http, key, wf, failed, 1, FAIL_FAST_MS);
    expect(x).toMatchObject({ status: 'FAILED', currentStepId: 'check', contactId: contact });
    expect(x!.error).toMatch(/^step "check": /);
    expect(x!.error).toMatch(POISON_REASON);
    expect(x!.error).not.toMatch(/gave up after|select|project_id/i);
    const [event] = (await events('execution.failed')).filter((e) => e.data.executionId === x!.id);
    // No contact on the event: a workflow listening to execution.failed cannot start itself again in a loop.
    expect(event).toMatchObject({ contactId: null, data: { workflowId: wf, executionId: x!.id, contactId: contact, stepId: 'check', error: x!.error } });
  });

  test('an execution whose activity fails permanently outside a step (a DELAY PostgreSQL cannot add): FAILED with the reason and the event', async () => {
    const wf = await storedWorkflow('poisoned_delay', [{ id: 'wait', type: 'DELAY', config: { amount: 1e12, unit: 'days' } }]);
    await track('c2@example.org', 'poisoned_delay');
    const [x] = await waitForExecutions(t.http, key, wf, failed, 1, FAIL_FAST_MS);
    expect(x!.status).toBe('FAILED');
    expect(x!.error).toMatch(/out of range/);
    expect(x!.error).not.toMatch(/gave up after|select|project_id/i);
    const [event] = (await events('execution.failed')).filter((e) => e.data.executionId === x!.id);
    expect(event).toMatchObject({ contactId: null, data: { workflowId: wf, executionId: x!.id, error: x!.error } });
  });

  test('a step that cannot succeed (its template deleted) still fails as before, now with its event', async () => {
    const tpl = (await t.http().post('/templates').set(key).send({ name: 'Gone', subject: 'Hi', body: '<p>Hi</p>', from: 'hello@example.com' })).body.data.id;
    const wf = await storedWorkflow('template_gone', [{ id: 'send', type: 'SEND_EMAIL', config: { template: tpl } }]);
    await t.db.knex('templates').where({ id: tpl }).delete();
    await track('c3@example.org', 'template_gone');
    const [x] = await waitForExecutions(t.http, key, wf, failed, 1, FAIL_FAST_MS);
    expect(x).toMatchObject({ status: 'FAILED', error: `step "send": template ${tpl} no longer exists` });
    expect((await events('execution.failed')).filter((e) => e.data.executionId === x!.id)).toHaveLength(1);
  });
});
