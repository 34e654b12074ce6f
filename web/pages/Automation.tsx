import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import type { Step, StepType } from '../../automations/steps';
import { api, ApiFailure, call } from '../api';
import {
  Button, Checkbox, ConfirmDialog, Dialog, EmptyState, FormError, Icon, Loading, Page, Tabs, TextAreaField, TextField, toast,
} from '../components';
import { laterSaved, useLoad } from '../hooks';
import { useSession } from '../session';
import { Executions } from './automations/Executions';
import { StepPanel, TEXT_FIELDS } from './automations/StepPanel';
import { STEP_CHOICES, STEP_INFO } from './parts/automationSteps';
import { insertStep, newStep, removeStep, renameStep, stepErrors, targetOf, type StepErrors } from './parts/flowEdits';
import { EnabledBadge, nodeView, stepsBody, stepsOf, type Workflow } from './parts/automations';
import { useTemplates } from './parts/templates';
import { FlowGraph } from './parts/FlowGraph';
import { layoutFlow, TRIGGER_ID, type FlowEdge } from './parts/flowLayout';
import { NotLoaded } from './parts/NotLoaded';

/**
 * An automation (the API's workflow, issue 29): the builder at /app/automations/new and /app/automations/:id, its
 * executions at /app/automations/:id/executions. The builder draws the steps as a graph (FlowGraph): select a node to
 * edit it in the side panel, "+" on any path to insert a step there, delete a step from its panel. The trigger's node
 * holds the automation's own settings. Save sends the whole definition (POST, or PATCH: `steps` replaces the list);
 * a 422 marks the steps it names and shows each message under its field. Enabling, disabling and deleting act at once.
 * A viewer sees the same graph and panels, read-only.
 */

interface Draft {
  name: string;
  description: string;
  event: string;
  allowReentry: boolean;
  steps: Step[];
}

const emptyDraft: Draft = { name: '', description: '', event: '', allowReentry: false, steps: [] };
const draftOf = (w: Workflow): Draft => ({
  name: w.name, description: w.description ?? '', event: w.trigger.event, allowReentry: w.allowReentry, steps: stepsOf(w),
});
const bodyOf = (d: Draft) => ({
  name: d.name, description: d.description || null, trigger: { type: 'EVENT' as const, event: d.event.trim() }, steps: stepsBody(d.steps), allowReentry: d.allowReentry,
});
const textKey = (stepId: string, field: string) => `${stepId}.${field}`;

/** Where an edge is, in words: "after delay-1", "on the Yes path of check-1", "at the start". */
function edgeWhere(edge: { from: string; field: string }): string {
  if (edge.from === TRIGGER_ID) return 'at the start';
  if (edge.field === 'branches.yes') return `on the Yes path of ${edge.from}`;
  if (edge.field === 'branches.no') return `on the No path of ${edge.from}`;
  return `after ${edge.from}`;
}

export default function Automation() {
  const { params, path } = useRoute();
  const { route } = useLocation();
  const { can } = useSession();
  const id = params.id ?? 'new';
  const isNew = id === 'new';
  const tab = path.endsWith('/executions') ? 'executions' : 'steps';
  const loaded = useLoad(() => (isNew ? Promise.resolve(null) : call(api.GET('/workflows/{id}', { params: { path: { id } } }), { expect: [404] })), [id]);
  const [workflow, setShown] = useState<Workflow | null>(null);
  const setWorkflow = (next: Workflow) => setShown((shown) => laterSaved(shown, next));
  useEffect(() => { if (loaded.data) setWorkflow(loaded.data); else if (isNew) setShown(null); }, [loaded.data]);

  const breadcrumb = <a href="/app/automations"><Icon name="arrowLeft" size={14} />Automations</a>;
  if (loaded.error) {
    return <NotLoaded error={loaded.error} thing="automation" title="Automation" icon="automations" breadcrumb={breadcrumb} back={{ href: '/app/automations', label: 'Back to automations' }} />;
  }
  if (!isNew && !workflow) return <Page title="Automation" breadcrumb={breadcrumb}><Loading what="Loading the automation" /></Page>;
  if (isNew && !can('write')) {
    return (
      <Page title="New automation" breadcrumb={breadcrumb}>
        <EmptyState icon="lock" title="Your role cannot create automations" actions={<Button onClick={() => route('/app/automations')}>Back to automations</Button>}>
          Members, admins and owners of the project build them; you can look at the ones there are.
        </EmptyState>
      </Page>
    );
  }
  if (tab === 'executions' && workflow) {
    return (
      <Page title={workflow.name} breadcrumb={breadcrumb} lede={<AutomationLede workflow={workflow} />}>
        <AutomationTabs id={workflow.id} current="executions" />
        <Executions workflow={workflow} />
      </Page>
    );
  }
  return <Builder key={id} workflow={workflow} onSaved={setWorkflow} breadcrumb={breadcrumb} />;
}

function AutomationTabs({ id, current }: { id: string; current: 'steps' | 'executions' }) {
  return <Tabs label="Automation" current={current} tabs={[{ id: 'steps', href: `/app/automations/${id}`, label: 'Steps' }, { id: 'executions', href: `/app/automations/${id}/executions`, label: 'Executions' }]} />;
}

function AutomationLede({ workflow }: { workflow: Workflow }) {
  return <span class="automation-lede"><EnabledBadge enabled={workflow.enabled} /><span>When <code>{workflow.trigger.event}</code> is tracked</span></span>;
}

function Builder({ workflow, onSaved, breadcrumb }: { workflow: Workflow | null; onSaved: (w: Workflow) => void; breadcrumb: ComponentChildren }) {
  const { route } = useLocation();
  const { can } = useSession();
  const writer = can('write');
  const templates = useTemplates();
  const [saved, setSaved] = useState<Draft>(workflow ? draftOf(workflow) : emptyDraft);
  const [draft, setDraft] = useState<Draft>(saved);
  const [selected, setSelected] = useState<string>(TRIGGER_ID);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<StepErrors | null>(null);
  const [formError, setFormError] = useState('');
  const [adding, setAdding] = useState<FlowEdge | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [asking, setAsking] = useState<'delete' | 'disable' | null>(null);
  const [busy, setBusy] = useState<'save' | 'toggle' | null>(null);
  /** Counts refused saves: each one moves the focus to the first field the API named. */
  const [refusals, setRefusals] = useState(0);
  const panel = useRef<HTMLDivElement>(null);
  const dirty = JSON.stringify(draft) !== JSON.stringify(saved);
  const layout = useMemo(() => layoutFlow(draft.steps), [draft.steps]);
  const step = draft.steps.find((s) => s.id === selected);

  // A person leaving with unsaved changes is asked first (a reload, a closed tab).
  useEffect(() => {
    if (!dirty) return undefined;
    const warn = (e: BeforeUnloadEvent) => { e.preventDefault(); };
    addEventListener('beforeunload', warn);
    return () => removeEventListener('beforeunload', warn);
  }, [dirty]);

  // After a refused save, the first field the API named takes the focus (its message is read with it).
  useEffect(() => {
    if (refusals) panel.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [refusals]);

  const select = (id: string, reveal = true) => {
    setSelected(id);
    // Where the panel is under the graph (a phone), it is brought into view; at once for a person who asks for less motion.
    if (reveal && matchMedia('(max-width: 1080px)').matches) {
      const behavior = matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
      requestAnimationFrame(() => panel.current?.scrollIntoView({ block: 'start', behavior }));
    }
  };
  const setSteps = (steps: Step[]) => setDraft((d) => ({ ...d, steps }));
  const describe = (ref: string | null) => {
    if (ref === null) return 'The end: the journey completes';
    const s = draft.steps.find((x) => x.id === ref);
    return s ? `${STEP_INFO[s.type].label} · ${s.id}` : ref;
  };

  /** The JSON fields that do not parse: the first one's step and message (nothing is sent while one is left). */
  const unparsed = (): { stepId: string; message: string } | null => {
    for (const s of draft.steps) {
      for (const spec of TEXT_FIELDS[s.type] ?? []) {
        const text = texts[textKey(s.id, spec.field)];
        if (text === undefined) continue;
        const parsed = spec.parse(text);
        if ('error' in parsed) return { stepId: s.id, message: `${s.id}: ${parsed.error}` };
      }
    }
    return null;
  };

  /** A failed save: the 422's fields marked on their steps (the first one selected), the rest said on top. */
  const failed = (err: unknown, sent: Step[]) => {
    if (!(err instanceof ApiFailure)) { setFormError(err instanceof Error ? err.message : 'The automation was not saved.'); return; }
    const found = stepErrors(err.fields, sent);
    setErrors(found);
    setRefusals((n) => n + 1);
    const first = sent.find((s) => found.byStep.has(s.id));
    const count = Object.keys(err.fields).length;
    if (first) select(first.id);
    else if (found.other.name || found.other['trigger.event'] || found.other.description) select(TRIGGER_ID);
    const listed = Object.entries(found.other).filter(([k]) => !['name', 'trigger.event', 'description', 'allowReentry'].includes(k)).map(([, m]) => m);
    const marked = count === 1 ? 'one problem, shown where it is' : `${count} problems, each shown where it is`;
    setFormError(count ? [`Not saved: the API found ${marked}.`, ...listed].join(' ') : err.message);
  };

  const save = async (extra: { enabled?: boolean } = {}) => {
    setFormError('');
    const bad = unparsed();
    if (bad) {
      select(bad.stepId);
      setFormError(`Fix the step first: ${bad.message}`);
      setRefusals((n) => n + 1);
      return null;
    }
    const sent = draft.steps;
    setErrors(null);
    try {
      const body = { ...bodyOf(draft), ...extra };
      const result = workflow
        ? await call(api.PATCH('/workflows/{id}', { params: { path: { id: workflow.id } }, body }), { form: true })
        : await call(api.POST('/workflows', { body }), { form: true });
      setSaved(draft);
      onSaved(result);
      if (!workflow) route(`/app/automations/${result.id}`, true);
      return result;
    } catch (err) {
      failed(err, sent);
      return null;
    }
  };

  const onSave = async () => {
    setBusy('save');
    const result = await save();
    setBusy(null);
    if (result) toast(workflow ? 'Automation saved' : 'Automation created: enable it to start journeys');
  };

  const setEnabled = async (enabled: boolean) => {
    if (!workflow) return;
    setBusy('toggle');
    try {
      let result: Workflow | null = null;
      // Enabling with unsaved changes saves them with it: what runs is what is shown.
      if (dirty) result = await save({ enabled });
      else {
        try {
          result = await call(api.PATCH('/workflows/{id}', { params: { path: { id: workflow.id } }, body: { enabled } }), { form: true });
        } catch (err) {
          failed(err, draft.steps);
        }
      }
      if (result) {
        onSaved(result);
        toast(enabled ? `Enabled: “${result.trigger.event}” now starts a journey` : 'Disabled: the executions under way were cancelled');
      }
    } finally {
      setBusy(null);
    }
  };

  const add = (type: StepType) => {
    if (!adding) return;
    const created = newStep(type, draft.steps, targetOf(draft.steps, adding.from, adding.field));
    setSteps(insertStep(draft.steps, adding.from, adding.field, created));
    setAdding(null);
    select(created.id);
  };

  const remove = (stepId: string) => {
    const { steps, removed } = removeStep(draft.steps, stepId);
    setSteps(steps);
    setTexts((t) => Object.fromEntries(Object.entries(t).filter(([k]) => !removed.some((r) => k.startsWith(`${r}.`)))));
    setSelected(TRIGGER_ID);
    toast(removed.length > 1 ? `Deleted ${removed.length} steps` : 'Step deleted');
  };

  const rename = (from: string, to: string) => {
    setSteps(renameStep(draft.steps, from, to));
    setTexts((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k.startsWith(`${from}.`) ? `${to}.${k.slice(from.length + 1)}` : k, v])));
    setErrors((e) => {
      if (!e?.byStep.has(from)) return e;
      const byStep = new Map(e.byStep);
      byStep.set(to, byStep.get(from)!);
      byStep.delete(from);
      return { ...e, byStep };
    });
    setSelected(to);
  };

  const invalid = new Set(errors?.byStep.keys() ?? []);
  const other = errors?.other ?? {};
  if (other.name || other['trigger.event'] || other.description || other.allowReentry) invalid.add(TRIGGER_ID);
  const deletingStep = deleting ? draft.steps.find((s) => s.id === deleting) : undefined;
  const deletingAlso = deleting ? removeStep(draft.steps, deleting).removed.filter((r) => r !== deleting) : [];
  const title = workflow ? (draft.name || workflow.name) : 'New automation';

  const actions = writer ? (
    <>
      {dirty ? <span class="unsaved" role="status">Unsaved changes</span> : null}
      {workflow ? (
        <>
          <Button busy={busy === 'toggle'} disabled={busy !== null} onClick={() => (workflow.enabled ? setAsking('disable') : setEnabled(true))}>{workflow.enabled ? 'Disable' : 'Enable'}</Button>
          <Button variant="danger" disabled={busy !== null} onClick={() => setAsking('delete')}><Icon name="trash" />Delete</Button>
        </>
      ) : null}
      <Button variant="primary" busy={busy === 'save'} disabled={busy !== null || (!dirty && workflow !== null)} onClick={onSave}>{workflow ? 'Save' : 'Create automation'}</Button>
    </>
  ) : null;

  return (
    <Page title={title} breadcrumb={breadcrumb} actions={actions}
      lede={workflow ? <AutomationLede workflow={workflow} /> : 'A trigger event, then the steps each contact goes through. Select a node to edit it; + adds a step on a path.'}>
      {workflow ? <AutomationTabs id={workflow.id} current="steps" /> : null}
      <FormError>{formError}</FormError>
      {!writer ? <p class="form-note">You can look at this automation; your role cannot change it.</p> : null}
      <div class="automation-builder">
        <section class="card flow-card" aria-labelledby="flow-title">
          <div class="card-header">
            <h2 id="flow-title">Steps</h2>
            <span class="muted small">{draft.steps.length === 1 ? '1 step' : `${draft.steps.length} steps`}</span>
          </div>
          <FlowGraph layout={layout} label="The automation's steps" selected={selected} onSelect={(n) => select(n)} invalid={invalid}
            view={(n) => nodeView(n, draft.event.trim(), templates.name)}
            onAdd={writer ? setAdding : undefined} addLabel={(e) => `Add a step ${edgeWhere(e)}`} />
        </section>
        <div class="automation-panel" ref={panel}>
          {step ? (
            <StepPanel step={step} errors={errors?.byStep.get(step.id)} readOnly={!writer} templates={templates} describe={describe}
              text={(field, initial) => texts[textKey(step.id, field)] ?? initial}
              setText={(field, value) => setTexts((t) => ({ ...t, [textKey(step.id, field)]: value }))}
              taken={(x) => draft.steps.some((s) => s.id === x && s.id !== step.id)}
              onChange={(next) => setSteps(draft.steps.map((s) => (s.id === step.id ? next : s)))}
              onRename={(to) => rename(step.id, to)} onDelete={() => setDeleting(step.id)} />
          ) : (
            <TriggerPanel draft={draft} setDraft={setDraft} errors={other} readOnly={!writer} onStart={writer && !draft.steps.length ? () => setAdding(layout.edges[0] ?? null) : undefined} />
          )}
        </div>
      </div>
      {writer ? (
        <>
          <Dialog open={adding !== null} title="Add a step" lede={adding ? `The new step goes ${edgeWhere(adding)}.` : undefined} onClose={() => setAdding(null)} wide
            actions={<Button onClick={() => setAdding(null)}>Cancel</Button>}>
            <div class="step-choices">
              {STEP_CHOICES.map((type) => {
                const info = STEP_INFO[type];
                // An EXIT ends a path: it goes only where a path ends (anything after it would be cut off).
                const blocked = type === 'EXIT' && adding !== null && targetOf(draft.steps, adding.from, adding.field) !== null;
                return (
                  <button key={type} type="button" class="step-choice" disabled={blocked} onClick={() => add(type)}>
                    <span class="flow-node-icon"><Icon name={info.icon} size={15} /></span>
                    <span class="step-choice-text"><strong>{info.label}</strong><span>{blocked ? 'Only where a path ends.' : info.purpose}</span></span>
                  </button>
                );
              })}
            </div>
          </Dialog>
          <ConfirmDialog open={deletingStep !== undefined} title={`Delete the step ${deleting ?? ''}?`} confirm="Delete step" danger
            onClose={() => setDeleting(null)} onConfirm={() => { if (deleting) remove(deleting); }}>
            {deletingStep?.type === 'CONDITION'
              ? `The steps before it continue on its Yes path.${deletingAlso.length ? ` Its No path goes with it: ${deletingAlso.join(', ')}.` : ''}`
              : `The steps before it continue to what came after it.${deletingAlso.length ? ` Steps only reached through it go too: ${deletingAlso.join(', ')}.` : ''}`}
            {' '}Nothing changes until you save.
          </ConfirmDialog>
          {workflow ? (
            <>
              <ConfirmDialog open={asking === 'disable'} title={`Disable ${workflow.name}?`} confirm="Disable automation" danger onClose={() => setAsking(null)}
                onConfirm={() => setEnabled(false)}>
                New “{workflow.trigger.event}” events start no journey, and the executions under way are cancelled.
              </ConfirmDialog>
              <ConfirmDialog open={asking === 'delete'} title={`Delete ${workflow.name}?`} confirm="Delete automation" danger onClose={() => setAsking(null)}
                onConfirm={async () => {
                  await call(api.DELETE('/workflows/{id}', { params: { path: { id: workflow.id } } }));
                  toast('Automation deleted');
                  route('/app/automations');
                }}>
                Its executions under way are cancelled, and its history of executions is deleted with it. This cannot be undone.
              </ConfirmDialog>
            </>
          ) : null}
        </>
      ) : null}
    </Page>
  );
}

function TriggerPanel({ draft, setDraft, errors, readOnly, onStart }: {
  draft: Draft; setDraft: (f: (d: Draft) => Draft) => void; errors: Record<string, string>; readOnly: boolean; onStart?: () => void;
}) {
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  return (
    <section class="card step-panel" aria-labelledby="trigger-panel-title">
      <div class="card-header">
        <h2 id="trigger-panel-title" class="step-panel-title"><span class="flow-node-icon"><Icon name="events" size={15} /></span>Trigger and settings</h2>
      </div>
      <div class="card-body form">
        <TextField label="Name" value={draft.name} disabled={readOnly} error={errors.name} required placeholder="Onboarding" onValue={(v) => set('name', v)} />
        <TextField label="Trigger event" value={draft.event} disabled={readOnly} error={errors['trigger.event'] ?? errors.trigger} required spellcheck={false} autoComplete="off"
          placeholder="signed_up" hint="Each time your app tracks this event for a contact (POST /v1/track), or Herald records it (contact.unsubscribed…), the contact starts the journey."
          onValue={(v) => set('event', v)} />
        <TextAreaField label="Description" value={draft.description} disabled={readOnly} error={errors.description} rows={2} onValue={(v) => set('description', v)} />
        <Checkbox label="Let a contact start again while a journey is under way" checked={draft.allowReentry} disabled={readOnly}
          hint="Off: one journey at a time per contact; events during it are ignored." onChecked={(v) => set('allowReentry', v)} />
        {onStart ? <Button variant="secondary" onClick={onStart}><Icon name="plus" />Add the first step</Button> : null}
      </div>
    </section>
  );
}
