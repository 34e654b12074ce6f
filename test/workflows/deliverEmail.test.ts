import type { WorkflowContext } from '../../workflows/context';
import { deliverEmail } from '../../workflows/deliverEmail';
import type { DeliveryOutcome, EmailRef } from '../../workflows/types';

/**
 * The engine-neutral logic of the delivery workflow, driven through a scripted context (the engines themselves
 * are exercised end to end in test/send.test.ts and test/temporal/). Records which activities ran and whether
 * the cleanup ran outside the cancellation.
 */
class Cancelled extends Error {}

function scripted(delivery: () => Promise<DeliveryOutcome>) {
  const calls: string[] = [];
  let shielded = false;
  const ctx: WorkflowContext = {
    delivery: { deliverEmail: async () => { calls.push('deliverEmail'); return delivery(); } },
    webhooks: { callWebhook: async () => { throw new Error('not used'); } },
    receive: async () => { throw new Error('not used'); },
    activities: {
      ...({} as WorkflowContext['activities']), // only the delivery activities take part here
      failEmail: async (r) => { calls.push(`failEmail:${r.error}`); return { status: 'FAILED', error: r.error }; },
      cancelEmail: async () => { calls.push(`cancelEmail:${shielded ? 'non-cancellable' : 'cancellable'}`); return { status: 'CANCELLED' }; },
    },
    sleep: async () => undefined,
    now: async () => 0,
    isCancellation: (err) => err instanceof Cancelled,
    nonCancellable: async (fn) => { shielded = true; try { return await fn(); } finally { shielded = false; } },
    continueAsNew: async () => { throw new Error('not used by deliverEmail'); },
  };
  return { ctx, calls };
}

const ref: EmailRef = { projectId: 'p', emailId: 'e' };

test('a delivery outcome is the workflow result', async () => {
  const { ctx, calls } = scripted(async () => ({ status: 'SENT', messageId: '<m>' }));
  await expect(deliverEmail(ctx, ref)).resolves.toEqual({ status: 'SENT', messageId: '<m>' });
  expect(calls).toEqual(['deliverEmail']);
});

test('transient failures that outlast the retries mark the email FAILED with the last reason', async () => {
  const { ctx, calls } = scripted(async () => { throw Object.assign(new Error('Activity task failed'), { cause: new Error('451 try later') }); });
  await expect(deliverEmail(ctx, ref)).resolves.toMatchObject({ status: 'FAILED' });
  expect(calls).toEqual(['deliverEmail', 'failEmail:gave up after repeated transient failures: 451 try later']);
});

test('a cancellation marks the email CANCELLED in a non-cancellable step, then ends the workflow as cancelled', async () => {
  const { ctx, calls } = scripted(async () => { throw new Cancelled('cancelled'); });
  await expect(deliverEmail(ctx, ref)).rejects.toBeInstanceOf(Cancelled);
  expect(calls).toEqual(['deliverEmail', 'cancelEmail:non-cancellable']);
});
