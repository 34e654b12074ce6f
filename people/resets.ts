import { notFound } from '../core/errors';
import { normaliseEmail } from '../core/values';
import { hashPassword } from './passwords';
import { insertToken, linkTo, takeToken, type PeopleDeps, type SystemMail } from './links';

/**
 * Password reset: a single-use link valid for an hour. Asking for one answers the same whether or not the address has
 * an account (nothing tells a stranger who has one); confirming sets the new password, uses every pending reset of
 * the account and ends all its sessions (whoever held the old password is signed out), in one transaction.
 */
export const RESET_TTL_HOURS = 1;

async function resetLink(deps: PeopleDeps, user: { id: string }): Promise<{ link: string; expiresAt: Date }> {
  const { row, token } = await insertToken(deps.knex, 'password_reset', RESET_TTL_HOURS, { user_id: user.id });
  return { link: linkTo(deps.publicUrl, 'password_reset', token), expiresAt: row.expires_at };
}

const activeUser = (deps: PeopleDeps, email: string) =>
  deps.knex('users').where({ email, disabled: false }).first<{ id: string; email: string } | undefined>('id', 'email');

/**
 * A reset link is mailed to an account at most this often: the route takes no key, and anyone could otherwise fill a
 * person's mailbox with resets. The link mailed earlier still works meanwhile.
 */
export const RESET_MAIL_INTERVAL_MINUTES = 5;

/**
 * POST /auth/password-reset. With a system sender, an account's address gets the link by mail; without one nothing
 * is made (nobody would receive it) and `mailed` is false so that the caller can tell the operator to use the CLI.
 * Either way the person asking gets the same answer, and at the same time: the link is made and mailed in
 * `delivery`, which the answer does not wait for (its time would tell that the address has an account).
 */
export async function requestReset(deps: PeopleDeps, rawEmail: string): Promise<{ mailed: boolean; delivery: Promise<void> }> {
  const mail = deps.mail;
  if (!mail) return { mailed: false, delivery: Promise.resolve() };
  const email = normaliseEmail(rawEmail);
  const user = email ? await activeUser(deps, email) : undefined;
  const delivery = user ? mailReset(deps, mail, user) : Promise.resolve();
  return { mailed: true, delivery };
}

async function mailReset(deps: PeopleDeps, mail: SystemMail, user: { id: string; email: string }): Promise<void> {
  // auth_tokens_user_idx serves it.
  const recent = await deps.knex('auth_tokens').where({ user_id: user.id, kind: 'password_reset' }).whereNull('used_at')
    .where('created_at', '>', deps.knex.raw('now() - make_interval(mins => ?)', [RESET_MAIL_INTERVAL_MINUTES])).first('id');
  if (recent) return;
  const { link } = await resetLink(deps, user);
  await mail({
    to: user.email,
    subject: 'Reset your Herald password',
    text: `Someone (hopefully you) asked to reset the password of your Herald account.\n\nSet a new password here (the link works once, for ${RESET_TTL_HOURS} hour):\n${link}\n\nIf it was not you, ignore this message: your password stays as it is.\n`,
  });
}

/** The operator's way (CLI `user reset`): a reset link for an account, printed, never mailed. */
export async function createResetLink(deps: PeopleDeps, rawEmail: string): Promise<{ email: string; link: string; expiresAt: Date }> {
  const email = normaliseEmail(rawEmail);
  const user = email ? await activeUser(deps, email) : undefined;
  if (!user) throw notFound('User');
  return { email: user.email, ...(await resetLink(deps, user)) };
}

export async function confirmReset(deps: PeopleDeps, input: { token: string; password: string }): Promise<{ userId: string; sessionsEnded: number }> {
  // Hashed before the transaction: the token row is not held locked while argon2 works.
  const hash = await hashPassword(input.password);
  return deps.knex.transaction(async (trx) => {
    const reset = await takeToken(trx, 'password_reset', input.token);
    const userId = reset.user_id!;
    await trx('users').where({ id: userId }).update({ password_hash: hash, updated_at: trx.fn.now() });
    // Every pending reset of the account goes with this one (auth_tokens_user_idx).
    await trx('auth_tokens').where({ user_id: userId, kind: 'password_reset' }).whereNull('used_at').update({ used_at: trx.fn.now() });
    const sessionsEnded = await trx('sessions').where({ user_id: userId }).whereNull('ended_at').update({ ended_at: trx.fn.now() });
    return { userId, sessionsEnded };
  });
}
