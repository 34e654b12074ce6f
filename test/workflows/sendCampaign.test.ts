import type { WorkflowContext } from '../../workflows/context';
import { BATCHES_PER_RUN, CAMPAIGN_BATCH_SIZE, drainPollMs, FIRST_BATCH_SIZE, sendCampaign } from '../../workflows/sendCampaign';
import type { BatchResult, CampaignPhase, TestWaitState } from '../../workflows/types';

/**
 * The campaign workflow's logic against a scripted context that records every command it emits (activity calls,
 * timers, continue-as-new). Temporal writes about 3 history events per activity and 2 per timer, so these counts
 * bound a run's history: the proof that a 100,000-recipient campaign stays far inside 51,200 events.
 */
class ContinuedAsNew extends Error {
  constructor(readonly input: unknown) { super('continue-as-new'); }
}

function scripted(opts: { contacts: number; pendingPolls?: number[]; cancelAtBatch?: number; from?: number; failAtBatch?: { batch: number; error: unknown }; patched?: boolean }) {
  const commands: string[] = [];
  let position = opts.from ?? 0;
  let batches = 0;
  const polls = [...(opts.pendingPolls ?? [0])];
  const ctx: WorkflowContext = {
    continueAsNewSuggested: () => false,
    patched: () => opts.patched ?? true,
    webhooks: { callWebhook: async () => { throw new Error('not used'); } },
    receive: async () => { throw new Error('not used'); },
    activities: {
      ...({} as WorkflowContext['activities']),
      beginCampaign: async () => { commands.push('beginCampaign'); return 'SENDING' as CampaignPhase; },
      campaignBatch: async (r): Promise<BatchResult> => {
        commands.push('campaignBatch');
        batches++;
        if (opts.failAtBatch?.batch === batches) throw opts.failAtBatch.error;
        if (opts.cancelAtBatch === batches) return { cancelled: true, inserted: 0, last: r.after, done: true };
        expect(r.after).toBe(position === 0 ? null : `contact-${position}`);
        const n = Math.min(r.size, opts.contacts - position);
        position += n;
        return { cancelled: false, inserted: n, last: n ? `contact-${position}` : r.after, done: n < r.size };
      },
      campaignProgress: async () => { commands.push('campaignProgress'); return { pending: polls.shift() ?? 0, cancelled: false }; },
      finishCampaign: async () => { commands.push('finishCampaign'); return 'SENT' as CampaignPhase; },
      cancelCampaign: async () => { commands.push('cancelCampaign'); return 'CANCELLED' as CampaignPhase; },
      failCampaign: async (r) => { commands.push(`failCampaign:${r.error}`); return 'FAILED' as CampaignPhase; },
    },
    sleep: async () => { commands.push('sleep'); },
    now: async () => 0,
    isCancellation: () => false,
    nonCancellable: (fn) => fn(),
    continueAsNew: async (_wf, input) => { commands.push('continueAsNew'); throw new ContinuedAsNew(input); },
  };
  return { ctx, commands };
}

const ref = { projectId: 'p', campaignId: 'c' };
const count = (commands: string[], name: string) => commands.filter((c) => c === name).length;

test('one activity per batch: a first one of 50 contacts, then batches of 500; then drain and finish', async () => {
  const { ctx, commands } = scripted({ contacts: 1_234, pendingPolls: [700, 10, 0] }); // 50 + 500 + 500 + 184
  await expect(sendCampaign(ctx, ref)).resolves.toBe('SENT');
  expect(commands).toEqual([
    'beginCampaign', 'campaignBatch', 'campaignBatch', 'campaignBatch', 'campaignBatch',
    'campaignProgress', 'sleep', 'campaignProgress', 'sleep', 'campaignProgress', 'finishCampaign',
  ]);
});

test(`a 100,000-recipient campaign: ${1 + Math.ceil((100_000 - FIRST_BATCH_SIZE) / CAMPAIGN_BATCH_SIZE)} batches, continue-as-new every ${BATCHES_PER_RUN}, each run far inside the history limit`, async () => {
  let input: unknown = ref;
  const runs: string[][] = [];
  for (;;) {
    // Each run resumes at the keyset position its predecessor handed over.
    const after = (input as { after?: string | null }).after;
    const { ctx, commands } = scripted({ contacts: 100_000, from: after ? Number(after.split('-')[1]) : 0 });
    try {
      await sendCampaign(ctx, input as typeof ref);
      runs.push(commands);
      break;
    } catch (err) {
      if (!(err instanceof ContinuedAsNew)) throw err;
      runs.push(commands);
      input = err.input;
      if (runs.length > 10) throw new Error('too many runs', { cause: err });
    }
  }
  expect(runs.length).toBeGreaterThan(1);
  for (const commands of runs) {
    const activities = commands.filter((c) => c !== 'sleep' && c !== 'continueAsNew').length;
    const timers = count(commands, 'sleep');
    const historyEvents = 3 * activities + 2 * timers + 10; // + workflow start/complete and task events
    expect(count(commands, 'campaignBatch')).toBeLessThanOrEqual(BATCHES_PER_RUN);
    expect(historyEvents).toBeLessThan(10_240); // below even Temporal's warning threshold
  }
});

test('a cancel seen by a batch stops the workflow before any further batch', async () => {
  const { ctx, commands } = scripted({ contacts: 10_000, cancelAtBatch: 3 });
  await expect(sendCampaign(ctx, ref)).resolves.toBe('CANCELLED');
  expect(count(commands, 'campaignBatch')).toBe(3);
  expect(commands).not.toContain('finishCampaign');
});

test('the drain poll grows with the backlog, within 2 s to 60 s', () => {
  expect(drainPollMs(1)).toBe(2000);
  expect(drainPollMs(140)).toBe(5000);
  expect(drainPollMs(100_000)).toBe(60_000);
});

test('the drain poll follows the rate the emails were seen leaving, not only the configured one', () => {
  // Configured for 2,000/s but draining at 100/s: 5,000 left take 50 s, so the next look is in 25 s, not 2 s.
  expect(drainPollMs(5_000, 2_000, 100)).toBe(25_000);
  // Configured for 14/s (the default) but draining at 500/s: 9,000 left are looked at again in 9 s, not 60 s.
  expect(drainPollMs(9_000, 14, 500)).toBe(9_000);
  // Nothing moved since the last look (a paused SMTP server): back to the configured rate.
  expect(drainPollMs(9_000, 14, 0)).toBe(60_000);
});

test('an activity that fails for good (a permanent failure, or out of retries) ends the campaign FAILED with its reason', async () => {
  // Temporal: an ActivityFailure whose cause is the activity's error.
  const temporal = Object.assign(new Error('Activity task failed'), { cause: new Error('the audience cannot be evaluated: date/time field value out of range') });
  const a = scripted({ contacts: 2_000, failAtBatch: { batch: 2, error: temporal } });
  await expect(sendCampaign(a.ctx, ref)).resolves.toBe('FAILED');
  expect(a.commands).toEqual(['beginCampaign', 'campaignBatch', 'campaignBatch', 'failCampaign:the audience cannot be evaluated: date/time field value out of range']);
  // DBOS after the last retry: its own error, listing each attempt's.
  const dbos = Object.assign(new Error('Step campaignBatch has exceeded its maximum of 10 retries. Previous errors: …'), { errors: [new Error('ECONNREFUSED'), new Error('connection terminated')] });
  const b = scripted({ contacts: 2_000, failAtBatch: { batch: 1, error: dbos } });
  await expect(sendCampaign(b.ctx, ref)).resolves.toBe('FAILED');
  expect(b.commands.at(-1)).toBe('failCampaign:gave up after 2 attempts: connection terminated');
});

test('a history recorded before FAILED existed (not patched) still fails the workflow, as it did', async () => {
  const { ctx, commands } = scripted({ contacts: 2_000, failAtBatch: { batch: 1, error: new Error('boom') }, patched: false });
  await expect(sendCampaign(ctx, ref)).rejects.toThrow('boom');
  expect(commands).toEqual(['beginCampaign', 'campaignBatch']);
});

test('continue-as-new (thrown by Temporal) is not taken for a failure', async () => {
  const { ctx, commands } = scripted({ contacts: 100_000 });
  await expect(sendCampaign(ctx, ref)).rejects.toBeInstanceOf(ContinuedAsNew);
  expect(commands.at(-1)).toBe('continueAsNew');
  expect(commands.some((c) => c.startsWith('failCampaign'))).toBe(false);
});

describe('an A/B campaign (input.test)', () => {
  /** The scripted context with the A/B activities: the sample's and the rest's batches, the wait's looks, the decision. */
  function abScripted(opts: { contacts: number; waits?: TestWaitState[]; cancelAtWait?: boolean; decision?: { cancelled: boolean; winner: number | null } }) {
    const base = scripted({ contacts: opts.contacts, pendingPolls: [0, 0] });
    const parts: string[] = [];
    const waits = [...(opts.waits ?? [{ state: 'READY' }])];
    const received: number[] = [];
    const ctx: WorkflowContext = {
      ...base.ctx,
      timersOwnClock: true,
      now: async () => 1_000,
      receive: async (_topic, ms) => { base.commands.push('receive'); received.push(ms); return false; },
      activities: {
        ...base.ctx.activities,
        // Each part reads the audience from its start (the rest reads it all again: its keyset is its own).
        campaignBatch: async (r): Promise<BatchResult> => {
          base.commands.push('campaignBatch');
          parts.push(r.part ?? 'plain');
          const from = r.after ? Number(r.after.split('-')[1]) : 0;
          const n = Math.min(r.size, opts.contacts - from);
          return { cancelled: false, inserted: n, last: n ? `contact-${from + n}` : r.after, done: n < r.size };
        },
        testWait: async (r) => {
          base.commands.push('testWait');
          expect(r.now).toBe(1_000); // the workflow's clock rides along where timers keep their own
          return waits.shift() ?? { state: 'READY' };
        },
        decideWinner: async () => { base.commands.push('decideWinner'); return opts.decision ?? { cancelled: false, winner: 1 }; },
      },
    };
    return { ctx, commands: base.commands, parts, received };
  }

  test('sample → drain → wait (looks after each timer or wake-up) → decide → rest → drain → finish', async () => {
    // Each part reads the 600 contacts in batches of 50, 500 and the last 50.
    const { ctx, commands, parts, received } = abScripted({ contacts: 600, waits: [{ state: 'WAITING', remainingMs: 3_600_000 }, { state: 'WAITING', remainingMs: 1_000 }, { state: 'READY' }] });
    await expect(sendCampaign(ctx, { ...ref, test: 'sample' })).resolves.toBe('SENT');
    expect(commands).toEqual([
      'beginCampaign', 'campaignBatch', 'campaignBatch', 'campaignBatch', 'campaignProgress',
      'testWait', 'receive', 'testWait', 'receive', 'testWait', 'decideWinner',
      'campaignBatch', 'campaignBatch', 'campaignBatch', 'campaignProgress', 'finishCampaign',
    ]);
    expect(parts).toEqual(['sample', 'sample', 'sample', 'rest', 'rest', 'rest']);
    expect(received).toEqual([3_600_000, 1_000]);
  });

  test('a manual test past its wait waits for the choice in chunks of at most 7 days', async () => {
    const { ctx, received } = abScripted({ contacts: 10, waits: [{ state: 'WAITING', remainingMs: null }, { state: 'READY' }] });
    await expect(sendCampaign(ctx, { ...ref, test: 'sample' })).resolves.toBe('SENT');
    expect(received).toEqual([7 * 24 * 60 * 60 * 1000]);
  });

  test('a cancel seen by the wait or by the decision ends it CANCELLED with nothing more queued', async () => {
    const waiting = abScripted({ contacts: 10, waits: [{ state: 'WAITING', remainingMs: 60_000 }, { state: 'CANCELLED' }] });
    await expect(sendCampaign(waiting.ctx, { ...ref, test: 'sample' })).resolves.toBe('CANCELLED');
    expect(waiting.parts).toEqual(['sample']);
    expect(waiting.commands).not.toContain('decideWinner');
    const deciding = abScripted({ contacts: 10, decision: { cancelled: true, winner: null } });
    await expect(sendCampaign(deciding.ctx, { ...ref, test: 'sample' })).resolves.toBe('CANCELLED');
    expect(deciding.parts).toEqual(['sample']);
  });

  test('each stage continues as new where it stopped: a long wait from the wait, the rest from its keyset', async () => {
    const waits: TestWaitState[] = Array.from({ length: 200 }, () => ({ state: 'WAITING', remainingMs: 1_000 }));
    const long = abScripted({ contacts: 10, waits });
    const continued = await sendCampaign(long.ctx, { ...ref, test: 'sample' }).catch((err: unknown) => err);
    expect(continued).toBeInstanceOf(ContinuedAsNew);
    expect((continued as ContinuedAsNew).input).toEqual({ ...ref, test: 'wait' });
    expect(count(long.commands, 'receive')).toBe(100);
    // A continued wait does not queue the sample again.
    const resumed = abScripted({ contacts: 10 });
    await expect(sendCampaign(resumed.ctx, { ...ref, test: 'wait' })).resolves.toBe('SENT');
    expect(resumed.parts).toEqual(['rest']);
    const rest = abScripted({ contacts: 100_000 });
    const input = await sendCampaign(rest.ctx, { ...ref, test: 'rest', after: null }).catch((err: ContinuedAsNew) => err.input);
    expect(input).toEqual({ ...ref, test: 'rest', after: `contact-${FIRST_BATCH_SIZE + (BATCHES_PER_RUN - 1) * CAMPAIGN_BATCH_SIZE}` });
    expect(rest.commands).not.toContain('testWait');
  });

  test('a plain campaign never looks at a test', async () => {
    const { ctx, commands, parts } = abScripted({ contacts: 10 });
    await expect(sendCampaign(ctx, ref)).resolves.toBe('SENT');
    expect(parts).toEqual(['plain']);
    expect(commands).not.toContain('testWait');
  });
});
