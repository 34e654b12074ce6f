import type { Step } from '../../../automations/steps';

/**
 * The layout of an automation's steps as a graph, top to bottom (a small Sugiyama layout, written here: no graph
 * library is in the console's dependencies). The trigger is the first node; each step a node; every path that ends
 * (a `next` or a branch of null) ends in an "End" node of its own. A CONDITION's Yes and No leave from the left and
 * the right of its node, and a WAIT_FOR_EVENT with a timeout leaves by two paths (the event, the timeout) that join
 * again at its next step. A loop back to an earlier step (a recurring journey through a DELAY) is drawn around the
 * right side.
 *
 * Steps: ranks by the longest path from the trigger (a step where paths join sits below all of them); long edges get
 * a bend point on each rank they cross; the order within a rank by barycenters; x by repeated isotonic regression
 * towards the mean of each node's neighbours (so a join centres under its branches, and branches spread evenly).
 */

export type Port = 'main' | 'yes' | 'no' | 'event' | 'timeout';
/** The step field an edge is written in (`entry`: the trigger's edge, to the first step). */
export type EdgeField = 'entry' | 'next' | 'branches.yes' | 'branches.no';

export interface Point { x: number; y: number }

export interface FlowNode {
  id: string;
  kind: 'trigger' | 'step' | 'end';
  step?: Step;
  /** Top-left corner, and size. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface FlowEdge {
  id: string;
  from: string;
  to: string;
  port: Port;
  /** Which field of `from` the edge is (inserting a step on it rewrites that field). */
  field: EdgeField;
  /** The route from the source's port to the target: the ends and a bend point per rank crossed. */
  points: Point[];
  /** A loop back to an earlier step: drawn around the right side. */
  back: boolean;
  /** Where the edge's "add a step" button goes (one per field: the timeout path of a wait has none). */
  add: Point | null;
  /** Where its label (Yes, No, Event, Timeout) goes, if it has one. */
  label: Point | null;
}

export interface FlowLayout {
  nodes: FlowNode[];
  edges: FlowEdge[];
  width: number;
  height: number;
}

export const TRIGGER_ID = '@trigger';
/** The End of a path: one per field (a wait's event and timeout paths share their `next`, and their End). */
const endId = (from: string, field: EdgeField) => `@end:${from}:${field}`;

const NODE_WIDTH = 236;
const NODE_HEIGHT = 66;
const END_WIDTH = 76;
const END_HEIGHT = 28;
/** Between two nodes of a rank; beside a bend point. */
const GAP = 36;
const DUMMY_GAP = 20;
/** Between ranks: room for a branch's label and the add button. */
const RANK_GAP = 72;
const PAD = 24;
/** The loop-back lanes on the right. */
const LANE = 18;

const PORT_OFFSET: Record<Port, number> = { main: 0, yes: -NODE_WIDTH / 4, no: NODE_WIDTH / 4, event: -NODE_WIDTH / 6, timeout: NODE_WIDTH / 6 };

interface RawEdge { from: string; to: string; port: Port; field: EdgeField }

/** Where a step goes: its ports in the order they are drawn (left to right). */
function exitsOf(step: Step): { port: Port; field: EdgeField; to: string | null }[] {
  switch (step.type) {
    case 'EXIT': return [];
    case 'CONDITION': return [{ port: 'yes', field: 'branches.yes', to: step.branches.yes }, { port: 'no', field: 'branches.no', to: step.branches.no }];
    case 'WAIT_FOR_EVENT':
      if (step.config.timeout) {
        const to = step.next ?? null;
        return [{ port: 'event', field: 'next', to }, { port: 'timeout', field: 'next', to }];
      }
      return [{ port: 'main', field: 'next', to: step.next ?? null }];
    default: return [{ port: 'main', field: 'next', to: step.next ?? null }];
  }
}

/** Pool Adjacent Violators: the non-decreasing y nearest to `target` (weighted least squares). */
function isotonic(target: number[], weight: number[]): number[] {
  const blocks: { value: number; weight: number; count: number }[] = [];
  target.forEach((t, i) => {
    blocks.push({ value: t, weight: weight[i]!, count: 1 });
    while (blocks.length > 1 && blocks[blocks.length - 2]!.value > blocks[blocks.length - 1]!.value) {
      const b = blocks.pop()!;
      const a = blocks[blocks.length - 1]!;
      const w = a.weight + b.weight;
      a.value = (a.value * a.weight + b.value * b.weight) / w;
      a.weight = w;
      a.count += b.count;
    }
  });
  return blocks.flatMap((b) => Array<number>(b.count).fill(b.value));
}

export function layoutFlow(steps: Step[]): FlowLayout {
  // The nodes and the edges as the steps name them (a reference to no step ends there, as the API would refuse it).
  const byId = new Map(steps.map((s) => [s.id, s]));
  const size = new Map<string, { w: number; h: number; kind: FlowNode['kind'] }>();
  size.set(TRIGGER_ID, { w: NODE_WIDTH, h: NODE_HEIGHT, kind: 'trigger' });
  for (const s of steps) size.set(s.id, { w: NODE_WIDTH, h: NODE_HEIGHT, kind: 'step' });
  const raw: RawEdge[] = [];
  const end = (from: string, field: EdgeField) => {
    const id = endId(from, field);
    size.set(id, { w: END_WIDTH, h: END_HEIGHT, kind: 'end' });
    return id;
  };
  const first = steps[0]?.id;
  raw.push({ from: TRIGGER_ID, to: first ?? end(TRIGGER_ID, 'entry'), port: 'main', field: 'entry' });
  for (const s of steps) {
    for (const x of exitsOf(s)) raw.push({ from: s.id, to: x.to !== null && byId.has(x.to) ? x.to : end(s.id, x.field), port: x.port, field: x.field });
  }
  const ids = [...size.keys()];
  const out = new Map<string, RawEdge[]>(ids.map((id) => [id, []]));
  for (const e of raw) out.get(e.from)!.push(e);

  // Depth first from the trigger (then from anything not reached): preorder, postorder, and the edges that go back.
  const pre = new Map<string, number>();
  const post: string[] = [];
  const back = new Set<RawEdge>();
  const onStack = new Set<string>();
  const visit = (root: string) => {
    const stack: { id: string; i: number }[] = [{ id: root, i: 0 }];
    pre.set(root, pre.size);
    onStack.add(root);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const e = out.get(top.id)![top.i++];
      if (!e) {
        stack.pop();
        onStack.delete(top.id);
        post.push(top.id);
        continue;
      }
      if (onStack.has(e.to)) back.add(e);
      else if (!pre.has(e.to)) {
        pre.set(e.to, pre.size);
        onStack.add(e.to);
        stack.push({ id: e.to, i: 0 });
      }
    }
  };
  for (const id of ids) if (!pre.has(id)) visit(id);
  const forward = raw.filter((e) => !back.has(e));

  // Ranks: the longest path (reverse postorder is an order of the graph without its back edges).
  const rank = new Map<string, number>(ids.map((id) => [id, 0]));
  const topo = [...post].reverse();
  const fwdOut = new Map<string, RawEdge[]>(ids.map((id) => [id, []]));
  for (const e of forward) fwdOut.get(e.from)!.push(e);
  for (const id of topo) for (const e of fwdOut.get(id)!) rank.set(e.to, Math.max(rank.get(e.to)!, rank.get(id)! + 1));

  // A bend point (a zero-width node) on each rank a forward edge crosses.
  interface LNode { id: string; w: number; dummy: boolean; order: number }
  const ranks: LNode[][] = [];
  const at = (r: number) => (ranks[r] ??= []);
  for (const id of ids) at(rank.get(id)!).push({ id, w: size.get(id)!.w, dummy: false, order: pre.get(id)! });
  const chains = new Map<RawEdge, string[]>();
  /** Edges between adjacent ranks (through the bend points): [upper, lower, port offset at the upper end]. */
  const links: { up: string; down: string; offset: number }[] = [];
  for (const e of forward) {
    const r0 = rank.get(e.from)!;
    const r1 = rank.get(e.to)!;
    const chain: string[] = [];
    for (let r = r0 + 1; r < r1; r++) {
      const id = `@bend:${raw.indexOf(e)}:${r}`;
      chain.push(id);
      at(r).push({ id, w: 0, dummy: true, order: pre.get(e.from)! + (raw.indexOf(e) + 1) / (raw.length + 1) });
    }
    chains.set(e, chain);
    const path = [e.from, ...chain, e.to];
    for (let i = 0; i < path.length - 1; i++) links.push({ up: path[i]!, down: path[i + 1]!, offset: i === 0 ? PORT_OFFSET[e.port] : 0 });
  }
  for (const layer of ranks) layer.sort((a, b) => a.order - b.order);

  const ups = new Map<string, { id: string; offset: number }[]>();
  const downs = new Map<string, { id: string; offset: number }[]>();
  for (const l of links) {
    (ups.get(l.down) ?? ups.set(l.down, []).get(l.down)!).push({ id: l.up, offset: l.offset });
    (downs.get(l.up) ?? downs.set(l.up, []).get(l.up)!).push({ id: l.down, offset: l.offset });
  }

  // Order within ranks: barycenters of the neighbours' positions, a few sweeps down and up (a port's side counts).
  const index = new Map<string, number>();
  const reindex = () => ranks.forEach((layer) => layer.forEach((n, i) => index.set(n.id, i)));
  reindex();
  const sweep = (layer: LNode[], neighbours: Map<string, { id: string; offset: number }[]>) => {
    const keyed = layer.map((n, i) => {
      const ns = neighbours.get(n.id) ?? [];
      const key = ns.length ? ns.reduce((sum, x) => sum + index.get(x.id)! + Math.sign(x.offset) * 0.3, 0) / ns.length : i;
      return { n, key, i };
    });
    keyed.sort((a, b) => a.key - b.key || a.i - b.i);
    keyed.forEach((k, i) => { layer[i] = k.n; });
  };
  for (let round = 0; round < 4; round++) {
    for (let r = 1; r < ranks.length; r++) { sweep(ranks[r]!, ups); reindex(); }
    for (let r = ranks.length - 2; r >= 0; r--) { sweep(ranks[r]!, downs); reindex(); }
  }

  // x (centres): start packed, then pull each node towards its neighbours, keeping each rank's order and spacing.
  const cx = new Map<string, number>();
  const sep = (a: LNode, b: LNode) => a.w / 2 + b.w / 2 + (a.dummy || b.dummy ? DUMMY_GAP : GAP);
  for (const layer of ranks) {
    let x = 0;
    layer.forEach((n, i) => { x += i ? sep(layer[i - 1]!, n) : 0; cx.set(n.id, x); });
  }
  const place = (layer: LNode[], neighbours: Map<string, { id: string; offset: number }[]>, sign: number) => {
    if (!layer.length) return;
    const offsets = [0];
    for (let i = 1; i < layer.length; i++) offsets.push(offsets[i - 1]! + sep(layer[i - 1]!, layer[i]!));
    const target: number[] = [];
    const weight: number[] = [];
    layer.forEach((n, i) => {
      const ns = neighbours.get(n.id) ?? [];
      const want = ns.length ? ns.reduce((sum, x) => sum + cx.get(x.id)! + sign * x.offset, 0) / ns.length : cx.get(n.id)!;
      target.push(want - offsets[i]!);
      weight.push(ns.length ? (n.dummy ? 2 : 1) : 0.05);
    });
    isotonic(target, weight).forEach((y, i) => cx.set(layer[i]!.id, y + offsets[i]!));
  };
  for (let round = 0; round < 6; round++) {
    for (let r = 1; r < ranks.length; r++) place(ranks[r]!, ups, 1);
    for (let r = ranks.length - 2; r >= 0; r--) place(ranks[r]!, downs, -1);
  }
  for (let r = 1; r < ranks.length; r++) place(ranks[r]!, ups, 1);

  // y: each rank as tall as its tallest node, ranks RANK_GAP apart; everything shifted into the padding.
  const top: number[] = [];
  const height: number[] = [];
  let y = PAD;
  ranks.forEach((layer, r) => {
    top[r] = y;
    height[r] = Math.max(...layer.map((n) => (n.dummy ? 0 : size.get(n.id)!.h)));
    y += height[r]! + RANK_GAP;
  });
  const minX = Math.min(...ranks.flatMap((layer) => layer.map((n) => cx.get(n.id)! - n.w / 2)));
  const shift = PAD - minX;
  const nodes: FlowNode[] = ids.map((id) => {
    const s = size.get(id)!;
    const r = rank.get(id)!;
    return {
      id, kind: s.kind, ...(s.kind === 'step' ? { step: byId.get(id)! } : {}),
      x: cx.get(id)! + shift - s.w / 2, y: top[r]! + (s.kind === 'end' ? 0 : (height[r]! - s.h) / 2), width: s.w, height: s.h,
    };
  });
  const node = new Map(nodes.map((n) => [n.id, n]));
  let right = Math.max(...nodes.map((n) => n.x + n.width));

  const edges: FlowEdge[] = [];
  let lanes = 0;
  for (const e of raw) {
    const a = node.get(e.from)!;
    const b = node.get(e.to)!;
    const start = { x: a.x + a.width / 2 + PORT_OFFSET[e.port], y: a.y + a.height };
    // One add button per field: the timeout path of a wait shares it with the event path (both are `next`).
    const hasAdd = e.port !== 'timeout';
    const hasLabel = e.port !== 'main';
    const label = hasLabel ? { x: start.x, y: start.y + 12 } : null;
    const id = `${e.from}->${e.to}:${e.port}`;
    if (back.has(e)) {
      lanes += 1;
      const lane = right + lanes * LANE;
      const points = [start, { x: start.x, y: start.y + RANK_GAP / 2 }, { x: lane, y: start.y + RANK_GAP / 2 }, { x: lane, y: b.y + b.height / 2 }, { x: b.x + b.width, y: b.y + b.height / 2 }];
      edges.push({ id, from: e.from, to: e.to, port: e.port, field: e.field, points, back: true, add: hasAdd ? { x: start.x, y: start.y + (hasLabel ? 26 : RANK_GAP / 4) } : null, label });
      continue;
    }
    const points: Point[] = [start];
    chains.get(e)!.forEach((bend, k) => {
      const r = rank.get(e.from)! + 1 + k; // the chain's bends sit on the ranks after its source, one each
      const x = cx.get(bend)! + shift;
      points.push({ x, y: top[r]! }, { x, y: top[r]! + height[r]! });
    });
    const end = { x: b.x + b.width / 2, y: b.y };
    points.push(end);
    // The add button sits halfway along the first stretch (for a wait: between its two paths, on the way they share).
    const next = points[1]!;
    const from = e.port === 'event' ? { x: a.x + a.width / 2, y: start.y } : start;
    const add = hasAdd ? { x: (from.x + next.x) / 2, y: (from.y + next.y) / 2 + (hasLabel && e.port !== 'event' ? 6 : 0) } : null;
    edges.push({ id, from: e.from, to: e.to, port: e.port, field: e.field, points, back: false, add, label });
  }
  right += lanes * LANE;
  return { nodes, edges, width: right + PAD, height: y - RANK_GAP + PAD };
}

/** An SVG path through an edge's points: vertical S-curves between ranks, straight down through a rank; loops squared. */
export function edgePath(edge: FlowEdge): string {
  const p = edge.points;
  if (edge.back) {
    const r = 8;
    const [a, b, c, d, e] = p as [Point, Point, Point, Point, Point];
    return `M${a.x},${a.y} V${b.y - r} Q${b.x},${b.y} ${b.x + r},${b.y} H${c.x - r} Q${c.x},${c.y} ${c.x},${c.y - r} V${d.y + r} Q${d.x},${d.y} ${d.x - r},${d.y} H${e.x}`;
  }
  let d = `M${p[0]!.x},${p[0]!.y}`;
  for (let i = 1; i < p.length; i++) {
    const a = p[i - 1]!;
    const b = p[i]!;
    if (i % 2 === 0) { d += ` L${b.x},${b.y}`; continue; } // through a bend rank: straight down
    const mid = (a.y + b.y) / 2;
    d += ` C${a.x},${mid} ${b.x},${mid} ${b.x},${b.y}`;
  }
  return d;
}
