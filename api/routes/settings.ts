import { actorOf } from '../../audit/log';
import { conflict } from '../errors';
import { ok } from '../openapi/operations';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { settingsPatchSchema } from '../schemas/settings';

/** The caller's project settings: its name, open and click tracking defaults and the two-factor requirement (tracking/settings.ts). */
export const settingsRoutes = [
  route({ operationId: 'getSettings', method: 'get', path: '/settings', summary: "The project's settings", tag: 'Settings', access: 'secret', permission: 'read', answers: ok('The settings.', A.settingsAnswer),
    handle: async ({ auth, services }) => reply(await services.settings.get(auth.projectId)) }),

  route({ operationId: 'updateSettings', method: 'patch', path: '/settings', summary: "Change the project's settings", tag: 'Settings', access: 'secret', permission: 'admin', body: settingsPatchSchema, answers: ok('The settings.', A.settingsAnswer), errors: [409],
    description: 'Changes the settings given: the project\'s `name` (1–100 characters), tracking defaults, `requireTwoFactor`. `requireTwoFactor` refuses the sessions of members without two-factor on (403 TWO_FACTOR_REQUIRED; API keys are not concerned); a person turning it on must have two-factor on themselves (409).',
    async handle({ auth, body, services }) {
      // A person who requires two-factor without having it would shut their own session out of the project at once.
      if (body.requireTwoFactor && auth.principal.kind === 'user' && !(await services.people.twoFactor.status(auth.principal.userId)).enabled) {
        throw conflict('Turn on your own two-factor before requiring it of the project', 'POST /auth/two-factor, then POST /auth/two-factor/confirm; or make this change with an API key.');
      }
      return reply(await services.settings.update(auth.projectId, body, actorOf(auth)));
    } }),
];
