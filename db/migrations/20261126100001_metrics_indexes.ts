import type { Knex } from 'knex';

/**
 * GET /metrics (metrics/database.ts) counts the live automation executions by status at scrape time. Without an index
 * that would read the whole automation_executions table (every journey ever run); this partial index holds only the
 * live rows, so the count reads them alone (an index-only scan, itself capped by the query's LIMIT).
 * The delivery queue's gauges need no index of their own: they read emails_queue_idx (20261122000005).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("CREATE INDEX automation_executions_active_idx ON automation_executions (status) WHERE status IN ('RUNNING', 'WAITING')");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS automation_executions_active_idx');
}
