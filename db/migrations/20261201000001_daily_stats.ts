import type { Knex } from 'knex';

/**
 * `project_daily_stats`: a project's email outcomes per UTC day (GET /stats/overview), so that the console's chart
 * reads at most 90 days x 8 shards of small rows instead of counting a million events each time.
 *
 * Written by EVENT_EFFECTS (db/queries/events.ts), the one way events are written, in the statement that records the
 * events: each batch of events (a delivery group commit, a batch of opens and clicks, the bounces of a report) adds
 * one aggregated upsert, one row per project and day it touches. Each (project, day) is spread over 8 shards picked by
 * the writer's database session, as event_names is, so that concurrent delivery workers do not queue on one row lock.
 *
 * A column counts the events of its name recorded that day, those GET /events lists: `sent` email.sent, `failed`
 * email.failed, `bounced` email.bounced (hard and soft), `complained` email.complained, `opened` email.opened and
 * `clicked` email.clicked (at most one per email, kind and link per tracking window, proxies and scanners included,
 * as the events are). Deleting events (a contact's deletion) does not take them back out: these are history.
 *
 * The backfill below counts the events already recorded, one INSERT … SELECT (shard 0).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('project_daily_stats', (t) => {
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.date('day').notNullable();
    t.smallint('shard').notNullable();
    for (const c of ['sent', 'failed', 'bounced', 'complained', 'opened', 'clicked']) t.bigInteger(c).notNullable().defaultTo(0);
    // Serves the overview's range read (WHERE project_id = ? AND day >= ?) and EVENT_EFFECTS' upsert.
    t.primary(['project_id', 'day', 'shard'], { constraintName: 'project_daily_stats_pkey' });
  });
  await backfillDailyStats(knex);
}

/** Counts the recorded events into project_daily_stats (shard 0): every project's, or one project's (the bench seed). */
export async function backfillDailyStats(knex: Knex, projectId?: string): Promise<void> {
  await knex.raw(`
    INSERT INTO project_daily_stats (project_id, day, shard, sent, failed, bounced, complained, opened, clicked)
    SELECT project_id, (created_at AT TIME ZONE 'UTC')::date, 0,
           count(*) FILTER (WHERE name = 'email.sent'), count(*) FILTER (WHERE name = 'email.failed'),
           count(*) FILTER (WHERE name = 'email.bounced'), count(*) FILTER (WHERE name = 'email.complained'),
           count(*) FILTER (WHERE name = 'email.opened'), count(*) FILTER (WHERE name = 'email.clicked')
    FROM events
    WHERE name IN ('email.sent', 'email.failed', 'email.bounced', 'email.complained', 'email.opened', 'email.clicked')
      ${projectId ? 'AND project_id = ?' : ''}
    GROUP BY 1, 2`, projectId ? [projectId] : []);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('project_daily_stats');
}
