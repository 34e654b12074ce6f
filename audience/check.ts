import type { FieldError } from '../core/errors';
import { parseIsoDate, UUID } from '../core/values';
import {
  AGE_OPERATORS, EVENT_OPERATORS, ORDER_OPERATORS, PRESENCE_OPERATORS, SEGMENT_OPERATORS, STRING_OPERATORS,
  type AudienceCondition, type FilterRule, type Operator,
} from './condition';

/** What a field is, for compilation: parsed once by `classify`. */
export type FieldRef =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'timestamp'; column: 'created_at' | 'updated_at' }
  | { kind: 'data'; path: string[] }
  | { kind: 'event'; name: string }
  | { kind: 'segment'; id: string };

const DATA_KEY = /^[A-Za-z0-9_-]{1,100}$/;

export function classify(field: string): FieldRef | null {
  if (field === 'email') return { kind: 'email' };
  if (field === 'subscribed') return { kind: 'subscribed' };
  if (field === 'createdAt') return { kind: 'timestamp', column: 'created_at' };
  if (field === 'updatedAt') return { kind: 'timestamp', column: 'updated_at' };
  if (field.startsWith('data.')) {
    const path = field.slice(5).split('.');
    return path.length <= 5 && path.every((k) => DATA_KEY.test(k)) ? { kind: 'data', path } : null;
  }
  if (field.startsWith('event.')) {
    const name = field.slice(6);
    return name.length >= 1 && name.length <= 100 && !/\p{Cc}/u.test(name) ? { kind: 'event', name } : null;
  }
  if (field.startsWith('segment.')) {
    const id = field.slice(8).toLowerCase();
    return UUID.test(id) ? { kind: 'segment', id } : null;
  }
  return null;
}

const ops = (...lists: (readonly Operator[])[]) => new Set<Operator>(lists.flat());
const ALLOWED: Record<FieldRef['kind'], Set<Operator>> = {
  email: ops(STRING_OPERATORS, PRESENCE_OPERATORS),
  subscribed: new Set<Operator>(['equals', 'notEquals']),
  timestamp: ops(ORDER_OPERATORS, AGE_OPERATORS),
  data: ops(STRING_OPERATORS, ORDER_OPERATORS, PRESENCE_OPERATORS, AGE_OPERATORS),
  event: ops(EVENT_OPERATORS),
  segment: ops(SEGMENT_OPERATORS),
};

/** PostgreSQL compares the text itself (`?::timestamptz`), so it must be a date that both it and Herald read alike. */
const isDate = (v: unknown) => typeof v === 'string' && parseIsoDate(v) !== null;

/** Checks what a rule needs beyond its shape; returns the problems, each at its path. */
function checkRule(rule: FilterRule, path: string): FieldError[] {
  const ref = classify(rule.field);
  if (!ref) {
    return [{ field: `${path}.field`, message: `unknown field "${rule.field}": use email, subscribed, createdAt, updatedAt, data.<key>, event.<name> or segment.<id>`, code: 'invalid_field' }];
  }
  if (!ALLOWED[ref.kind].has(rule.operator)) {
    return [{ field: `${path}.operator`, message: `operator ${rule.operator} does not apply to ${rule.field} (allowed: ${[...ALLOWED[ref.kind]].join(', ')})`, code: 'invalid_operator' }];
  }
  const op = rule.operator;
  const needsAge = op === 'within' || op === 'olderThan' || op === 'triggeredWithin' || op === 'notTriggeredWithin';
  if (needsAge) {
    const errors: FieldError[] = [];
    if (typeof rule.value !== 'number' || !Number.isInteger(rule.value) || rule.value < 1 || rule.value > 1_000_000) {
      errors.push({ field: `${path}.value`, message: `${op} needs a whole number of units as value`, code: 'invalid_type' });
    }
    if (!rule.unit) errors.push({ field: `${path}.unit`, message: `${op} needs a unit: minutes, hours or days`, code: 'required' });
    return errors;
  }
  if (rule.unit !== undefined) return [{ field: `${path}.unit`, message: `unit applies only to within, olderThan, triggeredWithin and notTriggeredWithin`, code: 'unrecognized_key' }];
  const noValue = (PRESENCE_OPERATORS as readonly string[]).includes(op) || op === 'triggered' || op === 'notTriggered' || ref.kind === 'segment';
  if (noValue) {
    return rule.value === undefined ? [] : [{ field: `${path}.value`, message: `${op} takes no value`, code: 'unrecognized_key' }];
  }
  const value = rule.value;
  const bad = (message: string): FieldError[] => [{ field: `${path}.value`, message, code: 'invalid_type' }];
  if (value === undefined) return [{ field: `${path}.value`, message: `${op} needs a value`, code: 'required' }];
  switch (ref.kind) {
    case 'subscribed':
      return typeof value === 'boolean' ? [] : bad('subscribed compares with true or false');
    case 'email':
      return typeof value === 'string' && value.length <= 254 ? [] : bad('email compares with a string');
    case 'timestamp':
      return isDate(value) ? [] : bad(`${rule.field} compares with an ISO date-time from 0001-01-01 to 9999-12-31`);
    case 'data':
      if ((ORDER_OPERATORS as readonly string[]).includes(op)) return typeof value === 'number' || isDate(value) ? [] : bad(`${op} compares with a number or an ISO date-time from 0001-01-01 to 9999-12-31`);
      if (op === 'equals' || op === 'notEquals') return JSON.stringify(value).length <= 10_000 ? [] : bad('value too large');
      return typeof value === 'string' && value.length <= 1000 ? [] : bad(`${op} compares with a string`);
    default:
      return [];
  }
}

/** Every problem of a condition, each named by its path under `prefix` (e.g. `audienceFilter.groups.0.filters.1.operator`). */
export function checkCondition(condition: AudienceCondition, prefix: string): FieldError[] {
  return condition.groups.flatMap((g, gi) => g.filters.flatMap((f, fi) => checkRule(f, `${prefix}.groups.${gi}.filters.${fi}`)));
}

/** The segment ids a condition refers to directly. */
export function referencedSegments(condition: AudienceCondition): string[] {
  const ids = new Set<string>();
  for (const g of condition.groups) for (const f of g.filters) {
    const ref = classify(f.field);
    if (ref?.kind === 'segment') ids.add(ref.id);
  }
  return [...ids];
}

/**
 * Whether a condition reads nothing but the contact's own row: `data.*`, `subscribed`, `createdAt`, `updatedAt`. Then
 * its contacts, newest first, are one read of the contacts' primary key (or of the subscribed index, which ends in the
 * id) with the condition as a filter, whatever its values: no index serves a field of `data` or a time, and that read
 * is the plan PostgreSQL makes for any of them. Not so for an address (the trigram index finds a rare one), an event
 * (a hash of the few who did it, or a probe of each contact's events) or another segment.
 */
export function readsContactRowOnly(condition: AudienceCondition): boolean {
  return condition.groups.every((g) => g.filters.every((f) => {
    const kind = classify(f.field)?.kind;
    return kind === 'data' || kind === 'subscribed' || kind === 'timestamp';
  }));
}
