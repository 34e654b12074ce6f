import type { Knex } from 'knex';
import { databaseRegistry, type DatabaseGaugeOptions } from './database';
import { collectProcessMetrics, processRegistry } from './registry';

/** What GET /metrics serves: this process's series and the database's gauges, in Prometheus's text format. */
export interface Metrics {
  contentType: string;
  render(): Promise<string>;
}

/**
 * The exposition of one process: its counters, histogram and process metrics (metrics/registry.ts, once per process)
 * followed by the gauges read from its database (metrics/database.ts, made here, read at scrape time).
 */
export function createMetrics(knex: Knex, opts: DatabaseGaugeOptions = {}): Metrics {
  collectProcessMetrics();
  const database = databaseRegistry(knex, opts);
  return {
    contentType: processRegistry.contentType,
    async render() {
      const [own, db] = await Promise.all([processRegistry.metrics(), database.metrics()]);
      return `${own.trimEnd()}\n${db}`;
    },
  };
}
