/**
 * The audience builder (issue 29), shared by the segment pages and the campaign composer: `ConditionBuilder` edits the
 * API's audience condition (audience/condition.ts: `{ logic, groups: [{ filters: [{ field, operator, value?, unit? }] }] }`),
 * `useAudiencePreview` asks POST /segments/preview who it matches as it changes, and `AudiencePanel` shows the answer.
 *
 *   const [condition, setCondition] = useState(newCondition());
 *   const preview = useAudiencePreview(condition);
 *   <ConditionBuilder value={condition} onChange={setCondition} errors={preview.error?.fields} />
 *   <AudiencePanel preview={preview} />
 *
 * What the builder offers is what audience/check.ts accepts, field by field: the contact's email, subscription, created
 * and updated times; `data.<key>` with typed values (text, number, true/false, date); any `event.<name>` and the email
 * activity Herald records as events (`email.opened` …), ever, never, or within a window; membership of another
 * segment. Filters of a group are ANDed; `logic` joins the groups. The API judges the values: its 422 names a path
 * (`condition.groups.0.filters.1.value`), shown on that filter.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, call, type Schemas } from '../../api';
import { Button, FormError, Icon, Spinner } from '../../components';
import { useLoad } from '../../hooks';
import { SubscriptionBadge, useDataKeys } from './contacts';

export type AudienceCondition = NonNullable<Schemas['Segment']['condition']>;
export type FilterRule = AudienceCondition['groups'][number]['filters'][number];
type Operator = FilterRule['operator'];
type TimeUnit = NonNullable<FilterRule['unit']>;
type Contact = Schemas['Contact'];

/** What a filter is about: a contact's own field, its data, an event, email activity (events too), a segment. */
type Kind = 'email' | 'subscribed' | 'createdAt' | 'updatedAt' | 'data' | 'event' | 'activity' | 'segment';
type ValueType = 'text' | 'number' | 'boolean' | 'date';

const STRING: Operator[] = ['equals', 'notEquals', 'contains', 'notContains', 'startsWith', 'endsWith'];
const ORDER: Operator[] = ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'];
const PRESENCE: Operator[] = ['exists', 'notExists'];
const AGE: Operator[] = ['within', 'olderThan'];
const EVENT: Operator[] = ['triggered', 'notTriggered', 'triggeredWithin', 'notTriggeredWithin'];
const SEGMENT: Operator[] = ['memberOf', 'notMemberOf'];

/** The operators each kind of field takes (audience/check.ts ALLOWED), in the order a person looks for them. */
const OPERATORS: Record<Kind, Operator[]> = {
  email: [...STRING, ...PRESENCE],
  subscribed: ['equals', 'notEquals'],
  createdAt: [...AGE, ...ORDER],
  updatedAt: [...AGE, ...ORDER],
  data: [...STRING, ...ORDER, ...PRESENCE, ...AGE],
  event: EVENT,
  activity: EVENT,
  segment: SEGMENT,
};

/** Operators whose value is a number of `unit`s back from now. */
const WINDOW = new Set<Operator>(['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin']);
/** Operators without a value (a segment's id is in its field, not in a value). */
const NO_VALUE = new Set<Operator>([...PRESENCE, 'triggered', 'notTriggered', ...SEGMENT]);

/** The email events Herald records for a contact (events table), offered by what they mean. */
const ACTIVITY: [string, string][] = [
  ['email.sent', 'Was sent an email'],
  ['email.opened', 'Opened an email'],
  ['email.clicked', 'Clicked a link in an email'],
  ['email.bounced', 'Had an email bounce'],
  ['email.complained', 'Marked an email as spam'],
  ['email.failed', 'Had an email fail'],
  ['email.suppressed', 'Had an email suppressed'],
];

const UNITS: [TimeUnit, string][] = [['minutes', 'minutes'], ['hours', 'hours'], ['days', 'days']];

/** The value types a data filter may compare with, per operator (audience/check.ts's rules for `data.*`). */
function valueTypes(op: Operator): ValueType[] {
  if (op === 'equals' || op === 'notEquals') return ['text', 'number', 'boolean'];
  if (ORDER.includes(op)) return ['number', 'date'];
  return ['text'];
}

const TYPE_WORDS: Record<ValueType, string> = { text: 'text', number: 'number', boolean: 'true / false', date: 'date' };

function operatorWords(kind: Kind, op: Operator, type: ValueType): string {
  const dates = kind === 'createdAt' || kind === 'updatedAt' || (kind === 'data' && type === 'date');
  if (kind === 'event') {
    return { triggered: 'has happened', notTriggered: 'has never happened', triggeredWithin: 'happened in the last', notTriggeredWithin: 'has not happened in the last' }[op as 'triggered'];
  }
  if (kind === 'activity') {
    return { triggered: 'at least once', notTriggered: 'never', triggeredWithin: 'in the last', notTriggeredWithin: 'not in the last' }[op as 'triggered'];
  }
  const words: Record<Operator, string> = {
    equals: 'is', notEquals: 'is not', contains: 'contains', notContains: 'does not contain', startsWith: 'starts with', endsWith: 'ends with',
    greaterThan: dates ? 'is after' : 'is greater than', lessThan: dates ? 'is before' : 'is less than',
    greaterThanOrEqual: dates ? 'is on or after' : 'is at least', lessThanOrEqual: dates ? 'is on or before' : 'is at most',
    exists: 'is set', notExists: 'is not set', within: kind === 'data' ? 'is a date in the last' : 'in the last', olderThan: kind === 'data' ? 'is a date more than' : 'more than',
    triggered: '', notTriggered: '', triggeredWithin: '', notTriggeredWithin: '', memberOf: 'is in', notMemberOf: 'is not in',
  };
  return words[op];
}

/** A filter as the builder edits it: the API's rule, with what its inputs show. */
interface Draft {
  key: number;
  kind: Kind;
  /** The data key, the event's name, the activity's event, or the segment's id. */
  name: string;
  operator: Operator;
  type: ValueType;
  /** What the value's input shows. */
  text: string;
  /** The API's value (undefined while there is none); kept as stored until its input is edited. */
  value: unknown;
  unit: TimeUnit;
}

interface DraftGroup { key: number; filters: Draft[] }
interface Drafts { logic: AudienceCondition['logic']; groups: DraftGroup[] }

let keys = 0;
const nextKey = () => ++keys;

/** A date input's day (local midnight) as the API's ISO date-time; the API judges anything else it is given. */
function dateValue(text: string): unknown {
  if (!text) return undefined;
  const d = new Date(`${text}T00:00`);
  return Number.isNaN(d.getTime()) ? text : d.toISOString();
}

/** The day of an ISO date-time in the viewer's zone, for a date input. */
function dayOf(value: unknown): string {
  if (typeof value !== 'string') return '';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return '';
  return `${String(d.getFullYear()).padStart(4, '0')}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** A number as typed; what is not one is sent as typed, for the API to name what is wrong. */
function numberValue(text: string): unknown {
  const s = text.trim();
  if (!s) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : s;
}

function valueFrom(d: Pick<Draft, 'kind' | 'operator' | 'type' | 'text'>): unknown {
  if (NO_VALUE.has(d.operator)) return undefined;
  if (WINDOW.has(d.operator)) return numberValue(d.text);
  if (d.kind === 'subscribed') return d.text !== 'false';
  if (d.kind === 'createdAt' || d.kind === 'updatedAt') return dateValue(d.text);
  if (d.kind === 'data') {
    if (d.type === 'number') return numberValue(d.text);
    if (d.type === 'boolean') return d.text === 'true';
    if (d.type === 'date') return dateValue(d.text);
  }
  return d.text === '' ? undefined : d.text;
}

function textFrom(kind: Kind, op: Operator, type: ValueType, value: unknown): string {
  if (value === undefined || NO_VALUE.has(op)) return kind === 'subscribed' || type === 'boolean' ? 'true' : '';
  if (kind === 'subscribed') return value === false ? 'false' : 'true';
  if (!WINDOW.has(op) && (kind === 'createdAt' || kind === 'updatedAt' || type === 'date')) return dayOf(value);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function kindOf(field: string): { kind: Kind; name: string } {
  if (field === 'email' || field === 'subscribed' || field === 'createdAt' || field === 'updatedAt') return { kind: field, name: '' };
  if (field.startsWith('data.')) return { kind: 'data', name: field.slice(5) };
  if (field.startsWith('event.')) {
    const name = field.slice(6);
    return { kind: ACTIVITY.some(([n]) => n === name) ? 'activity' : 'event', name };
  }
  if (field.startsWith('segment.')) return { kind: 'segment', name: field.slice(8) };
  // A field the builder does not know (the API refuses it anyway): kept as a data key so that it is seen and fixed.
  return { kind: 'data', name: field };
}

function draftOf(rule: FilterRule): Draft {
  const { kind, name } = kindOf(rule.field);
  const op = OPERATORS[kind].includes(rule.operator) ? rule.operator : OPERATORS[kind][0]!;
  const v = rule.value;
  const type: ValueType = kind !== 'data' ? 'text'
    : typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : ORDER.includes(op) ? 'date' : 'text';
  return { key: nextKey(), kind, name, operator: op, type, text: textFrom(kind, op, type, v), value: v, unit: rule.unit ?? 'days' };
}

function draftsOf(condition: AudienceCondition): Drafts {
  return { logic: condition.logic, groups: condition.groups.map((g) => ({ key: nextKey(), filters: g.filters.map(draftOf) })) };
}

function fieldOf(d: Draft): string {
  if (d.kind === 'data') return `data.${d.name.trim()}`;
  if (d.kind === 'event' || d.kind === 'activity') return `event.${d.name.trim()}`;
  if (d.kind === 'segment') return `segment.${d.name}`;
  return d.kind;
}

function ruleOf(d: Draft): FilterRule {
  const rule: FilterRule = { field: fieldOf(d), operator: d.operator };
  if (!NO_VALUE.has(d.operator) && d.value !== undefined) rule.value = d.value;
  if (WINDOW.has(d.operator)) rule.unit = d.unit;
  return rule;
}

const conditionOf = (drafts: Drafts): AudienceCondition => ({ logic: drafts.logic, groups: drafts.groups.map((g) => ({ filters: g.filters.map(ruleOf) })) });

/** A filter to start from: a data key to fill in. */
const blankRule = (): FilterRule => ({ field: 'data.', operator: 'equals' });

/** A condition to start a builder with: one group, one filter to fill in. */
export const newCondition = (): AudienceCondition => ({ logic: 'AND', groups: [{ filters: [blankRule()] }] });

/** A condition as text to compare with (the API stores it as jsonb, which orders keys its own way). */
const canonical = (c: AudienceCondition) => JSON.stringify([c.logic, c.groups.map((g) => g.filters.map((f) => [f.field, f.operator, f.value, f.unit]))]);

/** Whether two conditions say the same, whatever the order of their keys. */
export const sameCondition = (a: AudienceCondition | null | undefined, b: AudienceCondition | null | undefined): boolean =>
  Boolean(a && b && canonical(a) === canonical(b));

/**
 * Whether every filter says enough to be asked about: its key, event or segment named, and a value where its operator
 * takes one. Whether the value is right is the API's to say.
 */
export function isComplete(condition: AudienceCondition): boolean {
  return condition.groups.length > 0 && condition.groups.every((g) => g.filters.length > 0 && g.filters.every((f) =>
    !f.field.endsWith('.') && (NO_VALUE.has(f.operator) || (f.value !== undefined && f.value !== ''))));
}

/**
 * A failure's field errors about the condition, keyed by their path inside it (`groups.0.filters.1.value`; the
 * condition as a whole is ''): `prefix` is where the request put it (`condition` for segments, `audienceFilter` for
 * campaigns).
 */
export function conditionErrors(fields: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, message] of Object.entries(fields)) {
    if (key === prefix) out[''] = message;
    else if (key.startsWith(`${prefix}.`)) out[key.slice(prefix.length + 1)] = message;
  }
  return out;
}

/** What the builder lists: the project's event names, its segments, and the data keys of some of its contacts. */
function useChoices() {
  const names = useLoad(() => call(api.GET('/events/names')).catch(() => ({ items: [] })), []);
  const segments = useLoad(() => call(api.GET('/segments', { params: { query: { limit: 100 } } })).catch(() => ({ items: [] as Schemas['Segment'][] })), []);
  const dataKeys = useDataKeys();
  const eventNames = (names.data?.items ?? []).map((n) => n.name).filter((n) => !n.startsWith('email.'));
  return { eventNames, segments: segments.data?.items ?? [], dataKeys };
}

type Choices = ReturnType<typeof useChoices>;

/**
 * The builder. `value` is the condition (the parent keeps it; `newCondition()` to start); `onChange` gets each edit.
 * `errors` are the API's messages keyed by their path inside the condition (conditionErrors). `selfId` is the segment
 * being edited, left out of the segments offered. `disabled`: nothing can be changed (a viewer, a save under way).
 */
export function ConditionBuilder({ value, onChange, disabled, errors = {}, selfId }: {
  value: AudienceCondition; onChange: (condition: AudienceCondition) => void; disabled?: boolean; errors?: Record<string, string>; selfId?: string;
}) {
  const [drafts, setDrafts] = useState<Drafts>(() => draftsOf(value));
  // The condition last sent to onChange: a `value` that differs came from outside (a reload, a discard) and replaces the drafts.
  const emitted = useRef(canonical(value));
  useEffect(() => {
    const text = canonical(value);
    if (text !== emitted.current) {
      emitted.current = text;
      setDrafts(draftsOf(value));
    }
  }, [value]);
  const choices = useChoices();
  const listId = useId();

  const update = (next: Drafts) => {
    setDrafts(next);
    const condition = conditionOf(next);
    emitted.current = canonical(condition);
    onChange(condition);
  };
  const setGroup = (gi: number, filters: Draft[]) => {
    const groups = filters.length ? drafts.groups.map((g, i) => (i === gi ? { ...g, filters } : g)) : drafts.groups.filter((_, i) => i !== gi);
    update({ ...drafts, groups: groups.length ? groups : [{ key: nextKey(), filters: [draftOf(blankRule())] }] });
  };

  const placed = new Set<string>();
  const rowErrors = (gi: number, fi: number) => {
    const prefix = `groups.${gi}.filters.${fi}`;
    const mine = Object.entries(errors).filter(([k]) => k === prefix || k.startsWith(`${prefix}.`));
    for (const [k] of mine) placed.add(k);
    return Object.fromEntries(mine.map(([k, m]) => [k.slice(prefix.length + 1) || 'filter', m]));
  };
  const rows = drafts.groups.map((g, gi) => g.filters.map((_, fi) => rowErrors(gi, fi)));
  const general = Object.entries(errors).filter(([k]) => !placed.has(k)).map(([k, m]) => (k ? `${k}: ${m}` : m));

  // Enter in a filter's input would submit the form the builder sits in (create the segment): here it only ends typing.
  const keepEnter = (e: KeyboardEvent) => { if (e.key === 'Enter' && e.target instanceof HTMLInputElement) e.preventDefault(); };

  return (
    <div class="condition-builder" onKeyDown={keepEnter}>
      {general.length ? <FormError>{general.join(' · ')}</FormError> : null}
      {drafts.groups.length > 1 ? (
        <div class="condition-logic">
          <span id={`${listId}-logic`}>Contacts match</span>
          <div class="segmented" role="group" aria-labelledby={`${listId}-logic`}>
            <button type="button" aria-pressed={drafts.logic === 'AND'} disabled={disabled} onClick={() => update({ ...drafts, logic: 'AND' })}>every group</button>
            <button type="button" aria-pressed={drafts.logic === 'OR'} disabled={disabled} onClick={() => update({ ...drafts, logic: 'OR' })}>any group</button>
          </div>
        </div>
      ) : null}
      {drafts.groups.map((g, gi) => (
        <div key={g.key} class="condition-group-wrap">
          {gi > 0 ? <div class="condition-join" aria-hidden="true"><span>{drafts.logic === 'AND' ? 'and' : 'or'}</span></div> : null}
          <fieldset class="condition-group">
            <legend class="condition-group-title">
              {drafts.groups.length > 1 ? `Group ${gi + 1}: contacts` : 'Contacts'} who match {g.filters.length > 1 ? 'all of these' : 'this'}
            </legend>
            {g.filters.map((d, fi) => (
              <FilterRow key={d.key} draft={d} label={`Filter ${fi + 1}${drafts.groups.length > 1 ? ` of group ${gi + 1}` : ''}`} first={fi === 0}
                errors={rows[gi]![fi]!} disabled={disabled} choices={choices} listId={listId} selfId={selfId}
                onChange={(next) => setGroup(gi, g.filters.map((x) => (x.key === d.key ? next : x)))}
                onRemove={() => setGroup(gi, g.filters.filter((x) => x.key !== d.key))}
                removable={drafts.groups.length > 1 || g.filters.length > 1} />
            ))}
            {disabled ? null : (
              <div class="condition-group-actions">
                <Button size="sm" variant="ghost" onClick={() => setGroup(gi, [...g.filters, draftOf(blankRule())])}>
                  <Icon name="plus" />Add filter{drafts.groups.length > 1 ? ` to group ${gi + 1}` : ''}
                </Button>
                {drafts.groups.length > 1 ? <Button size="sm" variant="ghost" class="danger-text" onClick={() => setGroup(gi, [])}>Remove group {gi + 1}</Button> : null}
              </div>
            )}
          </fieldset>
        </div>
      ))}
      {disabled ? null : (
        <div>
          <Button size="sm" onClick={() => update({ ...drafts, logic: drafts.groups.length === 1 ? 'OR' : drafts.logic, groups: [...drafts.groups, { key: nextKey(), filters: [draftOf(blankRule())] }] })}>
            <Icon name="plus" />Add a group
          </Button>
          <span class="condition-hint">{drafts.groups.length === 1 ? 'A second group widens the audience: contacts match either group.' : ''}</span>
        </div>
      )}
      <datalist id={`${listId}-events`}>{choices.eventNames.map((n) => <option key={n} value={n} />)}</datalist>
      <datalist id={`${listId}-keys`}>{choices.dataKeys.map((k) => <option key={k} value={k} />)}</datalist>
    </div>
  );
}

function FilterRow({ draft: d, label, first, errors, disabled, choices, listId, selfId, onChange, onRemove, removable }: {
  draft: Draft; label: string; first: boolean; errors: Record<string, string>; disabled?: boolean; choices: Choices; listId: string; selfId?: string;
  onChange: (d: Draft) => void; onRemove: () => void; removable: boolean;
}) {
  const id = useId();
  const errorId = `${id}-error`;
  const invalid = (part: string) => (errors[part] ? { 'aria-invalid': 'true' as const, 'aria-describedby': errorId } : {});
  const messages = Object.values(errors);

  const setKind = (what: string) => {
    const [kind, activity] = what.split(':') as [Kind, string | undefined];
    const operator = OPERATORS[kind][0]!;
    const name = kind === 'activity' ? activity! : kind === 'segment' ? (choices.segments.find((s) => s.id !== selfId)?.id ?? '') : '';
    onChange({ ...d, kind, name, operator, type: 'text', text: kind === 'subscribed' ? 'true' : '', value: kind === 'subscribed' ? true : undefined });
  };
  const setOperator = (operator: Operator) => {
    // The value stays when the new operator takes the same sort of value (none, a window, a value of the same type).
    const sort = (op: Operator) => (NO_VALUE.has(op) ? 'none' : WINDOW.has(op) ? 'window' : 'value');
    const types = d.kind === 'data' ? valueTypes(operator) : ['text' as ValueType];
    const type = types.includes(d.type) ? d.type : types[0]!;
    const keep = sort(operator) === sort(d.operator) && type === d.type;
    const text = keep ? d.text : d.kind === 'subscribed' || type === 'boolean' ? 'true' : '';
    onChange({ ...d, operator, type, text, value: valueFrom({ ...d, operator, type, text }) });
  };
  const setType = (type: ValueType) => {
    const text = type === 'boolean' ? 'true' : '';
    onChange({ ...d, type, text, value: valueFrom({ ...d, type, text }) });
  };
  const setText = (text: string) => onChange({ ...d, text, value: valueFrom({ ...d, text }) });

  const what = d.kind === 'activity' ? `activity:${d.name}` : d.kind;
  const ago = WINDOW.has(d.operator);
  const segmentOptions = choices.segments.filter((s) => s.id !== selfId);
  const knownSegment = !d.name || segmentOptions.some((s) => s.id === d.name);

  // What the operator compares with: a segment, a number of units back, a choice, a text, a number or a day; none for exists, triggered….
  const valueControl = (): ComponentChildren => {
    if (d.kind === 'segment') {
      return (
        <select class="select condition-value" aria-label="Segment" value={d.name} disabled={disabled} {...invalid('field')} onChange={(e) => onChange({ ...d, name: e.currentTarget.value })}>
          {!d.name ? <option value="" disabled>Choose a segment</option> : null}
          {!knownSegment ? <option value={d.name}>Segment {d.name}</option> : null}
          {segmentOptions.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
        </select>
      );
    } else if (ago) {
      return (
        <>
          <input class="input condition-number" type="number" inputMode="numeric" min={1} step={1} aria-label="How many" placeholder="7" value={d.text} disabled={disabled}
            {...invalid('value')} onInput={(e) => setText(e.currentTarget.value)} />
          <select class="select condition-unit" aria-label="Unit" value={d.unit} disabled={disabled} {...invalid('unit')} onChange={(e) => onChange({ ...d, unit: e.currentTarget.value as TimeUnit })}>
            {UNITS.map(([u, words]) => <option key={u} value={u}>{words}</option>)}
          </select>
          {d.operator === 'olderThan' ? <span class="condition-word">ago</span> : null}
        </>
      );
    } else if (NO_VALUE.has(d.operator)) {
      return null;
    } else if (d.kind === 'subscribed' || (d.kind === 'data' && d.type === 'boolean')) {
      return (
        <select class="select condition-value" aria-label="Value" value={d.text} disabled={disabled} {...invalid('value')} onChange={(e) => setText(e.currentTarget.value)}>
          {d.kind === 'subscribed' ? <><option value="true">subscribed</option><option value="false">unsubscribed</option></>
            : <><option value="true">true</option><option value="false">false</option></>}
        </select>
      );
    } else {
      const date = d.kind === 'createdAt' || d.kind === 'updatedAt' || d.type === 'date';
      return (
        <input class="input condition-value" type={date ? 'date' : d.type === 'number' ? 'number' : 'text'} aria-label="Value" value={d.text} disabled={disabled}
          placeholder={date ? undefined : d.type === 'number' ? '42' : d.kind === 'email' ? 'example.com' : 'pro'} autoComplete="off" spellcheck={false}
          {...invalid('value')} onInput={(e) => setText(e.currentTarget.value)} />
      );
    }
  };

  return (
    <div class={`condition-filter${messages.length ? ' is-invalid' : ''}`} role="group" aria-label={label}>
      <span class="condition-and" aria-hidden="true">{first ? 'where' : 'and'}</span>
      {/* What the filter is about, then what it says of it: each part wraps as a whole on a narrow builder. */}
      <div class="condition-controls">
        <div class="condition-subject">
          <select class="select condition-what" aria-label="Field" value={what} disabled={disabled} {...(d.kind === 'segment' ? {} : invalid('field'))} onChange={(e) => setKind(e.currentTarget.value)}>
            <optgroup label="Contact">
              <option value="email">Email address</option>
              <option value="subscribed">Subscription</option>
              <option value="createdAt">Created</option>
              <option value="updatedAt">Last updated</option>
              <option value="data">Data field…</option>
            </optgroup>
            <optgroup label="Activity">
              <option value="event">Event…</option>
              {ACTIVITY.map(([name, words]) => <option key={name} value={`activity:${name}`}>{words}</option>)}
            </optgroup>
            <optgroup label="Segments">
              <option value="segment">Segment membership</option>
            </optgroup>
          </select>
          {d.kind === 'data' ? (
            <input class="input condition-name mono" aria-label="Data key" placeholder="plan" list={`${listId}-keys`} value={d.name} disabled={disabled} autoComplete="off" spellcheck={false}
              {...invalid('field')} onInput={(e) => onChange({ ...d, name: e.currentTarget.value })} />
          ) : null}
          {d.kind === 'event' ? (
            <input class="input condition-name mono" aria-label="Event name" placeholder="signed_up" list={`${listId}-events`} value={d.name} disabled={disabled} autoComplete="off" spellcheck={false}
              {...invalid('field')} onInput={(e) => onChange({ ...d, name: e.currentTarget.value })} />
          ) : null}
        </div>
        <div class="condition-predicate">
          <select class="select condition-operator" aria-label="Operator" value={d.operator} disabled={disabled} {...invalid('operator')} onChange={(e) => setOperator(e.currentTarget.value as Operator)}>
            {OPERATORS[d.kind].map((op) => <option key={op} value={op}>{operatorWords(d.kind, op, d.type)}</option>)}
          </select>
          {valueControl()}
          {d.kind === 'data' && valueTypes(d.operator).length > 1 ? (
            <select class="select condition-type" aria-label="Value type" value={d.type} disabled={disabled} onChange={(e) => setType(e.currentTarget.value as ValueType)}>
              {valueTypes(d.operator).map((t) => <option key={t} value={t}>{TYPE_WORDS[t]}</option>)}
            </select>
          ) : null}
        </div>
      </div>
      {!disabled && removable ? (
        <Button size="sm" variant="ghost" class="btn-icon condition-remove" aria-label={`Remove ${label.toLowerCase()}`} onClick={onRemove}><Icon name="x" /></Button>
      ) : null}
      {messages.length ? <div class="field-error condition-error" id={errorId}><Icon name="alert" size={14} /><span>{messages.join(' · ')}</span></div> : null}
    </div>
  );
}

/** Who a condition matches now; `incomplete` while a filter still lacks its name or value (nothing is asked then). */
export interface AudiencePreview {
  count: number | null;
  contacts: Contact[];
  loading: boolean;
  error: { message: string; fields: Record<string, string> } | null;
  incomplete: boolean;
}

/** How long typing may pause before the preview is asked (each keystroke would otherwise be a count of the project). */
const PREVIEW_DELAY_MS = 300;

/**
 * POST /segments/preview for `condition` as it changes: asked once typing pauses (~300 ms), the request before it
 * aborted, so a stale answer never overwrites a newer one. `null` asks nothing (a viewer may not preview: the route
 * needs `write`). The API's 422 comes back as `error.fields`, keyed by their path inside the condition.
 */
export function useAudiencePreview(condition: AudienceCondition | null): AudiencePreview {
  const key = condition && isComplete(condition) ? JSON.stringify(condition) : null;
  const [state, setState] = useState<Omit<AudiencePreview, 'incomplete'>>({ count: null, contacts: [], loading: false, error: null });
  useEffect(() => {
    if (key === null) {
      setState({ count: null, contacts: [], loading: false, error: null });
      return undefined;
    }
    // The last count stays (shown as loading) until the new one comes; its errors go, as they may be fixed.
    setState((s) => ({ ...s, loading: true, error: null }));
    const controller = new AbortController();
    const timer = setTimeout(() => {
      call(api.POST('/segments/preview', { body: { condition: JSON.parse(key) as AudienceCondition }, signal: controller.signal }), { form: true }).then(
        (answer) => { if (!controller.signal.aborted) setState({ count: answer.count, contacts: answer.contacts, loading: false, error: null }); },
        (err: unknown) => {
          if (controller.signal.aborted) return;
          const fields = err instanceof ApiFailure ? conditionErrors(err.fields, 'condition') : {};
          const message = err instanceof Error ? err.message : 'The preview failed';
          setState({ count: null, contacts: [], loading: false, error: { message, fields } });
        },
      );
    }, PREVIEW_DELAY_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [key]);
  return { ...state, incomplete: condition !== null && key === null };
}

/** The count in a few words ("318 contacts match"), or why there is none. */
function countWords({ count, error, incomplete }: AudiencePreview): string {
  if (count !== null) return `${count.toLocaleString()} ${count === 1 ? 'contact matches' : 'contacts match'}`;
  return incomplete ? 'Finish the filter to see who matches.' : error ? 'No count: the condition needs a fix.' : 'Counting…';
}

/**
 * The count on one line, kept in view at the bottom of the screen while the builder scrolls, for screens too narrow
 * for the panel beside the builder (the panel, under it, is what a screen reader hears: this repeats it for the eye).
 */
export function AudienceSummary({ preview }: { preview: AudiencePreview }) {
  return (
    <div class={`audience-summary${preview.loading ? ' is-loading' : ''}`} aria-hidden="true">
      {preview.loading ? <Spinner label="" /> : <Icon name="contacts" size={14} />}
      <span>{countWords(preview)}</span>
    </div>
  );
}

/**
 * The count and the first contacts of a preview (or of a segment's members), beside the builder: the count is a live
 * region, so a screen reader hears it change.
 */
export function AudiencePanel({ preview, title = 'Matching contacts', note }: { preview: AudiencePreview; title?: string; note?: string }) {
  const { count, contacts, loading, error } = preview;
  const filterError = error && Object.keys(error.fields).some((k) => k !== '');
  const titleId = useId();
  return (
    <section class="card audience-panel" aria-labelledby={titleId} aria-busy={loading ? 'true' : undefined}>
      <div class="card-header">
        <h2 id={titleId}>{title}</h2>
        {loading ? <Spinner label="Counting" /> : null}
      </div>
      <div class="card-body">
        <p class={`audience-count${loading ? ' is-loading' : ''}`} aria-live="polite">
          {count !== null
            ? <><strong>{count.toLocaleString()}</strong> {count === 1 ? 'contact matches' : 'contacts match'}</>
            : <span class="muted">{countWords(preview)}</span>}
        </p>
        {error ? <div class="field-error" role="alert"><Icon name="alert" size={14} /><span>{filterError ? 'A filter needs a fix: see the message under it.' : error.message}</span></div> : null}
        {note ? <p class="muted audience-note">{note}</p> : null}
      </div>
      {count !== null && contacts.length ? (
        <ul class="audience-sample" aria-label={`The newest ${contacts.length} of them`}>
          {contacts.map((c) => (
            <li key={c.id}>
              <a href={`/app/contacts/${c.id}`}>{c.email}</a>
              {/* Most are subscribed: only those who are not are marked. */}
              {c.subscribed ? null : <SubscriptionBadge subscribed={false} />}
            </li>
          ))}
        </ul>
      ) : null}
      {count !== null && contacts.length && count > contacts.length ? <p class="audience-more muted">The newest {contacts.length} of {count.toLocaleString()} are shown.</p> : null}
    </section>
  );
}
