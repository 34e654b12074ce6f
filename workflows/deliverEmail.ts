import type { WorkflowContext } from './context';
import { activityFailureMessage, gaveUp } from './failure';
import type { DeliveryOutcome, EmailRef } from './types';

/**
 * Delivers one stored email. The delivery activity is idempotent (it skips emails no longer QUEUED/SENDING)
 * and retried by the engine on transient SMTP failures; when those outlast the retry budget, the email is
 * marked FAILED here, and when the workflow is cancelled (Temporal UI) it is marked CANCELLED: no email is
 * left QUEUED with nothing to deliver it.
 */
export async function deliverEmail(ctx: WorkflowContext, ref: EmailRef): Promise<DeliveryOutcome> {
  try {
    return await ctx.delivery.deliverEmail(ref);
  } catch (err) {
    if (ctx.isCancellation(err)) {
      await ctx.nonCancellable(() => ctx.activities.cancelEmail(ref));
      throw err;
    }
    return ctx.activities.failEmail({ ...ref, error: gaveUp(activityFailureMessage(err)) });
  }
}
