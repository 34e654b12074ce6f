import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { campaignAudience, type CampaignAudienceRow } from '../audience/campaignAudience';
import type { FieldError } from '../core/errors';
import { isUuid } from '../core/values';
import { PermanentError } from '../engine/permanent';
import type { AppliedParts, TemplateParts } from '../mail/applyTemplate';
import { readTemplate } from './content';
import { leader, rateOf, significance, type DecidingMetric, type Significance, type VariantFigures } from './abDecision';
import { sampleFits, sampleRunEnds, sampleSize, VARIANT_KEYS, type AbMetric, type VariantKey } from './abRules';

/**
 * A/B campaigns (issue 32): a campaign with 2–5 variants, each overriding any of its subject, preview text, sender
 * name, body or template, and a test: the share of the audience that gets the variants first (split evenly and at
 * random between them, the same people on every retry), how long to wait, and what decides the winner. The
 * campaign's workflow sends the sample, waits, decides, then sends the winner to the rest (workflows/sendCampaign.ts);
 * the activities are campaigns/batches.ts's. Here: the variants' content, the sample's plan, and the decision.
 */

// The arithmetic of a test (keys, metrics, bounds, the sample's size and split) is campaigns/abRules.ts's: the console uses it too.
export { AB_LIMITS, AB_METRICS, VARIANT_KEYS, sampleSize, type AbMetric, type VariantKey } from './abRules';
export type AbPhase = 'SAMPLE' | 'WAITING' | 'DECIDED';

export interface AbTestSettings {
  /** The share of the audience, in percent, that gets the variants (split evenly between them). */
  samplePercent: number;
  /** How long after the sample has left the queue the winner is decided. */
  waitMinutes: number;
  /** Unique opens, unique clicks (as rates of delivered emails), or a person's choice (POST /campaigns/:id/winner). */
  metric: AbMetric;
}

/** A variant as written: each part it gives replaces the campaign's. */
export interface VariantInput {
  name?: string | null;
  subject?: string | null;
  previewText?: string | null;
  fromName?: string | null;
  body?: string | null;
  /** A template of the project: its subject and body apply where the variant has none of its own. */
  templateId?: string | null;
}

/** A `campaign_variants` row. */
export interface VariantRow {
  position: number;
  name: string | null;
  subject: string | null;
  preview_text: string | null;
  from_name: string | null;
  body: string | null;
  template_id: string | null;
  frozen: VariantContent | null;
}

/** What a variant's emails go out with (the sender's address and reply-to are the campaign's). */
export interface VariantContent {
  subject: string;
  body: string;
  markdown: boolean;
  fromName: string | null;
  previewText: string | null;
}

/** The campaign's own content, as its emails go out without variants (the base every variant overrides). */
export type BaseContent = AppliedParts & { previewText: string | null };

export const keyOf = (position: number): VariantKey => VARIANT_KEYS[position]!;

/**
 * A variant's content: each part it gives itself, else its template's (subject and body), else the campaign's. Its
 * sender's address and reply-to are always the campaign's: a test compares messages, not senders' addresses.
 * Subject or body may be missing when none of them gives it (checkVariants refuses that).
 */
export function resolveVariant(base: BaseContent, v: VariantInput, template: TemplateParts | undefined): Omit<VariantContent, 'subject' | 'body'> & { subject?: string; body?: string } {
  const subject = v.subject ?? template?.subject ?? base.subject;
  const body = v.body ?? template?.body ?? base.body;
  return {
    ...(subject !== undefined ? { subject } : {}),
    ...(body !== undefined ? { body } : {}),
    markdown: v.body != null ? false : template ? template.body_type === 'markdown' : base.markdown,
    fromName: v.fromName || base.fromName,
    previewText: v.previewText ?? base.previewText,
  };
}

/** The variant as stored, the way a request writes it. */
export const variantInputOf = (r: VariantRow): VariantInput => ({
  name: r.name, subject: r.subject, previewText: r.preview_text, fromName: r.from_name, body: r.body, templateId: r.template_id,
});

export async function readVariants(db: Knex | Knex.Transaction, projectId: string, campaignId: string): Promise<VariantRow[]> {
  return db('campaign_variants').where({ project_id: projectId, campaign_id: campaignId }).orderBy('position')
    .select('position', 'name', 'subject', 'preview_text', 'from_name', 'body', 'template_id', 'frozen');
}

/** The variants of many campaigns (the campaign list), by campaign id. */
export async function readVariantsOf(db: Knex, projectId: string, campaignIds: string[]): Promise<Map<string, VariantRow[]>> {
  const byCampaign = new Map<string, VariantRow[]>();
  if (campaignIds.length === 0) return byCampaign;
  const rows = await db('campaign_variants').where('project_id', projectId).whereIn('campaign_id', campaignIds).orderBy(['campaign_id', 'position'])
    .select('campaign_id', 'position', 'name', 'subject', 'preview_text', 'from_name', 'body', 'template_id', 'frozen');
  for (const { campaign_id: id, ...row } of rows as (VariantRow & { campaign_id: string })[]) byCampaign.set(id, [...(byCampaign.get(id) ?? []), row]);
  return byCampaign;
}

/** Replaces the campaign's variants (none: a plain campaign), in the caller's transaction. */
export async function writeVariants(trx: Knex.Transaction, projectId: string, campaignId: string, variants: readonly VariantInput[]): Promise<void> {
  await trx('campaign_variants').where({ project_id: projectId, campaign_id: campaignId }).delete();
  if (variants.length === 0) return;
  await trx('campaign_variants').insert(variants.map((v, position) => ({
    project_id: projectId, campaign_id: campaignId, position, name: v.name || null, subject: v.subject ?? null, preview_text: v.previewText ?? null,
    from_name: v.fromName || null, body: v.body ?? null, template_id: v.templateId?.toLowerCase() ?? null,
  })));
}

/**
 * Each variant's content as it goes now: its frozen copy once the campaign has started sending, else resolved from the
 * campaign's content and the variant's template read anew (a template gone meanwhile: the campaign's parts). Undefined
 * parts are those nobody gives. `base` (the campaign's content) is read only for variants not frozen yet.
 */
export async function variantContents(db: Knex | Knex.Transaction, projectId: string, rows: readonly VariantRow[], base: () => Promise<BaseContent>) {
  const live = rows.some((r) => !r.frozen) ? await base() : undefined;
  return Promise.all(rows.map(async (r) => r.frozen ?? resolveVariant(live!, variantInputOf(r), r.template_id ? await readTemplate(db, projectId, r.template_id) : undefined)));
}

/**
 * Freezes the variants' content when the campaign starts sending (campaigns/batches.ts beginCampaign), as the
 * campaign's own is: edits to their templates no longer change them. A template deleted since, or a variant left
 * without subject or body, is a permanent failure (the campaign ends FAILED saying so).
 */
export async function freezeVariants(trx: Knex.Transaction, projectId: string, campaignId: string, base: BaseContent): Promise<VariantContent[]> {
  const rows = await readVariants(trx, projectId, campaignId);
  const frozen: VariantContent[] = [];
  for (const r of rows) {
    if (r.frozen) {
      frozen.push(r.frozen);
      continue;
    }
    const template = r.template_id ? await readTemplate(trx, projectId, r.template_id) : undefined;
    if (r.template_id && !template) throw new PermanentError(`the template of variant ${keyOf(r.position)} was deleted before it started sending`);
    const c = resolveVariant(base, variantInputOf(r), template);
    if (!c.subject || !c.body) throw new PermanentError(`variant ${keyOf(r.position)} has no ${c.subject ? 'body' : 'subject'}`);
    const content: VariantContent = { ...c, subject: c.subject, body: c.body };
    await trx('campaign_variants').where({ project_id: projectId, campaign_id: campaignId, position: r.position }).update({ frozen: JSON.stringify(content) });
    frozen.push(content);
  }
  return frozen;
}

/**
 * The refusal of a test whose sample would leave a variant without a recipient at this audience (`field` names the
 * share), or undefined.
 */
export function sampleShareProblem(audience: number, samplePercent: number, variants: number, field: string): FieldError | undefined {
  if (sampleFits(audience, samplePercent, variants)) return undefined;
  return {
    field, code: 'too_small',
    message: `a ${samplePercent} % sample of ${audience} recipient(s) leaves a variant without a recipient: ${variants} variants need at least `
      + `${Math.ceil((variants * 100) / samplePercent)} recipients at this share`,
  };
}

/**
 * Who is in the sample, fixed when the campaign starts sending: every contact of the audience gets a number from a
 * hash of its id seeded by the campaign's (sampleHash), and the audience in that order is
 * cut into the sample's first `size` contacts, in `variants` runs of equal length. `bounds[i]` is the last (hash, id) of
 * variant i's run. A batch then puts each contact it reads into its variant (or none) by comparing its own (hash, id)
 * with the bounds (sampleVariantSql): the split is random, even (±1), and the same on every retry, while the batches
 * read the audience in the id order of a plain campaign.
 */
export interface SamplePlan {
  audience: number;
  size: number;
  bounds: { h: string; id: string }[];
  /** Each variant's sender name, frozen with it: what its emails (and the rest's, the winner's) go out with. */
  fromNames: (string | null)[];
  /** The hash the bounds are in (sampleHash); a plan made before there was a choice has none: md5. */
  hash?: 'uuid';
}

/**
 * The sample hash of the contact id column `column` (a uuid) for campaign `campaignId` (a UUID, checked: it is
 * inlined), as plan `plan` was made. New plans use PostgreSQL's uuid_hash_extended seeded by the campaign's id: the
 * hash that hash-partitioned tables rely on, so it stays the same across versions (pg_upgrade keeps their partitions),
 * and about 1/10 of md5's cost over a text concatenation (measured: 100,000 ids, 94-170 vs 606-894 ms under load).
 * Planning and the sample's batches hash the whole audience each, so that was a tenth of an A/B campaign's extra work.
 * Plans made with md5 (before `hash`) keep it until their campaign ends.
 */
export function sampleHash(campaignId: string, column: string, plan: Pick<SamplePlan, 'hash'>): string {
  if (!isUuid(campaignId)) throw new Error('not a campaign id');
  if (plan.hash === 'uuid') return `uuid_hash_extended(${column}, ${createHash('md5').update(campaignId.toLowerCase()).digest().readBigInt64BE(0)}::bigint)`;
  return `('x' || substr(md5('${campaignId.toLowerCase()}' || ${column}::text), 1, 16))::bit(64)::bigint`;
}

/** Computes the sample's plan over the audience as it is now: a count, then a top-N sort of the audience's hashes. */
export async function planSample(trx: Knex.Transaction, projectId: string, campaign: CampaignAudienceRow & { id: string; ab_sample_percent: number }, fromNames: (string | null)[], hashKey: Buffer): Promise<SamplePlan> {
  const variants = fromNames.length;
  const { query } = await campaignAudience(trx, projectId, campaign, hashKey);
  const { sql, bindings } = query.select('c.id').toSQL();
  const counted = await trx.raw(`SELECT count(*)::int AS n FROM (${sql}) x`, bindings as Knex.RawBinding[]);
  const audience = counted.rows[0].n as number;
  const size = sampleSize(audience, campaign.ab_sample_percent, variants);
  const hash = { hash: 'uuid' } as const;
  if (size === 0) return { audience, size, bounds: [], fromNames, ...hash };
  // Variant i's run ends at position ceil(size·(i+1)/variants): runs of equal length, ±1.
  const ends = sampleRunEnds(size, variants);
  const { rows } = await trx.raw(
    `SELECT r.h::text AS h, r.id FROM (
       SELECT t.id, t.h, row_number() OVER (ORDER BY t.h, t.id) AS pos
       FROM (SELECT x.id, ${sampleHash(campaign.id, 'x.id', hash)} AS h FROM (${sql}) x ORDER BY 2, 1 LIMIT ?::int) t) r
     WHERE r.pos = ANY(?::int[]) ORDER BY r.pos`,
    [...bindings, size, ends] as Knex.RawBinding[],
  );
  return { audience, size, bounds: rows as { h: string; id: string }[], fromNames, ...hash };
}

/**
 * The SQL of the variant (0–4, or NULL: not in the sample) of each contact of `rows` (a relation with `id`), under
 * `plan`: a select list of `rows`' columns and `variant` over a relation of its own (the hash is computed once a row,
 * then compared with the bounds; their values are checked and inlined: they came from the database, and a batch's
 * statement stays one text per campaign).
 */
export function sampleVariantSql(campaignId: string, plan: SamplePlan, rows: string): string {
  if (plan.bounds.length === 0) return `SELECT r.*, NULL::smallint AS variant FROM ${rows} r`;
  const whens = plan.bounds.map((b, i) => {
    if (!/^-?\d{1,20}$/.test(b.h) || !isUuid(b.id)) throw new Error('a sample plan bound is not a hash and an id');
    return `WHEN (r.h, r.id) <= (${b.h}::bigint, '${b.id}'::uuid) THEN ${i}`;
  });
  return `SELECT r.*, (CASE ${whens.join(' ')} ELSE NULL END)::smallint AS variant
    FROM (SELECT x.*, ${sampleHash(campaignId, 'x.id', plan)} AS h FROM ${rows} x) r`;
}

/** The winner, how it was chosen, and the figures and certainty it was chosen on: `campaigns.ab_decision`, and the `campaign.winner` event's data. */
export interface AbDecision {
  winner: VariantKey;
  /** `metric`: the test's metric decided; `manual`: a person chose. */
  decidedBy: 'metric' | 'manual';
  metric: AbMetric;
  figures: (VariantFigures & { key: VariantKey; openRate: number; clickRate: number })[];
  /** How sure the difference is, on unique opens and on unique clicks: the winner against the runner-up (campaigns/abDecision.ts). */
  significance: Record<DecidingMetric, Significance | null>;
}

/** The decision for these figures: a person's choice when there is one, else the metric's leader (a tie: the earliest variant). */
export function decide(figures: VariantFigures[], metric: AbMetric, chosen: number | null): AbDecision {
  const winner = chosen ?? leader(figures, metric === 'clicks' ? 'clicks' : 'opens');
  return {
    winner: keyOf(winner), decidedBy: chosen !== null ? 'manual' : 'metric', metric,
    figures: figures.map((f) => ({ ...f, key: keyOf(f.variant), openRate: rateOf(f, 'opens'), clickRate: rateOf(f, 'clicks') })),
    significance: { opens: significance(figures, winner, 'opens'), clicks: significance(figures, winner, 'clicks') },
  };
}
