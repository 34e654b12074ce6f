import type { Knex } from 'knex';
import { ApiKey, type ApiKeyType } from '../db/models/ApiKey';
import { Project } from '../db/models/Project';
import { audited, OPERATOR } from '../audit/log';
import { insertApiKey, type NewKey } from './apiKeys';

/** Operator-level operations on projects and keys (used by the CLI and the first start); domains/rows.ts adds domains. */

export interface CreatedProject {
  id: string;
  name: string;
  secretKey: string;
  publicKey: string;
}

export interface CreatedKey {
  id: string;
  projectId: string;
  type: ApiKeyType;
  name: string;
  scope: NewKey['scope'];
  domains: string[] | null;
  key: string;
}

/** A project's first keys are named for what they are (GET /keys lists them). */
const DEFAULT_NAME: Record<ApiKeyType, string> = { secret: 'Default secret key', public: 'Default public key' };

/** A project's first key of a type: full scope, its default name (one insert for every key: projects/apiKeys.ts). */
async function insertKey(projectId: string, type: ApiKeyType, trx: Knex.Transaction): Promise<CreatedKey> {
  const made = await insertApiKey(trx, projectId, type, { name: DEFAULT_NAME[type], scope: 'full' });
  return { id: made.id, projectId, type, name: made.name, scope: made.scope, domains: made.domains, key: made.key };
}

/** Creates a project with one secret and one public key, in one transaction. The keys are shown only here. */
export async function createProject(name: string): Promise<CreatedProject> {
  return Project.transaction(async (trx) => {
    const project = await Project.query(trx).insert({ name }).returning('*');
    const secret = await insertKey(project.id, 'secret', trx);
    const pub = await insertKey(project.id, 'public', trx);
    return { id: project.id, name: project.name, secretKey: secret.key, publicKey: pub.key };
  });
}

/**
 * On the first start with an empty database, creates the project "Default" and returns it (with its keys,
 * shown once); returns null when any project exists. An advisory lock keeps two first starts from both creating it.
 */
export async function ensureDefaultProject(knex: Knex): Promise<CreatedProject | null> {
  return knex.transaction(async (trx) => {
    await trx.raw("SELECT pg_advisory_xact_lock(hashtext('herald:default-project'))");
    const any = await Project.query(trx).select('id').first();
    if (any) return null;
    const project = await Project.query(trx).insert({ name: 'Default' }).returning('*');
    const secret = await insertKey(project.id, 'secret', trx);
    const pub = await insertKey(project.id, 'public', trx);
    return { id: project.id, name: project.name, secretKey: secret.key, publicKey: pub.key };
  });
}

export interface ProjectSummary {
  id: string;
  name: string;
  disabled: boolean;
  createdAt: string;
  keys: { id: string; type: ApiKeyType; name: string; scope: NewKey['scope']; hint: string; revoked: boolean }[];
}

export async function listProjects(): Promise<ProjectSummary[]> {
  const projects = await Project.query().orderBy('id');
  const keys = await ApiKey.query().whereIn('project_id', projects.map((p) => p.id)).orderBy('id');
  return projects.map((p) => ({
    id: p.id,
    name: p.name,
    disabled: p.disabled,
    createdAt: p.createdAt.toISOString(),
    keys: keys.filter((k) => k.projectId === p.id).map((k) => ({ id: k.id, type: k.type, name: k.name, scope: k.scope, hint: `…${k.hint}`, revoked: k.revokedAt !== null })),
  }));
}

/** Sets the disabled flag; returns false when no such project exists. */
export async function setProjectDisabled(id: string, disabled: boolean): Promise<boolean> {
  const n = await Project.query().findById(id).patch({ disabled, updatedAt: new Date() });
  return n > 0;
}

/**
 * Creates an extra key for a project (the CLI's `key create`), audited as the operator's; null when the project does
 * not exist. Without a name, a key is named for its type; without a scope, it is `full`.
 */
export async function createKey(projectId: string, type: ApiKeyType, input: Partial<NewKey> = {}): Promise<CreatedKey | null> {
  const project = await Project.query().findById(projectId);
  if (!project) return null;
  const knex = Project.knex();
  const made = await audited(knex, projectId, OPERATOR,
    (k: { id: string; name: string; scope: string; domains: string[] | null }) => ({ operation: 'key.create', resourceType: 'key', resourceId: k.id, details: { name: k.name, scope: k.scope, domains: k.domains, type } }),
    (trx) => insertApiKey(trx, projectId, type, { name: input.name ?? DEFAULT_NAME[type], scope: input.scope ?? 'full', domains: input.domains ?? null }));
  return { id: made.id, projectId, type, name: made.name, scope: made.scope, domains: made.domains, key: made.key };
}

/** Revokes a key by id (the CLI's `key revoke`), audited as the operator's; false when no such (unrevoked) key exists. */
export async function revokeKey(keyId: string): Promise<boolean> {
  const key = await ApiKey.query().findById(keyId).whereNull('revoked_at');
  if (!key) return false;
  const knex = ApiKey.knex();
  return audited(knex, key.projectId, OPERATOR, { operation: 'key.revoke', resourceType: 'key', resourceId: keyId }, async (trx) => {
    const n = await ApiKey.query(trx).findById(keyId).whereNull('revoked_at').patch({ revokedAt: new Date() });
    // Revoked meanwhile: nothing changed, so nothing is recorded (the transaction rolls back).
    if (n === 0) throw new KeyGone();
    return true;
  }).catch((err) => {
    if (err instanceof KeyGone) return false;
    throw err;
  });
}

class KeyGone extends Error {}

