import type { Knex } from 'knex';
import type request from 'supertest';
import { waitFor } from './processes';

/**
 * Steps the clock of every waiting automation execution forward by `ms`, in a way both engines honour: their
 * deadlines (the rows' `wait_until`, which the interpreter obeys) move back by `ms`, and each gets a wake-up
 * through the outbox, as a recorded event would. No test waits for real days.
 */
export async function stepClock(knex: Knex, ms: number): Promise<number> {
  return knex('automation_executions').where('status', 'WAITING').whereNotNull('wait_until')
    .update({ wait_until: knex.raw("wait_until - ? * interval '1 millisecond'", [ms]), outbox: 'WAKE' });
}

export const DAY = 24 * 60 * 60 * 1000;

export interface ExecutionJson {
  id: string;
  workflowId: string;
  contactId: string;
  contactEmail: string;
  status: string;
  currentStepId: string | null;
  waitingFor?: string | null;
  waitingUntil?: string | null;
  startedAt: string;
  updatedAt: string;
  completedAt: string | null;
  error: string | null;
}

/** Every execution of a workflow, through GET /workflows/:id/executions (all pages). */
export async function executionsOf(http: () => request.Agent, key: Record<string, string>, workflowId: string, query = ''): Promise<ExecutionJson[]> {
  const all: ExecutionJson[] = [];
  let cursor: string | null = null;
  do {
    const res: request.Response = await http().get(`/workflows/${workflowId}/executions?limit=100${query}${cursor ? `&cursor=${cursor}` : ''}`).set(key);
    if (res.status !== 200) throw new Error(`GET executions: ${res.status} ${JSON.stringify(res.body)}`);
    all.push(...(res.body.data.items as ExecutionJson[]));
    cursor = res.body.data.nextCursor as string | null;
  } while (cursor);
  return all;
}

/** Waits until the workflow has `count` executions (default 1) and every one of them satisfies `done`. */
export async function waitForExecutions(
  http: () => request.Agent, key: Record<string, string>, workflowId: string,
  done: (x: ExecutionJson) => boolean, count = 1, timeoutMs = 30_000,
): Promise<ExecutionJson[]> {
  return waitFor(`${count} execution(s) of ${workflowId}`, async () => {
    const xs = await executionsOf(http, key, workflowId);
    return xs.length === count && xs.every(done) ? xs : undefined;
  }, timeoutMs, 100);
}
