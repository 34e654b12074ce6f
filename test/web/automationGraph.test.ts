import type { Step } from '../../automations/steps';
import { insertStep, newStep, removeStep, renameStep, stepErrors, targetOf } from '../../web/pages/parts/flowEdits';
import { layoutFlow, TRIGGER_ID, type FlowLayout } from '../../web/pages/parts/flowLayout';

/**
 * The console's automation graph without a browser: where the layout puts the steps (a condition's branches side by
 * side, a step where paths join under both, a wait's event and timeout as two paths to one step, a loop drawn back up)
 * and the builder's edits of the step list (insert on an edge, delete keeping the graph whole, rename, a 422's fields
 * sorted by step). The browser test (test/console/automations.test.ts) drives the same code through the pages.
 */
const filter = { logic: 'AND' as const, groups: [{ filters: [{ field: 'data.plan', operator: 'equals' as const, value: 'pro' }] }] };
const at = (l: FlowLayout, id: string) => {
  const n = l.nodes.find((x) => x.id === id)!;
  return { cx: n.x + n.width / 2, top: n.y, bottom: n.y + n.height, ...n };
};
const overlap = (a: { x: number; y: number; width: number; height: number }, b: typeof a) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

describe('layout', () => {
  const branching: Step[] = [
    { id: 'pause', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'check' },
    { id: 'check', type: 'CONDITION', config: { filter }, branches: { yes: 'pro', no: 'free' } },
    { id: 'pro', type: 'SEND_EMAIL', config: { template: 't1' }, next: 'tag' },
    { id: 'free', type: 'WEBHOOK', config: { url: 'https://example.org' }, next: 'tag' },
    { id: 'tag', type: 'UPDATE_CONTACT', config: { data: { onboarded: true } }, next: null },
  ];

  test('top to bottom from the trigger; Yes on the left, No on the right; where they join, centred under both', () => {
    const l = layoutFlow(branching);
    const [trigger, pause, check, pro, free, tag] = [TRIGGER_ID, 'pause', 'check', 'pro', 'free', 'tag'].map((id) => at(l, id));
    expect(trigger!.bottom).toBeLessThan(pause!.top);
    expect(pause!.bottom).toBeLessThan(check!.top);
    expect(pro!.top).toBe(free!.top);
    expect(pro!.cx).toBeLessThan(check!.cx);
    expect(free!.cx).toBeGreaterThan(check!.cx);
    expect(tag!.top).toBeGreaterThan(pro!.bottom);
    expect(Math.abs(tag!.cx - (pro!.cx + free!.cx) / 2)).toBeLessThan(1);
    expect(Math.abs(check!.cx - tag!.cx)).toBeLessThan(1);
    // One End, under the last step; no two nodes overlap; everything inside the canvas.
    const ends = l.nodes.filter((n) => n.kind === 'end');
    expect(ends).toHaveLength(1);
    expect(ends[0]!.y).toBeGreaterThan(tag!.bottom);
    for (const a of l.nodes) {
      expect(a.x).toBeGreaterThanOrEqual(0);
      expect(a.x + a.width).toBeLessThanOrEqual(l.width);
      expect(a.y + a.height).toBeLessThanOrEqual(l.height);
      for (const b of l.nodes) if (a !== b) expect([a.id, b.id, overlap(a, b)]).toEqual([a.id, b.id, false]);
    }
    // Edges: labelled branches, one add button per field, every edge from its source's bottom to its target's top.
    const yes = l.edges.find((e) => e.from === 'check' && e.port === 'yes')!;
    expect(yes).toMatchObject({ to: 'pro', field: 'branches.yes', back: false });
    expect(yes.label).not.toBeNull();
    for (const e of l.edges) {
      expect(e.points[0]!.y).toBe(at(l, e.from).bottom);
      expect(e.points.at(-1)!.y).toBe(at(l, e.to).top);
      expect(e.add).not.toBeNull();
    }
  });

  test('a wait with a timeout leaves by two paths, Event and Timeout, that join at its next step (one add button)', () => {
    const l = layoutFlow([
      { id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'paid', timeout: { amount: 2, unit: 'days' } }, next: 'thanks' },
      { id: 'thanks', type: 'SEND_EMAIL', config: { template: 't' } },
    ]);
    const out = l.edges.filter((e) => e.from === 'await');
    expect(out.map((e) => [e.port, e.to])).toEqual([['event', 'thanks'], ['timeout', 'thanks']]);
    expect(out[0]!.points[0]!.x).toBeLessThan(out[1]!.points[0]!.x);
    expect(out.map((e) => e.add !== null)).toEqual([true, false]);
    // Without a next, both paths end in one End.
    const ending = layoutFlow([{ id: 'await', type: 'WAIT_FOR_EVENT', config: { event: 'paid', timeout: { amount: 2, unit: 'days' } } }]);
    expect(new Set(ending.edges.filter((e) => e.from === 'await').map((e) => e.to)).size).toBe(1);
    expect(ending.nodes.filter((n) => n.kind === 'end')).toHaveLength(1);
  });

  test('a loop back through a delay is drawn up the right side; a long edge bends around the steps it passes', () => {
    const l = layoutFlow([
      { id: 'mail', type: 'SEND_EMAIL', config: { template: 't' }, next: 'week' },
      { id: 'week', type: 'DELAY', config: { amount: 7, unit: 'days' }, next: 'check' },
      { id: 'check', type: 'CONDITION', config: { filter }, branches: { yes: 'mail', no: 'a' } },
      { id: 'a', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'b' },
      { id: 'b', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'join' },
      { id: 'join', type: 'EXIT' },
    ]);
    const loop = l.edges.find((e) => e.from === 'check' && e.to === 'mail')!;
    expect(loop.back).toBe(true);
    const right = Math.max(...l.nodes.map((n) => n.x + n.width));
    expect(Math.max(...loop.points.map((p) => p.x))).toBeGreaterThan(right);
    expect(l.width).toBeGreaterThan(right);
    expect(l.nodes.filter((n) => n.kind === 'end')).toHaveLength(0); // an EXIT ends its path itself

    // No goes straight to the step where Yes arrives after three more: its edge bends at each rank between, beside the steps.
    const long = layoutFlow([
      { id: 'check', type: 'CONDITION', config: { filter }, branches: { yes: 'x', no: 'join' } },
      { id: 'x', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'y' },
      { id: 'y', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'z' },
      { id: 'z', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'join' },
      { id: 'join', type: 'EXIT' },
    ]);
    const no = long.edges.find((e) => e.from === 'check' && e.port === 'no')!;
    expect(no.points).toHaveLength(2 + 2 * 3);
    for (const p of no.points.slice(1, -1)) {
      for (const n of long.nodes) expect([n.id, p.x > n.x && p.x < n.x + n.width && p.y > n.y && p.y < n.y + n.height]).toEqual([n.id, false]);
    }
  });

  test('no steps: the trigger and an End, with the add button between them', () => {
    const l = layoutFlow([]);
    expect(l.nodes.map((n) => n.kind)).toEqual(['trigger', 'end']);
    expect(l.edges).toHaveLength(1);
    expect(l.edges[0]).toMatchObject({ from: TRIGGER_ID, field: 'entry' });
    expect(l.edges[0]!.add).not.toBeNull();
  });
});

describe('edits', () => {
  const chain: Step[] = [
    { id: 'pause', type: 'DELAY', config: { amount: 1, unit: 'hours' }, next: 'check' },
    { id: 'check', type: 'CONDITION', config: { filter }, branches: { yes: 'pro', no: 'free' } },
    { id: 'pro', type: 'SEND_EMAIL', config: { template: 't1' }, next: null },
    { id: 'free', type: 'SEND_EMAIL', config: { template: 't2' }, next: 'bye' },
    { id: 'bye', type: 'EXIT' },
  ];

  test('a step inserted on an edge continues where the edge led; at the start it becomes the entry', () => {
    const hook = newStep('WEBHOOK', chain, targetOf(chain, 'check', 'branches.no'));
    expect(hook).toMatchObject({ id: 'webhook-1', type: 'WEBHOOK', next: 'free' });
    const inserted = insertStep(chain, 'check', 'branches.no', hook);
    expect(inserted.find((s) => s.id === 'check')).toMatchObject({ branches: { yes: 'pro', no: 'webhook-1' } });
    expect(inserted[0]!.id).toBe('pause');
    const first = newStep('DELAY', chain, targetOf(chain, TRIGGER_ID, 'entry'));
    expect(first).toMatchObject({ id: 'delay-1', next: 'pause' });
    expect(insertStep(chain, TRIGGER_ID, 'entry', first)[0]!.id).toBe('delay-1');
    // A condition inserted mid-path continues by its Yes; its No ends until something is added there.
    expect(newStep('CONDITION', chain, 'pro')).toMatchObject({ id: 'check-1', branches: { yes: 'pro', no: null } });
  });

  test('deleting a step joins what led to it with what came after; a condition keeps its Yes path and loses its No path', () => {
    expect(removeStep(chain, 'pause')).toEqual({ steps: chain.slice(1), removed: ['pause'] });
    const { steps, removed } = removeStep(chain, 'check');
    expect(removed.sort()).toEqual(['bye', 'check', 'free']);
    expect(steps).toEqual([{ ...chain[0], next: 'pro' }, chain[2]]);
    // The entry deleted: its successor becomes the first step.
    const entry = removeStep([chain[2]!, { id: 'later', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'pro' }], 'later');
    expect(entry.steps.map((s) => s.id)).toEqual(['pro']);
    const loop = removeStep([{ id: 'a', type: 'SEND_EMAIL', config: { template: 't' }, next: 'w' }, { id: 'w', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'a' }], 'a');
    expect(loop.steps).toEqual([{ id: 'w', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: null }]);
  });

  test('renaming a step renames every reference to it', () => {
    const renamed = renameStep(chain, 'free', 'free-plan');
    expect(renamed.find((s) => s.id === 'check')).toMatchObject({ branches: { yes: 'pro', no: 'free-plan' } });
    expect(renamed.some((s) => s.id === 'free-plan' && s.type === 'SEND_EMAIL')).toBe(true);
    // A step that loops to itself (a daily wait) still does under its new name.
    expect(renameStep([{ id: 'daily', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'daily' }], 'daily', 'every-day'))
      .toEqual([{ id: 'every-day', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'every-day' }]);
  });

  test('a 422\'s fields sorted by the step sent at that index; the workflow\'s own fields apart', () => {
    const errors = stepErrors({
      'steps.3.config.template': 'template must be a template id', 'steps.1': 'step "check" is unreachable', 'steps[2].next': 'bad next',
      name: 'name is required', steps: 'steps must contain at least 1 items',
    }, chain);
    expect(Object.fromEntries(errors.byStep)).toEqual({ free: { 'config.template': 'template must be a template id' }, check: { '': 'step "check" is unreachable' }, pro: { next: 'bad next' } });
    expect(errors.other).toEqual({ name: 'name is required', steps: 'steps must contain at least 1 items' });
  });
});
