import Joi from 'joi';
import { RESERVED_HEADERS, WEBHOOK_METHODS } from '../../outbound/http';
import { conditionSchema, type TimeUnit } from '../../audience/condition';
import type { AutomationInput as WorkflowInput, AutomationTrigger as WorkflowTrigger } from '../../automations/automations';
import { cursorSchema, limitSchema } from '../pagination';
import { contactDataSchema, EXAMPLE, headerTextSchema, uuidSchema } from './common';
import { eventNameSchema } from './events';


/**
 * The definition of an automation workflow (decisions.md, "Workflows (automations)"): a trigger and a list of
 * steps, the first of which is the entry. Steps name their successor by id (`next`, or `branches.yes`/`no` on a
 * CONDITION); null or absent means the execution completes there. This module checks the shape of each step;
 * the graph (dangling references, reachability, loops) is checked by automations/definition.ts.
 */
// The step types live with their domain (automations/steps.ts); the API's schemas are checked against them.
import {
  durationMs, EXECUTION_STATUSES, MAX_DURATION_DAYS, MAX_STEPS, MAX_WEBHOOK_BODY_BYTES, MAX_WEBHOOK_HEADERS, STEP_TYPES, UNIT_MS,
  type Branches, type ConditionConfig, type Duration, type ExecutionStatus, type SendEmailConfig, type Step, type StepType,
  type UpdateContactConfig, type WaitForEventConfig, type WebhookConfig,
} from '../../automations/steps';

// The workflow's types live with the business (automations/automations.ts); these schemas are checked against them.
export type CreateWorkflowBody = WorkflowInput;

export type PatchWorkflowBody = Partial<CreateWorkflowBody>;

export interface ListWorkflowsQuery {
  limit: number;
  cursor?: string;
  enabled?: boolean;
}

export interface ListExecutionsQuery {
  limit: number;
  cursor?: string;
  status?: ExecutionStatus;
  contactId?: string;
}

const STEP_ID = /^[A-Za-z0-9_-]+$/;
/** RFC 9110 `token`: the characters of a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

const stepIdSchema = Joi.string().min(1).max(64).pattern(STEP_ID, 'letters, digits, _ and -')
  .messages({ 'string.pattern.name': '{{#label}} may contain only letters, digits, _ and -' });
/** A reference to another step: its id, or null where the execution completes. */
const stepRefSchema = stepIdSchema.allow(null);

const durationSchema = Joi.object<Duration, true>({
  // At least one minute (amount ≥ 1 of the smallest unit); at most MAX_DURATION_DAYS in total.
  amount: Joi.number().integer().min(1).required().custom((amount: number, helpers) => {
    const unit = (helpers.state.ancestors[0] as { unit?: unknown } | undefined)?.unit;
    if (typeof unit !== 'string' || !(unit in UNIT_MS)) return amount; // the unit reports its own error
    const max = durationMs({ amount: MAX_DURATION_DAYS, unit: 'days' }) / UNIT_MS[unit as TimeUnit];
    return amount > max ? helpers.error('duration.max', { max, unit }) : amount;
  }).messages({ 'duration.max': `{{#label}} makes it longer than ${MAX_DURATION_DAYS} days (at most {{#max}} {{#unit}})` }),
  unit: Joi.string().valid('minutes', 'hours', 'days').required(),
});

const sendEmailConfigSchema = Joi.object<SendEmailConfig, true>({
  template: uuidSchema.required().messages({ 'string.pattern.name': '{{#label}} must be a template id (a UUID)' }),
});

const waitForEventConfigSchema = Joi.object<WaitForEventConfig, true>({
  event: eventNameSchema.required(),
  timeout: durationSchema,
});

const conditionConfigSchema = Joi.object<ConditionConfig, true>({ filter: conditionSchema.required() });

const updateContactConfigSchema = Joi.object<UpdateContactConfig, true>({
  data: contactDataSchema.min(1),
  subscribed: Joi.boolean(),
}).or('data', 'subscribed').messages({ 'object.missing': '{{#label}} of UPDATE_CONTACT needs data, subscribed or both' });

/** A header value; its name (the key) is checked here too, so that each bad header is reported at its own path. */
const headerValueSchema = headerTextSchema.max(1000).custom((value: string, helpers) => {
  const name = String(helpers.state.path?.at(-1));
  if (!HEADER_NAME.test(name)) return helpers.error('string.pattern.header', { name });
  if (RESERVED_HEADERS.includes(name.toLowerCase())) return helpers.error('any.invalid', { name });
  return value;
}).messages({
  'string.pattern.header': 'header name "{{#name}}" may contain only letters, digits and !#$%&\'*+.^_`|~-',
  'any.invalid': `header "{{#name}}" is set by Herald and may not be given (${RESERVED_HEADERS.join(', ')})`,
});

const headersSchema = Joi.object().pattern(Joi.string(), headerValueSchema).max(MAX_WEBHOOK_HEADERS);

/** Any JSON object or array, bounded when serialised. */
const webhookBodySchema = Joi.alternatives().conditional(Joi.array(), { then: Joi.array(), otherwise: Joi.object() })
  .custom((body: unknown, helpers) => (
    // (An alternatives schema runs its rules on an absent value too.)
    body !== undefined && Buffer.byteLength(JSON.stringify(body)) > MAX_WEBHOOK_BODY_BYTES ? helpers.error('body.max') : body
  ))
  .messages({
    'object.base': '{{#label}} must be a JSON object or array',
    'body.max': `{{#label}} may be at most ${MAX_WEBHOOK_BODY_BYTES / 1024} KB as JSON`,
  });

const webhookConfigSchema = Joi.object<WebhookConfig, true>({
  // One error for a bad URL, with the code of any other bad URI (invalid_string) whether the syntax or the scheme is wrong.
  url: Joi.string().trim().max(2048).uri({ scheme: ['http', 'https'] }).required()
    .error((reports) => reports.map((r) => {
      if (r.code === 'string.uriCustomScheme') r.code = 'string.uri';
      return r;
    }))
    .messages({ 'string.uri': '{{#label}} must be an http or https URL' }),
  method: Joi.string().valid(...WEBHOOK_METHODS).default('POST'),
  headers: headersSchema,
  body: webhookBodySchema.when('method', {
    is: 'GET',
    then: Joi.forbidden().messages({ 'any.unknown': 'a GET webhook has no body' }),
  }),
});

const exitConfigSchema = Joi.object({});

type StepConfig = Exclude<Step['config'], undefined>;

/** Every key any step type may have; which ones apply, and the config's shape, depend on `type`. */
interface StepFields {
  id: string;
  type: StepType;
  config?: StepConfig;
  next?: string | null;
  branches?: Branches;
}

const CONFIG_BY_TYPE: Record<StepType, Joi.ObjectSchema> = {
  SEND_EMAIL: sendEmailConfigSchema.required(),
  DELAY: durationSchema.required(),
  WAIT_FOR_EVENT: waitForEventConfigSchema.required(),
  CONDITION: conditionConfigSchema.required(),
  UPDATE_CONTACT: updateContactConfigSchema.required(),
  WEBHOOK: webhookConfigSchema.required(),
  EXIT: exitConfigSchema,
};

const typeList = STEP_TYPES.join(', ');

/**
 * One step. The type is checked once (an unknown type is one error at `type`, listing the valid ones); the other
 * keys switch on it, and the config of a step whose type is unknown is not looked at, so it adds no errors of its own.
 */
export const stepSchema = Joi.object<StepFields, true>({
  id: stepIdSchema.required(),
  type: Joi.string().valid(...STEP_TYPES).required()
    .messages({ 'any.only': `{{#label}} "{{#value}}" is not a step type: use one of ${typeList}` }),
  config: Joi.when('type', {
    switch: STEP_TYPES.map((t) => ({ is: t, then: CONFIG_BY_TYPE[t] })),
    otherwise: Joi.any(),
  }),
  // The base schemas check the value whatever the type; the switch says whether the key applies.
  next: stepRefSchema.when('type', {
    switch: [
      { is: 'EXIT', then: Joi.forbidden().messages({ 'any.unknown': 'an EXIT step has no next step' }) },
      { is: 'CONDITION', then: Joi.forbidden().messages({ 'any.unknown': 'a CONDITION step continues through branches.yes and branches.no, not next' }) },
    ],
  }),
  branches: Joi.object<Branches>().when('type', {
    switch: [
      { is: 'CONDITION', then: Joi.object<Branches, true>({ yes: stepRefSchema.required(), no: stepRefSchema.required() }).required() },
      { is: Joi.valid(...STEP_TYPES), then: Joi.forbidden().messages({ 'any.unknown': 'branches apply only to CONDITION steps' }) },
    ],
  }),
});

const triggerSchema = Joi.object<WorkflowTrigger, true>({
  type: Joi.string().valid('EVENT').required(),
  // Any event name, the service's own (email.*, contact.*) included: a workflow may start on contact.unsubscribed.
  event: eventNameSchema.required(),
});

const fields = {
  name: Joi.string().trim().min(1).max(200).example('Onboarding'),
  description: Joi.string().max(1000).allow('', null).example('Welcome new sign-ups, then nudge them after a day.'),
  enabled: Joi.boolean(),
  trigger: triggerSchema,
  steps: Joi.array().items(stepSchema).min(1).max(MAX_STEPS),
  allowReentry: Joi.boolean(),
};

/** The shape; then automations/definition.ts: checkSteps (graph, filters) and checkReferences (templates, segments). */
export const createWorkflowSchema = Joi.object<CreateWorkflowBody, true>({
  ...fields,
  name: fields.name.required(),
  enabled: fields.enabled.default(false),
  trigger: fields.trigger.required(),
  steps: fields.steps.required(),
  allowReentry: fields.allowReentry.default(false),
}).example({
  name: 'Onboarding', description: 'Welcome new sign-ups, then nudge them after a day.', enabled: true,
  trigger: { type: 'EVENT', event: 'signed-up' },
  steps: [
    { id: 'welcome', type: 'SEND_EMAIL', config: { template: EXAMPLE.templateId }, next: 'wait' },
    { id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'check' },
    { id: 'check', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'event.first-send', operator: 'notTriggered' }] }] } }, branches: { yes: 'nudge', no: null } },
    { id: 'nudge', type: 'SEND_EMAIL', config: { template: EXAMPLE.templateId }, next: null },
  ],
});

/** A patch replaces what it names (`steps` as a whole); no defaults, so absent keys keep their stored values. */
export const patchWorkflowSchema = Joi.object<PatchWorkflowBody, true>(fields).min(1).example({ enabled: false });

export const listWorkflowsQuerySchema = Joi.object<ListWorkflowsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  enabled: Joi.boolean(),
});

export const listExecutionsQuerySchema = Joi.object<ListExecutionsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  status: Joi.string().valid(...EXECUTION_STATUSES),
  contactId: uuidSchema,
});
