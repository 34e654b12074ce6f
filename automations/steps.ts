import type { AudienceCondition, TimeUnit } from '../audience/condition';
import type { WebhookMethod } from '../outbound/http';

/**
 * The steps of an automation (decisions.md, "Workflows (automations)"): what each does and its config.
 * The request schemas (api/schemas/workflows.ts) check their shape; automations/definition.ts checks the graph.
 */
export type { TimeUnit };


export interface Duration {
  amount: number;
  unit: TimeUnit;
}


export interface SendEmailConfig { template: string }
export interface WaitForEventConfig { event: string; timeout?: Duration }
export interface ConditionConfig { filter: AudienceCondition }
export interface UpdateContactConfig { data?: Record<string, unknown>; subscribed?: boolean }
export interface WebhookConfig {
  url: string;
  method?: WebhookMethod;
  headers?: Record<string, string>;
  body?: Record<string, unknown> | unknown[];
}
export interface Branches { yes: string | null; no: string | null }

export type Step =
  | { id: string; type: 'SEND_EMAIL'; config: SendEmailConfig; next?: string | null }
  | { id: string; type: 'DELAY'; config: Duration; next?: string | null }
  | { id: string; type: 'WAIT_FOR_EVENT'; config: WaitForEventConfig; next?: string | null }
  | { id: string; type: 'CONDITION'; config: ConditionConfig; branches: Branches }
  | { id: string; type: 'UPDATE_CONTACT'; config: UpdateContactConfig; next?: string | null }
  | { id: string; type: 'WEBHOOK'; config: WebhookConfig; next?: string | null }
  | { id: string; type: 'EXIT'; config?: Record<string, never> };

export type StepType = Step['type'];

export const STEP_TYPES: readonly StepType[] = ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'UPDATE_CONTACT', 'WEBHOOK', 'EXIT'];

export type ExecutionStatus = 'RUNNING' | 'WAITING' | 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';
export const EXECUTION_STATUSES: readonly ExecutionStatus[] = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'];

export const MAX_STEPS = 100;
export const MAX_WEBHOOK_HEADERS = 20;
export const MAX_WEBHOOK_BODY_BYTES = 16 * 1024;
/** Longest DELAY and WAIT_FOR_EVENT timeout. */
export const MAX_DURATION_DAYS = 365;

export const UNIT_MS: Record<TimeUnit, number> = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 };

export function durationMs(d: Duration): number {
  return d.amount * UNIT_MS[d.unit];
}

/** The templates the SEND_EMAIL steps use: distinct, lower-case. */
export function templateIdsOf(steps: Step[]): string[] {
  const ids = new Set<string>();
  for (const s of steps) if (s.type === 'SEND_EMAIL') ids.add(s.config.template.toLowerCase());
  return [...ids];
}

