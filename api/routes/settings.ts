import type Router from '@koa/router';
import type { Knex } from 'knex';
import type { AuthState } from '../middleware/auth';
import { settingsPatchSchema } from '../schemas/settings';
import { projectSettings, updateProjectSettings, type SettingsPatch } from '../../tracking/settings';
import { validateBody } from '../validate';

/** The caller's project settings: open and click tracking defaults (tracking/settings.ts). */
export function settingsRoutes(router: Router, knex: Knex): void {
  router.get('/settings', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: await projectSettings(knex, projectId) };
  });

  router.patch('/settings', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const patch = validateBody<SettingsPatch>(ctx, settingsPatchSchema);
    ctx.body = { success: true, data: await updateProjectSettings(knex, projectId, patch) };
  });
}
