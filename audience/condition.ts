import Joi from 'joi';

/**
 * The audience filter language of decisions.md, shared by FILTERED campaigns (`audienceFilter`) and DYNAMIC
 * segments (`condition`): `{ logic, groups: [{ filters: [{ field, operator, value?, unit? }] }] }`. The filters of
 * a group are ANDed; `logic` joins the groups.
 */
export type TimeUnit = 'minutes' | 'hours' | 'days';

export const STRING_OPERATORS = ['equals', 'notEquals', 'contains', 'notContains', 'startsWith', 'endsWith'] as const;
export const ORDER_OPERATORS = ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'] as const;
export const PRESENCE_OPERATORS = ['exists', 'notExists'] as const;
export const AGE_OPERATORS = ['within', 'olderThan'] as const;
export const EVENT_OPERATORS = ['triggered', 'notTriggered', 'triggeredWithin', 'notTriggeredWithin'] as const;
export const SEGMENT_OPERATORS = ['memberOf', 'notMemberOf'] as const;

export type Operator =
  | (typeof STRING_OPERATORS)[number] | (typeof ORDER_OPERATORS)[number] | (typeof PRESENCE_OPERATORS)[number]
  | (typeof AGE_OPERATORS)[number] | (typeof EVENT_OPERATORS)[number] | (typeof SEGMENT_OPERATORS)[number];

export interface FilterRule {
  field: string;
  operator: Operator;
  value?: unknown;
  unit?: TimeUnit;
}

export interface FilterGroup {
  filters: FilterRule[];
}

export interface AudienceCondition {
  logic: 'AND' | 'OR';
  groups: FilterGroup[];
}

const ALL_OPERATORS = [...STRING_OPERATORS, ...ORDER_OPERATORS, ...PRESENCE_OPERATORS, ...AGE_OPERATORS, ...EVENT_OPERATORS, ...SEGMENT_OPERATORS];

/** The shape; what each field allows is checked by `checkCondition`, which knows the fields. */
export const conditionSchema = Joi.object<AudienceCondition, true>({
  logic: Joi.string().valid('AND', 'OR').default('AND'),
  groups: Joi.array().items(Joi.object<FilterGroup, true>({
    // Not a strict key map: Joi's typings cannot express an `unknown` value.
    filters: Joi.array().items(Joi.object<FilterRule>({
      field: Joi.string().min(1).max(200).required(),
      operator: Joi.string().valid(...ALL_OPERATORS).required(),
      value: Joi.any(), // any JSON value; checked per field by checkCondition
      unit: Joi.string().valid('minutes', 'hours', 'days'),
    })).min(1).max(50).required(),
  })).min(1).max(20).required(),
}).example({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] });

/** Segment ids in fields are stored lower-case, so references can be found and compared as text. */
export function normaliseCondition(condition: AudienceCondition): AudienceCondition {
  return {
    logic: condition.logic,
    groups: condition.groups.map((g) => ({
      filters: g.filters.map((f) => (f.field.startsWith('segment.') ? { ...f, field: f.field.toLowerCase() } : f)),
    })),
  };
}
