import type { Knex } from 'knex';

/**
 * Worker identity and liveness (worker/workerIdentity.ts), and event-name totals that concurrent writers do not queue on.
 *
 * `workers`: one row per executor id. A process holds its id with a session-level advisory lock (so two live processes
 * never share one) and stamps `heartbeat_at` every few seconds; the claims of a worker whose heartbeat is stale are
 * requeued by whichever worker notices first (worker/deliveryQueue.ts). A handful of rows: ids are reused.
 *
 * `event_names.shard`: each event insert bumped one row per (project, name), so every worker's batch of `email.sent`
 * outcomes, and every tracked event of that name, waited for the previous writer's commit on that one row. The total
 * is now spread over a few rows chosen by the writer's database session (pg_backend_pid() % 8), and GET /events/names
 * sums them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workers', (t) => {
    t.text('executor_id').primary();
    t.text('host').notNullable();
    t.integer('pid').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('heartbeat_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('ALTER TABLE event_names ADD COLUMN shard smallint NOT NULL DEFAULT 0');
  await knex.raw('ALTER TABLE event_names DROP CONSTRAINT event_names_pkey');
  // Still serves GET /events/names (WHERE project_id = ? ORDER BY name) and the per-insert upsert.
  await knex.raw('ALTER TABLE event_names ADD CONSTRAINT event_names_pkey PRIMARY KEY (project_id, name, shard)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('workers');
  // Folds the shards into shard 0 (its total is computed from a snapshot that includes it), then drops the others.
  await knex.raw(`INSERT INTO event_names (project_id, name, shard, count, last_seen_at)
    SELECT project_id, name, 0, sum(count), max(last_seen_at) FROM event_names GROUP BY 1, 2
    ON CONFLICT (project_id, name, shard) DO UPDATE SET count = excluded.count, last_seen_at = excluded.last_seen_at`);
  await knex.raw('DELETE FROM event_names WHERE shard <> 0');
  await knex.raw('ALTER TABLE event_names DROP CONSTRAINT event_names_pkey');
  await knex.raw('ALTER TABLE event_names DROP COLUMN shard');
  await knex.raw('ALTER TABLE event_names ADD CONSTRAINT event_names_pkey PRIMARY KEY (project_id, name)');
}
