import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { audited, type Actor } from '../audit/log';
import { listPage, type Listed, type PageRequest } from '../db/pages';
import type { ApiKeyType } from '../db/models/ApiKey';
import { generateKey } from './keys';
export { mayUseFrom } from './keys';
import type { KeyScope } from './roles';

/**
 * A project's API keys as a resource (GET/POST/DELETE /keys, issue 27 point 3): many named secret keys, each with a
 * scope and optionally the sending domains it may use. A key is shown once, in the answer that makes it; only its hash
 * is stored (projects/keys.ts). Creating and revoking are audited in their transaction (audit/log.ts).
 */

export interface KeyRow {
  id: string;
  type: ApiKeyType;
  name: string;
  scope: KeyScope;
  domains: string[] | null;
  hint: string;
  created_at: Date;
  last_used_at: Date | null;
}

export interface NewKey {
  name: string;
  scope: KeyScope;
  /** Sending domains (lower case); the key may send From them and their subdomains. Absent or null: any. */
  domains?: string[] | null;
}

const COLUMNS = ['id', 'type', 'name', 'scope', 'domains', 'hint', 'created_at', 'last_used_at'] as const;

/** The live keys of the project (revoked ones are gone from the list), newest first; secret and public alike. */
export function listKeys(db: Knex, projectId: string, page: PageRequest): Promise<Listed<KeyRow>> {
  return listPage<KeyRow>(() => db('api_keys').where('project_id', projectId).whereNull('revoked_at').select(...COLUMNS), page);
}

/** Inserts a key (in the caller's transaction); the key in clear is in the answer only. */
export async function insertApiKey(db: Knex, projectId: string, type: ApiKeyType, input: NewKey): Promise<KeyRow & { key: string }> {
  const generated = generateKey(type);
  const domains = input.domains?.length ? [...new Set(input.domains.map((d) => d.toLowerCase()))] : null;
  const [row] = await db('api_keys').insert({
    project_id: projectId, type, lookup: generated.lookup, hash: generated.hash, hint: generated.hint,
    name: input.name, scope: input.scope, domains,
  }).returning([...COLUMNS]);
  return { ...(row as KeyRow), key: generated.key };
}

/** A new secret key, audited with its name, scope and domains (never the key). */
export function createApiKey(db: Knex, projectId: string, actor: Actor, input: NewKey, operation = 'createKey'): Promise<KeyRow & { key: string }> {
  return audited(db, projectId, actor,
    (k: KeyRow) => ({ operation, resourceType: 'key', resourceId: k.id, details: { name: k.name, scope: k.scope, domains: k.domains } }),
    (trx) => insertApiKey(trx, projectId, 'secret', input));
}

/**
 * Revokes a key of the project; a key of another project, or one already revoked, is not found. It stops working at
 * once: every request looks its key up afresh (projects/access.ts never caches).
 */
export async function revokeApiKey(db: Knex, projectId: string, actor: Actor, id: string, operation = 'revokeKey'): Promise<void> {
  // The entry names the key (its name, not its hint): the log stays readable once the key has left GET /keys.
  await audited(db, projectId, actor, (name: string) => ({ operation, resourceType: 'key', resourceId: id, details: { name } }), async (trx) => {
    const [row] = await trx('api_keys').where({ project_id: projectId, id }).whereNull('revoked_at')
      .update({ revoked_at: trx.fn.now() }).returning(['name']);
    if (!row) throw notFound('Key');
    return row.name as string;
  });
}

export function keyService({ knex }: { knex: Knex }) {
  return {
    list: (projectId: string, page: PageRequest) => listKeys(knex, projectId, page),
    create: (projectId: string, actor: Actor, input: NewKey) => createApiKey(knex, projectId, actor, input),
    revoke: (projectId: string, actor: Actor, id: string) => revokeApiKey(knex, projectId, actor, id),
  };
}
