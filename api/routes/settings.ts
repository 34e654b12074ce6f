import { actorOf } from '../../audit/log';
import { ok } from '../openapi/operations';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { settingsPatchSchema } from '../schemas/settings';

/** The caller's project settings: open and click tracking defaults (tracking/settings.ts), answered as they are. */
export const settingsRoutes = [
  route({ operationId: 'getSettings', method: 'get', path: '/settings', summary: "The project's settings", tag: 'Settings', access: 'secret', permission: 'read', answers: ok('The settings.', A.settingsAnswer),
    handle: async ({ auth, services }) => reply(await services.settings.get(auth.projectId)) }),

  route({ operationId: 'updateSettings', method: 'patch', path: '/settings', summary: "Change the project's settings", tag: 'Settings', access: 'secret', permission: 'admin', body: settingsPatchSchema, answers: ok('The settings.', A.settingsAnswer),
    handle: async ({ auth, body, services }) => reply(await services.settings.update(auth.projectId, body, actorOf(auth))) }),
];
