import type { Knex } from 'knex';

/**
 * `templates.body_type`: how a template's body is written, `html` (every template so far) or `markdown` (converted to
 * HTML after Liquid renders it, mail/render.ts). The API names it `bodyType`, since a template's `type` is already
 * TRANSACTIONAL or MARKETING.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE templates ADD COLUMN body_type text NOT NULL DEFAULT 'html' CHECK (body_type IN ('html', 'markdown'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE templates DROP COLUMN body_type');
}
