import type { Step, StepType } from '../../../automations/steps';
import { TRIGGER_ID, type EdgeField } from './flowLayout';

/**
 * The builder's edits of an automation's steps, as pure functions over the API's step list (automations/steps.ts:
 * steps name their successor by id in `next` or `branches.yes`/`no`; the first step is the entry): a new step, a
 * step inserted on an edge, a step deleted (what led to it leads on), a step renamed; and a refused save's field
 * errors sorted by step.
 */

/** An id for a new step of this type, unused among `steps` (`delay-2`). */
function freshId(type: StepType, steps: Step[]): string {
  const base = { SEND_EMAIL: 'send', DELAY: 'delay', WAIT_FOR_EVENT: 'wait', CONDITION: 'check', UPDATE_CONTACT: 'update', WEBHOOK: 'webhook', EXIT: 'exit' }[type];
  const used = new Set(steps.map((s) => s.id));
  for (let n = 1; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** A step of `type` that continues to `next` (a CONDITION by its Yes), with a first config to edit. */
export function newStep(type: StepType, steps: Step[], next: string | null): Step {
  const id = freshId(type, steps);
  switch (type) {
    case 'SEND_EMAIL': return { id, type, config: { template: '' }, next };
    case 'DELAY': return { id, type, config: { amount: 1, unit: 'hours' }, next };
    case 'WAIT_FOR_EVENT': return { id, type, config: { event: '', timeout: { amount: 1, unit: 'days' } }, next };
    case 'CONDITION': return { id, type, config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }] } }, branches: { yes: next, no: null } };
    case 'UPDATE_CONTACT': return { id, type, config: { data: {} }, next };
    case 'WEBHOOK': return { id, type, config: { url: '', method: 'POST' }, next };
    case 'EXIT': return { id, type };
  }
}

/** Where an edge leads now (null: it ends there). */
export function targetOf(steps: Step[], from: string, field: EdgeField): string | null {
  if (from === TRIGGER_ID) return steps[0]?.id ?? null;
  const step = steps.find((s) => s.id === from);
  if (!step) return null;
  if (field === 'branches.yes' || field === 'branches.no') return step.type === 'CONDITION' ? step.branches[field === 'branches.yes' ? 'yes' : 'no'] : null;
  return 'next' in step ? step.next ?? null : null;
}

/** The same step with the reference of `field` set to `to`. */
function withRef(step: Step, field: EdgeField, to: string | null): Step {
  if (step.type === 'CONDITION') {
    if (field === 'branches.yes') return { ...step, branches: { ...step.branches, yes: to } };
    if (field === 'branches.no') return { ...step, branches: { ...step.branches, no: to } };
    return step;
  }
  if (step.type === 'EXIT' || field !== 'next') return step;
  return { ...step, next: to };
}

/**
 * Every reference to `from` made a reference to `to`; one that would lead a step to itself ends there instead (a
 * loop whose other steps were deleted would only repeat its wait for ever).
 */
function redirect(step: Step, from: string, target: string | null, selfEnds = true): Step {
  const to = selfEnds && target === step.id ? null : target;
  if (step.type === 'CONDITION') {
    return { ...step, branches: { yes: step.branches.yes === from ? to : step.branches.yes, no: step.branches.no === from ? to : step.branches.no } };
  }
  return step.type !== 'EXIT' && step.next === from ? { ...step, next: to } : step;
}

/**
 * `step` inserted on the edge `field` of `from`: the trigger's edge makes it the first step (the entry); elsewhere it
 * goes at the end of the list, which keeps the order the person added steps in (only the first one's place matters).
 */
export function insertStep(steps: Step[], from: string, field: EdgeField, step: Step): Step[] {
  if (from === TRIGGER_ID) return [step, ...steps];
  return [...steps.map((s) => (s.id === from ? withRef(s, field, step.id) : s)), step];
}

/** The step ids reachable from the first step. */
function reachable(steps: Step[]): Set<string> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const seen = new Set<string>();
  const queue = steps.length ? [steps[0]!.id] : [];
  while (queue.length) {
    const id = queue.shift()!;
    const s = byId.get(id);
    if (!s || seen.has(id)) continue;
    seen.add(id);
    if (s.type === 'CONDITION') queue.push(...[s.branches.yes, s.branches.no].filter((x): x is string => x !== null));
    else if (s.type !== 'EXIT' && s.next) queue.push(s.next);
  }
  return seen;
}

/** Where the journey goes instead of a deleted step: its next (a CONDITION: its Yes path; an EXIT: nowhere). */
function successorOf(step: Step): string | null {
  if (step.type === 'CONDITION') return step.branches.yes;
  if (step.type === 'EXIT') return null;
  return step.next ?? null;
}

/**
 * The steps without `id`: what led to it leads to its successor (a CONDITION keeps its Yes path), and the steps no
 * path reaches any more (a deleted CONDITION's No path) go with it; the entry stays first. Answers the ids removed.
 */
export function removeStep(steps: Step[], id: string): { steps: Step[]; removed: string[] } {
  const step = steps.find((s) => s.id === id);
  if (!step) return { steps, removed: [] };
  let successor = successorOf(step);
  if (successor === id) successor = null; // a step that looped to itself
  let rest = steps.filter((s) => s.id !== id).map((s) => redirect(s, id, successor));
  if (steps[0]?.id === id && successor) {
    const entry = rest.find((s) => s.id === successor)!;
    rest = [entry, ...rest.filter((s) => s !== entry)];
  } else if (steps[0]?.id === id) {
    rest = [];
  }
  const keep = reachable(rest);
  return { steps: rest.filter((s) => keep.has(s.id)), removed: steps.filter((s) => !keep.has(s.id)).map((s) => s.id) };
}

/** The step `from` renamed `to`, with every reference to it. */
export function renameStep(steps: Step[], from: string, to: string): Step[] {
  return steps.map((s) => redirect(s.id === from ? { ...s, id: to } : s, from, to, false));
}

/** A 422's field errors sorted by step (`steps.3.config.template` → the step sent at index 3, `config.template`). */
export interface StepErrors {
  /** By step id, by field within the step ('' for the step as a whole). */
  byStep: Map<string, Record<string, string>>;
  /** The workflow's own fields (`name`, `trigger.event`, `steps` as a list). */
  other: Record<string, string>;
}

const STEP_FIELD = /^steps(?:\.|\[)(\d+)\]?(?:\.(.+))?$/;

export function stepErrors(fields: Record<string, string>, sent: Step[]): StepErrors {
  const byStep = new Map<string, Record<string, string>>();
  const other: Record<string, string> = {};
  for (const [field, message] of Object.entries(fields)) {
    const m = STEP_FIELD.exec(field);
    const step = m ? sent[Number(m[1])] : undefined;
    if (!m || !step) { other[field] = message; continue; }
    const own = byStep.get(step.id) ?? {};
    own[m[2] ?? ''] ??= message;
    byStep.set(step.id, own);
  }
  return { byStep, other };
}

/** The first error of a step under `prefix` (`config.timeout` finds `config.timeout.amount` too). */
export function errorAt(errors: Record<string, string> | undefined, prefix: string): string | undefined {
  if (!errors) return undefined;
  if (errors[prefix] !== undefined) return errors[prefix];
  const key = Object.keys(errors).find((k) => k.startsWith(`${prefix}.`));
  return key === undefined ? undefined : errors[key];
}
