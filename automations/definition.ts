import type { Knex } from 'knex';
import type { FieldError } from '../core/errors';
import { isUuid } from '../core/values';
import { templateIdsOf, type Step } from './steps';
import { checkCondition, referencedSegments } from '../audience/check';
import { resolveSegments } from '../audience/compile';
import { normaliseCondition } from '../audience/condition';

/**
 * What a workflow's steps must satisfy beyond their Joi shape (api/schemas/workflows.ts): the graph the step ids
 * form, the CONDITION filters, and (checkReferences) the templates and segments they name in the project.
 */

/** Where a step goes next: each reference with the field it is written in. */
function edgesOf(step: Step): { field: 'next' | 'branches.yes' | 'branches.no'; to: string }[] {
  if (step.type === 'EXIT') return [];
  if (step.type === 'CONDITION') {
    return [
      ...(step.branches.yes !== null ? [{ field: 'branches.yes' as const, to: step.branches.yes }] : []),
      ...(step.branches.no !== null ? [{ field: 'branches.no' as const, to: step.branches.no }] : []),
    ];
  }
  return typeof step.next === 'string' ? [{ field: 'next', to: step.next }] : [];
}

/** A step an execution may rest on, so that a loop through it does not spin: time passes or an event is awaited. */
const pauses = (step: Step) => step.type === 'DELAY' || step.type === 'WAIT_FOR_EVENT';

/** The audience checks' errors, with the step named in their messages. */
const ofStep = (step: Step, errors: FieldError[]) => errors.map((e) => ({ ...e, message: `step "${step.id}": ${e.message}` }));

const quoted = (ids: string[]) => ids.map((id) => `"${id}"`).join(' → ');

/**
 * The loops with no DELAY or WAIT_FOR_EVENT on them, one per strongly connected component of the graph without
 * those steps (Tarjan): each as the step indexes of one cycle, starting at its lowest index.
 */
function spinningCycles(steps: Step[], successors: number[][]): number[][] {
  const n = steps.length;
  const keep = steps.map((s) => !pauses(s));
  const next = successors.map((to, i) => (keep[i] ? to.filter((j) => keep[j]) : []));
  const index: number[] = new Array(n).fill(-1);
  const low: number[] = new Array(n).fill(0);
  const onStack: boolean[] = new Array(n).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  // Iterative, so that a long chain of steps cannot exhaust the call stack.
  for (let root = 0; root < n; root++) {
    if (!keep[root] || index[root] !== -1) continue;
    const work: { v: number; child: number }[] = [{ v: root, child: 0 }];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (work.length) {
      const frame = work[work.length - 1]!;
      const { v } = frame;
      const w = next[v]![frame.child++];
      if (w !== undefined) {
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = true;
          work.push({ v: w, child: 0 });
        } else if (onStack[w]) {
          low[v] = Math.min(low[v]!, index[w]!);
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low[parent.v] = Math.min(low[parent.v]!, low[v]!);
      if (low[v] === index[v]) {
        const component: number[] = [];
        let x: number;
        do {
          x = stack.pop()!;
          onStack[x] = false;
          component.push(x);
        } while (x !== v);
        components.push(component);
      }
    }
  }
  const cycles: number[][] = [];
  for (const component of components) {
    const members = new Set(component);
    const start = Math.min(...component);
    if (component.length === 1 && !next[start]!.includes(start)) continue; // a single step that does not loop to itself
    // Shortest way from `start` back to itself inside the component (breadth-first).
    const from = new Map<number, number>();
    const queue = [start];
    let end = -1;
    while (queue.length && end < 0) {
      const v = queue.shift()!;
      for (const w of next[v]!) {
        if (!members.has(w)) continue;
        if (w === start) { end = v; break; }
        if (!from.has(w)) { from.set(w, v); queue.push(w); }
      }
    }
    const path = [end];
    while (path[0] !== start) path.unshift(from.get(path[0]!)!);
    cycles.push(path);
  }
  return cycles;
}

/** Graph and cross-field checks after the Joi shape passed; every error names the step: field `steps.N...`, message mentions the step id. */
export function checkSteps(steps: Step[]): FieldError[] {
  const errors: FieldError[] = [];
  const at = new Map<string, number>(); // id → index of its first step
  steps.forEach((step, i) => {
    const first = at.get(step.id);
    if (first === undefined) at.set(step.id, i);
    else errors.push({ field: `steps.${i}.id`, message: `step id "${step.id}" is already used by steps.${first}`, code: 'duplicate' });
  });

  const successors = steps.map((step, i) => edgesOf(step).flatMap(({ field, to }) => {
    const j = at.get(to);
    if (j !== undefined) return [j];
    errors.push({ field: `steps.${i}.${field}`, message: `step "${step.id}": ${field} refers to "${to}", which is not a step of this workflow`, code: 'not_found' });
    return [];
  }));

  const reached = new Set<number>([0]);
  const queue = [0];
  while (queue.length) {
    for (const j of successors[queue.shift()!] ?? []) {
      if (!reached.has(j)) {
        reached.add(j);
        queue.push(j);
      }
    }
  }
  steps.forEach((step, i) => {
    // A duplicate id is reported as such: references resolve to the first step of that id, so it is never reached.
    if (!reached.has(i) && at.get(step.id) === i) {
      errors.push({ field: `steps.${i}`, message: `step "${step.id}" is unreachable from the first step`, code: 'unreachable' });
    }
  });

  for (const cycle of spinningCycles(steps, successors)) {
    const ids = [...cycle, cycle[0]!].map((i) => steps[i]!.id);
    errors.push({
      field: `steps.${cycle[0]}`,
      message: `steps ${quoted(ids)} form a loop with no DELAY or WAIT_FOR_EVENT step, which an execution would run without end`,
      code: 'cycle',
    });
  }

  steps.forEach((step, i) => {
    if (step.type === 'CONDITION') errors.push(...ofStep(step, checkCondition(step.config.filter, `steps.${i}.config.filter`)));
  });
  return errors;
}

/** The steps as they are stored: template ids and the segment ids in CONDITION filters lower-case. */
export function normaliseSteps(steps: Step[]): Step[] {
  return steps.map((step) => {
    if (step.type === 'SEND_EMAIL') return { ...step, config: { ...step.config, template: step.config.template.toLowerCase() } };
    if (step.type === 'CONDITION') return { ...step, config: { ...step.config, filter: normaliseCondition(step.config.filter) } };
    return step;
  });
}

/** Templates must be templates of this project; segment references in CONDITION filters must exist in it. */
export async function checkReferences(db: Knex, projectId: string, steps: Step[]): Promise<FieldError[]> {
  const wanted = templateIdsOf(steps).filter(isUuid);
  const [templates, conditions] = await Promise.all([
    wanted.length
      ? db('templates').where('project_id', projectId).whereIn('id', wanted).pluck('id') as Promise<string[]>
      : Promise.resolve([] as string[]),
    // Only filters that name segments need the project's segments (resolveSegments loads them once per call).
    Promise.all(steps.map((step, i) => (
      step.type === 'CONDITION' && referencedSegments(step.config.filter).length
        ? resolveSegments(db, projectId, step.config.filter, `steps.${i}.config.filter`).then((r) => ofStep(step, r.errors))
        : [] as FieldError[]
    ))),
  ]);
  const found = new Set(templates);
  const errors: FieldError[] = [];
  steps.forEach((step, i) => {
    if (step.type === 'SEND_EMAIL' && !found.has(step.config.template.toLowerCase())) {
      errors.push({ field: `steps.${i}.config.template`, message: `step "${step.id}": template ${step.config.template} does not exist in this project`, code: 'not_found' });
    }
    errors.push(...(conditions[i] ?? []));
  });
  return errors;
}
