import { recordAudit, type Actor } from '../audit/log';
import { conflict, invalid, notFound } from '../core/errors';
import { normaliseEmail } from '../core/values';
import type { Role } from '../projects/roles';
import { checkGrant, type Grantor } from './members';
import { hashPassword, passwordMatches } from './passwords';
import { insertToken, linkTo, takeToken, useToken, type PeopleDeps, type TokenRow } from './links';

/**
 * Invitations to a project: a single-use link (people/links.ts) to the invited address, with the role it grants.
 * Accepting creates the account when the address has none, or adds the membership to the account it has (whose
 * password must then be given: a link alone never grants an existing account anything), and uses the token: one
 * transaction, so a refusal changes nothing.
 */
export const DEFAULT_INVITATION_TTL_HOURS = 72;

export interface Invitation {
  id: string;
  email: string;
  role: Role;
  createdAt: Date;
  expiresAt: Date;
  invitedBy: string | null;
}

export interface CreatedInvitation extends Invitation {
  /** The link to accept it: present when Herald did not mail it (no system sender), for the inviter to pass on. */
  link?: string;
}

const invitationOf = (row: TokenRow): Invitation => ({
  id: row.id, email: row.email!, role: row.role as Role, createdAt: row.created_at, expiresAt: row.expires_at, invitedBy: row.created_by,
});

export async function projectName(deps: PeopleDeps, projectId: string): Promise<string> {
  const project = await deps.knex('projects').where({ id: projectId }).first<{ name: string } | undefined>('name');
  if (!project) throw notFound('Project');
  return project.name;
}

/**
 * Invites `email` to the project with `role`. `mail: false` (the CLI) never mails, and returns the link; otherwise the
 * system sender mails it when there is one, and only then is the link left out of the answer.
 */
export async function createInvitation(deps: PeopleDeps, projectId: string, input: { email: string; role: Role }, grantor: Grantor, opts: { mail?: boolean } = {}): Promise<CreatedInvitation> {
  const email = normaliseEmail(input.email);
  if (!email) throw invalid([{ field: 'email', code: 'invalid', message: 'email must be a valid email address' }]);
  checkGrant(grantor, input.role);
  const name = await projectName(deps, projectId);
  const member = await deps.knex('memberships as m').join('users as u', 'u.id', 'm.user_id')
    .where({ 'm.project_id': projectId, 'u.email': email }).first('m.user_id');
  if (member) throw conflict(`${email} is already a member of this project`, 'Change their role with PATCH /members/:userId.');
  const mailing = Boolean(deps.mail && opts.mail !== false);
  // The invitation, its audit entry and (with a system sender) its mail: one transaction, so an invitation that could
  // not be mailed is neither kept (nobody could accept it: its link is not answered either) nor in the log.
  const { row, link } = await deps.knex.transaction(async (trx) => {
    const made = await insertToken(trx, 'invitation', deps.invitationTtlHours ?? DEFAULT_INVITATION_TTL_HOURS,
      { project_id: projectId, email, role: input.role, created_by: grantor.userId ?? null });
    const link = linkTo(deps.publicUrl, 'invitation', made.token);
    await recordAudit(trx, { projectId, actor: grantor.actor, operation: 'createInvitation', resourceType: 'invitation', resourceId: made.row.id, details: { email, role: input.role } });
    if (mailing) {
      try {
        await deps.mail!({
          to: email,
          subject: `You are invited to ${name} on Herald`,
          text: `You are invited to join the project "${name}" on Herald as ${input.role}.\n\nAccept the invitation here (the link works once, until ${made.row.expires_at.toISOString()}):\n${link}\n\nIf you did not expect this, ignore this message.\n`,
        });
      } catch (err) {
        throw conflict(`Herald could not mail the invitation: ${(err as Error).message}`,
          "The operator must verify SYSTEM_FROM_EMAIL's domain in the SYSTEM_PROJECT_ID project, or unset both (links are then answered to the inviter).");
      }
    }
    return { row: made.row, link };
  });
  return mailing ? invitationOf(row) : { ...invitationOf(row), link };
}

/** The project's invitations not yet accepted, revoked or expired (auth_tokens_project_idx). */
export async function listInvitations(deps: PeopleDeps, projectId: string): Promise<Invitation[]> {
  const rows = await deps.knex('auth_tokens').where({ project_id: projectId, kind: 'invitation' }).whereNull('used_at')
    .where('expires_at', '>', deps.knex.fn.now()).orderBy('id').select<TokenRow[]>('*');
  return rows.map(invitationOf);
}

/** Revokes a pending invitation: its row goes, so its link is unknown from then on. Another project's is a 404. */
export async function revokeInvitation(deps: PeopleDeps, projectId: string, id: string, actor: Actor): Promise<void> {
  await deps.knex.transaction(async (trx) => {
    const [gone] = await trx('auth_tokens').where({ id, project_id: projectId, kind: 'invitation' }).whereNull('used_at').delete().returning(['email', 'role']);
    if (!gone) throw notFound('Invitation');
    await recordAudit(trx, { projectId, actor, operation: 'deleteInvitation', resourceType: 'invitation', resourceId: id, details: { email: gone.email, role: gone.role } });
  });
}

export interface Accepted {
  userId: string;
  email: string;
  projectId: string;
  role: Role;
  /** Whether the account was made now (or the invitation joined an account the address had). */
  newAccount: boolean;
}

export async function acceptInvitation(deps: PeopleDeps, input: { token: string; name: string; password: string }): Promise<Accepted> {
  return deps.knex.transaction(async (trx) => {
    const invitation = await takeToken(trx, 'invitation', input.token);
    const email = invitation.email!;
    const projectId = invitation.project_id!;
    const role = invitation.role as Role;
    const existing = await trx('users').where({ email }).forUpdate().first<{ id: string; password_hash: string | null; disabled: boolean } | undefined>('id', 'password_hash', 'disabled');
    let userId: string;
    if (existing) {
      if (existing.disabled || !(await passwordMatches(input.password, existing.password_hash))) {
        throw invalid([{ field: 'password', code: 'wrong_password', message: `${email} already has an account: give its password to join this project` }],
          'Forgot it? Ask for a password reset, then accept the invitation again.');
      }
      userId = existing.id;
      const already = await trx('memberships').where({ project_id: projectId, user_id: userId }).first('role');
      if (already) throw conflict(`${email} is already a member of this project`);
    } else {
      // Another invitation to the same address accepted at the same moment may have made the account meanwhile: then
      // this one refuses (nothing changed) and the person accepts again, with that account's password.
      const [user] = await trx('users').insert({ email, name: input.name, password_hash: await hashPassword(input.password) })
        .onConflict('email').ignore().returning<{ id: string }[]>('id');
      if (!user) throw conflict(`An account for ${email} was just created`, 'Accept the invitation again with that account\'s password.');
      userId = user.id;
    }
    await trx('memberships').insert({ project_id: projectId, user_id: userId, role });
    await useToken(trx, invitation.id);
    return { userId, email, projectId, role, newAccount: !existing };
  });
}
