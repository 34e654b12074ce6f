import { temporal as proto } from '@temporalio/proto';
import { bearer } from '../support/app';
import { waitForExecutions } from '../support/automations';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

/**
 * Issue 13, "Failed is a state", on Temporal (the embedded engine's side: test/failedState.test.ts): a permanent
 * failure of an activity is an ApplicationFailure of type PermanentError, not retried (the retry policy's
 * nonRetryableErrorTypes), and the workflow ends the campaign or execution FAILED with the activity's message and an
 * event, then completes (it does not fail: the database holds the outcome). Real API and worker processes.
 */
describeTemporal(__filename, 'Temporal: a workflow that gives up ends its campaign or execution FAILED', (temporal) => {
  const c = heraldCluster(temporal, { workers: 1 });
  const key = () => bearer(c.project.secretKey);
  /** A condition PostgreSQL cannot evaluate (year 0 is no timestamptz), stored past the API's validation. */
  const POISON = { logic: 'AND', groups: [{ filters: [{ field: 'updatedAt', operator: 'greaterThan', value: '0000-01-01T00:00:00Z' }] }] };
  const POISON_REASON = /0000-01-01|updatedAt/;
  /** ACTIVITY_RETRY's 10 attempts take about two minutes: a permanent failure must be reported well before. */
  const FAIL_FAST_MS = 20_000;

  /** The failed activity tasks of a workflow's history: their attempt and why the server stopped retrying. */
  async function failedActivities(workflowId: string) {
    const history = await c.client.workflow.getHandle(workflowId).fetchHistory();
    const EventType = proto.api.enums.v1.EventType;
    return (history.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED).map((e) => ({
      attempt: (history.events ?? []).find((s) => s.eventId?.toString() === e.activityTaskFailedEventAttributes?.startedEventId?.toString())?.activityTaskStartedEventAttributes?.attempt,
      type: e.activityTaskFailedEventAttributes?.failure?.cause?.applicationFailureInfo?.type ?? e.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type,
      retryState: e.activityTaskFailedEventAttributes?.retryState,
    }));
  }

  async function events(name: string) {
    const res = await c.http().get(`/events?name=${name}&limit=100`).set(key());
    expect(res.status).toBe(200);
    return res.body.data.items as { contactId: string | null; data: Record<string, unknown> }[];
  }

  test('a campaign whose audience cannot be evaluated: FAILED after one attempt, with its error and a campaign.failed event', async () => {
    await c.http().post('/contacts').set(key()).send({ email: 'one@example.org', subscribed: true });
    const [segment] = await c.db.knex('segments').insert({ project_id: c.project.id, name: 'Year zero', type: 'DYNAMIC', condition: JSON.stringify(POISON) }).returning('id');
    // The list it sits in still answers, the row flagged.
    const list = await c.http().get('/segments').set(key());
    expect(list.status).toBe(200);
    expect(list.body.data.items.find((s: { id: string }) => s.id === segment.id)).toMatchObject({ memberCount: null, error: expect.stringMatching(POISON_REASON) });

    const created = await c.http().post('/campaigns').set(key()).send({
      name: 'To year zero', subject: 'Hi', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: segment.id,
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    expect((await c.http().post(`/campaigns/${id}/send`).set(key()).send({})).status).toBe(200);
    const failed = await waitFor('FAILED', async () => {
      const data = (await c.http().get(`/campaigns/${id}`).set(key())).body.data;
      return data.status === 'FAILED' ? data : undefined;
    }, FAIL_FAST_MS, 200);
    expect(failed.error).toMatch(/^the audience cannot be evaluated: /);
    expect(failed.error).toMatch(POISON_REASON);
    expect((await events('campaign.failed')).filter((e) => e.data.campaignId === id)).toEqual([
      expect.objectContaining({ contactId: null, data: expect.objectContaining({ campaignId: id, error: failed.error }) }),
    ]);
    // The workflow completed with the outcome; its one failed activity was not retried.
    expect(await c.client.workflow.getHandle(`campaign-${id}`).result()).toBe('FAILED');
    expect(await failedActivities(`campaign-${id}`)).toEqual([
      { attempt: 1, type: 'PermanentError', retryState: proto.api.enums.v1.RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE },
    ]);
  }, 60_000);

  test('an execution whose activity fails permanently (a DELAY PostgreSQL cannot add): FAILED after one attempt, with an execution.failed event', async () => {
    const res = await c.http().post('/workflows').set(key()).send({
      name: 'poisoned delay', enabled: true, trigger: { type: 'EVENT', event: 'poisoned_delay' }, steps: [{ id: 'placeholder', type: 'EXIT' }],
    });
    expect(res.status).toBe(201);
    const wf = res.body.data.id as string;
    await c.db.knex('automations').where({ id: wf }).update({ steps: JSON.stringify([{ id: 'wait', type: 'DELAY', config: { amount: 1e12, unit: 'days' } }]) });
    expect((await c.http().post('/v1/track').set(key()).send({ email: 'two@example.org', event: 'poisoned_delay' })).status).toBe(200);
    const [x] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'FAILED', 1, FAIL_FAST_MS);
    expect(x!.error).toMatch(/out of range/);
    expect((await events('execution.failed')).filter((e) => e.data.executionId === x!.id)).toEqual([
      expect.objectContaining({ contactId: null, data: expect.objectContaining({ workflowId: wf, executionId: x!.id, error: x!.error }) }),
    ]);
    expect(await c.client.workflow.getHandle(`execution-${x!.id}`).result()).toBe('FAILED');
    expect(await failedActivities(`execution-${x!.id}`)).toEqual([
      { attempt: 1, type: 'PermanentError', retryState: proto.api.enums.v1.RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE },
    ]);
  }, 60_000);

  test('an execution whose CONDITION cannot be evaluated: FAILED naming the step, with its event', async () => {
    const res = await c.http().post('/workflows').set(key()).send({
      name: 'poisoned condition', enabled: true, trigger: { type: 'EVENT', event: 'poisoned_condition' }, steps: [{ id: 'placeholder', type: 'EXIT' }],
    });
    const wf = res.body.data.id as string;
    await c.db.knex('automations').where({ id: wf }).update({ steps: JSON.stringify([{ id: 'check', type: 'CONDITION', config: { filter: POISON }, branches: { yes: null, no: null } }]) });
    await c.http().post('/v1/track').set(key()).send({ email: 'three@example.org', event: 'poisoned_condition' });
    const [x] = await waitForExecutions(c.http, key(), wf, (e) => e.status === 'FAILED', 1, FAIL_FAST_MS);
    expect(x!.error).toMatch(/^step "check": /);
    expect(x!.error).toMatch(POISON_REASON);
    expect((await events('execution.failed')).some((e) => e.data.executionId === x!.id && e.data.stepId === 'check')).toBe(true);
  }, 60_000);
});
