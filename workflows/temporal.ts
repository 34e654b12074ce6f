/**
 * The Temporal workflow bundle entry (`workflowsPath`). Each exported function is a Temporal workflow type that
 * runs the engine-neutral logic of workflows/ over a context built from Temporal's own primitives.
 * Deterministic only: no Node APIs, no database, no clock but the workflow's.
 *
 * Versioning rule: running executions (an automation waits up to 7 days at a time) replay their histories against the
 * code deployed next. A change to workflows/ that changes the commands a recorded history issued (which activities,
 * timers, continue-as-new, and in what order) goes behind `ctx.patched('<change-id>')`, keeping the old path for
 * executions already running. Replay does not compare an activity's input (the waits' `now` was added so), but it
 * feeds back recorded results as they were: new code must still read old results. test/temporal/replay.test.ts
 * replays the histories recorded in test/temporal/histories/ in every run and enforces the rule.
 */
import { CancellationScope, condition, defineSignal, isCancellation, makeContinueAsNewFunc, patched, proxyActivities, proxySinks, setHandler, sleep, TemporalFailure, workflowInfo, type Sinks } from '@temporalio/workflow';
import type { RetryPolicy as TemporalRetryPolicy } from '@temporalio/common';
import { checkDomains as checkDomainsLogic } from './checkDomains';
import { applyRetention as applyRetentionLogic } from './retention';
import { importContacts as importContactsLogic } from './importContacts';
import type { WorkflowContext } from './context';
import { runAutomation as runAutomationLogic } from './runAutomation';
import { sendCampaign as sendCampaignLogic } from './sendCampaign';
import { ACTIVITY_RETRY, HEARTBEAT, HEARTBEATING_ACTIVITIES, PERMANENT_ERROR, WAKE_TOPIC, WEBHOOK_RETRY, type RetryPolicy } from './policy';
import type { RunAutomationInput, CheckDomainsInput, ImportContactsInput, OtherActivities, RetentionInput, SendCampaignInput, WebhookActivities } from './types';

function retry(p: RetryPolicy): TemporalRetryPolicy {
  return {
    initialInterval: p.initialIntervalMs,
    backoffCoefficient: p.backoffCoefficient,
    maximumInterval: p.maximumIntervalMs,
    maximumAttempts: p.maximumAttempts,
    // Most permanent failures are not thrown (the activity records them and returns); those that are thrown (a data
    // error, an audience that cannot be compiled) are PermanentErrors, which are not retried.
    nonRetryableErrorTypes: [PERMANENT_ERROR],
  };
}

/**
 * Messages received by this workflow execution, per topic, not yet consumed by a receive. Module state is per
 * workflow execution: Temporal runs each one in its own isolated context.
 */
const inbox = new Map<string, number>();
const wake = defineSignal<[unknown]>(WAKE_TOPIC);

const activities = proxyActivities<OtherActivities>({ startToCloseTimeout: '1 minute', retry: retry(ACTIVITY_RETRY) });
// The same activities with a heartbeat timeout (policy.ts HEARTBEAT): a lost worker's batch is retried within seconds,
// while a slow batch that still beats may run on. Activity options are not part of the history: no patch needed.
const beating = proxyActivities<OtherActivities>({ startToCloseTimeout: '10 minutes', heartbeatTimeout: HEARTBEAT.timeoutMs, retry: retry(ACTIVITY_RETRY) });

const context: WorkflowContext = {
  activities: new Proxy(activities, {
    get: (target, name) => (typeof name === 'string' && HEARTBEATING_ACTIVITIES.includes(name) ? beating : target)[name as keyof OtherActivities],
  }),
  // The call's own timeout (WEBHOOK_TIMEOUT_MS) is enforced inside the activity; this one only bounds a lost worker.
  webhooks: proxyActivities<WebhookActivities>({ startToCloseTimeout: '2 minutes', retry: retry(WEBHOOK_RETRY) }),
  receive: async (topic, timeoutMs) => {
    const got = await condition(() => (inbox.get(topic) ?? 0) > 0, timeoutMs);
    if (got) inbox.set(topic, 0); // every nudge so far is answered by the one look at the database that follows
    return got;
  },
  sleep: (ms) => sleep(ms),
  now: async () => Date.now(), // deterministic inside a workflow: the time of the current workflow task
  timersOwnClock: true, // the server's clock (moved ahead by the time-skipping test server), not the database's
  isCancellation: (err) => isCancellation(err),
  nonCancellable: (fn) => CancellationScope.nonCancellable(fn),
  continueAsNew: (workflow, input) => makeContinueAsNewFunc({ workflowType: workflow })(input),
  // Set by the server from its history limits (limit.historyCount.suggestContinueAsNew, …): deterministic, it is part of the workflow task.
  continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
  patched: (id) => patched(id),
};

/**
 * Calls out of the sandbox that leave no trace in the history (Temporal's sinks, installed on the worker by
 * engine/temporal.ts and not called during replay): the worker's metrics (herald_engine_workflow_failures_total).
 */
export interface HeraldSinks extends Sinks {
  metrics: { workflowFailed(workflow: string): void };
}
const { metrics } = proxySinks<HeraldSinks>();

/**
 * Counts a run that fails its execution: a TemporalFailure thrown out of the workflow (an activity's permanent
 * failure, say). A cancellation is not a failure; continue-as-new is no TemporalFailure, nor is a bug that fails only
 * the workflow task (Temporal retries the task).
 */
async function observed<T>(workflow: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof TemporalFailure && !isCancellation(err)) metrics.workflowFailed(workflow);
    throw err;
  }
}

export async function sendCampaign(input: SendCampaignInput) {
  // An A/B campaign's wait ends early when a person chooses its winner (a wake-up); plain campaigns never wait for one.
  setHandler(wake, () => { inbox.set(WAKE_TOPIC, (inbox.get(WAKE_TOPIC) ?? 0) + 1); });
  return observed('sendCampaign', () => sendCampaignLogic(context, input));
}

export async function checkDomains(input: CheckDomainsInput) {
  return observed('checkDomains', () => checkDomainsLogic(context, input));
}

export async function runAutomation(input: RunAutomationInput) {
  setHandler(wake, () => { inbox.set(WAKE_TOPIC, (inbox.get(WAKE_TOPIC) ?? 0) + 1); });
  return observed('runAutomation', () => runAutomationLogic(context, input));
}

export async function importContacts(input: ImportContactsInput) {
  return observed('importContacts', () => importContactsLogic(context, input));
}

export async function applyRetention(input: RetentionInput) {
  return observed('applyRetention', () => applyRetentionLogic(context, input));
}
