import type { Knex } from 'knex';
import { audited, type Actor } from '../audit/log';
import { loadRetentionConfig, type RetentionConfig } from '../config';
import { invalid } from '../core/errors';

/** Whether an email gets the open pixel and click redirects. */
export interface TrackChoice {
  opens: boolean;
  clicks: boolean;
}

/**
 * A project's tracking settings (GET/PATCH /settings): the defaults of transactional mail (POST /v1/send and
 * automation sends; a send's own `track` overrides them) and of campaigns. Off for transactional mail, on for
 * campaigns, until the project changes them.
 */
export interface ProjectSettings {
  /** The project's name, as the console's project switcher and GET /auth/session show it. */
  name: string;
  tracking: { send: TrackChoice; campaigns: TrackChoice };
  /** Members' sessions are refused on the project's routes until they have two-factor on (people/sessions.ts). */
  requireTwoFactor: boolean;
  /**
   * The project's own retention in days (retention/retention.ts), shorter than the installation's; null: the
   * installation's (RETENTION_DAYS). Older emails, events, raw messages and attachments of the project are deleted.
   */
  retentionDays: number | null;
  /** RETENTION_DAYS: the longest a project may keep them. */
  instanceRetentionDays: number;
}

export interface SettingsPatch {
  name?: string;
  tracking?: { send?: Partial<TrackChoice>; campaigns?: Partial<TrackChoice> };
  requireTwoFactor?: boolean;
  /** null: back to the installation's retention. */
  retentionDays?: number | null;
}

const FLAGS = ['track_send_opens', 'track_send_clicks', 'track_campaign_opens', 'track_campaign_clicks', 'require_two_factor'] as const;
const COLUMNS = ['name', ...FLAGS, 'retention_days'] as const;
type Row = Record<(typeof FLAGS)[number], boolean> & { name: string; retention_days: number | null };

const settingsOf = (r: Row, retention: RetentionConfig): ProjectSettings => ({
  name: r.name,
  tracking: {
    send: { opens: r.track_send_opens, clicks: r.track_send_clicks },
    campaigns: { opens: r.track_campaign_opens, clicks: r.track_campaign_clicks },
  },
  requireTwoFactor: r.require_two_factor,
  retentionDays: r.retention_days,
  instanceRetentionDays: retention.days,
});

export async function projectSettings(db: Knex, projectId: string, retention: RetentionConfig = loadRetentionConfig()): Promise<ProjectSettings> {
  return settingsOf(await db('projects').where('id', projectId).first(...COLUMNS), retention);
}

/**
 * Changes the settings given, keeps the others; answers the settings as they now are. A retention longer than the
 * installation's is refused: a project may ask for less, never more (the partitions go at RETENTION_DAYS whatever it says).
 */
export async function updateProjectSettings(db: Knex, projectId: string, patch: SettingsPatch, retention: RetentionConfig = loadRetentionConfig()): Promise<ProjectSettings> {
  if (patch.retentionDays != null && patch.retentionDays > retention.days) {
    throw invalid([{ field: 'retentionDays', code: 'max', message: `retentionDays must be at most ${retention.days}, the installation's retention (RETENTION_DAYS); null keeps that` }]);
  }
  const t = patch.tracking ?? {};
  const changes: Partial<Row> = {
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(t.send?.opens !== undefined ? { track_send_opens: t.send.opens } : {}),
    ...(t.send?.clicks !== undefined ? { track_send_clicks: t.send.clicks } : {}),
    ...(t.campaigns?.opens !== undefined ? { track_campaign_opens: t.campaigns.opens } : {}),
    ...(t.campaigns?.clicks !== undefined ? { track_campaign_clicks: t.campaigns.clicks } : {}),
    ...(patch.requireTwoFactor !== undefined ? { require_two_factor: patch.requireTwoFactor } : {}),
    ...(patch.retentionDays !== undefined ? { retention_days: patch.retentionDays } : {}),
  };
  if (Object.keys(changes).length === 0) return projectSettings(db, projectId, retention);
  const [row] = await db('projects').where('id', projectId).update({ ...changes, updated_at: db.fn.now() }).returning([...COLUMNS]);
  return settingsOf(row, retention);
}

/** The functions above as one object over the app's database, the API's way in (like campaignService). */
export function settingsService({ knex, retention }: { knex: Knex; retention?: RetentionConfig }) {
  const config = retention ?? loadRetentionConfig();
  return {
    get: (projectId: string) => projectSettings(knex, projectId, config),
    /** Audited with the patch (the name and booleans only) in the transaction of the change (audit/log.ts). */
    update: (projectId: string, patch: SettingsPatch, actor: Actor) =>
      audited(knex, projectId, actor, { operation: 'updateSettings', resourceType: 'settings', resourceId: projectId, details: { changed: patch } },
        (trx) => updateProjectSettings(trx, projectId, patch, config)),
  };
}

export type Settings = ReturnType<typeof settingsService>;
