import type { ComponentChildren } from 'preact';
import { useEffect, useId, useLayoutEffect, useRef } from 'preact/hooks';
import { Icon, type IconName } from '../../components';
import { edgePath, TRIGGER_ID, type FlowEdge, type FlowLayout, type FlowNode, type Port } from './flowLayout';

/**
 * An automation's steps drawn as a graph (flowLayout.ts places them): the edges in SVG, the nodes as buttons over them
 * (focusable, named for screen readers), an End under every path that ends, the Yes/No of a condition and the
 * Event/Timeout of a wait on their paths. The builder passes `onAdd` (a "+" on every edge inserts a step there) and
 * `invalid` (steps the API refused); an execution's page passes `marks` (the path it took, where it is, where it failed).
 * On a narrow screen the canvas scrolls sideways inside its frame.
 */

export type NodeMark = 'visited' | 'current' | 'failed' | 'cancelled';

export interface NodeView {
  icon: IconName;
  title: string;
  summary: string;
  /** Said to screen readers after the summary (where an execution went: "taken", "the execution is here"). */
  state?: string;
}

const PORT_WORD: Partial<Record<Port, string>> = { yes: 'Yes', no: 'No', event: 'Event', timeout: 'Timeout' };

export function FlowGraph({ layout, label, view, selected, onSelect, onAdd, addLabel, invalid, marks, taken }: {
  layout: FlowLayout;
  label: string;
  view: (node: FlowNode) => NodeView;
  selected?: string | null;
  onSelect?: (id: string) => void;
  onAdd?: (edge: FlowEdge) => void;
  /** The add button's accessible name for an edge. */
  addLabel?: (edge: FlowEdge) => string;
  invalid?: Set<string>;
  marks?: Map<string, NodeMark>;
  /** Edges an execution went along (FlowEdge ids). */
  taken?: Set<string>;
}) {
  const arrow = `flow-arrow-${useId()}`;
  const scroller = useRef<HTMLDivElement>(null);
  const centred = useRef(false);

  // Open on the trigger: on a narrow screen the canvas is wider than its frame, and the journey starts at the top.
  useLayoutEffect(() => {
    const el = scroller.current;
    const trigger = layout.nodes.find((n) => n.id === TRIGGER_ID);
    if (!el || !trigger || centred.current) return;
    centred.current = true;
    el.scrollLeft = Math.max(0, trigger.x + trigger.width / 2 - el.clientWidth / 2);
  }, [layout]);

  // The selected node is brought into view (a 422 selects the step it concerns, which may be off screen).
  useEffect(() => {
    if (!selected) return;
    const el = scroller.current?.querySelector<HTMLElement>(`[data-node="${CSS.escape(selected)}"]`);
    el?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [selected]);

  const edgeClass = (e: FlowEdge) => ['flow-edge', e.back ? 'is-back' : '', taken?.has(e.id) ? 'is-taken' : '', marks && !taken?.has(e.id) ? 'is-dim' : ''].filter(Boolean).join(' ');
  /** A node's state classes (its kind's class is the Node's). */
  const stateClass = (n: FlowNode) => {
    const mark = marks?.get(n.id);
    return [
      selected === n.id ? 'is-selected' : '',
      invalid?.has(n.id) ? 'is-invalid' : '',
      mark ? `is-${mark}` : marks ? 'is-dim' : '',
    ].filter(Boolean).join(' ');
  };

  return (
    // Without buttons in it (an execution's path), the frame itself takes the focus, so a keyboard can scroll it.
    <div class="flow-scroll" ref={scroller} role="group" aria-label={label} tabIndex={onSelect || onAdd ? undefined : 0}>
      <div class="flow-canvas" style={{ width: `${layout.width}px`, height: `${layout.height}px` }}>
        <svg class="flow-edges" width={layout.width} height={layout.height} aria-hidden="true" focusable="false">
          <defs>
            {/* In the canvas's units: a thicker taken edge keeps the same arrowhead. */}
            <marker id={arrow} viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse">
              <path d="M0,1 L9,5 L0,9 z" class="flow-arrowhead" />
            </marker>
            <marker id={`${arrow}-taken`} viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="11" markerHeight="11" orient="auto-start-reverse">
              <path d="M0,1 L9,5 L0,9 z" class="flow-arrowhead is-taken" />
            </marker>
          </defs>
          {layout.edges.map((e) => (
            <path key={e.id} class={edgeClass(e)} d={edgePath(e)} marker-end={`url(#${arrow}${taken?.has(e.id) ? '-taken' : ''})`} />
          ))}
        </svg>
        {layout.edges.map((e) => (e.label ? (
          <span key={`${e.id}-label`} class={`flow-label flow-label-${e.port}${taken?.has(e.id) ? ' is-taken' : ''}`} style={{ left: `${e.label.x}px`, top: `${e.label.y}px` }} aria-hidden="true">
            {PORT_WORD[e.port]}
          </span>
        ) : null))}
        {layout.nodes.map((n) => (
          <Node key={n.id} node={n} view={n.kind === 'end' ? null : view(n)} state={stateClass(n)} invalid={invalid?.has(n.id) ?? false} onSelect={onSelect} selected={selected === n.id} />
        ))}
        {onAdd ? layout.edges.map((e) => (e.add ? (
          <button key={`${e.id}-add`} type="button" class="flow-add" style={{ left: `${e.add.x}px`, top: `${e.add.y}px` }}
            aria-label={addLabel ? addLabel(e) : 'Add a step here'} title="Add a step here" onClick={() => onAdd(e)}>
            <Icon name="plus" size={14} />
          </button>
        ) : null)) : null}
      </div>
    </div>
  );
}

function Node({ node, view, state, invalid, onSelect, selected }: {
  node: FlowNode; view: NodeView | null; state: string; invalid: boolean; onSelect?: (id: string) => void; selected: boolean;
}) {
  const box = { left: `${node.x}px`, top: `${node.y}px`, width: `${node.width}px`, height: `${node.height}px` };
  if (!view) return <div class={`flow-end ${state}`} style={box} data-node={node.id} aria-hidden="true">End</div>;
  const cls = `flow-node${node.kind === 'trigger' ? ' flow-trigger' : ''} ${state}`;
  const body: ComponentChildren = (
    <>
      <span class="flow-node-icon"><Icon name={view.icon} size={15} /></span>
      <span class="flow-node-text">
        <span class="flow-node-title">{view.title}</span>
        <span class="flow-node-summary" title={view.summary}>{view.summary}</span>
        {view.state ? <span class="visually-hidden">({view.state})</span> : null}
      </span>
      {invalid ? <span class="flow-node-alert"><Icon name="alert" size={14} /></span> : null}
    </>
  );
  // Named by what it shows (a screen reader hears the title, the summary and the state).
  return onSelect ? (
    <button type="button" class={cls} style={box} data-node={node.id} aria-pressed={selected ? 'true' : 'false'} onClick={() => onSelect(node.id)}>
      {body}
    </button>
  ) : (
    <div class={cls} style={box} data-node={node.id}>{body}</div>
  );
}
