import Joi from 'joi';
import { ERASED_REASON, SUPPRESSION_REASONS } from '../../audience/suppressions';
import { conditionSchema } from '../../audience/condition';
import { EXECUTION_STATUSES, STEP_TYPES } from '../../automations/steps';
import { EMAIL_STATUSES } from '../../emails/emails';
import { OVERVIEW_QUEUE_CAP, OVERVIEW_WINDOWS } from '../../emails/overview';
import { WEBHOOK_EVENT_TYPES } from '../../webhooks/types';
import { AB_METRICS, VARIANT_KEYS } from '../../campaigns/abTest';
import { EXAMPLE, example } from './common';

/**
 * The answers' shapes, as the routes' shapers write them (api/routes/*Json, and the business's answers that routes pass
 * on): the source of the document's response schemas (api/openapi/), converted from Joi as the request schemas are.
 * Every key a shaper always writes is required; `null` is allowed where the shaper can write it. The tests validate
 * real answers against them (test/api/openapi.test.ts). Each field carries the example the reference shows (Joi's
 * `.example()`, put together by api/openapi/examples.ts; test/api/openapi.test.ts checks that every answer has a whole one
 * and that it matches its schema).
 */

/** Every key required unless marked optional (key by key: a preference would also reach into the reused request schemas). */
const requiredKeys = (keys: Record<string, Joi.Schema>) =>
  Object.fromEntries(Object.entries(keys).map(([k, s]) => [k, s.$_getFlag('presence') === 'optional' ? s : s.required()]));
const shape = (keys: Record<string, Joi.Schema>) => Joi.object(requiredKeys(keys));
const instant = Joi.string().isoDate().example(EXAMPLE.at);
const id = Joi.string().guid().example(EXAMPLE.contactId);
/** An id with the example of its kind (EXAMPLE.emailId…). */
const idOf = (value: string) => example(id, value);
/** A text field with its example. */
const text = (value: string) => Joi.string().example(value);
/** Shown only in the answers that have it (a SUPPRESSED recipient's reason): the example leaves it out. */
const sometimes = <T extends Joi.Schema>(s: T): T => s.meta({ 'x-herald-example': false }) as T;
const nullable = <T extends Joi.Schema>(s: T) => s.allow(null);
/** Free-form JSON object (contact data, event data, a workflow step's config). */
const anyObject = Joi.object().unknown(true);
const count = Joi.number().integer().min(0).example(0);
const countOf = (value: number) => example(count, value);

export const successOf = (data: Joi.Schema) => shape({ success: Joi.valid(true), data });

/** A page of a list (api/pagination.ts toPage). */
export const pageOf = (item: Joi.Schema, extra: Record<string, Joi.Schema> = {}) => shape({
  items: Joi.array().items(item),
  nextCursor: nullable(Joi.string()).description('Pass as `cursor` for the next page; null on the last one.')
    .example('djE6MDE5N2EzYzQtNWUyMS03YzNhLTliNGYtOGQyZTFhNmMwZjUz'),
  hasMore: Joi.boolean().example(true),
  total: Joi.number().integer().min(0).example(1284),
  ...extra,
});

/**
 * A page of a list over a table that grows with use (db/pages.ts LIST_COUNT_CAP): its total is counted exactly up to
 * 1,000 only, and `totalExact` says whether it was.
 */
export const cappedPageOf = (item: Joi.Schema, extra: Record<string, Joi.Schema> = {}) => pageOf(item, {
  total: Joi.number().integer().min(0).max(1000).example(1000)
    .description('How many match: exactly when totalExact is true; otherwise 1000, meaning at least 1,000.'),
  totalExact: Joi.boolean().example(false).description('false when total stopped counting at its cap (1,000): more than 1,000 match.'),
  ...extra,
});

/** api/middleware/errorHandler.ts ErrorBody: the envelope, with the second shape's `code`, `message` and `time` beside it. */
export const errorAnswer = shape({
  success: Joi.valid(false),
  error: shape({
    code: Joi.string().description('BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, PROJECT_DISABLED, NOT_FOUND, METHOD_NOT_ALLOWED, CONFLICT, ACCESS_CHANGED, PAYLOAD_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, VALIDATION_ERROR, RATE_LIMITED, INTERNAL_ERROR'),
    message: Joi.string(),
    statusCode: Joi.number().integer(),
    requestId: Joi.string(),
    errors: Joi.array().items(shape({ field: Joi.string().allow(''), message: Joi.string(), code: Joi.string() })).optional(),
    suggestion: sometimes(Joi.string().optional()),
  }),
  timestamp: instant,
  code: Joi.number().integer().description('The HTTP status (the `{ code, error, message, time }` shape Plunk clients read).'),
  message: Joi.string(),
  time: Joi.number().integer().description('Epoch milliseconds, the same instant as `timestamp`.'),
}).id('Error');

/** What GET /health answers (api/routes/system.ts): 200 with this, and nothing else, while the database answers… */
export const HEALTHY = { status: 'ok' } as const;
/** …and 503 with this when it does not. The document shows these very values. */
export const UNHEALTHY = { status: 'unavailable', checks: { database: 'unreachable' } } as const;
export const healthyAnswer = Joi.object({ status: Joi.string().valid('ok').required() }).example(HEALTHY);
export const unhealthyAnswer = Joi.object({
  status: Joi.string().valid('unavailable').required(),
  checks: Joi.object({ database: Joi.string().valid('unreachable').required() }).required(),
}).example(UNHEALTHY);

// api/routes/contacts.ts contactJson
export const contactAnswer = shape({
  id, email: text(EXAMPLE.email), subscribed: Joi.boolean(), data: anyObject.example({ firstName: 'Ada', plan: 'pro' }),
  createdAt: instant, updatedAt: example(instant, EXAMPLE.later),
}).id('Contact');

export const savedContactAnswer = contactAnswer.keys(requiredKeys({ _meta: shape({ isNew: Joi.boolean(), isUpdate: Joi.boolean().example(false) }) })).id('SavedContact');

export const contactPageAnswer = cappedPageOf(contactAnswer, {
  // db/queries/contacts.ts contactCountCap: a search counts up to 100.
  total: Joi.number().integer().min(0).max(1000).example(1000)
    .description('How many match: exactly when totalExact is true; otherwise at least that many: the cap (1000, or 100 with search), or with search the addresses that begin with the term when they fill the page.'),
  totalExact: Joi.boolean().example(false).description('false when total stopped counting at its cap (1,000; 100 with search), or when a search\'s page holds only addresses that begin with the term and the others were not counted: at least total match.'),
  contacts: Joi.array().items(contactAnswer).description('The same as items (the spec names the list both ways).'),
  cursor: nullable(Joi.string()).description('The same as nextCursor.'),
});

export const segmentContactPageAnswer = cappedPageOf(contactAnswer, {
  // audience/segments.ts memberCountCap: a dynamic segment counts up to 100.
  total: Joi.number().integer().min(0).max(1000).example(100)
    .description('How many match: exactly when totalExact is true; otherwise the cap, meaning at least that many: 1000 for a STATIC segment, 100 for a DYNAMIC one.'),
  totalExact: Joi.boolean().example(false).description('false when total stopped counting at its cap (1,000 for a STATIC segment, 100 for a DYNAMIC one): more match.'),
});

// api/routes/templates.ts templateJson
export const templateAnswer = shape({
  id: idOf(EXAMPLE.templateId), name: text('Password reset'), description: nullable(Joi.string().allow('')).example('Sent when someone asks to reset their password.'),
  subject: text('Reset your password'), body: text('<p>Hello {{ name }},</p><p><a href="{{ resetUrl }}">Choose a new password</a> (valid for one hour).</p>'),
  from: nullable(Joi.string()).example(EXAMPLE.from), fromName: nullable(Joi.string().allow('')).example('Acme'), replyTo: nullable(Joi.string()),
  type: Joi.string().valid('TRANSACTIONAL', 'MARKETING'), bodyType: Joi.string().valid('html', 'markdown'),
  createdAt: instant, updatedAt: example(instant, EXAMPLE.later),
}).id('Template');

// templates/templates.ts previewTemplate
export const templatePreviewAnswer = shape({
  subject: text('Welcome, Ada'),
  html: text('<h1>Hello Ada</h1>\n<p>Your plan: <strong>pro</strong>.</p>\n'),
}).id('TemplatePreview');

// api/routes/segments.ts segmentJson
export const segmentAnswer = shape({
  id: idOf(EXAMPLE.segmentId), name: text('Pro customers'), description: nullable(Joi.string().allow('')).example('Everyone on the pro plan.'),
  type: Joi.string().valid('DYNAMIC', 'STATIC'),
  condition: nullable(conditionSchema),
  memberCount: nullable(Joi.number().integer().min(0)).example(318).description(
    'How many contacts the segment held at memberCountAt, exactly (a kept count: GET /segments and GET /segments/:id do not count when read). '
    + 'null when the stored condition cannot be evaluated; `error` says why.'),
  memberCountAt: nullable(instant).description(
    'When memberCount was counted. A create, an update and a change of members count at once; a read more than a minute after the count answers it '
    + 'and has the segment recounted in the background, so a later read shows the new count.'),
  error: nullable(Joi.string()), createdAt: instant, updatedAt: example(instant, EXAMPLE.later),
}).id('Segment');

export const segmentPreviewAnswer = shape({ count: countOf(318), contacts: Joi.array().items(contactAnswer) });
export const membersAddedAnswer = shape({ added: countOf(2), created: countOf(1), memberCount: countOf(320) });
export const membersRemovedAnswer = shape({ removed: countOf(1), memberCount: countOf(319) });

// api/routes/campaigns.ts campaignJson
export const campaignAnswer = shape({
  id: idOf(EXAMPLE.campaignId), name: text('June newsletter'), description: nullable(Joi.string().allow('')).example('What shipped in May.'),
  templateId: nullable(idOf(EXAMPLE.templateId)).example(null)
    .description('The template it is written from: each of subject, body, from, fromName and replyTo that is null here is the template\'s, read when it is tested and when it starts sending.'),
  subject: nullable(Joi.string()).example('What’s new in June, {{ firstName }}'),
  body: nullable(Joi.string()).example('<h1>Hello {{ firstName }}</h1><p>Here is what shipped in May.</p>'),
  bodyType: example(Joi.string().valid('html', 'markdown'), 'html')
    .description('How `body` is written: `html`, unless the campaign took a Markdown template\'s body when it started sending.'),
  from: nullable(Joi.string()).example('news@example.com'), fromName: nullable(Joi.string().allow('')).example('Acme'), replyTo: nullable(Joi.string()), type: Joi.valid('MARKETING'),
  status: Joi.string().valid('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED', 'FAILED'),
  audienceType: example(Joi.string().valid('ALL', 'SEGMENT', 'FILTERED'), 'SEGMENT'), segmentId: nullable(idOf(EXAMPLE.segmentId)),
  audienceFilter: nullable(conditionSchema).example(null),
  scheduledAt: nullable(instant).example(null), startedAt: nullable(instant).example(null), completedAt: nullable(instant).example(null), cancelledAt: nullable(instant).example(null),
  totalRecipients: nullable(Joi.number().integer().min(0)).example(null), error: nullable(Joi.string()), createdAt: instant, updatedAt: example(instant, EXAMPLE.later),
  temporalUiUrl: nullable(Joi.string().uri()).example(null)
    .description('Its workflow in Temporal UI, once it is scheduled or sent, when Herald runs on Temporal with TEMPORAL_UI_URL set; null otherwise.'),
  previewText: nullable(Joi.string().allow('')).example('Three new features and a fix you asked for'),
  variants: nullable(Joi.array().items(shape({
    key: example(Joi.string().valid(...VARIANT_KEYS), 'A'), name: nullable(Joi.string()).example('Statement'),
    subject: nullable(Joi.string()).example('June is here'), previewText: nullable(Joi.string()).example(null), fromName: nullable(Joi.string()).example(null),
    body: nullable(Joi.string()).example(null), templateId: nullable(idOf(EXAMPLE.templateId)).example(null),
  }))).example(null).description('An A/B campaign\'s variants, as written (null parts are the campaign\'s); null for a plain campaign.'),
  abTest: nullable(shape({
    samplePercent: Joi.number().integer().example(20), waitMinutes: Joi.number().integer().example(240), metric: example(Joi.string().valid(...AB_METRICS), 'opens'),
    phase: nullable(Joi.string().valid('SAMPLE', 'WAITING', 'DECIDED')).example('WAITING')
      .description('null until it starts sending; SAMPLE: the variants go to the sample; WAITING: the test\'s wait; DECIDED: the winner goes to the rest.'),
    sampleSize: nullable(count).example(2400).description('The sample\'s recipients, fixed when it started sending.'),
    waitEndsAt: nullable(instant).example(EXAMPLE.later).description('When the wait ends (set once the sample has left the queue).'),
    chosen: nullable(Joi.string().valid(...VARIANT_KEYS)).example(null).description('A winner chosen by a person (POST /campaigns/{id}/winner).'),
    winner: nullable(Joi.string().valid(...VARIANT_KEYS)).example(null), decidedAt: nullable(instant).example(null),
  })).example(null).description('An A/B campaign\'s test and where it stands; null for a plain campaign. The figures of the decision: GET /campaigns/{id}/stats.'),
}).id('Campaign');

export const campaignTestAnswer = shape({
  emails: Joi.array().items(shape({
    email: text(EXAMPLE.email), id: idOf(EXAMPLE.emailId),
    variant: sometimes(Joi.string().valid(...VARIANT_KEYS).optional()).description('An A/B campaign\'s copy: the variant it is of.'),
  })),
});

const significanceAnswer = nullable(shape({
  method: Joi.valid('two-proportion z-test'), against: example(Joi.number().integer().min(0).max(4), 1).description('The variant compared with (0 is A).'),
  z: Joi.number().example(2.31), pValue: Joi.number().min(0).max(1).example(0.0209), significant: Joi.boolean().example(true).description('pValue < 0.05.'),
})).example(null);

/** db/queries/campaigns.ts VariantStats, without its position. */
const variantCounts = {
  totalRecipients: countOf(600), queued: countOf(0), sent: countOf(598), delivered: countOf(596), cancelled: countOf(0), suppressed: countOf(1),
  failed: countOf(1), bounced: countOf(2), complained: countOf(0), unsubscribed: countOf(1), opens: countOf(301), uniqueOpens: countOf(244),
  clicks: countOf(80), uniqueClicks: countOf(61), openRate: Joi.number().min(0).example(0.4094), clickRate: Joi.number().min(0).example(0.1023),
};

// db/queries/campaigns.ts CampaignStats
export const campaignStatsAnswer = shape({
  totalRecipients: countOf(1200).description('queued + sent + failed + cancelled + suppressed.'), queued: countOf(0),
  sent: countOf(1194).description('Handed to the receiving server: delivered, or bounced since.'), delivered: countOf(1188),
  cancelled: countOf(0).description('Not sent: the campaign was cancelled (or failed) before their turn.'),
  suppressed: countOf(2).description('Not sent: the address was on the suppression list when its turn came.'),
  opened: countOf(512), clicked: countOf(143), bounced: countOf(6), complained: countOf(1), failed: countOf(4), unsubscribed: countOf(3),
  openRate: Joi.number().min(0).example(0.431).description('uniqueOpens / delivered.'), clickRate: Joi.number().min(0).example(0.1204).description('uniqueClicks / delivered.'),
  opens: countOf(730), uniqueOpens: countOf(512), clicks: countOf(198), uniqueClicks: countOf(143),
  links: Joi.array().items(shape({ url: text('https://example.com/changelog'), clicks: countOf(120), uniqueClicks: countOf(97) })),
  // campaigns/series.ts CampaignSeries: only when asked (`?series=`).
  series: shape({
    interval: Joi.string().valid('hour', 'day').example('hour'),
    points: Joi.array().items(shape({ at: instant, opens: countOf(212), clicks: countOf(41) }))
      .description('Every hour or UTC day from the campaign\'s start to now (zeros included), at most 168 hours or 90 days.'),
  }).optional().description('With `?series=hour|day`: the open and click events of its emails per bucket (as GET /events lists them).'),
  // campaigns/campaigns.ts AbStats: an A/B campaign's only.
  variants: sometimes(Joi.array().items(shape({
    variant: Joi.number().integer().min(0).max(4).example(0), key: example(Joi.string().valid(...VARIANT_KEYS), 'A'), name: nullable(Joi.string()).example('Statement'),
    ...variantCounts,
    significance: shape({ opens: significanceAnswer, clicks: significanceAnswer })
      .description('How sure the difference is (two-proportion z-test): the best variant against the runner-up, each other one against the best.'),
  })).optional()).description('An A/B campaign\'s sample, per variant.'),
  rest: sometimes(shape(variantCounts).optional()).description('An A/B campaign\'s emails to the rest of the audience (the winner\'s).'),
  decision: sometimes(nullable(shape({
    winner: example(Joi.string().valid(...VARIANT_KEYS), 'B'), decidedBy: example(Joi.string().valid('metric', 'manual'), 'metric'),
    metric: example(Joi.string().valid(...AB_METRICS), 'opens'), decidedAt: instant,
    figures: Joi.array().items(shape({
      variant: Joi.number().integer().example(1), key: example(Joi.string().valid(...VARIANT_KEYS), 'B'), delivered: countOf(596),
      uniqueOpens: countOf(244), uniqueClicks: countOf(61), openRate: Joi.number().example(0.4094), clickRate: Joi.number().example(0.1023),
    })).description('The sample\'s figures when it was decided.'),
    significance: shape({ opens: significanceAnswer, clicks: significanceAnswer }).description('The winner against the runner-up, when it was decided.'),
  })).optional()).description('An A/B campaign\'s decision, once made (null before).'),
}).id('CampaignStats');

export const audienceCountAnswer = shape({ count: countOf(12408).description('Subscribed contacts of the audience whose address is not suppressed: who a send would go to now.') });

// api/routes/events.ts eventJson
export const eventAnswer = shape({
  id: idOf(EXAMPLE.eventId), name: text('signed-up'), contactId: nullable(id), emailId: nullable(idOf(EXAMPLE.emailId)).example(null),
  data: anyObject.example({ plan: 'pro' }), createdAt: instant,
}).id('Event');
export const eventPageAnswer = cappedPageOf(eventAnswer);
export const eventNamesAnswer = shape({ items: Joi.array().items(shape({ name: text('signed-up'), count: countOf(4210), lastSeenAt: instant })) });

// api/routes/suppressions.ts suppressionJson
export const suppressionAnswer = shape({
  id: idOf(EXAMPLE.suppressionId),
  email: text('gone@example.com').description('The address; for an erased contact (reason `erased`) only its keyed hash, `hmac-sha256:<hex>`.'),
  reason: Joi.string().valid(...SUPPRESSION_REASONS, ERASED_REASON),
  details: anyObject.allow(null).example({ note: 'Asked by phone to stop all mail.' }), createdAt: instant,
}).id('Suppression');

// api/routes/emails.ts emailJson
const emailFields = {
  id: idOf(EXAMPLE.emailId), status: example(Joi.string().valid(...EMAIL_STATUSES), 'SENT'), from: text(EXAMPLE.from), fromName: nullable(Joi.string().allow('')).example('Acme'),
  replyTo: nullable(Joi.string()), to: text(EXAMPLE.email), toName: nullable(Joi.string().allow('')).example('Ada Lovelace'),
  subject: nullable(Joi.string().allow('')).description('null for campaign emails: rendered per recipient at delivery, not stored.').example('Welcome to Acme, Ada'),
  contactId: nullable(id), campaignId: nullable(id), templateId: nullable(id), isTest: Joi.boolean().example(false),
  attempts: countOf(1), messageId: nullable(Joi.string()).example('<0197a3c4-6a08-7f19-8e2d-3b5c7a9d1e24@example.com>'), error: nullable(Joi.string()),
  createdAt: instant, updatedAt: example(instant, EXAMPLE.later), sentAt: nullable(example(instant, EXAMPLE.later)),
  tracking: shape({ opens: Joi.boolean(), clicks: Joi.boolean() }),
  opens: countOf(2), firstOpenedAt: nullable(instant).example('2025-06-02T10:03:55.000Z'), clicks: countOf(0), firstClickedAt: nullable(instant),
};
export const emailAnswer = shape(emailFields).id('Email');
export const emailDetailAnswer = shape({
  ...emailFields,
  html: nullable(Joi.string().allow('')).example('<p>Hello Ada, welcome to Acme.</p>'),
  headers: Joi.object().pattern(Joi.string(), Joi.string().allow('')).example({ 'Message-ID': '<0193a8f2-6c1e-7b3a-9d4f-2e8c5a7b1f01@example.com>', Date: 'Thu, 26 Nov 2026 10:15:00 +0000', From: 'Acme <hello@example.com>', To: 'Ada Lovelace <ada@example.com>', Subject: 'Welcome to Acme' })
    .description('The main headers of its message (Message-ID, Date, From, To, Reply-To, Subject: absent for a campaign email, rendered at delivery) and the sender\'s own; the whole message is GET /emails/{id}/raw.'),
  timeline: Joi.array().items(shape({ type: text('email.sent'), at: example(instant, EXAMPLE.later), eventId: nullable(idOf(EXAMPLE.eventId)), data: anyObject.example({}) })),
}).id('EmailDetail');
// api/routes/overview.ts overviewJson (emails/overview.ts)
/** A UTC calendar day, YYYY-MM-DD (not an instant: OpenAPI's `date` format). */
const utcDay = Joi.string().pattern(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD');
const dayCounts = {
  sent: count.description('email.sent events that day.'), bounced: count.description('email.bounced events (hard and soft).'),
  complained: count.description('email.complained events.'), opened: count.description('email.opened events (at most one per email per tracking window).'),
  clicked: count.description('email.clicked events (at most one per email and link per tracking window).'), failed: count.description('email.failed events.'),
};
export const overviewAnswer = shape({
  days: Joi.number().integer().valid(...OVERVIEW_WINDOWS),
  from: utcDay.example('2026-11-20').description('The first day of the window (a UTC date).'),
  to: utcDay.example('2026-11-26').description('The last day of the window: today (UTC).'),
  series: Joi.array().items(shape({ day: utcDay.example('2026-11-26').description('A UTC date, YYYY-MM-DD.'), ...dayCounts })).description('Every UTC day of the window, oldest first, zeros included.'),
  totals: shape(dayCounts),
  queue: shape({
    depth: count.description(`The project's QUEUED emails, counted up to ${OVERVIEW_QUEUE_CAP}.`),
    depthExact: Joi.boolean().description('false when depth stopped counting at its cap.'),
    oldestAgeSeconds: Joi.number().min(0).example(4).description('Seconds since the oldest QUEUED email was stored; 0 when none is queued.'),
  }),
  domains: Joi.array().items(shape({
    id, domain: text('example.com'), status: Joi.string().valid('PENDING', 'VERIFIED', 'FAILED'), checkedAt: nullable(instant),
    issues: Joi.array().items(shape({
      code: Joi.string().valid('NOT_VERIFIED', 'VERIFICATION_FAILED', 'RECORD_FAILING'),
      record: nullable(Joi.string().valid('DKIM', 'SPF', 'DMARC', 'RETURN_PATH_MX', 'RETURN_PATH_SPF')),
      message: text('The DKIM record at herald._domainkey.example.com was not found.'),
    })),
  })).description('The sending domains that need attention (not verified, or a record failing), and why; empty when all is well.'),
}).id('Overview');

export const emailPageAnswer = cappedPageOf(emailAnswer);

// tracking/settings.ts ProjectSettings
const trackChoice = shape({ opens: Joi.boolean(), clicks: Joi.boolean() });
export const settingsAnswer = shape({
  name: text('Acme').description("The project's name."),
  tracking: shape({ send: trackChoice, campaigns: trackChoice }),
  requireTwoFactor: Joi.boolean().example(false).description('Members must have two-factor on: their sessions are refused (403 TWO_FACTOR_REQUIRED) until they do. API keys are not concerned.'),
  retentionDays: nullable(Joi.number().integer()).example(90).description("The project's own retention in days (emails, events, raw messages, attachments older are deleted); null: the installation's."),
  instanceRetentionDays: Joi.number().integer().example(365).description('RETENTION_DAYS: how long the installation keeps them, and the longest a project may ask for.'),
}).id('Settings');

// api/routes/webhooks.ts endpointJson, deliveryJson
export const webhookAnswer = shape({
  id: idOf(EXAMPLE.webhookId), url: text('https://hooks.example.com/herald'), events: Joi.array().items(Joi.string().valid(...WEBHOOK_EVENT_TYPES)).example(['email.sent', 'email.bounced']),
  enabled: Joi.boolean(), status: Joi.string().valid('healthy', 'failing'), failingSince: nullable(instant), lastError: nullable(Joi.string()),
  createdAt: instant, updatedAt: example(instant, EXAMPLE.later),
}).id('Webhook');
export const webhookWithSecretAnswer = webhookAnswer.keys(requiredKeys({
  secret: text('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').description('The whsec_ signing secret, shown in this answer only.'),
})).id('WebhookWithSecret');
export const webhookDeliveryAnswer = shape({
  id: idOf(EXAMPLE.deliveryId), messageId: text('msg_0197a3c47c5a7e38b2f46a8c0e2d4f71'), type: text('email.sent'),
  status: example(Joi.string().valid('PENDING', 'DELIVERING', 'SUCCEEDED', 'FAILED'), 'SUCCEEDED'),
  attempts: countOf(1), nextAttemptAt: nullable(instant), lastStatusCode: nullable(Joi.number().integer()).example(200),
  lastLatencyMs: nullable(Joi.number().integer()).example(84), lastError: nullable(Joi.string()), deliveredAt: nullable(example(instant, EXAMPLE.later)), createdAt: instant,
  payload: shape({ type: text('email.sent'), timestamp: instant, data: anyObject.example({ emailId: EXAMPLE.emailId, to: EXAMPLE.email }) }),
  attemptLog: Joi.array().items(shape({ attempt: Joi.number().integer().example(1), statusCode: nullable(Joi.number().integer()).example(200), latencyMs: Joi.number().integer().example(84), error: nullable(Joi.string()), at: example(instant, EXAMPLE.later) })),
}).id('WebhookDelivery');

// api/routes/automations.ts workflowJson, executionJson
export const workflowAnswer = shape({
  id: idOf(EXAMPLE.workflowId), name: text('Onboarding'), description: nullable(Joi.string().allow('')).example('Welcome new sign-ups, then nudge them after a day.'), enabled: Joi.boolean(),
  trigger: shape({ type: Joi.valid('EVENT'), event: text('signed-up') }),
  steps: Joi.array().items(Joi.object({ id: Joi.string().required(), type: Joi.string().valid(...STEP_TYPES).required() }).unknown(true)).example([
    { id: 'welcome', type: 'SEND_EMAIL', config: { template: EXAMPLE.templateId }, next: 'wait' },
    { id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'end' },
    { id: 'end', type: 'EXIT' },
  ]),
  allowReentry: Joi.boolean().example(false), createdAt: instant, updatedAt: example(instant, EXAMPLE.later),
}).id('Workflow');
export const executionAnswer = shape({
  id: idOf(EXAMPLE.executionId), workflowId: idOf(EXAMPLE.workflowId), contactId: id, contactEmail: text(EXAMPLE.email).description("The contact's address."),
  status: example(Joi.string().valid(...EXECUTION_STATUSES), 'WAITING'),
  currentStepId: nullable(Joi.string()).example('wait'),
  waitingFor: nullable(Joi.string()).optional().description('While WAITING: the event waited for (null: a delay).').example(null),
  waitingUntil: nullable(instant).optional().description('While WAITING: until when (null: no timeout).').example('2025-06-03T09:41:07.512Z'),
  startedAt: instant, updatedAt: example(instant, EXAMPLE.later), completedAt: nullable(instant), error: nullable(Joi.string()),
}).id('Execution');
// automations/trace.ts TraceEntry
export const executionDetailAnswer = executionAnswer.keys(requiredKeys({
  trace: Joi.array().items(shape({
    seq: Joi.number().integer().min(1).example(2).description('The step run\'s number in the execution (1 for the first).'),
    stepId: text('wait'),
    outcome: example(Joi.string().valid('DONE', 'WAITING', 'FAILED', 'CANCELLED'), 'WAITING')
      .description('DONE: the step did its work and the journey went on (or ended there); WAITING: the wait in progress; FAILED (with `error`); CANCELLED: the execution was cancelled during this step.'),
    branch: nullable(Joi.string().valid('yes', 'no')).example(null).description("A CONDITION's branch taken."),
    wokenBy: nullable(Joi.string().valid('event', 'timeout')).example(null).description('How a DELAY or WAIT_FOR_EVENT ended: the awaited event, or its deadline.'),
    error: nullable(Joi.string()).example(null),
    startedAt: instant, endedAt: nullable(instant).example(null).description('When the next step began or the execution ended; null while it is the current step.'),
  })).description('The steps this execution has run, oldest first (at most the latest 200).'),
  traceTruncated: Joi.boolean().example(false).description('Earlier step runs are left out of `trace` (a recurring journey that has looped for long).'),
})).id('ExecutionDetail');

// api/routes/domains.ts domainJson, domains/records.ts DomainRecord
const recordStatus = Joi.string().valid('PENDING', 'VERIFIED', 'FAILED');
export const domainAnswer = shape({
  id: idOf(EXAMPLE.domainId), domain: text('example.com'), status: recordStatus,
  records: Joi.array().items(shape({
    purpose: Joi.string().valid('DKIM', 'SPF', 'DMARC', 'RETURN_PATH_MX', 'RETURN_PATH_SPF'), type: Joi.string().valid('TXT', 'MX'),
    name: Joi.string(), value: Joi.string(), status: recordStatus, note: sometimes(Joi.string().optional()),
  })).example([
    { purpose: 'DKIM', type: 'TXT', name: 'herald._domainkey.example.com', value: 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdx/9wB2Ld0MGMk4Xr1SpHJMWPJuPNXFOrBmHgM4dfCQEpaW5OECvnA+WBjkMfh7Tk0/7Ax3NLwQBm+sN/L1HrVCt5aS+kgGa0gU3W8+bK2xDxGr6vXt4z0dUu7HDr1LwHcmQIDAQAB', status: 'PENDING' },
    { purpose: 'SPF', type: 'TXT', name: 'example.com', value: 'v=spf1 a mx ~all', status: 'PENDING' },
    { purpose: 'DMARC', type: 'TXT', name: '_dmarc.example.com', value: 'v=DMARC1; p=none', status: 'PENDING' },
  ]),
  createdAt: instant, verifiedAt: nullable(instant), checkedAt: nullable(instant),
}).id('Domain');

// verify/address.ts VerifyResult
export const verifyAnswer = shape({
  email: Joi.string().allow('').example('ada@gmial.com'), valid: Joi.boolean().example(false), isDisposable: Joi.boolean().example(false),
  isAlias: Joi.boolean().example(false), isTypo: Joi.boolean().example(true), isPlusAddressed: Joi.boolean().example(false),
  isPersonalEmail: Joi.boolean().example(false), domainExists: Joi.boolean().example(false), hasWebsite: Joi.boolean().example(false),
  hasMxRecords: Joi.boolean().example(false), reasons: Joi.array().items(Joi.string()).example(['Did you mean ada@gmail.com?']),
  suggestion: nullable(Joi.string()).example('ada@gmail.com'),
}).id('Verification');

// sending/sends.ts storeSends: one entry per recipient; contact and event only for a single recipient.
export const sendAnswer = shape({
  emails: Joi.array().items(shape({
    contact: shape({ id, email: text(EXAMPLE.email) }),
    email: nullable(idOf(EXAMPLE.emailId)).description('The email id (GET /emails/{id}); null when the recipient was SKIPPED.'),
    status: Joi.string().valid('QUEUED', 'SUPPRESSED', 'SKIPPED'),
    reason: sometimes(Joi.string().optional().description('Why SUPPRESSED (the suppression reason).')),
    skipped: sometimes(Joi.string().optional().description('Why SKIPPED (a MARKETING template to an unsubscribed contact).')),
  })),
  timestamp: instant,
  contact: id.optional().description('With a single recipient: its contact id.'),
  event: nullable(idOf(EXAMPLE.eventId)).optional().description('With a single recipient: the id of its email.queued or email.suppressed event.'),
}).id('SendResult');

// events/customEvents.ts Tracked
export const trackAnswer = shape({ contact: id, event: idOf(EXAMPLE.eventId), timestamp: instant }).id('TrackResult');

// api/routes/auth.ts: people, their projects and sessions.
export const userAnswer = shape({ id: idOf(EXAMPLE.userId), email: text(EXAMPLE.email), name: Joi.string().allow('').example('Ada Lovelace'), operator: Joi.boolean().example(false) }).id('User');
export const membershipAnswer = shape({
  projectId: idOf(EXAMPLE.projectId), projectName: text('Acme'), role: Joi.string().valid('owner', 'admin', 'member', 'viewer'), projectDisabled: Joi.boolean().example(false),
  twoFactorRequired: Joi.boolean().example(false).description('The project requires two-factor of its members: without it, a session is refused on its routes (403).'),
}).id('Membership');
export const sessionInfoAnswer = shape({
  id: idOf(EXAMPLE.sessionId), createdAt: instant, lastSeenAt: example(instant, EXAMPLE.later),
  expiresAt: example(instant, '2025-06-02T21:41:09.204Z').description('When it ends unless used again (idle) or at the latest (absolute).'),
  address: nullable(Joi.string()).example('203.0.113.7'), userAgent: nullable(Joi.string()).example('Mozilla/5.0 (X11; Linux x86_64; rv:139.0) Gecko/20100101 Firefox/139.0'), current: Joi.boolean(),
}).id('SessionInfo');
export const signedInAnswer = shape({
  user: userAnswer,
  operator: Joi.boolean().example(false),
  projects: Joi.array().items(membershipAnswer),
  session: shape({ id: idOf(EXAMPLE.sessionId), createdAt: instant, expiresAt: example(instant, '2025-06-02T21:41:07.512Z') }),
  twoFactor: shape({ enabled: Joi.boolean().example(false) }).description('Whether the person has TOTP two-factor on.'),
}).id('SignedIn');
/** POST /auth/login for an account with two-factor on: no session yet, the second step's challenge. */
export const twoFactorChallengeAnswer = shape({
  twoFactorRequired: Joi.boolean().valid(true),
  challenge: text('q3G8vN0tXb2kR7yPz5LwC1dM9hJ4sF6aE8uT0iO2nYc').description('Single-use, good for 5 minutes: send it with a code to POST /auth/login/two-factor.'),
  expiresAt: example(instant, '2025-06-02T09:46:07.512Z'),
}).id('TwoFactorChallenge');
export const loginAnswer = Joi.alternatives().try(signedInAnswer, twoFactorChallengeAnswer);
export const twoFactorEnrolmentAnswer = shape({
  secret: text('JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP').description('The TOTP secret (base32), for typing into an authenticator app.'),
  uri: text('otpauth://totp/Herald:ada%40example.com?issuer=Herald&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30')
    .description('The same as an `otpauth://totp/…` URI, for a QR code.'),
}).id('TwoFactorEnrolment');
export const recoveryCodesAnswer = shape({
  recoveryCodes: Joi.array().items(Joi.string()).example(['k7m2-q9x4', 'p3t8-w6z1', 'c5n9-h2r7', 'v8b4-j1y6', 'f6d3-s9l2', 'x2g7-m5q8', 'r9w1-t4k3', 'h4z6-n8c2', 'y1p5-b7v9', 'l3j8-d6f4']).description('Ten single-use codes for when the app is lost: shown in this answer only.'),
}).id('RecoveryCodes');
export const providersAnswer = shape({
  oidc: shape({
    enabled: Joi.boolean().description('Whether single sign-on with OpenID Connect is configured (OIDC_ISSUER).'),
    loginUrl: nullable(Joi.string()).example('/auth/oidc/login').description('Where the console sends the browser to sign in with the provider (`/auth/oidc/login`); null when SSO is off.'),
  }),
}).id('SignInProviders');
export const sessionListAnswer = shape({ items: Joi.array().items(sessionInfoAnswer) }).id('SessionList');
/** People (api/routes/members.ts, invitations.ts, auth.ts). */
const role = Joi.string().valid('owner', 'admin', 'member', 'viewer');
export const memberAnswer = shape({ userId: idOf(EXAMPLE.userId), email: text(EXAMPLE.email), name: Joi.string().allow('').example('Ada Lovelace'), role, createdAt: instant });
export const invitationAnswer = shape({
  id: idOf(EXAMPLE.invitationId), email: text('grace@example.com'), role: example(role, 'member'), createdAt: instant,
  expiresAt: example(instant, '2025-06-09T09:41:07.512Z'), invitedBy: nullable(idOf(EXAMPLE.userId)),
  link: sometimes(Joi.string().uri().optional()).description('The link to pass on (`PUBLIC_URL/app/invitation#token=…`): only when Herald did not mail it (no system sender).'),
});
export const acceptedAnswer = shape({
  userId: idOf(EXAMPLE.userId), email: text('grace@example.com'), projectId: idOf(EXAMPLE.projectId), role: example(role, 'member'), newAccount: Joi.boolean(),
});
export const resetRequestedAnswer = shape({ message: text('If an account has this address, a link to choose a new password is on its way.') });
export const resetAnswer = shape({ userId: idOf(EXAMPLE.userId), sessionsEnded: countOf(2) });
export const setupAnswer = shape({ userId: idOf(EXAMPLE.userId), email: text(EXAMPLE.email), projects: countOf(1) });
// api/routes/keys.ts keyJson
export const keyAnswer = shape({
  id: idOf(EXAMPLE.keyId), name: text('Billing service'), type: Joi.string().valid('secret', 'public').description('public: a pk_ key, for POST /v1/track from browsers.'),
  scope: example(Joi.string().valid('full', 'sending'), 'sending'), domains: nullable(Joi.array().items(Joi.string())).example(['example.com']),
  hint: text('9xQe').description('The last four characters of the key.'), createdAt: instant, lastUsedAt: nullable(instant).description('Kept to the minute.').example(null),
}).id('ApiKey');
export const keyWithSecretAnswer = keyAnswer.keys(requiredKeys({
  key: text('sk_4fGh7JkL2mN9pQ3rS8tV1wX6yZ0aB5cD2eF79xQe').description('The key, shown in this answer only.'),
})).id('ApiKeyWithSecret');

// api/routes/auditLog.ts auditJson
export const auditEntryAnswer = shape({
  id: idOf(EXAMPLE.auditId), actor: shape({ kind: example(Joi.string().valid('key', 'user', 'operator'), 'user'), id: nullable(idOf(EXAMPLE.userId)) }),
  operation: text('createWebhook'), resourceType: text('webhook'), resourceId: nullable(Joi.string()).example(EXAMPLE.webhookId),
  address: nullable(Joi.string()).example('203.0.113.7'), at: instant, details: anyObject.example({ url: 'https://hooks.example.com/herald' }),
}).id('AuditEntry');


/** A contact import (contacts/imports/imports.ts), as GET /contacts/imports/:id shows it. */
const importColumn = shape({
  column: text('Plan'), to: Joi.string().valid('email', 'subscribed', 'data', 'ignore').example('data'),
  key: Joi.string().optional().example('plan'), type: Joi.string().valid('string', 'number', 'boolean', 'date').optional().example('string'),
});
export const contactImportAnswer = shape({
  id: idOf(EXAMPLE.contactId),
  status: Joi.string().valid('QUEUED', 'RUNNING', 'COMPLETED', 'CANCELLED', 'FAILED').example('RUNNING'),
  fileName: nullable(text('customers.csv')),
  format: Joi.string().valid('csv', 'jsonl').example('csv'),
  delimiter: nullable(Joi.string().example(',')),
  fileBytes: countOf(52_428_800).description('The file\'s size.'),
  bytesRead: countOf(26_214_400).description('How far the import has read the file (its checkpoint): bytesRead / fileBytes is its progress.'),
  mode: Joi.string().valid('create', 'update', 'upsert').example('upsert'),
  dataMode: Joi.string().valid('merge', 'replace').example('merge'),
  columns: Joi.array().items(importColumn).example([{ column: 'Email', to: 'email' }, { column: 'Seats', to: 'data', key: 'seats', type: 'number' }]),
  defaultSubscribed: Joi.boolean().example(true),
  resubscribe: Joi.boolean().example(false),
  segmentId: nullable(Joi.string().guid()).example(null),
  rows: shape({
    read: countOf(500_000), created: countOf(420_000), updated: countOf(61_000),
    skipped: countOf(18_900).description('Rows that changed nothing: a known address in create mode, an unknown one in update mode, or the same values.'),
    failed: countOf(100).description('Refused rows (GET /contacts/imports/:id/errors).'),
  }),
  rowsPerSecond: countOf(24_000),
  error: nullable(Joi.string()).example(null),
  createdAt: instant, startedAt: nullable(instant), finishedAt: nullable(instant).example(null),
}).id('ContactImport');

export const contactImportPageAnswer = pageOf(contactImportAnswer);

export const importPreviewAnswer = shape({
  format: Joi.string().valid('csv', 'jsonl').example('csv'),
  delimiter: nullable(Joi.string().example(',')),
  columns: Joi.array().items(importColumn.keys({ samples: Joi.array().items(Joi.string()).required() })).example([
    { column: 'Email', to: 'email', samples: ['ada@example.com'] },
    { column: 'Seats', to: 'data', key: 'seats', type: 'number', samples: ['3'] },
  ]).description('The proposed column map, with a few values of each column.'),
  rows: Joi.array().items(Joi.alternatives(Joi.array().items(Joi.string()), anyObject)).example([['ada@example.com', '3']]),
  problems: Joi.array().items(shape({ line: countOf(7), reason: text('invalid email "ada@"') })).example([]),
}).id('ContactImportPreview');
// api/routes/inbound.ts (inbound/, issue 31)
export const inboundDomainAnswer = shape({
  id: idOf('0197a0c2-4a7c-7d31-8f2e-6b8d0f2a4c95'), domain: text('in.example.com'), status: recordStatus.example('VERIFIED'),
  records: Joi.array().items(shape({ type: Joi.string().valid('MX', 'TXT'), name: Joi.string(), value: Joi.string(), status: recordStatus }))
    .example([{ type: 'MX', name: 'in.example.com', value: '10 mx.herald.example.com', status: 'VERIFIED' },
      { type: 'TXT', name: '_herald.in.example.com', value: 'herald-inbound=3q2-7wEjRVZ4mqu8zN7v8A', status: 'VERIFIED' }])
    .description('The records to publish: the MX (mail for the domain reaches Herald\'s inbound listener through it) and the TXT record that proves the project owns the domain.'),
  createdAt: instant, checkedAt: nullable(instant), verifiedAt: nullable(instant),
}).id('InboundDomain');

export const inboundRouteAnswer = shape({
  id: idOf('0197a0c3-1b2d-7e4f-9a6c-8d0e2f4a6b7c'), domainId: idOf('0197a0c2-4a7c-7d31-8f2e-6b8d0f2a4c95'), match: text('support@in.example.com'),
  kind: Joi.string().valid('address', 'tag', 'domain').example('address'), priority: countOf(10),
  action: Joi.string().valid('webhook', 'store', 'reject').example('webhook'), endpointId: nullable(idOf(EXAMPLE.webhookId)),
  rejectMessage: nullable(Joi.string()).example(null), createdAt: instant, updatedAt: instant,
}).id('InboundRoute');

const mailbox = shape({ address: Joi.string().example('ada@example.org'), name: nullable(Joi.string()).example('Ada Lovelace') });
const verdict = Joi.string().valid('pass', 'fail', 'neutral', 'none', 'temperror', 'permerror', 'policy', 'softfail', 'skipped').example('pass');
const inboundAuth = Joi.object({
  spf: shape({ result: verdict, domain: nullable(Joi.string()).example('example.org') }),
  dkim: Joi.array().items(shape({ result: verdict, domain: Joi.string(), selector: nullable(Joi.string()), aligned: Joi.boolean() }))
    .example([{ result: 'pass', domain: 'example.org', selector: 's1', aligned: true }]),
  dmarc: shape({ result: verdict, domain: nullable(Joi.string()).example('example.org'), policy: nullable(Joi.string()).example('reject') }),
  arc: shape({ result: verdict.example('none') }),
  error: sometimes(Joi.string().optional()),
}).description('SPF, DKIM, DMARC and ARC of the message as it arrived (mailauth); reported, not acted on.');
const inboundFields = {
  id: idOf('0197a3c6-2d4f-7a81-b3c5-7e9f1a3b5d7f'), routeId: nullable(idOf('0197a0c3-1b2d-7e4f-9a6c-8d0e2f4a6b7c')),
  recipient: text('support@in.example.com'), mailFrom: Joi.string().allow('').example('ada@example.org'), remoteAddress: nullable(Joi.string()).example('192.0.2.25'),
  from: nullable(mailbox), to: Joi.array().items(mailbox).example([{ address: 'support@in.example.com', name: null }]), cc: Joi.array().items(mailbox).example([]),
  replyTo: Joi.array().items(mailbox).example([]), subject: nullable(Joi.string()).example('Re: Your order has shipped'), date: nullable(instant),
  messageId: nullable(Joi.string()).example('<CAF=x1@mail.example.org>'), inReplyToMessageId: nullable(Joi.string()).example(`<${EXAMPLE.emailId}@example.com>`),
  references: Joi.array().items(Joi.string()).example([`<${EXAMPLE.emailId}@example.com>`]),
  attachments: Joi.array().items(shape({ index: count, attachmentId: id, filename: Joi.string(), contentType: Joi.string(), disposition: Joi.string(), contentId: nullable(Joi.string()), size: count }))
    .example([{ index: 0, attachmentId: '0197a3c6-2d50-7b12-8c3d-4e5f6a7b8c9d', filename: 'invoice.pdf', contentType: 'application/pdf', disposition: 'attachment', contentId: null, size: 48213 }]),
  auth: inboundAuth,
  warnings: Joi.array().items(Joi.string()).example([]).description('What could not be read (malformed MIME, no From, an undecodable charset): the message is kept as received.'),
  inReplyTo: nullable(shape({ emailId: idOf(EXAMPLE.emailId), contactId: nullable(idOf(EXAMPLE.contactId)) }))
    .description('The email Herald sent that this message replies to (by In-Reply-To or References), and its contact.'),
  size: countOf(5120), createdAt: instant,
};
export const inboundMessageAnswer = shape(inboundFields).id('InboundMessage');
export const inboundMessageDetailAnswer = shape({
  ...inboundFields,
  text: nullable(Joi.string()).example('Thanks, it arrived!'), html: nullable(Joi.string()).example('<p>Thanks, it arrived!</p>'),
  headers: Joi.array().items(shape({ name: Joi.string(), value: Joi.string() })).example([{ name: 'Subject', value: 'Re: Your order has shipped' }]),
}).id('InboundMessageDetail');
// contacts/dataExport.ts documentOf: GET /contacts/:id/export, a file (no envelope).
const timelineEntryAnswer = shape({ type: text('email.sent'), at: instant, eventId: nullable(idOf(EXAMPLE.eventId)), data: anyObject.example({}) });
export const contactDataAnswer = shape({
  exportedAt: instant,
  contact: contactAnswer,
  events: Joi.array().items(shape({ id: idOf(EXAMPLE.eventId), name: text('contact.subscribed'), data: anyObject.example({ source: 'api' }), createdAt: instant }))
    .description("Events about the contact itself; an email's events are in its timeline."),
  emails: Joi.array().items(shape({
    id: idOf(EXAMPLE.emailId), status: Joi.string().valid(...EMAIL_STATUSES).example('SENT'), from: text('hello@acme.com'), fromName: nullable(text('Acme')),
    replyTo: nullable(Joi.string()).example(null), to: text(EXAMPLE.email), toName: nullable(Joi.string()).example(null),
    subject: nullable(text('Welcome')).description("Null for a campaign email: rendered when it is sent, not stored."), html: nullable(text('<p>Hello Ada</p>')),
    headers: anyObject.example({}), campaignId: nullable(id).example(null), templateId: nullable(id).example(null), isTest: Joi.boolean().example(false),
    attachments: Joi.array().items(shape({ filename: text('invoice.pdf'), contentType: text('application/pdf'), size: countOf(48213) })),
    messageId: nullable(Joi.string()).example(null), error: nullable(Joi.string()).example(null), opens: count, clicks: count,
    createdAt: instant, sentAt: nullable(instant), timeline: Joi.array().items(timelineEntryAnswer),
  })),
  suppressions: Joi.array().items(shape({ email: text(EXAMPLE.email), reason: Joi.string().valid(...SUPPRESSION_REASONS).example('complaint'), details: anyObject.example({}), createdAt: instant })),
  segments: Joi.array().items(shape({ id, name: text('Pro customers'), type: Joi.string().valid('DYNAMIC', 'STATIC').example('DYNAMIC') })),
  automationExecutions: Joi.array().items(shape({
    id: idOf(EXAMPLE.executionId), workflowId: idOf(EXAMPLE.workflowId), workflowName: text('Onboarding'), status: Joi.string().valid(...EXECUTION_STATUSES).example('COMPLETED'),
    error: nullable(Joi.string()).example(null), startedAt: instant, completedAt: nullable(instant),
    steps: Joi.array().items(shape({ stepId: text('welcome'), outcome: anyObject.example({}), at: instant })),
  })),
}).id('ContactData');
