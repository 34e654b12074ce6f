import { conflict, invalid } from '../core/errors';
import { normaliseEmail } from '../core/values';
import { hashPassword } from './passwords';
import { insertToken, linkTo, takeToken, useToken, type PeopleDeps } from './links';

/**
 * First start: while the instance has no account, each start of an API process prints a one-time setup link
 * (bin/runtime.ts) beside the default project's keys. `POST /auth/setup` with it creates the first account: an
 * operator, owner of every project there is. Once any account exists, setup is refused and no new link is printed.
 */
export const SETUP_TTL_HOURS = 24;

const anyUser = async (db: PeopleDeps['knex']): Promise<boolean> => (await db('users').first('id')) !== undefined;

/** A setup link, or undefined when an account exists already. */
export async function setupLink(deps: PeopleDeps): Promise<string | undefined> {
  if (await anyUser(deps.knex)) return undefined;
  const { token } = await insertToken(deps.knex, 'setup', SETUP_TTL_HOURS, {});
  return linkTo(deps.publicUrl, 'setup', token);
}

export async function completeSetup(deps: PeopleDeps, input: { token: string; email: string; name: string; password: string }): Promise<{ userId: string; email: string; projects: number }> {
  const email = normaliseEmail(input.email);
  if (!email) throw invalid([{ field: 'email', code: 'invalid', message: 'email must be a valid email address' }]);
  const hash = await hashPassword(input.password);
  return deps.knex.transaction(async (trx) => {
    // Two setups racing (two links of two starts): the second waits here, then finds the first's account.
    await trx.raw('LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE');
    if (await anyUser(trx)) throw conflict('Herald is set up already: an account exists', 'Sign in, or ask an operator to invite you.');
    const setup = await takeToken(trx, 'setup', input.token);
    const [user] = await trx('users').insert({ email, name: input.name, password_hash: hash, operator: true }).returning<{ id: string }[]>('id');
    const added = await trx.raw<{ rowCount: number }>("INSERT INTO memberships (project_id, user_id, role) SELECT id, ?, 'owner' FROM projects", [user!.id]);
    // Other setup links (of earlier starts) stay unused but are dead: setup is refused once an account exists.
    await useToken(trx, setup.id);
    return { userId: user!.id, email, projects: added.rowCount };
  });
}
