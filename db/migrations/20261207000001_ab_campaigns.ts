import type { Knex } from 'knex';

/**
 * A/B campaigns (issue 32): a campaign may carry 2–5 variants and a test (the share of the audience that gets the
 * variants first, the wait, the metric that decides), which its workflow runs: sample → wait → winner → the rest
 * (workflows/sendCampaign.ts, campaigns/abTest.ts).
 *
 * - `campaigns`: the preview text (the inbox line after the subject; variants may override it), the test's settings
 *   (`ab_*`, all null for a campaign without variants) and its state: the phase (SAMPLE, WAITING, DECIDED), the sample
 *   plan fixed when it starts sending (the hash boundaries that split the audience: campaigns/abTest.ts), when the wait
 *   ends, a winner chosen by a person (`ab_chosen`, before the workflow acts on it) and the decision (`ab_winner`,
 *   `ab_decided_at`, `ab_decision`: the figures it was made on).
 * - `campaign_variants`: each variant's overrides as written (`position` 0–4 is A–E) and, once the campaign starts
 *   sending, its whole content resolved and frozen (`frozen`), as the campaign's own content is.
 * - `emails.variant`: the variant a sample email was sent with; null for a plain campaign's emails and for the rest of an
 *   A/B campaign's audience (sent with the winner's content, which the campaign names).
 * - `campaign_variant_stats`: the sample's counts per variant, kept by the same statements that keep campaign_stats
 *   (db/queries/campaignTally.ts) and by EVENT_EFFECTS for bounces, complaints and unsubscribes, sharded the same way.
 *   A table of its own, so that plain campaigns' counts and their keys stay as they were.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE campaigns
    ADD COLUMN preview_text text,
    ADD COLUMN ab_sample_percent smallint CHECK (ab_sample_percent BETWEEN 1 AND 50),
    ADD COLUMN ab_wait_minutes integer CHECK (ab_wait_minutes BETWEEN 10 AND 10080),
    ADD COLUMN ab_metric text CHECK (ab_metric IN ('opens', 'clicks', 'manual')),
    ADD COLUMN ab_phase text CHECK (ab_phase IN ('SAMPLE', 'WAITING', 'DECIDED')),
    ADD COLUMN ab_plan jsonb,
    ADD COLUMN ab_sample_size integer,
    ADD COLUMN ab_ends_at timestamptz,
    ADD COLUMN ab_chosen smallint CHECK (ab_chosen BETWEEN 0 AND 4),
    ADD COLUMN ab_winner smallint CHECK (ab_winner BETWEEN 0 AND 4),
    ADD COLUMN ab_decided_at timestamptz,
    ADD COLUMN ab_decision jsonb,
    ADD CONSTRAINT campaigns_ab_settings CHECK (
      (ab_sample_percent IS NULL) = (ab_wait_minutes IS NULL) AND (ab_wait_minutes IS NULL) = (ab_metric IS NULL))`);
  await knex.raw(`
    CREATE TABLE campaign_variants (
      project_id uuid NOT NULL,
      campaign_id uuid NOT NULL,
      position smallint NOT NULL CHECK (position BETWEEN 0 AND 4),
      name text,
      subject text,
      preview_text text,
      from_name text,
      body text,
      template_id uuid,
      -- The variant's whole content, resolved when the campaign starts sending (campaigns/abTest.ts freezeVariants).
      frozen jsonb,
      CONSTRAINT campaign_variants_pkey PRIMARY KEY (project_id, campaign_id, position),
      CONSTRAINT campaign_variants_campaign_fkey FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id) ON DELETE CASCADE)`);
  // Serves DELETE /templates/:id's check: is this template used by a variant of a campaign that has not gone yet?
  await knex.raw('CREATE INDEX campaign_variants_template_idx ON campaign_variants (project_id, template_id) WHERE template_id IS NOT NULL');
  await knex.raw('ALTER TABLE emails ADD COLUMN variant smallint');
  await knex.raw(`
    CREATE TABLE campaign_variant_stats (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL,
      variant smallint NOT NULL,
      shard smallint NOT NULL,
      total bigint NOT NULL DEFAULT 0, queued bigint NOT NULL DEFAULT 0, sent bigint NOT NULL DEFAULT 0, failed bigint NOT NULL DEFAULT 0,
      cancelled bigint NOT NULL DEFAULT 0, suppressed bigint NOT NULL DEFAULT 0, bounced bigint NOT NULL DEFAULT 0,
      opens bigint NOT NULL DEFAULT 0, unique_opens bigint NOT NULL DEFAULT 0, clicks bigint NOT NULL DEFAULT 0, unique_clicks bigint NOT NULL DEFAULT 0,
      -- The emails whose first email.bounced, email.complained or contact.unsubscribed was recorded (EVENT_EFFECTS).
      bounce_events bigint NOT NULL DEFAULT 0, complained bigint NOT NULL DEFAULT 0, unsubscribed bigint NOT NULL DEFAULT 0,
      -- Serves the stats' read (WHERE project_id = ? AND campaign_id = ?) and the writers' upserts.
      CONSTRAINT campaign_variant_stats_pkey PRIMARY KEY (project_id, campaign_id, variant, shard))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS campaign_variant_stats');
  await knex.raw('ALTER TABLE emails DROP COLUMN IF EXISTS variant');
  await knex.raw('DROP TABLE IF EXISTS campaign_variants');
  await knex.raw(`ALTER TABLE campaigns DROP CONSTRAINT IF EXISTS campaigns_ab_settings,
    DROP COLUMN preview_text, DROP COLUMN ab_sample_percent, DROP COLUMN ab_wait_minutes, DROP COLUMN ab_metric, DROP COLUMN ab_phase,
    DROP COLUMN ab_plan, DROP COLUMN ab_sample_size, DROP COLUMN ab_ends_at, DROP COLUMN ab_chosen, DROP COLUMN ab_winner,
    DROP COLUMN ab_decided_at, DROP COLUMN ab_decision`);
}
