import { confirmReset, requestReset } from '../../people/resets';
import { completeSetup } from '../../people/setup';
import { created, ok } from '../openapi/operations';
import { personRoute, reply } from '../route';
import * as A from '../schemas/answers';
import { resetConfirmSchema, resetRequestSchema, setupSchema } from '../schemas/people';

/** Whatever the address, the same words: nothing tells a stranger whether it has an account. */
const RESET_REQUESTED = 'If this address has an account, a link to reset its password is on its way.';

/**
 * Accounts without a session (people/resets.ts, people/setup.ts): password reset and first-start setup. Open: the
 * token in the body authorises. (Signing in and sessions are api/routes/auth.ts's.)
 */
export const accountRoutes = [
  personRoute({ people: true, operationId: 'requestPasswordReset', method: 'post', path: '/auth/password-reset', summary: 'Ask for a password reset link', tag: 'Accounts', access: 'open', body: resetRequestSchema,
    description: `Always the same answer, at the same time. With a system sender Herald mails an account's address a link valid one hour (at most one every 5 minutes); without one nothing is sent (the operator prints a link with \`npm run cli -- user reset --email E\`).`,
    answers: ok('Asked.', A.resetRequestedAnswer), errors: [400, 413, 415],
    async handle({ body, services }) {
      const { mailed, delivery } = await requestReset(services.accounts, body.email);
      // Not waited for (people/resets.ts); a failure is the operator's to see, not the asker's.
      delivery.catch((err: unknown) => services.accounts.log.warn({ err: (err as Error).message }, 'a password reset mail could not be sent'));
      // No secret here, nor the address: only that the operator has to help.
      if (!mailed) services.accounts.log.info('a password reset was asked for, but no system sender is configured (SYSTEM_PROJECT_ID, SYSTEM_FROM_EMAIL): the operator can print a link with `user reset --email`');
      return reply({ message: RESET_REQUESTED });
    } }),

  personRoute({ people: true, operationId: 'confirmPasswordReset', method: 'post', path: '/auth/password-reset/confirm', summary: 'Set a new password with a reset link', tag: 'Accounts', access: 'open', body: resetConfirmSchema,
    description: "Sets the password, uses the link and every other pending reset of the account, and ends all the account's sessions, in one transaction. A used, expired or unknown token is a 422 naming `token`, and changes nothing.",
    answers: ok('Password set; every session of the account ended.', A.resetAnswer), errors: [400, 413, 415],
    async handle({ body, services }) {
      return reply(await confirmReset(services.accounts, body));
    } }),

  personRoute({ people: true, operationId: 'completeSetup', method: 'post', path: '/auth/setup', summary: 'Create the first account (first start)', tag: 'Accounts', access: 'open', body: setupSchema,
    description: 'With the one-time link Herald prints at start while no account exists: creates an operator account, owner of every project. Refused (409) once any account exists.',
    answers: created('The first account.', A.setupAnswer), errors: [400, 409, 413, 415],
    async handle({ body, services }) {
      return reply(await completeSetup(services.accounts, body), 201);
    } }),
];
