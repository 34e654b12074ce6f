import type { ApiKeyType } from '../db/models/ApiKey';

/**
 * Who may do what (issue 27): one permission model for API keys and for people signed in with a session.
 *
 * Every operation of the route table declares the one `Permission` it needs (api/routes/*.ts, beside its path); the
 * routers check it in one place (api/routing.ts) for keys and sessions alike, and docs/api.md prints the matrix.
 *
 * - `read`: read anything of the project (viewer and up, full keys).
 * - `send`: the sending routes (/v1/send, /v1/track, /v1/verify; SMTP submission): members and up, full keys and
 *   `sending` keys.
 * - `write`: content (contacts, templates, segments, campaigns, automations, events): members and up, full keys.
 * - `admin`: domains, webhooks, keys, settings, members, suppressions: admins and owners, full keys.
 * - `owner`: transfer ownership, delete the project: owners only (no key).
 */
export type Role = 'owner' | 'admin' | 'member' | 'viewer';
export const ROLES: readonly Role[] = ['owner', 'admin', 'member', 'viewer'];

export type Permission = 'read' | 'send' | 'write' | 'admin' | 'owner';
export const PERMISSIONS: readonly Permission[] = ['read', 'send', 'write', 'admin', 'owner'];

/** A secret key's scope: `full` (what an admin may do, through the API), or `sending` (the sending routes only). */
export type KeyScope = 'full' | 'sending';

/** The caller of a request: a key of the project, or a person signed in who is a member of it. */
export type Principal =
  | {
    kind: 'key'; keyId: string; keyType: ApiKeyType; scope: KeyScope;
    /** The sending domains the key is limited to (projects/keys.ts mayUseFrom); null or absent: any. */
    domains?: readonly string[] | null;
  }
  | { kind: 'user'; userId: string; sessionId: string; role: Role };

/** The permissions of each role: each role has those of the roles below it. */
const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  viewer: ['read'],
  member: ['read', 'send', 'write'],
  admin: ['read', 'send', 'write', 'admin'],
  owner: ['read', 'send', 'write', 'admin', 'owner'],
};

const SCOPE_PERMISSIONS: Record<KeyScope, readonly Permission[]> = {
  full: ['read', 'send', 'write', 'admin'],
  sending: ['send'],
};

export const roleAllows = (role: Role, needs: Permission): boolean => ROLE_PERMISSIONS[role].includes(needs);
export const scopeAllows = (scope: KeyScope, needs: Permission): boolean => SCOPE_PERMISSIONS[scope].includes(needs);

/** Whether the caller may run an operation that needs `needs`. (Public keys are kept to /v1/track by the routers.) */
export function allows(principal: Principal, needs: Permission): boolean {
  return principal.kind === 'key' ? scopeAllows(principal.scope, needs) : roleAllows(principal.role, needs);
}

/** Nobody grants a role above their own (listmonk #2752): may `granter` give `role` to someone? */
export function mayGrant(granter: Role, role: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(granter);
}

/** Who has a permission, for the docs: the roles and the key scopes (docs/api.md's matrix, the OpenAPI document). */
export function holdersOf(needs: Permission): { roles: Role[]; scopes: KeyScope[] } {
  return { roles: ROLES.filter((r) => roleAllows(r, needs)), scopes: (['full', 'sending'] as KeyScope[]).filter((k) => scopeAllows(k, needs)) };
}

/** `write` → "Permission `write`: owner, admin, member; keys: full." */
export function permissionLine(needs: Permission): string {
  const { roles, scopes } = holdersOf(needs);
  return `Permission \`${needs}\`: ${roles.join(', ')}; keys: ${scopes.length ? scopes.join(', ') : 'none'}.`;
}
