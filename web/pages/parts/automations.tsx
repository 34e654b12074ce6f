/** Parts of the Automations pages (Automations, Automation, AutomationExecution): not a page. */
import type { ExecutionStatus, Step } from '../../../automations/steps';
import type { paths } from '../../../client/schema';
import type { Schemas } from '../../api';
import { Badge, type Tone } from '../../components';
import { STEP_INFO, stepSummary } from './automationSteps';
import type { NodeView } from './FlowGraph';
import type { FlowNode } from './flowLayout';

export type Workflow = Schemas['Workflow'];
export type ExecutionDetail = Schemas['ExecutionDetail'];

type WorkflowBody = paths['/workflows']['post']['requestBody']['content']['application/json'];

/** The API types a workflow's steps loosely (any config); the console reads and writes them as the steps they are. */
export const stepsOf = (w: Workflow): Step[] => w.steps as unknown as Step[];
export const stepsBody = (steps: Step[]): WorkflowBody['steps'] => steps as unknown as WorkflowBody['steps'];

export function EnabledBadge({ enabled }: { enabled: boolean }) {
  return enabled ? <Badge tone="success">Enabled</Badge> : <Badge>Disabled</Badge>;
}

const STATUS: Record<ExecutionStatus, [string, Tone]> = {
  RUNNING: ['Running', 'info'],
  WAITING: ['Waiting', 'accent'],
  COMPLETED: ['Completed', 'success'],
  EXITED: ['Exited', 'neutral'],
  FAILED: ['Failed', 'danger'],
  CANCELLED: ['Cancelled', 'warning'],
};
export const EXECUTION_STATUS_WORDS = Object.entries(STATUS).map(([status, [word]]) => [status, word] as [ExecutionStatus, string]);

export function ExecutionStatusBadge({ status }: { status: string }) {
  const [word, tone] = STATUS[status as ExecutionStatus] ?? [status, 'neutral' as Tone];
  return <Badge tone={tone}>{word}</Badge>;
}

export const isActive = (x: { status: string }) => x.status === 'RUNNING' || x.status === 'WAITING';

/** What a node of the graph says: the trigger's event, a step's type and what it does. */
export function nodeView(node: FlowNode, trigger: string, templateName: (id: string) => string | undefined): NodeView {
  if (node.kind === 'trigger' || !node.step) {
    return { icon: 'events', title: 'Trigger: when this is tracked', summary: trigger || 'No event chosen yet' };
  }
  const info = STEP_INFO[node.step.type];
  const summary = stepSummary(node.step, templateName);
  return { icon: info.icon, title: `${info.label} · ${node.step.id}`, summary };
}
