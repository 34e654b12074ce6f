import { useMemo, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import type { Step } from '../../automations/steps';
import { api, call } from '../api';
import { Button, ConfirmDialog, Icon, Loading, Page, Time, toast, type Tone } from '../components';
import { useLoad, useRecheck } from '../hooks';
import { useSession } from '../session';
import { durationText, STEP_INFO } from './parts/automationSteps';
import { ExecutionStatusBadge, isActive, nodeView, stepsOf, type ExecutionDetail, type Workflow } from './parts/automations';
import { useTemplates } from './parts/templates';
import { FlowGraph, type NodeMark } from './parts/FlowGraph';
import { layoutFlow, TRIGGER_ID, type FlowLayout, type Port } from './parts/flowLayout';
import { NotLoaded } from './parts/NotLoaded';

/**
 * One execution of an automation (GET /workflows/:id/executions/:executionId): the path it took drawn on the
 * automation's graph (the steps it ran, the branches it followed, where it is or where it ended) and the same trace as
 * a list, with each step's times and outcome. While it runs the page looks again every few seconds. A RUNNING or
 * WAITING execution can be cancelled (POST …/cancel) by those who may write.
 */
type TraceEntry = ExecutionDetail['trace'][number];
const POLL_MS = 2000;

/** The graph's marks for a trace: the nodes it reached and the edges it went along. */
function pathOf(layout: FlowLayout, x: ExecutionDetail): { marks: Map<string, NodeMark>; taken: Set<string> } {
  const marks = new Map<string, NodeMark>([[TRIGGER_ID, 'visited']]);
  const taken = new Set<string>();
  const portOf = (e: TraceEntry): Port[] => (e.branch ? [e.branch] : e.wokenBy === 'event' ? ['event', 'main'] : e.wokenBy === 'timeout' ? ['timeout', 'main'] : ['main']);
  const edge = (from: string, to: ((id: string) => boolean), ports: Port[]) => layout.edges.find((g) => g.from === from && ports.includes(g.port) && to(g.to));
  const trace = x.trace;
  if (trace[0] && !x.traceTruncated) {
    const first = edge(TRIGGER_ID, (id) => id === trace[0]!.stepId, ['main']);
    if (first) taken.add(first.id);
  }
  trace.forEach((e, i) => {
    const mark: NodeMark = e.outcome === 'WAITING' ? 'current' : e.outcome === 'FAILED' ? 'failed' : e.outcome === 'CANCELLED' ? 'cancelled' : 'visited';
    marks.set(e.stepId, mark);
    const next = trace[i + 1];
    if (next) {
      const g = edge(e.stepId, (id) => id === next.stepId, portOf(e));
      if (g) taken.add(g.id);
    } else if (x.status === 'COMPLETED' && e.outcome === 'DONE') {
      // The last step's path ended: its End is reached.
      const g = edge(e.stepId, (id) => id.startsWith('@end:'), portOf(e));
      if (g) { taken.add(g.id); marks.set(g.to, 'visited'); }
    }
  });
  return { marks, taken };
}

/** What a step run did, in words. */
function outcomeText(e: TraceEntry, step: Step | undefined, x: ExecutionDetail, templateName: (id: string) => string | undefined): { text: string; tone: Tone } {
  if (e.outcome === 'FAILED') return { text: `Failed: ${e.error ?? 'no reason recorded'}`, tone: 'danger' };
  if (e.outcome === 'CANCELLED') return { text: 'Cancelled during this step', tone: 'warning' };
  if (e.outcome === 'WAITING') {
    const until = x.waitingUntil ? ` until ${new Date(x.waitingUntil).toLocaleString()}` : '';
    return { text: x.waitingFor ? `Waiting for “${x.waitingFor}”${until}` : `Waiting${until}`, tone: 'info' };
  }
  switch (step?.type) {
    case 'SEND_EMAIL': return { text: `Sent “${templateName(step.config.template) ?? 'the template'}”`, tone: 'success' };
    case 'DELAY': return { text: `Waited ${durationText(step.config)}`, tone: 'success' };
    case 'WAIT_FOR_EVENT': return e.wokenBy === 'timeout'
      ? { text: `No “${step.config.event}” within ${durationText(step.config.timeout)}: timed out`, tone: 'success' }
      : { text: `“${step.config.event}” came`, tone: 'success' };
    case 'CONDITION': return { text: e.branch === 'yes' ? 'Matched: took the Yes path' : 'Did not match: took the No path', tone: 'success' };
    case 'UPDATE_CONTACT': return { text: 'Contact updated', tone: 'success' };
    case 'WEBHOOK': return { text: `Called ${step.config.method ?? 'POST'} ${step.config.url}`, tone: 'success' };
    case 'EXIT': return { text: 'Left the journey here', tone: 'success' };
    default: return { text: e.branch ? `Took the ${e.branch === 'yes' ? 'Yes' : 'No'} path` : e.wokenBy ? `Ended by its ${e.wokenBy}` : 'Done', tone: 'success' };
  }
}

function took(e: TraceEntry): string {
  if (!e.endedAt) return '';
  const ms = Date.parse(e.endedAt) - Date.parse(e.startedAt);
  if (ms < 1000) return 'under a second';
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 86_400_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} days`;
}

export default function AutomationExecution() {
  const { params } = useRoute();
  const { can } = useSession();
  const workflowId = params.id ?? '';
  const executionId = params.executionId ?? '';
  const templates = useTemplates();
  const wf = useLoad(() => call(api.GET('/workflows/{id}', { params: { path: { id: workflowId } } }), { expect: [404] }), [workflowId]);
  const ex = useLoad(() => call(api.GET('/workflows/{id}/executions/{executionId}', { params: { path: { id: workflowId, executionId } } }), { expect: [404] }), [workflowId, executionId]);
  const [asking, setAsking] = useState(false);
  const x = ex.data;
  const workflow: Workflow | undefined = wf.data;
  const active = x ? isActive(x) : false;

  // Under way: looked at again every few seconds until it ends.
  useRecheck(ex.reload, { waiting: active, busy: ex.loading, seen: x, maxMs: POLL_MS });

  const steps = workflow ? stepsOf(workflow) : [];
  const layout = useMemo(() => layoutFlow(steps), [workflow]);
  const path = useMemo(() => (x ? pathOf(layout, x) : null), [layout, x]);

  const breadcrumb = <a href={`/app/automations/${workflowId}/executions`}><Icon name="arrowLeft" size={14} />{workflow ? `${workflow.name}: executions` : 'Executions'}</a>;
  const error = ex.error ?? wf.error;
  if (error) {
    return <NotLoaded error={error} thing="execution" title="Execution" icon="automations" breadcrumb={breadcrumb}
      back={{ href: `/app/automations/${workflowId}/executions`, label: 'Back to the executions' }}
      missingTitle="There is no such execution of this automation" missingHint="It may have been deleted with its automation, or it belongs to another project." />;
  }
  if (!x || !workflow || !path) return <Page title="Execution" breadcrumb={breadcrumb}><Loading what="Loading the execution" /></Page>;

  const byId = new Map(steps.map((s) => [s.id, s]));
  const unknown = x.trace.filter((e) => !byId.has(e.stepId));

  return (
    <Page title={x.contactEmail} breadcrumb={breadcrumb}
      lede={<span class="automation-lede"><ExecutionStatusBadge status={x.status} /><span>{workflow.name} · started <Time value={x.startedAt} relative /></span></span>}
      actions={can('write') && active ? <Button variant="danger" onClick={() => setAsking(true)}><Icon name="x" />Cancel execution</Button> : null}>
      <div class="execution-grid">
        <section class="card flow-card" aria-labelledby="path-title">
          <div class="card-header">
            <h2 id="path-title">Path</h2>
            <span class="legend small"><span class="legend-mark is-taken" />Taken</span>
          </div>
          <FlowGraph layout={layout} label="The automation's steps, with the path this execution took" marks={path.marks} taken={path.taken}
            view={(n) => {
              const mark = path.marks.get(n.id);
              const state = mark === 'current' ? 'the execution is here' : mark === 'failed' ? 'failed here' : mark === 'cancelled' ? 'cancelled here' : mark ? 'taken' : 'not taken';
              return { ...nodeView(n, workflow.trigger.event, templates.name), state };
            }} />
          {unknown.length ? <p class="card-body muted small">The automation was edited after this execution started: {unknown.map((e) => e.stepId).join(', ')} {unknown.length === 1 ? 'is' : 'are'} no longer among its steps, so only the list shows {unknown.length === 1 ? 'it' : 'them'}.</p> : null}
        </section>
        <div class="stack">
          <section class="card" aria-labelledby="trace-title">
            <div class="card-header">
              <h2 id="trace-title">Trace</h2>
              {active ? <span class="muted small">Updating while it runs</span> : null}
            </div>
            <div class="card-body">
              {x.traceTruncated ? <p class="muted small trace-note">Earlier steps of this long journey are not shown: these are the latest {x.trace.length}.</p> : null}
              {x.trace.length ? (
                <ol class="timeline trace">
                  {x.trace.map((e) => {
                    const step = byId.get(e.stepId);
                    const { text, tone } = outcomeText(e, step, x, templates.name);
                    const dur = took(e);
                    return (
                      <li key={e.seq} data-step={e.stepId}>
                        <span class={`dot dot-${tone === 'danger' ? 'danger' : tone === 'warning' ? 'warning' : tone === 'info' ? 'info' : 'success'}`} />
                        <div>
                          <div class="what">{step ? STEP_INFO[step.type].label : 'Step'} <span class="mono muted">{e.stepId}</span></div>
                          <div class="trace-outcome">{text}</div>
                          <div class="when"><Time value={e.startedAt} />{dur ? ` · took ${dur}` : ''}</div>
                        </div>
                      </li>
                    );
                  })}
                </ol>
              ) : <p class="muted small">No step has run yet: the journey is about to start.</p>}
            </div>
          </section>
          <section class="card" aria-labelledby="execution-details">
            <div class="card-header"><h2 id="execution-details">Details</h2></div>
            <dl class="kv card-body">
              <dt>Status</dt><dd><ExecutionStatusBadge status={x.status} /></dd>
              <dt>Contact</dt><dd><a href={`/app/contacts/${x.contactId}`}>{x.contactEmail}</a></dd>
              <dt>Step</dt><dd class="mono">{x.currentStepId ?? '—'}</dd>
              {x.status === 'WAITING' ? <><dt>Waiting for</dt><dd>{x.waitingFor ? <code>{x.waitingFor}</code> : 'Its delay to pass'}</dd><dt>Until</dt><dd>{x.waitingUntil ? <Time value={x.waitingUntil} /> : 'No timeout'}</dd></> : null}
              <dt>Started</dt><dd><Time value={x.startedAt} /></dd>
              <dt>Updated</dt><dd><Time value={x.updatedAt} /></dd>
              <dt>Ended</dt><dd><Time value={x.completedAt} /></dd>
              {x.error ? <><dt>Error</dt><dd class="mono">{x.error}</dd></> : null}
              <dt>ID</dt><dd class="mono small">{x.id}</dd>
            </dl>
          </section>
        </div>
      </div>
      {can('write') ? (
        <ConfirmDialog open={asking} title="Cancel this execution?" confirm="Cancel execution" danger onClose={() => setAsking(false)}
          onConfirm={async () => {
            await call(api.POST('/workflows/{id}/executions/{executionId}/cancel', { params: { path: { id: workflowId, executionId } } }));
            toast('Execution cancelled');
            ex.reload();
          }}>
          {x.contactEmail} takes no further step of {workflow.name}. A step in progress finishes first. The contact can start the journey again with its next “{workflow.trigger.event}”.
        </ConfirmDialog>
      ) : null}
    </Page>
  );
}
