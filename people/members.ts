import type { Knex } from 'knex';
import { conflict, notFound, refused } from '../core/errors';
import { actorOf, recordAudit, type Actor } from '../audit/log';
import { mayGrant, type Principal, type Role } from '../projects/roles';

/**
 * A project's members and their roles. Nobody grants a role above their own, nor changes or removes someone whose
 * role is above their own (listmonk #2752); only an owner makes an owner; the last owner is neither demoted nor
 * removed, so a project always has someone who may delete or hand it over.
 */

/** Who grants: a member's role, or a full API key, which acts as an admin (projects/roles.ts). */
export interface Grantor {
  role: Role;
  /** The member granting; absent for a key or the operator CLI. */
  userId?: string;
  /** Who the audit log names for the change (audit/log.ts). */
  actor: Actor;
}

export function grantorOf(auth: { principal: Principal; address: string }): Grantor {
  const { principal } = auth;
  const actor = actorOf(auth);
  return principal.kind === 'user' ? { role: principal.role, userId: principal.userId, actor } : { role: 'admin', actor };
}

export interface Member {
  userId: string;
  email: string;
  name: string;
  role: Role;
  createdAt: Date;
}

export function checkGrant(grantor: Grantor, role: Role): void {
  if (!mayGrant(grantor.role, role)) {
    throw refused(`A${grantor.role === 'admin' ? 'n' : ''} ${grantor.role} may not grant the ${role} role: nobody grants a role above their own`,
      role === 'owner' ? 'Ask an owner of the project.' : 'Ask a member with a higher role.');
  }
}

const members = (knex: Knex, projectId: string) => knex('memberships as m').join('users as u', 'u.id', 'm.user_id').where('m.project_id', projectId)
  .select<{ user_id: string; email: string; name: string; role: Role; created_at: Date }[]>('m.user_id', 'u.email', 'u.name', 'm.role', 'm.created_at');
const memberOf = (r: { user_id: string; email: string; name: string; role: Role; created_at: Date }): Member =>
  ({ userId: r.user_id, email: r.email, name: r.name, role: r.role, createdAt: r.created_at });

/** The project's members, by user id (memberships' primary key, project first, serves it). */
export async function listMembers(knex: Knex, projectId: string): Promise<Member[]> {
  return (await members(knex, projectId).orderBy('m.user_id')).map(memberOf);
}

/**
 * Locks the project's memberships (so that two demotions racing cannot leave no owner: the second sees the first),
 * and returns the target's role and how many owners there are.
 */
async function lockMembers(trx: Knex.Transaction, projectId: string, userId: string): Promise<{ role: Role; owners: number }> {
  const rows = await trx('memberships').where({ project_id: projectId }).forUpdate().select<{ user_id: string; role: Role }[]>('user_id', 'role');
  const target = rows.find((r) => r.user_id === userId);
  if (!target) throw notFound('Member');
  return { role: target.role, owners: rows.filter((r) => r.role === 'owner').length };
}

const lastOwner = () => conflict('This is the last owner of the project', 'Make another member owner first.');

export async function changeRole(knex: Knex, projectId: string, userId: string, role: Role, grantor: Grantor): Promise<Member> {
  checkGrant(grantor, role);
  await knex.transaction(async (trx) => {
    const target = await lockMembers(trx, projectId, userId);
    // Changing someone's role also takes theirs away: an admin may not demote an owner.
    checkGrant(grantor, target.role);
    if (target.role === 'owner' && role !== 'owner' && target.owners === 1) throw lastOwner();
    await trx('memberships').where({ project_id: projectId, user_id: userId }).update({ role, updated_at: trx.fn.now() });
    await recordAudit(trx, { projectId, actor: grantor.actor, operation: 'updateMember', resourceType: 'member', resourceId: userId, details: { role, was: target.role } });
  });
  const [row] = await members(knex, projectId).where('m.user_id', userId);
  if (!row) throw notFound('Member'); // removed meanwhile
  return memberOf(row);
}

export async function removeMember(knex: Knex, projectId: string, userId: string, grantor: Grantor): Promise<void> {
  await knex.transaction(async (trx) => {
    const target = await lockMembers(trx, projectId, userId);
    // Anyone may leave; removing someone else needs a role at least theirs.
    if (grantor.userId !== userId) checkGrant(grantor, target.role);
    if (target.role === 'owner' && target.owners === 1) throw lastOwner();
    await trx('memberships').where({ project_id: projectId, user_id: userId }).delete();
    await recordAudit(trx, { projectId, actor: grantor.actor, operation: 'deleteMember', resourceType: 'member', resourceId: userId, details: { role: target.role } });
  });
}
