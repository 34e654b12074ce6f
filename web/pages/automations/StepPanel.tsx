import { useState } from 'preact/hooks';
import type { Duration, Step, StepType } from '../../../automations/steps';
import type { WebhookMethod } from '../../../outbound/http';
import { Button, Checkbox, FormError, Icon, SelectField, TextAreaField, TextField } from '../../components';
import { STEP_INFO } from '../parts/automationSteps';
import { errorAt } from '../parts/flowEdits';
import { parseData } from '../parts/contacts';
import { ConditionBuilder, conditionErrors, type AudienceCondition } from '../parts/ConditionBuilder';

/**
 * The builder's side panel for one step: its id, and the fields of its type's config as the API takes them
 * (automations/steps.ts), each with the API's message for it after a refused save. A condition's filter is the
 * segments' ConditionBuilder. JSON fields (the data an update sets, a webhook's headers and body) are kept as typed (`text`/`setText`, in the builder) and go
 * into the step whenever they parse; the builder refuses to save while one does not (TEXT_FIELDS).
 */

const METHODS: Record<WebhookMethod, string> = { POST: 'POST', GET: 'GET', PUT: 'PUT', PATCH: 'PATCH', DELETE: 'DELETE' };
const UNITS: [Duration['unit'], string][] = [['minutes', 'Minutes'], ['hours', 'Hours'], ['days', 'Days']];
const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;

type Parsed = { value: unknown } | { error: string };

function parseJson(text: string, what: string, opts: { optional?: boolean; array?: boolean }): Parsed {
  if (!text.trim()) return opts.optional ? { value: undefined } : { error: `${what} is required` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `Not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (typeof value !== 'object' || value === null || (Array.isArray(value) && !opts.array)) {
    return { error: `${what} must be a JSON object${opts.array ? ' or array' : ''}` };
  }
  return { value };
}

/** Header lines ("Name: value", one per line) as the object the API takes. */
function parseHeaders(text: string): Parsed {
  const headers: Record<string, string> = {};
  for (const [i, line] of text.split('\n').entries()) {
    if (!line.trim()) continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return { error: `Line ${i + 1}: write each header as Name: value` };
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return { value: Object.keys(headers).length ? headers : undefined };
}

/** A field of a step's config edited as text: how it reads from the step, parses, and goes back into it. */
export interface TextSpec {
  field: string;
  initial: (step: Step) => string;
  parse: (text: string) => Parsed;
  apply: (step: Step, value: unknown) => Step;
}

const pretty = (v: unknown) => (v === undefined ? '' : JSON.stringify(v, null, 2));
const withConfig = (step: Step, key: string, value: unknown): Step => {
  const config: Record<string, unknown> = { ...(step.config ?? {}) };
  if (value === undefined) delete config[key];
  else config[key] = value;
  return { ...step, config } as Step;
};

export const TEXT_FIELDS: Partial<Record<StepType, TextSpec[]>> = {
  UPDATE_CONTACT: [{
    field: 'config.data', initial: (s) => (s.type === 'UPDATE_CONTACT' && s.config.data ? pretty(s.config.data) : ''),
    parse: (t) => { const r = parseData(t); return 'value' in r && !Object.keys(r.value).length ? { value: undefined } : r; },
    apply: (s, v) => withConfig(s, 'data', v),
  }],
  WEBHOOK: [{
    field: 'config.headers', initial: (s) => (s.type === 'WEBHOOK' ? Object.entries(s.config.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join('\n') : ''),
    parse: parseHeaders, apply: (s, v) => withConfig(s, 'headers', v),
  }, {
    field: 'config.body', initial: (s) => (s.type === 'WEBHOOK' ? pretty(s.config.body) : ''),
    parse: (t) => parseJson(t, 'The body', { optional: true, array: true }), apply: (s, v) => withConfig(s, 'body', v),
  }],
};

/** The fields each type's panel shows an error under; the step's other errors (its place in the graph) go on top. */
const SHOWN: Record<StepType, string[]> = {
  SEND_EMAIL: ['id', 'config.template'],
  DELAY: ['id', 'config.amount', 'config.unit'],
  WAIT_FOR_EVENT: ['id', 'config.event', 'config.timeout'],
  CONDITION: ['id', 'config.filter'],
  UPDATE_CONTACT: ['id', 'config.data', 'config.subscribed'],
  WEBHOOK: ['id', 'config.url', 'config.method', 'config.headers', 'config.body'],
  EXIT: ['id'],
};

export interface StepPanelProps {
  step: Step;
  /** Names a step by id (the panel says where each path goes). */
  describe: (id: string | null) => string;
  errors?: Record<string, string>;
  readOnly: boolean;
  templates: { list: { id: string; name: string }[]; name: (id: string) => string | undefined };
  text: (field: string, initial: string) => string;
  setText: (field: string, value: string) => void;
  /** Whether another step has this id. */
  taken: (id: string) => boolean;
  onChange: (step: Step) => void;
  onRename: (to: string) => void;
  onDelete: () => void;
}

export function StepPanel({ step, describe, errors, readOnly, templates, text, setText, taken, onChange, onRename, onDelete }: StepPanelProps) {
  const info = STEP_INFO[step.type];
  // An id being typed that cannot be the step's yet (empty, a bad character, another step's): kept here until it can.
  // A good one renames the step at once (the panel stays the same element, so the field keeps the focus).
  const [typed, setTyped] = useState<{ of: string; value: string } | null>(null);
  const id = typed?.of === step.id ? typed.value : step.id;
  const idError = id !== step.id
    ? (!STEP_ID.test(id) ? 'Use 1 to 64 letters, digits, _ and -' : `Another step is called “${id}”`)
    : errorAt(errors, 'id');
  const rename = (value: string) => {
    if (value !== step.id && STEP_ID.test(value) && !taken(value)) {
      setTyped(null);
      onRename(value);
    } else setTyped({ of: step.id, value });
  };
  const err = (field: string) => errorAt(errors, field);
  const rest = Object.entries(errors ?? {}).filter(([k]) => !SHOWN[step.type].some((f) => k === f || k.startsWith(`${f}.`)));
  const dis = readOnly;

  /** A JSON/text field: the text as typed, its parse error (or the API's message), and the step updated when it parses. */
  const textArea = (field: string, label: string, hint: string, rows: number, mono = true) => {
    const spec = TEXT_FIELDS[step.type]!.find((s) => s.field === field)!;
    const value = text(field, spec.initial(step));
    const parsed = spec.parse(value);
    return (
      <TextAreaField label={label} mono={mono} rows={rows} value={value} disabled={dis} hint={hint}
        error={'error' in parsed ? parsed.error : err(field)}
        onValue={(v) => { setText(field, v); const p = spec.parse(v); if ('value' in p) onChange(spec.apply(step, p.value)); }} />
    );
  };

  let fields;
  switch (step.type) {
    case 'SEND_EMAIL': {
      const known = templates.list.some((t) => t.id === step.config.template.toLowerCase());
      const options: [string, string][] = [
        ['', templates.list.length ? 'Choose a template' : 'No templates in this project yet'],
        ...templates.list.map((t): [string, string] => [t.id, t.name]),
        ...(step.config.template && !known ? [[step.config.template, templates.name(step.config.template) ?? `Template ${step.config.template}`] as [string, string]] : []),
      ];
      fields = (
        <SelectField label="Template" value={step.config.template} options={options} disabled={dis} error={err('config.template')}
          hint={<>Sent to the contact, rendered with their data. <a href="/app/templates">Templates</a></>}
          onValue={(v) => onChange({ ...step, config: { template: v } })} />
      );
      break;
    }
    case 'DELAY':
      fields = <DurationFields value={step.config} disabled={dis} amountError={err('config.amount')} unitError={err('config.unit') ?? errors?.config}
        onValue={(d) => onChange({ ...step, config: d })} label="Wait for" />;
      break;
    case 'WAIT_FOR_EVENT': {
      const { timeout } = step.config;
      fields = (
        <>
          <TextField label="Event" value={step.config.event} disabled={dis} error={err('config.event')} spellcheck={false} autoComplete="off"
            placeholder="purchased" hint="The name your app tracks for this contact (POST /v1/track)."
            onValue={(v) => onChange({ ...step, config: { ...step.config, event: v } })} />
          <Checkbox label="Give up after a while" checked={timeout !== undefined} disabled={dis}
            hint="Without a timeout the contact waits until the event comes, however long that is."
            onChecked={(on) => onChange({ ...step, config: on ? { ...step.config, timeout: { amount: 1, unit: 'days' } } : { event: step.config.event } })} />
          {timeout ? (
            <DurationFields value={timeout} disabled={dis} amountError={err('config.timeout.amount')} unitError={err('config.timeout.unit') ?? err('config.timeout')}
              onValue={(d) => onChange({ ...step, config: { ...step.config, timeout: d } })} label="Timeout" />
          ) : null}
          <p class="muted small">Both the event and the timeout go on to the next step.</p>
        </>
      );
      break;
    }
    case 'CONDITION':
      // The builder of segments and campaigns (their one filter language), read against the contact when the step runs.
      fields = (
        <div class="field">
          <span class="field-label">Filter</span>
          <p class="muted small">The step takes its Yes path when the contact matches, its No path otherwise.</p>
          <ConditionBuilder value={step.config.filter as AudienceCondition} disabled={dis} errors={conditionErrors(errors ?? {}, 'config.filter')}
            onChange={(filter) => onChange({ ...step, config: { ...step.config, filter } } as Step)} />
        </div>
      );
      break;
    case 'UPDATE_CONTACT': {
      const sub = step.config.subscribed === undefined ? '' : String(step.config.subscribed);
      fields = (
        <>
          {textArea('config.data', 'Data to set', 'A JSON object merged into the contact’s data (a key set to null is removed).', 5)}
          <SelectField label="Subscription" value={sub} disabled={dis} error={err('config.subscribed')}
            options={[['', 'Leave as it is'], ['true', 'Subscribe'], ['false', 'Unsubscribe']]}
            onValue={(v) => {
              const { subscribed: _old, ...config } = step.config;
              onChange({ ...step, config: v === '' ? config : { ...config, subscribed: v === 'true' } });
            }} />
        </>
      );
      break;
    }
    case 'WEBHOOK':
      fields = (
        <>
          <TextField label="URL" type="url" inputMode="url" value={step.config.url} disabled={dis} error={err('config.url')} spellcheck={false} autoComplete="off"
            placeholder="https://example.org/hooks/journey" onValue={(v) => onChange({ ...step, config: { ...step.config, url: v } })} />
          <SelectField label="Method" value={step.config.method ?? 'POST'} disabled={dis} error={err('config.method')}
            options={Object.entries(METHODS) as [string, string][]}
            onValue={(v) => {
              const method = v as WebhookMethod;
              // A GET has no body: the one typed is dropped with the method.
              if (method === 'GET') setText('config.body', '');
              const { body: _body, ...config } = step.config;
              onChange({ ...step, config: method === 'GET' ? { ...config, method } : { ...step.config, method } });
            }} />
          {textArea('config.headers', 'Headers', 'One per line, as Name: value.', 3)}
          {(step.config.method ?? 'POST') !== 'GET'
            ? textArea('config.body', 'Body', 'JSON. Left empty, Herald sends the contact, the workflow and the step.', 5)
            : null}
        </>
      );
      break;
    case 'EXIT':
      fields = <p class="muted small">The execution ends here as EXITED. Use it to stop a path early; a path that simply ends completes.</p>;
      break;
  }

  return (
    <section class="card step-panel" aria-labelledby="step-panel-title">
      <div class="card-header">
        <h2 id="step-panel-title" class="step-panel-title"><span class="flow-node-icon"><Icon name={info.icon} size={15} /></span>{info.label}</h2>
      </div>
      <div class="card-body form">
        <p class="muted small">{info.purpose}</p>
        {rest.length ? <FormError>{rest.map(([, m]) => m).join(' · ')}</FormError> : null}
        <TextField label="Step ID" value={id} disabled={dis} error={idError} spellcheck={false} autoComplete="off"
          hint="Names the step in the API, in executions and in errors." onValue={rename} />
        {fields}
        <div class="field">
          <span class="field-label">Then</span>
          <Next step={step} describe={describe} />
        </div>
        {readOnly ? null : (
          <div class="step-panel-actions">
            <Button variant="danger" size="sm" onClick={onDelete}><Icon name="trash" />Delete step</Button>
          </div>
        )}
      </div>
    </section>
  );
}

function Next({ step, describe }: { step: Step; describe: (id: string | null) => string }) {
  if (step.type === 'EXIT') return <p class="small muted">Nothing: the journey ends.</p>;
  if (step.type === 'CONDITION') {
    return (
      <dl class="kv small">
        <dt>Yes</dt><dd>{describe(step.branches.yes)}</dd>
        <dt>No</dt><dd>{describe(step.branches.no)}</dd>
      </dl>
    );
  }
  return <p class="small">{describe(step.next ?? null)}</p>;
}

function DurationFields({ label, value, onValue, disabled, amountError, unitError }: {
  label: string; value: Duration; onValue: (d: Duration) => void; disabled: boolean; amountError?: string; unitError?: string;
}) {
  return (
    <div class="duration-fields">
      <TextField label={label} type="number" min={1} step={1} inputMode="numeric" value={Number.isFinite(value.amount) ? String(value.amount) : ''} disabled={disabled}
        error={amountError} onValue={(v) => onValue({ ...value, amount: v === '' ? Number.NaN : Number(v) })} />
      <SelectField label="Unit" value={value.unit} options={UNITS} disabled={disabled} error={unitError}
        onValue={(v) => onValue({ ...value, unit: v as Duration['unit'] })} />
    </div>
  );
}
