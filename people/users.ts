import type { Knex } from 'knex';
import type { Role } from '../projects/roles';

export interface UserSummary {
  id: string;
  email: string;
  name: string;
  operator: boolean;
  disabled: boolean;
  createdAt: Date;
  projects: { projectId: string; role: Role }[];
}

/** Every account of the instance with its memberships (the operator's `user list`): two statements, whole tables. */
export async function listUsers(knex: Knex): Promise<UserSummary[]> {
  const users = await knex('users').orderBy('id').select<{ id: string; email: string; name: string; operator: boolean; disabled: boolean; created_at: Date }[]>('id', 'email', 'name', 'operator', 'disabled', 'created_at');
  const memberships = await knex('memberships').orderBy(['user_id', 'project_id']).select<{ user_id: string; project_id: string; role: Role }[]>('user_id', 'project_id', 'role');
  const byUser = new Map<string, UserSummary['projects']>();
  for (const m of memberships) byUser.set(m.user_id, [...(byUser.get(m.user_id) ?? []), { projectId: m.project_id, role: m.role }]);
  return users.map((u) => ({ id: u.id, email: u.email, name: u.name, operator: u.operator, disabled: u.disabled, createdAt: u.created_at, projects: byUser.get(u.id) ?? [] }));
}
