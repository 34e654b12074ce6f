import type { Knex } from 'knex';

/**
 * Campaigns written from a template (issue 29): `template_id`, and the campaign's own subject, body and sender become
 * optional (null: the template's, campaigns/campaigns.ts). When the campaign starts sending, the parts it takes from
 * the template are copied into it (campaigns/batches.ts beginCampaign), so that its emails are all rendered from the
 * same content; `body_type` then says how a template's body is written (`markdown` is converted after Liquid).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE campaigns
    ADD COLUMN template_id uuid,
    ADD COLUMN body_type text NOT NULL DEFAULT 'html' CHECK (body_type IN ('html', 'markdown')),
    ALTER COLUMN subject DROP NOT NULL,
    ALTER COLUMN body DROP NOT NULL,
    ALTER COLUMN from_email DROP NOT NULL`);
  // Serves DELETE /templates/:id's check: is this template used by a campaign that has not gone yet?
  await knex.raw('CREATE INDEX campaigns_template_idx ON campaigns (project_id, template_id) WHERE template_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS campaigns_template_idx');
  // A campaign that never started has its template's parts only through the template: copy them in first (a part
  // neither has, of a template deleted since, is left empty).
  await knex.raw(`UPDATE campaigns k SET subject = coalesce(k.subject, t.subject), body = coalesce(k.body, t.body),
      from_email = coalesce(k.from_email, t.from_email)
    FROM templates t WHERE t.project_id = k.project_id AND t.id = k.template_id`);
  await knex.raw(`UPDATE campaigns SET subject = coalesce(subject, ''), body = coalesce(body, ''), from_email = coalesce(from_email, '')
    WHERE subject IS NULL OR body IS NULL OR from_email IS NULL`);
  await knex.raw(`ALTER TABLE campaigns
    DROP COLUMN template_id,
    DROP COLUMN body_type,
    ALTER COLUMN subject SET NOT NULL,
    ALTER COLUMN body SET NOT NULL,
    ALTER COLUMN from_email SET NOT NULL`);
}
