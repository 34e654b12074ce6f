import type { Knex } from 'knex';
import { invalid } from '../core/errors';
import { normaliseEmail } from '../core/values';
import type { Role } from '../projects/roles';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords';

/** An account (issue 27): who signs in, and whether they run the instance. */
export interface User {
  id: string;
  email: string;
  name: string;
  operator: boolean;
  disabled: boolean;
}

/** A project the user belongs to, with their role in it. */
export interface Membership {
  projectId: string;
  projectName: string;
  role: Role;
  projectDisabled: boolean;
  /** The project refuses its members' sessions until they have two-factor on. */
  twoFactorRequired: boolean;
}

const USER_COLUMNS = 'id, email, name, operator, disabled';

/** Creates an account with its password hashed (argon2id, off the event loop). The address is stored lower-cased. */
export async function createUser(knex: Knex, input: { email: string; name?: string; password: string; operator?: boolean }): Promise<User> {
  const email = normaliseEmail(input.email);
  if (!email) throw invalid([{ field: 'email', message: 'email must be a valid email address', code: 'invalid' }]);
  if (input.password.length < MIN_PASSWORD_LENGTH || input.password.length > MAX_PASSWORD_LENGTH) {
    throw invalid([{ field: 'password', message: `password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`, code: 'invalid' }]);
  }
  const passwordHash = await hashPassword(input.password);
  const { rows } = await knex.raw(`INSERT INTO users (email, name, password_hash, operator) VALUES (?, ?, ?, ?) RETURNING ${USER_COLUMNS}`,
    [email, input.name ?? '', passwordHash, input.operator ?? false]);
  return rows[0] as User;
}

/** The account of an address (any case), with its password hash for the login's check; served by users_email_key. */
export async function findUserByEmail(knex: Knex, email: string): Promise<(User & { passwordHash: string | null }) | undefined> {
  const normal = normaliseEmail(email);
  if (!normal) return undefined;
  const { rows } = await knex.raw(`SELECT ${USER_COLUMNS}, password_hash AS "passwordHash" FROM users WHERE email = ?`, [normal]);
  return rows[0];
}

/** The address of an account (a person signed in: the default recipient of their own test sends). */
export async function emailOfUser(knex: Knex, userId: string): Promise<string | undefined> {
  const { rows } = await knex.raw('SELECT email FROM users WHERE id = ?', [userId]);
  return (rows[0] as { email: string } | undefined)?.email;
}

/**
 * The account of an address a single sign-on provider verified, created without a password (and without projects) when
 * there is none (OIDC_ALLOW_SIGNUP). ON CONFLICT: two first logins at once make one account, and both find it.
 */
export async function findOrCreateSsoUser(knex: Knex, email: string, name: string): Promise<User> {
  const { rows } = await knex.raw(`INSERT INTO users (email, name, password_hash) VALUES (?, ?, NULL)
    ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING ${USER_COLUMNS}`, [email, name]);
  return rows[0] as User;
}

/** The user's projects and roles, by project name (memberships_user_idx, then each project by its key). */
export async function membershipsOf(knex: Knex, userId: string): Promise<Membership[]> {
  const { rows } = await knex.raw(`SELECT m.project_id AS "projectId", p.name AS "projectName", m.role, p.disabled AS "projectDisabled",
    p.require_two_factor AS "twoFactorRequired"
    FROM memberships m JOIN projects p ON p.id = m.project_id WHERE m.user_id = ? ORDER BY p.name, p.id`, [userId]);
  return rows as Membership[];
}

/** An account with its memberships, as the operator's `user list` shows it. */
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
