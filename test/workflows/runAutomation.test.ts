import type { WorkflowContext } from '../../workflows/context';
import { runAutomation, STEPS_PER_RUN, WAIT_CHUNK_MS } from '../../workflows/runAutomation';
import type { RunAutomationInput, Step, StepOutcome, WaitState } from '../../workflows/types';

/**
 * The interpreter's logic against a scripted context that records every command it emits (activity calls, receives
 * with their timeouts, continue-as-new), as a Temporal or DBOS context would carry them out: the engine itself is
 * mocked here (no Temporal server can run in this environment; the embedded engine runs it for real in
 * test/automations/engine.test.ts). The command counts bound a run's Temporal history.
 */
class ContinuedAsNew extends Error {
  constructor(readonly input: RunAutomationInput) { super('continue-as-new'); }
}
class Cancelled extends Error {}

interface Script {
  steps: Step[];
  /** What runStep / callWebhook answer, in order (default: go on to the step's next). */
  outcomes?: (StepOutcome | Error)[];
  /** WaitStates of beginWait, checkWait and parkExecution, in order. */
  waits?: (WaitState | { state: 'PARKED' })[];
  /** Throw the engine's cancellation at the nth activity call. */
  cancelAt?: number;
}

function scripted(s: Script) {
  const commands: string[] = [];
  const outcomes = [...(s.outcomes ?? [])];
  const waits = [...(s.waits ?? [])];
  let calls = 0;
  const call = <T>(name: string, answer: () => T): Promise<T> => {
    calls += 1;
    commands.push(name);
    if (s.cancelAt === calls) return Promise.reject(new Cancelled());
    return Promise.resolve().then(answer);
  };
  const stepAnswer = (step: Step): StepOutcome => {
    const next = outcomes.shift();
    if (next instanceof Error) throw next;
    return next ?? { next: 'next' in step ? step.next ?? null : null };
  };
  const ctx: WorkflowContext = {
    continueAsNewSuggested: () => false,
    patched: () => true,
    webhooks: { callWebhook: (r) => call(`callWebhook:${r.step.id}#${r.seq}`, () => stepAnswer(r.step)) },
    receive: async (topic, ms) => { commands.push(`receive:${topic}:${ms}`); return false; },
    activities: {
      ...({} as WorkflowContext['activities']),
      startExecution: () => call('startExecution', () => ({ steps: s.steps })),
      runStep: (r) => call(`runStep:${r.step.id}#${r.seq}`, () => stepAnswer(r.step)),
      beginWait: (r) => call(`beginWait:${r.step.id}#${r.seq}`, () => (waits.shift() ?? { state: 'DONE', by: 'timeout' }) as WaitState),
      checkWait: (r) => call(`checkWait:${r.stepId}`, () => (waits.shift() ?? { state: 'DONE', by: 'timeout' }) as WaitState),
      finishExecution: (r) => call(`finish:${r.status}${r.error ? `:${r.error}` : ''}`, () => r.status),
      parkExecution: (r) => call(`park:${r.at}#${r.seq}`, () => waits.shift() ?? { state: 'PARKED' as const }),
      cancelExecution: () => call('cancelExecution', () => 'CANCELLED' as const),
    },
    sleep: async () => { throw new Error('the interpreter waits with receive, not sleep'); },
    now: async () => 0,
    isCancellation: (err) => err instanceof Cancelled,
    nonCancellable: (fn) => fn(),
    continueAsNew: async (_wf, input) => { throw new ContinuedAsNew(input as RunAutomationInput); },
  };
  return { ctx, commands };
}

const ref = { projectId: 'p', executionId: 'x' };
const mail = (id: string, next?: string): Step => ({ id, type: 'SEND_EMAIL', config: { template: 't' }, ...(next ? { next } : {}) });

test('walks the steps from the first, one activity each, and completes', async () => {
  const { ctx, commands } = scripted({ steps: [mail('a', 'b'), { id: 'b', type: 'UPDATE_CONTACT', config: { data: { x: 1 } }, next: 'c' }, { id: 'c', type: 'WEBHOOK', config: { url: 'https://h.example.com' } }] });
  expect(await runAutomation(ctx, ref)).toBe('COMPLETED');
  expect(commands).toEqual(['startExecution', 'runStep:a#1', 'runStep:b#2', 'callWebhook:c#3', 'finish:COMPLETED']);
});

test('CONDITION follows the branch the activity chose; EXIT ends as EXITED', async () => {
  const steps: Step[] = [
    { id: 'if', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [] } }, branches: { yes: 'y', no: 'n' } },
    mail('y'), { id: 'n', type: 'EXIT' },
  ];
  const yes = scripted({ steps, outcomes: [{ next: 'y' }] });
  expect(await runAutomation(yes.ctx, ref)).toBe('COMPLETED');
  expect(yes.commands).toEqual(['startExecution', 'runStep:if#1', 'runStep:y#2', 'finish:COMPLETED']);
  const no = scripted({ steps, outcomes: [{ next: 'n' }] });
  expect(await runAutomation(no.ctx, ref)).toBe('EXITED');
  expect(no.commands).toEqual(['startExecution', 'runStep:if#1', 'finish:EXITED']);
});

test('a wait receives in chunks of at most 7 days, looking at the row after each wake-up, until the row says DONE', async () => {
  const { ctx, commands } = scripted({
    steps: [{ id: 'w', type: 'DELAY', config: { amount: 30, unit: 'days' }, next: 'm' }, mail('m')],
    waits: [
      { state: 'WAITING', remainingMs: 30 * 86_400_000 },
      { state: 'WAITING', remainingMs: 23 * 86_400_000 },
      { state: 'WAITING', remainingMs: 1000 }, // the clock was stepped, or the deadline is near
      { state: 'DONE', by: 'timeout' },
    ],
  });
  expect(await runAutomation(ctx, ref)).toBe('COMPLETED');
  expect(commands).toEqual([
    'startExecution', 'beginWait:w#1',
    `receive:wake:${WAIT_CHUNK_MS}`, 'checkWait:w',
    `receive:wake:${WAIT_CHUNK_MS}`, 'checkWait:w',
    'receive:wake:1000', 'checkWait:w',
    'runStep:m#2', 'finish:COMPLETED',
  ]);
});

test('a WAIT_FOR_EVENT without timeout waits in chunks until the event; a cancel seen by the row ends the run', async () => {
  const steps: Step[] = [{ id: 'e', type: 'WAIT_FOR_EVENT', config: { event: 'paid' } }];
  const got = scripted({ steps, waits: [{ state: 'WAITING', remainingMs: null }, { state: 'DONE', by: 'event' }] });
  expect(await runAutomation(got.ctx, ref)).toBe('COMPLETED');
  expect(got.commands).toEqual(['startExecution', 'beginWait:e#1', `receive:wake:${WAIT_CHUNK_MS}`, 'checkWait:e', 'finish:COMPLETED']);
  const cancelled = scripted({ steps, waits: [{ state: 'WAITING', remainingMs: null }, { state: 'CANCELLED' }] });
  expect(await runAutomation(cancelled.ctx, ref)).toBe('CANCELLED');
  expect(cancelled.commands.at(-1)).toBe('checkWait:e');
});

test('a step answering cancelled stops without writing; failed ends FAILED with its error', async () => {
  const a = scripted({ steps: [mail('a', 'b'), mail('b')], outcomes: [{ cancelled: true }] });
  expect(await runAutomation(a.ctx, ref)).toBe('CANCELLED');
  expect(a.commands).toEqual(['startExecution', 'runStep:a#1']);
  const b = scripted({ steps: [mail('a', 'b'), mail('b')], outcomes: [{ failed: 'template gone' }] });
  expect(await runAutomation(b.ctx, ref)).toBe('FAILED');
  expect(b.commands.at(-1)).toBe('finish:FAILED:template gone');
});

test('an activity that failed every retry ends the execution FAILED with the cause (Temporal wraps it)', async () => {
  const wrapped = Object.assign(new Error('Activity task failed'), { cause: new Error('webhook answered 503') });
  const { ctx, commands } = scripted({ steps: [{ id: 'h', type: 'WEBHOOK', config: { url: 'https://h.example.com' } }], outcomes: [wrapped] });
  expect(await runAutomation(ctx, ref)).toBe('FAILED');
  expect(commands.at(-1)).toBe('finish:FAILED:webhook answered 503');
});

test('DBOS out of retries: the execution FAILED with the last attempt\'s error, not DBOS\'s list of them all', async () => {
  const dbos = Object.assign(new Error('Step callWebhook has exceeded its maximum of 6 retries. Previous errors: Error 1: …'), { errors: [new Error('webhook answered 502'), new Error('webhook answered 503')] });
  const { ctx, commands } = scripted({ steps: [{ id: 'h', type: 'WEBHOOK', config: { url: 'https://h.example.com' } }], outcomes: [dbos] });
  expect(await runAutomation(ctx, ref)).toBe('FAILED');
  expect(commands.at(-1)).toBe('finish:FAILED:gave up after 2 attempts: webhook answered 503');
});

test('cancelled by the engine (Temporal UI): the row is cancelled as the API would, and the cancellation propagates', async () => {
  const { ctx, commands } = scripted({ steps: [{ id: 'w', type: 'DELAY', config: { amount: 1, unit: 'days' } }], cancelAt: 2 });
  await expect(runAutomation(ctx, ref)).rejects.toBeInstanceOf(Cancelled);
  expect(commands).toEqual(['startExecution', 'beginWait:w#1', 'cancelExecution']);
});

test('an execution cancelled before it started does nothing', async () => {
  const { ctx, commands } = scripted({ steps: [mail('a')] });
  ctx.activities.startExecution = async () => { commands.push('startExecution'); return null; };
  expect(await runAutomation(ctx, ref)).toBe('CANCELLED');
  expect(commands).toEqual(['startExecution']);
});

test(`a recurring journey continues as new every ${STEPS_PER_RUN} steps with its definition, position and step count (bounded history)`, async () => {
  const steps: Step[] = [mail('m', 'w'), { id: 'w', type: 'DELAY', config: { amount: 7, unit: 'days' }, next: 'm' }];
  const first = scripted({ steps });
  const err = await runAutomation(first.ctx, ref).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ContinuedAsNew);
  const input = (err as ContinuedAsNew).input;
  expect(input).toEqual({ ...ref, steps, at: 'm', seq: STEPS_PER_RUN });
  // Each step run is one activity here (a DELAY that is due at once: beginWait only), about 3 history events each.
  expect(first.commands.length).toBe(1 + STEPS_PER_RUN);

  const second = scripted({ steps });
  const err2 = await runAutomation(second.ctx, input).catch((e: unknown) => e);
  expect(second.commands[0]).toBe(`runStep:m#${STEPS_PER_RUN + 1}`); // no second startExecution: the steps came along
  expect((err2 as ContinuedAsNew).input.seq).toBe(2 * STEPS_PER_RUN);
});

test('where the engine parks waits (DBOS), a long wait ends the run WAITING; the next run re-enters the wait under the same seq', async () => {
  const steps: Step[] = [mail('a', 'w'), { id: 'w', type: 'DELAY', config: { amount: 3, unit: 'days' }, next: 'b' }, mail('b')];
  const first = scripted({ steps, waits: [{ state: 'WAITING', remainingMs: 3 * 86_400_000 }] });
  first.ctx.parkAfterMs = 60_000;
  expect(await runAutomation(first.ctx, ref)).toBe('WAITING');
  expect(first.commands).toEqual(['startExecution', 'runStep:a#1', 'beginWait:w#2', 'park:w#2']);

  // The dispatcher starts the next run with what the row holds: { steps, at, seq } and resume.
  const next = scripted({ steps, waits: [{ state: 'DONE', by: 'timeout' }] });
  next.ctx.parkAfterMs = 60_000;
  expect(await runAutomation(next.ctx, { ...ref, steps, at: 'w', seq: 2, resume: true })).toBe('COMPLETED');
  expect(next.commands).toEqual(['checkWait:w', 'runStep:b#3', 'finish:COMPLETED']);
});

test('a short wait is not parked; a wait that ended just before parking goes on instead', async () => {
  const steps: Step[] = [{ id: 'w', type: 'WAIT_FOR_EVENT', config: { event: 'e', timeout: { amount: 1, unit: 'minutes' } } }];
  const short = scripted({ steps, waits: [{ state: 'WAITING', remainingMs: 60_000 }, { state: 'DONE', by: 'event' }] });
  short.ctx.parkAfterMs = 60_000;
  expect(await runAutomation(short.ctx, ref)).toBe('COMPLETED');
  expect(short.commands).toEqual(['startExecution', 'beginWait:w#1', 'receive:wake:60000', 'checkWait:w', 'finish:COMPLETED']);

  const raced = scripted({ steps, waits: [{ state: 'WAITING', remainingMs: null }, { state: 'DONE', by: 'event' }] });
  raced.ctx.parkAfterMs = 60_000;
  expect(await runAutomation(raced.ctx, ref)).toBe('COMPLETED');
  expect(raced.commands).toEqual(['startExecution', 'beginWait:w#1', 'park:w#1', 'finish:COMPLETED']);
});

test('a last step whose activity already ended the execution needs no finishExecution (one engine step fewer)', async () => {
  const done = scripted({ steps: [mail('a', 'b'), mail('b')], outcomes: [{ next: 'b' }, { next: null, ended: true }] });
  expect(await runAutomation(done.ctx, ref)).toBe('COMPLETED');
  expect(done.commands).toEqual(['startExecution', 'runStep:a#1', 'runStep:b#2']);
  const failed = scripted({ steps: [mail('a')], outcomes: [{ failed: 'template gone', ended: true }] });
  expect(await runAutomation(failed.ctx, ref)).toBe('FAILED');
  expect(failed.commands).toEqual(['startExecution', 'runStep:a#1']);
});

test('where the engine\'s timers keep a clock of their own (Temporal), each look at a wait\'s row carries the workflow\'s time; on DBOS none, and no extra step', async () => {
  const steps: Step[] = [{ id: 'w', type: 'DELAY', config: { amount: 3, unit: 'days' } }];
  for (const own of [true, false]) {
    const { ctx } = scripted({ steps, waits: [{ state: 'WAITING', remainingMs: 3 * 86_400_000 }, { state: 'DONE', by: 'timeout' }] });
    const seen: (number | undefined)[] = [];
    let clock = 0;
    const { beginWait, checkWait } = ctx.activities;
    const c: WorkflowContext = {
      ...ctx,
      ...(own ? { timersOwnClock: true } : {}),
      now: async () => (clock += 1000),
      activities: {
        ...ctx.activities,
        beginWait: (r) => { seen.push(r.now); return beginWait(r); },
        checkWait: (r) => { seen.push(r.now); return checkWait(r); },
      },
    };
    expect(await runAutomation(c, ref)).toBe('COMPLETED');
    expect(seen).toEqual(own ? [1000, 2000] : [undefined, undefined]);
    expect(clock).toBe(own ? 2000 : 0);
  }
});
