import Joi from 'joi';
import { SUPPRESSION_REASONS } from '../../audience/suppressions';
import { conditionSchema } from '../../audience/condition';
import { EXECUTION_STATUSES, STEP_TYPES } from '../../automations/steps';
import { EMAIL_STATUSES } from '../../emails/emails';
import { WEBHOOK_EVENT_TYPES } from '../../webhooks/types';

/**
 * The answers' shapes, as the routes' shapers write them (api/routes/*Json, and the business's answers that routes pass
 * on): the source of the document's response schemas (api/openapi/), converted from Joi as the request schemas are.
 * Every key a shaper always writes is required; `null` is allowed where the shaper can write it. The tests validate
 * real answers against them (test/api/openapi.test.ts).
 */

/** Every key required unless marked optional (key by key: a preference would also reach into the reused request schemas). */
const requiredKeys = (keys: Record<string, Joi.Schema>) =>
  Object.fromEntries(Object.entries(keys).map(([k, s]) => [k, s.$_getFlag('presence') === 'optional' ? s : s.required()]));
const shape = (keys: Record<string, Joi.Schema>) => Joi.object(requiredKeys(keys));
const instant = Joi.string().isoDate();
const id = Joi.string().guid();
const nullable = <T extends Joi.Schema>(s: T) => s.allow(null);
/** Free-form JSON object (contact data, event data, a workflow step's config). */
const anyObject = Joi.object().unknown(true);
const count = Joi.number().integer().min(0);

export const successOf = (data: Joi.Schema) => shape({ success: Joi.valid(true), data });

/** A page of a list (api/pagination.ts toPage). */
export const pageOf = (item: Joi.Schema, extra: Record<string, Joi.Schema> = {}) => shape({
  items: Joi.array().items(item),
  nextCursor: nullable(Joi.string()).description('Pass as `cursor` for the next page; null on the last one.'),
  hasMore: Joi.boolean(),
  total: Joi.number().integer().min(0),
  ...extra,
});

/** api/middleware/errorHandler.ts ErrorBody: the envelope, with the second shape's `code`, `message` and `time` beside it. */
export const errorAnswer = shape({
  success: Joi.valid(false),
  error: shape({
    code: Joi.string().description('BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, PROJECT_DISABLED, NOT_FOUND, METHOD_NOT_ALLOWED, CONFLICT, PAYLOAD_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, VALIDATION_ERROR, RATE_LIMITED, INTERNAL_ERROR'),
    message: Joi.string(),
    statusCode: Joi.number().integer(),
    requestId: Joi.string(),
    errors: Joi.array().items(shape({ field: Joi.string().allow(''), message: Joi.string(), code: Joi.string() })).optional(),
    suggestion: Joi.string().optional(),
  }),
  timestamp: instant,
  code: Joi.number().integer().description('The HTTP status (the `{ code, error, message, time }` shape Plunk clients read).'),
  message: Joi.string(),
  time: Joi.number().integer().description('Epoch milliseconds, the same instant as `timestamp`.'),
}).id('Error');

export const healthAnswer = Joi.object({
  status: Joi.string().valid('ok', 'unavailable').required(),
  checks: Joi.object({ database: Joi.string().valid('unreachable') }),
});

// api/routes/contacts.ts contactJson
export const contactAnswer = shape({
  id, email: Joi.string(), subscribed: Joi.boolean(), data: anyObject, createdAt: instant, updatedAt: instant,
}).id('Contact');

export const savedContactAnswer = contactAnswer.keys(requiredKeys({ _meta: shape({ isNew: Joi.boolean(), isUpdate: Joi.boolean() }) })).id('SavedContact');

export const contactPageAnswer = pageOf(contactAnswer, {
  contacts: Joi.array().items(contactAnswer).description('The same as items (the spec names the list both ways).'),
  cursor: nullable(Joi.string()).description('The same as nextCursor.'),
});

// api/routes/templates.ts templateJson
export const templateAnswer = shape({
  id, name: Joi.string(), description: nullable(Joi.string().allow('')), subject: Joi.string(), body: Joi.string(),
  from: nullable(Joi.string()), fromName: nullable(Joi.string().allow('')), replyTo: nullable(Joi.string()),
  type: Joi.string().valid('TRANSACTIONAL', 'MARKETING'), bodyType: Joi.string().valid('html', 'markdown'),
  createdAt: instant, updatedAt: instant,
}).id('Template');

// api/routes/segments.ts segmentJson
export const segmentAnswer = shape({
  id, name: Joi.string(), description: nullable(Joi.string().allow('')), type: Joi.string().valid('DYNAMIC', 'STATIC'),
  condition: nullable(conditionSchema),
  memberCount: nullable(Joi.number().integer().min(0)).description('null when the stored condition cannot be evaluated; `error` says why.'),
  error: nullable(Joi.string()), createdAt: instant, updatedAt: instant,
}).id('Segment');

export const segmentPreviewAnswer = shape({ count: Joi.number().integer().min(0), contacts: Joi.array().items(contactAnswer) });
export const membersAddedAnswer = shape({ added: Joi.number().integer().min(0), created: Joi.number().integer().min(0), memberCount: Joi.number().integer().min(0) });
export const membersRemovedAnswer = shape({ removed: Joi.number().integer().min(0), memberCount: Joi.number().integer().min(0) });

// api/routes/campaigns.ts campaignJson
export const campaignAnswer = shape({
  id, name: Joi.string(), description: nullable(Joi.string().allow('')), subject: Joi.string(), body: Joi.string(),
  from: Joi.string(), fromName: nullable(Joi.string().allow('')), replyTo: nullable(Joi.string()), type: Joi.valid('MARKETING'),
  status: Joi.string().valid('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED', 'FAILED'),
  audienceType: Joi.string().valid('ALL', 'SEGMENT', 'FILTERED'), segmentId: nullable(id), audienceFilter: nullable(conditionSchema),
  scheduledAt: nullable(instant), startedAt: nullable(instant), completedAt: nullable(instant), cancelledAt: nullable(instant),
  totalRecipients: nullable(Joi.number().integer().min(0)), error: nullable(Joi.string()), createdAt: instant, updatedAt: instant,
}).id('Campaign');

export const campaignTestAnswer = shape({ emails: Joi.array().items(shape({ email: Joi.string(), id })) });

// db/queries/campaigns.ts CampaignStats
export const campaignStatsAnswer = shape({
  totalRecipients: count, queued: count, sent: count, delivered: count, opened: count, clicked: count, bounced: count,
  complained: count, failed: count, unsubscribed: count, openRate: Joi.number().min(0), clickRate: Joi.number().min(0),
  opens: count, uniqueOpens: count, clicks: count, uniqueClicks: count,
  links: Joi.array().items(shape({ url: Joi.string(), clicks: count, uniqueClicks: count })),
}).id('CampaignStats');

// api/routes/events.ts eventJson
export const eventAnswer = shape({
  id, name: Joi.string(), contactId: nullable(id), emailId: nullable(id), data: anyObject, createdAt: instant,
}).id('Event');
export const eventNamesAnswer = shape({ items: Joi.array().items(shape({ name: Joi.string(), count: count, lastSeenAt: instant })) });

// api/routes/suppressions.ts suppressionJson
export const suppressionAnswer = shape({
  id, email: Joi.string(), reason: Joi.string().valid(...SUPPRESSION_REASONS), details: anyObject.allow(null), createdAt: instant,
}).id('Suppression');

// api/routes/emails.ts emailJson
const emailFields = {
  id, status: Joi.string().valid(...EMAIL_STATUSES), from: Joi.string(), fromName: nullable(Joi.string().allow('')),
  replyTo: nullable(Joi.string()), to: Joi.string(), toName: nullable(Joi.string().allow('')),
  subject: nullable(Joi.string().allow('')).description('null for campaign emails: rendered per recipient at delivery, not stored.'),
  contactId: nullable(id), campaignId: nullable(id), templateId: nullable(id), isTest: Joi.boolean(),
  attempts: count, messageId: nullable(Joi.string()), error: nullable(Joi.string()),
  createdAt: instant, updatedAt: instant, sentAt: nullable(instant),
  tracking: shape({ opens: Joi.boolean(), clicks: Joi.boolean() }),
  opens: count, firstOpenedAt: nullable(instant), clicks: count, firstClickedAt: nullable(instant),
};
export const emailAnswer = shape(emailFields).id('Email');
export const emailDetailAnswer = shape({
  ...emailFields,
  html: nullable(Joi.string().allow('')),
  timeline: Joi.array().items(shape({ type: Joi.string(), at: instant, eventId: nullable(id), data: anyObject })),
}).id('EmailDetail');
export const emailPageAnswer = pageOf(emailAnswer, { totalExact: Joi.boolean().description('false when total stopped counting at its cap.') });

// tracking/settings.ts ProjectSettings
const trackChoice = shape({ opens: Joi.boolean(), clicks: Joi.boolean() });
export const settingsAnswer = shape({
  tracking: shape({ send: trackChoice, campaigns: trackChoice }),
  requireTwoFactor: Joi.boolean().description('Members must have two-factor on: their sessions are refused (403 TWO_FACTOR_REQUIRED) until they do. API keys are not concerned.'),
}).id('Settings');

// api/routes/webhooks.ts endpointJson, deliveryJson
export const webhookAnswer = shape({
  id, url: Joi.string(), events: Joi.array().items(Joi.string().valid(...WEBHOOK_EVENT_TYPES)), enabled: Joi.boolean(),
  status: Joi.string().valid('healthy', 'failing'), failingSince: nullable(instant), lastError: nullable(Joi.string()),
  createdAt: instant, updatedAt: instant,
}).id('Webhook');
export const webhookWithSecretAnswer = webhookAnswer.keys(requiredKeys({ secret: Joi.string().description('The whsec_ signing secret, shown in this answer only.') })).id('WebhookWithSecret');
export const webhookDeliveryAnswer = shape({
  id, messageId: Joi.string(), type: Joi.string(), status: Joi.string().valid('PENDING', 'DELIVERING', 'SUCCEEDED', 'FAILED'),
  attempts: count, nextAttemptAt: nullable(instant), lastStatusCode: nullable(Joi.number().integer()),
  lastLatencyMs: nullable(Joi.number().integer()), lastError: nullable(Joi.string()), deliveredAt: nullable(instant), createdAt: instant,
  payload: shape({ type: Joi.string(), timestamp: instant, data: anyObject }),
  attemptLog: Joi.array().items(shape({ attempt: Joi.number().integer(), statusCode: nullable(Joi.number().integer()), latencyMs: Joi.number().integer(), error: nullable(Joi.string()), at: instant })),
}).id('WebhookDelivery');

// api/routes/automations.ts workflowJson, executionJson
export const workflowAnswer = shape({
  id, name: Joi.string(), description: nullable(Joi.string().allow('')), enabled: Joi.boolean(),
  trigger: shape({ type: Joi.valid('EVENT'), event: Joi.string() }),
  steps: Joi.array().items(Joi.object({ id: Joi.string().required(), type: Joi.string().valid(...STEP_TYPES).required() }).unknown(true)),
  allowReentry: Joi.boolean(), createdAt: instant, updatedAt: instant,
}).id('Workflow');
export const executionAnswer = shape({
  id, workflowId: id, contactId: id, status: Joi.string().valid(...EXECUTION_STATUSES), currentStepId: nullable(Joi.string()),
  waitingFor: nullable(Joi.string()).optional().description('While WAITING: the event waited for (null: a delay).'),
  waitingUntil: nullable(instant).optional().description('While WAITING: until when (null: no timeout).'),
  startedAt: instant, completedAt: nullable(instant), error: nullable(Joi.string()),
}).id('Execution');

// api/routes/domains.ts domainJson, domains/records.ts DomainRecord
const recordStatus = Joi.string().valid('PENDING', 'VERIFIED', 'FAILED');
export const domainAnswer = shape({
  id, domain: Joi.string(), status: recordStatus,
  records: Joi.array().items(shape({
    purpose: Joi.string().valid('DKIM', 'SPF', 'DMARC', 'RETURN_PATH_MX', 'RETURN_PATH_SPF'), type: Joi.string().valid('TXT', 'MX'),
    name: Joi.string(), value: Joi.string(), status: recordStatus, note: Joi.string().optional(),
  })),
  createdAt: instant, verifiedAt: nullable(instant), checkedAt: nullable(instant),
}).id('Domain');

// verify/address.ts VerifyResult
export const verifyAnswer = shape({
  email: Joi.string().allow(''), valid: Joi.boolean(), isDisposable: Joi.boolean(), isAlias: Joi.boolean(), isTypo: Joi.boolean(),
  isPlusAddressed: Joi.boolean(), isPersonalEmail: Joi.boolean(), domainExists: Joi.boolean(), hasWebsite: Joi.boolean(),
  hasMxRecords: Joi.boolean(), reasons: Joi.array().items(Joi.string()), suggestion: nullable(Joi.string()),
}).id('Verification');

// sending/sends.ts storeSends: one entry per recipient; contact and event only for a single recipient.
export const sendAnswer = shape({
  emails: Joi.array().items(shape({
    contact: shape({ id, email: Joi.string() }),
    email: nullable(id).description('The email id (GET /emails/{id}); null when the recipient was SKIPPED.'),
    status: Joi.string().valid('QUEUED', 'SUPPRESSED', 'SKIPPED'),
    reason: Joi.string().optional().description('Why SUPPRESSED (the suppression reason).'),
    skipped: Joi.string().optional().description('Why SKIPPED (a MARKETING template to an unsubscribed contact).'),
  })),
  timestamp: instant,
  contact: id.optional().description('With a single recipient: its contact id.'),
  event: nullable(id).optional().description('With a single recipient: the id of its email.queued or email.suppressed event.'),
}).id('SendResult');

// events/customEvents.ts Tracked
export const trackAnswer = shape({ contact: id, event: id, timestamp: instant }).id('TrackResult');

// api/routes/auth.ts: people, their projects and sessions.
export const userAnswer = shape({ id, email: Joi.string(), name: Joi.string().allow(''), operator: Joi.boolean() }).id('User');
export const membershipAnswer = shape({
  projectId: id, projectName: Joi.string(), role: Joi.string().valid('owner', 'admin', 'member', 'viewer'), projectDisabled: Joi.boolean(),
  twoFactorRequired: Joi.boolean().description('The project requires two-factor of its members: without it, a session is refused on its routes (403).'),
}).id('Membership');
export const sessionInfoAnswer = shape({
  id, createdAt: instant, lastSeenAt: instant, expiresAt: instant.description('When it ends unless used again (idle) or at the latest (absolute).'),
  address: nullable(Joi.string()), userAgent: nullable(Joi.string()), current: Joi.boolean(),
}).id('SessionInfo');
export const signedInAnswer = shape({
  user: userAnswer,
  operator: Joi.boolean(),
  projects: Joi.array().items(membershipAnswer),
  session: shape({ id, createdAt: instant, expiresAt: instant }),
  twoFactor: shape({ enabled: Joi.boolean() }).description('Whether the person has TOTP two-factor on.'),
}).id('SignedIn');
/** POST /auth/login for an account with two-factor on: no session yet, the second step's challenge. */
export const twoFactorChallengeAnswer = shape({
  twoFactorRequired: Joi.boolean().valid(true),
  challenge: Joi.string().description('Single-use, good for 5 minutes: send it with a code to POST /auth/login/two-factor.'),
  expiresAt: instant,
}).id('TwoFactorChallenge');
export const loginAnswer = Joi.alternatives().try(signedInAnswer, twoFactorChallengeAnswer);
export const twoFactorEnrolmentAnswer = shape({
  secret: Joi.string().description('The TOTP secret (base32), for typing into an authenticator app.'),
  uri: Joi.string().description('The same as an `otpauth://totp/…` URI, for a QR code.'),
}).id('TwoFactorEnrolment');
export const recoveryCodesAnswer = shape({
  recoveryCodes: Joi.array().items(Joi.string()).description('Ten single-use codes for when the app is lost: shown in this answer only.'),
}).id('RecoveryCodes');
export const providersAnswer = shape({
  oidc: shape({
    enabled: Joi.boolean().description('Whether single sign-on with OpenID Connect is configured (OIDC_ISSUER).'),
    loginUrl: nullable(Joi.string()).description('Where the console sends the browser to sign in with the provider (`/auth/oidc/login`); null when SSO is off.'),
  }),
}).id('SignInProviders');
export const sessionListAnswer = shape({ items: Joi.array().items(sessionInfoAnswer) }).id('SessionList');
/** People (api/routes/members.ts, invitations.ts, auth.ts). */
const role = Joi.string().valid('owner', 'admin', 'member', 'viewer');
export const memberAnswer = shape({ userId: id, email: Joi.string(), name: Joi.string().allow(''), role, createdAt: instant });
export const invitationAnswer = shape({
  id, email: Joi.string(), role, createdAt: instant, expiresAt: instant, invitedBy: nullable(id),
  link: Joi.string().uri().optional().description('The link to pass on (`PUBLIC_URL/app/invitation#token=…`): only when Herald did not mail it (no system sender).'),
});
export const acceptedAnswer = shape({ userId: id, email: Joi.string(), projectId: id, role, newAccount: Joi.boolean() });
export const resetRequestedAnswer = shape({ message: Joi.string() });
export const resetAnswer = shape({ userId: id, sessionsEnded: count });
export const setupAnswer = shape({ userId: id, email: Joi.string(), projects: count });
// api/routes/keys.ts keyJson
export const keyAnswer = shape({
  id, name: Joi.string(), type: Joi.string().valid('secret', 'public').description('public: a pk_ key, for POST /v1/track from browsers.'),
  scope: Joi.string().valid('full', 'sending'), domains: nullable(Joi.array().items(Joi.string())),
  hint: Joi.string().description('The last four characters of the key.'), createdAt: instant, lastUsedAt: nullable(instant).description('Kept to the minute.'),
}).id('ApiKey');
export const keyWithSecretAnswer = keyAnswer.keys(requiredKeys({ key: Joi.string().description('The key, shown in this answer only.') })).id('ApiKeyWithSecret');

// api/routes/auditLog.ts auditJson
export const auditEntryAnswer = shape({
  id, actor: shape({ kind: Joi.string().valid('key', 'user', 'operator'), id: nullable(id) }), operation: Joi.string(),
  resourceType: Joi.string(), resourceId: nullable(Joi.string()), address: nullable(Joi.string()), at: instant, details: anyObject,
}).id('AuditEntry');

