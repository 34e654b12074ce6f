import type { Knex } from 'knex';
import { countCampaignAudience } from '../audience/campaignAudience';
import { addressHashKey } from '../audience/suppressions';
import { checkCondition } from '../audience/check';
import { resolveSegments } from '../audience/compile';
import type { AudienceCondition } from '../audience/condition';
import { isUnusableCondition, unusableCondition } from '../audience/segmentQueries';
import { conflict, invalid, notFound, type FieldError } from '../core/errors';
import { isUuid } from '../core/values';
import { listPage, type Listed, type PageRequest } from '../db/pages';
import { campaignStats, campaignVariantStats, deleteCampaignStats, type CampaignStats, type VariantStats } from '../db/queries/campaigns';
import { isVerifiedSender } from '../db/queries/domains';
import { queueTestEmails } from '../db/queries/testEmails';
import { dispatchCampaign } from './dispatch';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import { checkTemplate, messageScope, type Renderer, type RenderScope, type TemplateProblem } from '../mail/render';
import { withPreviewText } from '../mail/campaign';
import { WAKE_TOPIC } from '../workflows/policy';
import {
  AB_LIMITS, keyOf, readVariants, readVariantsOf, resolveVariant, sampleShareProblem, variantContents, variantInputOf, VARIANT_KEYS, writeVariants,
  type AbDecision, type AbMetric, type AbPhase, type AbTestSettings, type VariantInput, type VariantKey, type VariantRow,
} from './abTest';
import { certainties, type Significance } from './abDecision';
import { applyTemplate, type AppliedParts } from '../mail/applyTemplate';
import { readTemplate, type CampaignContentRow } from './content';
import { workflowId } from '../workflows/registry';
import { cancelCampaignRows } from './lifecycle';
import { campaignSeries, type CampaignSeries, type SeriesInterval } from './series';
import { audited, type Actor } from '../audit/log';

/**
 * Campaigns (spec 4.5): written as DRAFTs, sent now or at a time by the engine (workflows/sendCampaign.ts), cancelled,
 * tested. Every call is scoped to the project; another project's campaign is not found.
 */

export type AudienceType = 'ALL' | 'SEGMENT' | 'FILTERED';
export type CampaignStatus = 'DRAFT' | 'SCHEDULED' | 'SENDING' | 'SENT' | 'CANCELLED' | 'FAILED';

/** A campaign as written through any way in (create; an update takes any part of it). */
export interface CampaignInput {
  name: string;
  description?: string | null;
  /**
   * A template of the project: each of subject, body, from, fromName and replyTo that the campaign leaves out (or sets
   * to null) is the template's (mail/applyTemplate.ts). Null: none.
   */
  templateId?: string | null;
  subject?: string | null;
  body?: string | null;
  from?: string | null;
  fromName?: string | null;
  replyTo?: string | null;
  audienceType: AudienceType;
  segmentId?: string;
  audienceFilter?: AudienceCondition;
  /** The inbox's line after the subject (a hidden preheader; Liquid like the body). Null: none. */
  previewText?: string | null;
  /** 2–5 variants of the message (an A/B campaign, with `abTest`); null or empty: none. */
  variants?: VariantInput[] | null;
  /** The A/B test of the variants: its sample's share, its wait and its metric (campaigns/abTest.ts). Null: none. */
  abTest?: AbTestSettings | null;
}

export interface CampaignRow extends CampaignContentRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  audience_type: AudienceType;
  segment_id: string | null;
  audience_filter: AudienceCondition | null;
  status: CampaignStatus;
  scheduled_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  cancelled_at: Date | null;
  total_recipients: number | null;
  /** Read with the row (campaignRows): the campaign's emails so far, from its kept stats; null before its first batch. */
  recipients_so_far?: number | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  preview_text: string | null;
  ab_sample_percent: number | null;
  ab_wait_minutes: number | null;
  ab_metric: AbMetric | null;
  ab_phase: AbPhase | null;
  ab_sample_size: number | null;
  ab_ends_at: Date | null;
  ab_chosen: number | null;
  ab_winner: number | null;
  ab_decided_at: Date | null;
  ab_decision: AbDecision | null;
  /** Its variants (an A/B campaign's), read with the row by the service; empty for a plain campaign. */
  variants: VariantRow[];
}

/**
 * Campaigns as the API answers them. total_recipients is set when a campaign has sent; until then (sending, cancelled,
 * failed) its recipients so far come from its kept stats (campaign_stats' total, a few rows by its key), so that
 * GET /campaigns/:id says how many it has queued while the stats count them.
 */
const campaignRows = (db: Knex) => db('campaigns').select('campaigns.*', db.raw(
  '(SELECT sum(s.total)::int FROM campaign_stats s WHERE s.project_id = campaigns.project_id AND s.campaign_id = campaigns.id) AS recipients_so_far'));

/** Who a campaign goes to: everyone subscribed, a segment's subscribed members, or those a filter matches. */
export type Audience = Pick<CampaignInput, 'audienceType' | 'segmentId' | 'audienceFilter'>;

type Message = Pick<CampaignInput, 'templateId' | 'subject' | 'body' | 'from' | 'fromName' | 'replyTo' | 'previewText'>;
type Test = Pick<CampaignInput, 'variants' | 'abTest'>;
type Content = Message & Audience & Test;

/** A stored campaign's A/B test settings, as a request gives them. */
const abTestOf = (c: CampaignRow): AbTestSettings | null => (c.ab_metric
  ? { samplePercent: c.ab_sample_percent!, waitMinutes: c.ab_wait_minutes!, metric: c.ab_metric } : null);

/**
 * A stored campaign's message and audience, as a request gives them. Once it has started sending, its message is the
 * copy it took then (campaigns/content.ts frozenContent): its template is no longer read, and may be gone.
 */
const contentOf = (c: CampaignRow): Content => ({
  templateId: c.started_at ? null : c.template_id, subject: c.subject, body: c.body, from: c.from_email, fromName: c.from_name, replyTo: c.reply_to,
  previewText: c.preview_text, audienceType: c.audience_type, segmentId: c.segment_id ?? undefined, audienceFilter: c.audience_filter ?? undefined,
  variants: c.variants.map(variantInputOf), abTest: abTestOf(c),
});

/**
 * An audience's segment and filter, checked as a campaign's are (segmentId for a SEGMENT audience, audienceFilter for
 * a FILTERED one, each naming a field of the request): the errors, and the filter to store.
 */
async function checkAudience(db: Knex, projectId: string, a: Audience): Promise<{ errors: FieldError[]; filter: AudienceCondition | null }> {
  const errors: FieldError[] = [];
  if (a.audienceType === 'SEGMENT') {
    if (!a.segmentId) errors.push({ field: 'segmentId', message: 'segmentId is required for a SEGMENT audience', code: 'required' });
    else if (!(await db('segments').where({ project_id: projectId, id: a.segmentId.toLowerCase() }).first('id'))) {
      errors.push({ field: 'segmentId', message: 'segment not found', code: 'not_found' });
    }
  }
  let filter: AudienceCondition | null = null;
  if (a.audienceType === 'FILTERED') {
    if (!a.audienceFilter) errors.push({ field: 'audienceFilter', message: 'audienceFilter is required for a FILTERED audience', code: 'required' });
    else {
      const problems = checkCondition(a.audienceFilter, 'audienceFilter');
      if (!problems.length) problems.push(...(await resolveSegments(db, projectId, a.audienceFilter, 'audienceFilter')).errors);
      errors.push(...problems);
      filter = a.audienceFilter;
    }
  }
  return { errors, filter };
}

/**
 * A campaign's message as it goes now, its own parts and the rest its template's (read anew), checked for what a
 * request's shape cannot tell: the template is the project's; subject, body and sender are given by one or the other;
 * the content parses and renders within the budgets (for `recipients`, by default one with no data); the sender is at
 * a verified domain. The errors name the request's fields (a template's own part at fault: `templateId`).
 */
async function checkMessage(db: Knex, render: Renderer, projectId: string, c: Message, recipients?: { email: string; scope: RenderScope }[]): Promise<{ errors: FieldError[]; message: AppliedParts }> {
  const template = c.templateId ? (isUuid(c.templateId) ? await readTemplate(db, projectId, c.templateId) : undefined) : undefined;
  const message = applyTemplate({ subject: c.subject, body: c.body, from: c.from ? { email: c.from } : null, fromName: c.fromName, replyTo: c.replyTo }, template);
  if (c.templateId && !template) {
    return { errors: [{ field: 'templateId', message: 'template not found in this project', code: 'not_found' }], message };
  }
  const errors: FieldError[] = [];
  const required = (field: 'subject' | 'body' | 'from') => errors.push({
    field, code: 'required',
    message: template ? `${field} is required: the template has none` : `${field} is required unless the campaign uses a template (templateId) that gives it`,
  });
  if (!message.subject) required('subject');
  if (!message.body) required('body');
  if (!message.from) required('from');
  const scopes = recipients?.map((r) => r.scope);
  const forWhom = (problem: TemplateProblem) => (recipients ? `${problem.message} (for ${recipients[problem.index]!.email})` : problem.message);
  const preview = c.previewText ? await checkPreviewText(render, c.previewText, scopes) : undefined;
  if (preview) errors.push({ field: 'previewText', code: preview.code, message: forWhom(preview) });
  if (message.subject && message.body && !preview) {
    const problem = await checkTemplate(render, message.subject, withPreviewText(message.body, c.previewText, message.markdown), scopes, message.markdown);
    if (problem) errors.push({ field: (problem.part === 'subject' ? c.subject : c.body) ? problem.part : 'templateId', code: problem.code, message: forWhom(problem) });
  }
  if (message.from && !(await isVerifiedSender(db, projectId, message.from.email))) {
    errors.push({ field: 'from', message: `${message.from.email} is not at a verified domain of this project`, code: 'unverified_domain' });
  }
  return { errors, message };
}

/** A preview text checked on its own, as a subject is (it renders into the body's preheader: campaigns send it there). */
async function checkPreviewText(render: Renderer, previewText: string, scopes?: RenderScope[]): Promise<TemplateProblem | undefined> {
  return checkTemplate(render, previewText, ' ', scopes);
}

/**
 * An A/B campaign's variants and test, checked for what a request's shape cannot tell: variants come with a test and a
 * test with variants; each variant's template is the project's; each variant has a subject and body from itself, its
 * template or the campaign, within the render budgets (for `recipients`, by default one with no data). Errors name
 * the request's fields (`variants.1.subject`; a variant template's own part at fault: `variants.1.templateId`).
 */
async function checkVariants(db: Knex, render: Renderer, projectId: string, c: Content, base: AppliedParts, recipients?: { email: string; scope: RenderScope }[]): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  const variants = c.variants ?? [];
  if (variants.length > 0 && !c.abTest) {
    errors.push({ field: 'abTest', code: 'required', message: 'abTest is required with variants: the share of the audience that tests them, the wait and the metric' });
  }
  if (c.abTest && variants.length === 0) errors.push({ field: 'variants', code: 'required', message: `abTest needs variants: ${AB_LIMITS.minVariants} to ${AB_LIMITS.maxVariants} of them` });
  const scopes = recipients?.map((r) => r.scope);
  const forWhom = (problem: TemplateProblem) => (recipients ? `${problem.message} (for ${recipients[problem.index]!.email})` : problem.message);
  for (const [i, v] of variants.entries()) {
    const field = (name: string) => `variants.${i}.${name}`;
    const template = v.templateId && isUuid(v.templateId) ? await readTemplate(db, projectId, v.templateId) : undefined;
    if (v.templateId && !template) {
      errors.push({ field: field('templateId'), message: 'template not found in this project', code: 'not_found' });
      continue;
    }
    const content = resolveVariant({ ...base, previewText: c.previewText ?? null }, v, template);
    if (!content.subject || !content.body) {
      errors.push({ field: field(content.subject ? 'body' : 'subject'), code: 'required', message: `variant ${keyOf(i)} has no ${content.subject ? 'body' : 'subject'}: neither it, its template nor the campaign gives one` });
      continue;
    }
    const preview = v.previewText ? await checkPreviewText(render, v.previewText, scopes) : undefined;
    if (preview) {
      errors.push({ field: field('previewText'), code: preview.code, message: forWhom(preview) });
      continue;
    }
    const problem = await checkTemplate(render, content.subject, withPreviewText(content.body, content.previewText, content.markdown), scopes, content.markdown);
    if (!problem) continue;
    // The part at fault is the variant's own, else its template's, else the campaign's (whose own check names it).
    const own = problem.part === 'subject' ? v.subject : v.body;
    if (own || template) errors.push({ field: field(own ? problem.part : 'templateId'), code: problem.code, message: forWhom(problem) });
  }
  return errors;
}

const SENDER_HINT = 'Verify the sender domain first (POST /domains).';
const refused = (errors: FieldError[]) => invalid(errors, errors.some((e) => e.code === 'unverified_domain') ? SENDER_HINT : undefined);

/**
 * Everything about a campaign's content that a request's shape cannot tell (checkMessage, checkVariants,
 * checkAudience), and for an A/B test that its sample leaves no variant without a recipient at the audience as it is
 * now: the filter to store.
 */
async function checkContent(db: Knex, render: Renderer, projectId: string, c: Content, hashKey: Buffer): Promise<AudienceCondition | null> {
  const { errors, message } = await checkMessage(db, render, projectId, c);
  errors.push(...await checkVariants(db, render, projectId, c, message));
  const audience = await checkAudience(db, projectId, c);
  errors.push(...audience.errors);
  if (!errors.length && c.abTest && c.variants?.length) {
    const recipients = await countCampaignAudience(db, projectId, {
      audience_type: c.audienceType, segment_id: c.segmentId?.toLowerCase() ?? null, audience_filter: audience.filter,
    }, hashKey).catch((err: unknown) => {
      if (!isUnusableCondition(err)) throw err;
      errors.push({ field: c.audienceType === 'SEGMENT' ? 'segmentId' : 'audienceFilter', message: unusableCondition(err), code: 'invalid_condition' });
      return undefined;
    });
    const problem = recipients === undefined ? undefined : sampleShareProblem(recipients, c.abTest.samplePercent, c.variants.length, 'abTest.samplePercent');
    if (problem) errors.push(problem);
  }
  if (errors.length) throw refused(errors);
  return audience.filter;
}

/** The campaign row under a lock for a change, in `trx`: gone meanwhile is a 404. */
async function locked(trx: Knex.Transaction, projectId: string, id: string): Promise<CampaignRow> {
  const row: CampaignRow | undefined = isUuid(id) ? await trx('campaigns').where({ project_id: projectId, id }).forUpdate().first() : undefined;
  if (!row) throw notFound('Campaign');
  return row;
}

export interface Campaigns {
  list(projectId: string, filter: { status?: CampaignStatus }, page: PageRequest): Promise<Listed<CampaignRow>>;
  get(projectId: string, id: string): Promise<CampaignRow>;
  create(projectId: string, input: CampaignInput): Promise<CampaignRow>;
  /** Only a DRAFT can be edited; changing the audience type drops what belonged to the old one. */
  update(projectId: string, id: string, patch: Partial<CampaignInput>): Promise<CampaignRow>;
  /** Only a DRAFT or CANCELLED campaign can be deleted. */
  remove(projectId: string, id: string, actor: Actor): Promise<void>;
  /** Sends a DRAFT now, or at `scheduledAt`; its content is checked again first. */
  send(projectId: string, id: string, scheduledAt: Date | undefined, actor: Actor): Promise<CampaignRow>;
  /** A SCHEDULED campaign never sends; a SENDING one stops before its next batch and its unsent emails are cancelled. */
  cancel(projectId: string, id: string, actor: Actor): Promise<CampaignRow>;
  /**
   * `[TEST]` copies to up to 10 addresses, through the same rendering and delivery; nothing else changes. An A/B
   * campaign's: a copy of each variant to each address, or of `variant` only.
   */
  test(projectId: string, id: string, emails: string[], variant?: VariantKey): Promise<{ email: string; id: string; variant?: VariantKey }[]>;
  /**
   * With `series`, its opens and clicks by hour or day since it started (campaigns/series.ts). An A/B campaign's also
   * has its sample's stats per variant (with the certainty of each against the best), the rest's, and the decision.
   */
  stats(projectId: string, id: string, series?: SeriesInterval): Promise<CampaignStats & { series?: CampaignSeries } & Partial<AbStats>>;
  /**
   * A person's choice of an A/B campaign's winner, while its test runs (phase SAMPLE or WAITING): it ends the wait
   * (the workflow is woken), and the winner goes to the rest. 409 once decided, or for a campaign not sending a test.
   */
  chooseWinner(projectId: string, id: string, variant: VariantKey, actor: Actor): Promise<CampaignRow>;
  /**
   * How many contacts an audience reaches now, as a campaign sends (subscribed, not suppressed: audience/campaignAudience.ts):
   * the number a person confirms before sending. An audience that cannot be checked or evaluated is a 422 naming its field.
   */
  countAudience(projectId: string, audience: Audience): Promise<number>;
  /** The campaign's workflow in Temporal UI (TEMPORAL_UI_URL, on Temporal only); null without one, or before it is scheduled. */
  workflowUrl(c: CampaignRow): string | null;
}

export interface CampaignDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  /** Where templates are checked: a render pool on the API (mail/renderPool.ts). */
  render: Renderer;
  /** Temporal UI and the namespace Herald's workflows run in (TEMPORAL_UI_URL, TEMPORAL_NAMESPACE), on Temporal only. */
  temporalUi?: TemporalUi;
  /** The installation's secret: audiences leave out erased addresses by their keyed hash (audience/suppressions.ts). */
  secret: Buffer;
}

export interface TemporalUi {
  url: string;
  namespace: string;
}

/** The columns of an A/B test's settings (all null: none). */
const abTestColumns = (t: AbTestSettings | null | undefined) => ({
  ab_sample_percent: t?.samplePercent ?? null, ab_wait_minutes: t?.waitMinutes ?? null, ab_metric: t?.metric ?? null,
});

/** An A/B campaign's part of its stats: its variants' (the sample's), the rest's (the whole less the sample), the decision. */
function abStats(c: CampaignRow, whole: CampaignStats, variants: VariantStats[]): AbStats {
  const figures = variants.map((v) => ({ variant: v.variant, delivered: v.delivered, uniqueOpens: v.uniqueOpens, uniqueClicks: v.uniqueClicks }));
  const [opens, clicks] = [certainties(figures, 'opens'), certainties(figures, 'clicks')];
  const counts = ['totalRecipients', 'queued', 'sent', 'delivered', 'cancelled', 'suppressed', 'failed', 'bounced', 'complained', 'unsubscribed', 'opens', 'uniqueOpens', 'clicks', 'uniqueClicks'] as const;
  const rest = Object.fromEntries(counts.map((k) => [k, whole[k] - variants.reduce((n, v) => n + v[k], 0)])) as Record<(typeof counts)[number], number>;
  const rate = (n: number) => (rest.delivered > 0 ? Math.round((n / rest.delivered) * 10_000) / 10_000 : 0);
  return {
    variants: variants.map((v) => ({
      ...v, key: keyOf(v.variant), name: c.variants[v.variant]?.name ?? null,
      significance: { opens: opens.get(v.variant) ?? null, clicks: clicks.get(v.variant) ?? null },
    })),
    rest: { ...rest, openRate: rate(rest.uniqueOpens), clickRate: rate(rest.uniqueClicks) },
    decision: c.ab_decision && c.ab_decided_at ? { ...c.ab_decision, decidedAt: c.ab_decided_at.toISOString() } : null,
  };
}

/** An A/B campaign's part of its stats (Campaigns.stats). */
export interface AbStats {
  /** The sample's stats of each variant, with how sure its difference from the best is on opens and clicks. */
  variants: (VariantStats & { key: VariantKey; name: string | null; significance: Record<'opens' | 'clicks', Significance | null> })[];
  /** The winner's emails to the rest of the audience (none before the decision). */
  rest: Omit<VariantStats, 'variant'>;
  /** The decision once made (its figures are the sample's at that moment). */
  decision: (AbDecision & { decidedAt: string }) | null;
}

export function campaignService({ knex, engine, log, render, temporalUi, secret }: CampaignDeps): Campaigns {
  const hashKey = addressHashKey(secret);
  // A nudge to a campaign's workflow to look at its row (a winner chosen, a cancel): safe to lose, as the wait also ends on its own.
  const wake = (workflow: string) => engine.signal(workflow, WAKE_TOPIC, {})
    .catch((err) => log.warn({ err, workflow }, 'could not wake the campaign workflow; it looks again when its wait ends'));
  const withVariants = async (row: Omit<CampaignRow, 'variants'>, db: Knex | Knex.Transaction = knex): Promise<CampaignRow> => ({ ...row, variants: await readVariants(db, row.project_id, row.id) });
  const get = async (projectId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<CampaignRow> => {
    const row = isUuid(id) ? await campaignRows(db).where({ project_id: projectId, id }).first() as CampaignRow | undefined : undefined;
    if (!row) throw notFound('Campaign');
    return withVariants(row, db);
  };

  return {
    async list(projectId, filter, page) {
      const listed = await listPage<CampaignRow>(() => {
        const q = campaignRows(knex).where('project_id', projectId);
        if (filter.status) q.where('status', filter.status);
        return q;
      }, page);
      const variants = await readVariantsOf(knex, projectId, listed.rows.filter((c) => c.ab_metric).map((c) => c.id));
      return { ...listed, rows: listed.rows.map((c) => ({ ...c, variants: variants.get(c.id) ?? [] })) };
    },

    get,

    // In a transaction: its template is read under a share lock, so a delete of it waits and then sees this campaign.
    create: (projectId, input) => knex.transaction(async (trx) => {
      const filter = await checkContent(trx, render, projectId, input, hashKey);
      const [row] = await trx('campaigns').insert({
        project_id: projectId, name: input.name, description: input.description || null, template_id: input.templateId?.toLowerCase() ?? null,
        subject: input.subject ?? null, body: input.body ?? null, from_email: input.from ?? null, from_name: input.fromName || null,
        reply_to: input.replyTo ?? null, preview_text: input.previewText || null, audience_type: input.audienceType,
        segment_id: input.segmentId?.toLowerCase() ?? null, audience_filter: filter ? JSON.stringify(filter) : null,
        ...abTestColumns(input.abTest),
      }).returning('*');
      await writeVariants(trx, projectId, row.id, input.variants ?? []);
      return { ...row, variants: await readVariants(trx, projectId, row.id) } as CampaignRow;
    }),

    update: (projectId, id, patch) => knex.transaction(async (trx) => {
      const current = await locked(trx, projectId, id);
      if (current.status !== 'DRAFT') throw conflict(`Only DRAFT campaigns can be edited; this one is ${current.status}`);
      const audienceType = patch.audienceType ?? current.audience_type;
      // A message part set to null goes back to the template's.
      const given = <K extends keyof Message>(k: K, stored: Message[K]) => (patch[k] !== undefined ? patch[k] : stored);
      const stored = contentOf({ ...current, variants: await readVariants(trx, projectId, current.id) });
      const merged: Content = {
        templateId: given('templateId', current.template_id),
        subject: given('subject', current.subject),
        body: given('body', current.body),
        from: given('from', current.from_email),
        fromName: given('fromName', current.from_name),
        replyTo: given('replyTo', current.reply_to),
        previewText: given('previewText', current.preview_text),
        variants: patch.variants !== undefined ? patch.variants ?? [] : stored.variants,
        abTest: patch.abTest !== undefined ? patch.abTest : stored.abTest,
        audienceType,
        segmentId: audienceType === 'SEGMENT' ? (patch.segmentId ?? current.segment_id ?? undefined) : undefined,
        audienceFilter: audienceType === 'FILTERED' ? (patch.audienceFilter ?? current.audience_filter ?? undefined) : undefined,
      };
      if (audienceType !== 'SEGMENT' && patch.segmentId) throw invalid([{ field: 'segmentId', message: 'segmentId applies only to a SEGMENT audience', code: 'unrecognized_key' }]);
      if (audienceType !== 'FILTERED' && patch.audienceFilter) throw invalid([{ field: 'audienceFilter', message: 'audienceFilter applies only to a FILTERED audience', code: 'unrecognized_key' }]);
      const filter = await checkContent(trx, render, projectId, merged, hashKey);
      const [row] = await trx('campaigns').where({ project_id: projectId, id: current.id }).update({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.description !== undefined ? { description: patch.description || null } : {}),
        ...(patch.fromName !== undefined ? { from_name: patch.fromName || null } : {}),
        ...(patch.replyTo !== undefined ? { reply_to: patch.replyTo } : {}),
        ...(patch.previewText !== undefined ? { preview_text: patch.previewText || null } : {}),
        ...abTestColumns(merged.abTest),
        template_id: merged.templateId?.toLowerCase() ?? null,
        subject: merged.subject ?? null, body: merged.body ?? null, from_email: merged.from ?? null, audience_type: audienceType,
        segment_id: merged.segmentId?.toLowerCase() ?? null, audience_filter: filter ? JSON.stringify(filter) : null,
        updated_at: trx.fn.now(),
      }).returning('*');
      if (patch.variants !== undefined) await writeVariants(trx, projectId, current.id, merged.variants ?? []);
      return { ...row, variants: await readVariants(trx, projectId, current.id) } as CampaignRow;
    }),

    async remove(projectId, id, actor) {
      const current = await get(projectId, id);
      await audited(knex, projectId, actor, { operation: 'deleteCampaign', resourceType: 'campaign', resourceId: current.id, details: { name: current.name } }, async (trx) => {
        const deleted = await trx('campaigns').where({ project_id: projectId, id: current.id }).whereIn('status', ['DRAFT', 'CANCELLED']).delete();
        if (!deleted) throw conflict(`Only DRAFT or CANCELLED campaigns can be deleted; this one is ${current.status}`, 'Cancel it first.');
        await deleteCampaignStats(trx, projectId, current.id);
      });
    },

    async send(projectId, id, scheduledAt, actor) {
      // Sent now or scheduled: one operation, told apart by `scheduledAt` in the entry's details.
      const row = await audited(knex, projectId, actor, (r: CampaignRow) => ({ operation: 'sendCampaign', resourceType: 'campaign', resourceId: r.id, details: { scheduledAt: scheduledAt?.toISOString() ?? null } }), async (trx) => {
        const current = await locked(trx, projectId, id);
        if (current.status !== 'DRAFT') throw conflict(`Campaign is ${current.status}; only a DRAFT campaign can be sent or scheduled`);
        await checkContent(trx, render, projectId, contentOf({ ...current, variants: await readVariants(trx, projectId, current.id) }), hashKey);
        const [updated] = await trx('campaigns').where({ project_id: projectId, id: current.id })
          .update({ status: 'SCHEDULED', scheduled_at: scheduledAt ?? trx.fn.now(), updated_at: trx.fn.now() }).returning('*');
        return updated as CampaignRow;
      });
      await dispatchCampaign(engine, knex, row, log, secret);
      return get(projectId, row.id);
    },

    async cancel(projectId, id, actor) {
      const current = await get(projectId, id);
      await audited(knex, projectId, actor, { operation: 'cancelCampaign', resourceType: 'campaign', resourceId: current.id, details: { was: current.status } }, async (trx) => {
        const result = await cancelCampaignRows(trx, { projectId, campaignId: current.id });
        if (!result.changed) throw conflict(`Campaign is ${result.status}; only DRAFT, SCHEDULED or SENDING campaigns can be cancelled`);
      });
      // The database is already final; the engine cancel releases a pending schedule at once (it is also safe to lose).
      // An A/B campaign waiting for its winner is woken first, so that it looks at its row and ends now on either
      // engine (DBOS does not interrupt a wait it cancels).
      const workflow = workflowId.sendCampaign({ campaignId: current.id });
      if (current.ab_phase === 'WAITING' || current.ab_phase === 'SAMPLE') await wake(workflow);
      await engine.cancel(workflow)
        .catch((err) => log.warn({ err, campaignId: current.id }, 'engine cancel failed; the workflow will see the CANCELLED status'));
      return get(projectId, current.id);
    },

    async chooseWinner(projectId, id, variant, actor) {
      const current = await get(projectId, id);
      const position = VARIANT_KEYS.indexOf(variant);
      await audited(knex, projectId, actor, { operation: 'chooseCampaignWinner', resourceType: 'campaign', resourceId: current.id, details: { variant } }, async (trx) => {
        const row = await locked(trx, projectId, current.id);
        if (!row.ab_metric) throw conflict('This campaign has no A/B test');
        if (row.status !== 'SENDING' || (row.ab_phase !== 'SAMPLE' && row.ab_phase !== 'WAITING')) {
          throw conflict(row.ab_phase === 'DECIDED' ? `The winner is already decided: variant ${keyOf(row.ab_winner!)}` : `Campaign is ${row.status}; a winner is chosen while its test runs`);
        }
        if (position >= (await readVariants(trx, projectId, row.id)).length) {
          throw invalid([{ field: 'variant', message: `the campaign has no variant ${variant}`, code: 'not_found' }]);
        }
        await trx('campaigns').where({ project_id: projectId, id: row.id }).update({ ab_chosen: position, updated_at: trx.fn.now() });
      });
      await wake(workflowId.sendCampaign({ campaignId: current.id }));
      return get(projectId, current.id);
    },

    async test(projectId, id, emails, variant) {
      const campaign = await get(projectId, id);
      const unique = [...new Set(emails)];
      if (variant && VARIANT_KEYS.indexOf(variant) >= campaign.variants.length) {
        throw invalid([{ field: 'variant', message: campaign.variants.length ? `the campaign has no variant ${variant}` : 'the campaign has no variants', code: 'not_found' }]);
      }
      // Rendered here for each address (its contact's data, when it is one) so that a test that cannot render within
      // the budgets is refused now, not a failed email later.
      const known = new Map((await knex('contacts').where('project_id', projectId).whereIn('email', unique).select('id', 'email', 'subscribed', 'data'))
        .map((c) => [c.email as string, c]));
      const recipients = unique.map((email) => {
        const c = known.get(email);
        return { email, scope: messageScope({}, c ?? { id: '', email, subscribed: false, data: {} }, 'https://example.invalid/unsubscribe') };
      });
      const content = contentOf(campaign);
      const { errors, message } = await checkMessage(knex, render, projectId, content, recipients);
      if (!errors.length) errors.push(...await checkVariants(knex, render, projectId, content, message, recipients));
      if (errors.length) throw refused(errors);
      // Rendered again at delivery, from the campaign (and the variant) and its template, as its own emails are.
      const copies = { projectId, to: unique, campaignId: campaign.id, templateId: campaign.template_id ?? undefined, from: message.from!.email, replyTo: message.replyTo };
      if (campaign.variants.length === 0) return queueTestEmails(knex, { ...copies, fromName: message.fromName });
      const contents = await variantContents(knex, projectId, campaign.variants, async () => ({ ...message, previewText: campaign.preview_text }));
      const positions = variant ? [VARIANT_KEYS.indexOf(variant)] : campaign.variants.map((v) => v.position);
      const queued = await Promise.all(positions.map(async (position) => (await queueTestEmails(knex, { ...copies, fromName: contents[position]!.fromName, variant: position }))
        .map((e) => ({ ...e, variant: keyOf(position) }))));
      return queued.flat();
    },

    async stats(projectId, id, series) {
      // One snapshot for the campaign and its counts: read apart, an A/B test's answer could carry the rest's mail from
      // after its decision with the row from before it (no decision), and the console said "won on unique opens" of a
      // winner a person had chosen (seen on a loaded machine).
      return knex.transaction(async (trx) => {
        const campaign = await get(projectId, id, trx);
        const stats = await campaignStats(trx, projectId, campaign.id);
        const points = series ? await campaignSeries(trx, projectId, campaign.id, series) : undefined;
        const variants = campaign.variants.length ? await campaignVariantStats(trx, projectId, campaign.id, campaign.variants.length) : undefined;
        const all = points ? { ...stats, series: points } : stats;
        return variants ? { ...all, ...abStats(campaign, stats, variants) } : all;
      }, { isolationLevel: 'repeatable read', readOnly: true });
    },

    async countAudience(projectId, audience) {
      const { errors } = await checkAudience(knex, projectId, audience);
      if (errors.length) throw invalid(errors);
      try {
        return await countCampaignAudience(knex, projectId, {
          audience_type: audience.audienceType, segment_id: audience.segmentId?.toLowerCase() ?? null, audience_filter: audience.audienceFilter ?? null,
        }, hashKey);
      } catch (err) {
        if (!isUnusableCondition(err)) throw err;
        const field = audience.audienceType === 'SEGMENT' ? 'segmentId' : 'audienceFilter';
        throw invalid([{ field, message: unusableCondition(err), code: 'invalid_condition' }]);
      }
    },

    workflowUrl(c) {
      // A workflow exists from the send on (a send now is scheduled at its own instant); a draft cancelled never had one.
      if (!temporalUi || c.status === 'DRAFT' || !c.scheduled_at) return null;
      const workflow = workflowId.sendCampaign({ campaignId: c.id });
      return `${temporalUi.url.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(temporalUi.namespace)}/workflows/${encodeURIComponent(workflow)}`;
    },
  };
}
