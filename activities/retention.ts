import type { Knex } from 'knex';
import { loadRetentionConfig, type RetentionConfig } from '../config';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import { applyPartitions, trimRows } from '../retention/retention';
import { scheduleRetention } from '../retention/schedule';

export interface RetentionActivityDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  /** RETENTION_DAYS and INBOUND_RETENTION_DAYS; read from the environment when not given. */
  retention?: RetentionConfig;
  /** The interval of the schedule (tests); hourly by default. */
  retentionIntervalMs?: number;
}

/** The retention job's steps (workflows/retention.ts): thin wrappers over retention/. */
export function retentionActivities(deps: RetentionActivityDeps) {
  const config = () => deps.retention ?? loadRetentionConfig();
  return {
    async retentionPartitions(_ref: Record<string, never>): Promise<{ created: string[]; dropped: string[] }> {
      const run = await applyPartitions({ knex: deps.knex, config: config(), log: deps.log });
      for (const k of run.kept) deps.log.warn(k, 'retention: a partition past its time is kept');
      return { created: run.created, dropped: run.dropped.map((d) => d.partition) };
    },
    async retentionTrim(_ref: Record<string, never>): Promise<{ deleted: number; more: boolean }> {
      return trimRows({ knex: deps.knex, config: config(), log: deps.log });
    },
    async scheduleRetention(ref: { after: number }): Promise<number> {
      return scheduleRetention(deps.engine, deps.retentionIntervalMs, ref.after);
    },
  };
}
