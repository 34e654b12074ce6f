import type { Knex } from 'knex';
import { Domain, type RecordStatuses } from '../db/models/Domain';
import { Project } from '../db/models/Project';
import { getDomain } from '../db/queries/domains';
import { encryptPrivateKey, generateDkimKey } from './dkim';
import { afterCheck } from './records';

/**
 * The writes of domain rows that take the domains' own rules: a new DKIM key, sealed for its row, and the status a
 * DNS check leads to. The plain reads and writes are the database layer's (db/queries/domains.ts).
 */

/** The DKIM columns of a freshly generated key pair, its private key encrypted for this project and domain. */
async function newKeyColumns(secret: Buffer, projectId: string, domain: string) {
  const key = await generateDkimKey();
  return { dkimSelector: key.selector, dkimPublicKey: key.publicKey, dkimPrivateKey: encryptPrivateKey(secret, projectId, domain, key.privateKey) };
}

/** Adds a PENDING domain with a new DKIM key; undefined when the project already has it (409). */
export async function createDomain(db: Knex, secret: Buffer, projectId: string, domain: string): Promise<Domain | undefined> {
  const columns = Domain.fromJson({ projectId, domain, status: 'PENDING', ...(await newKeyColumns(secret, projectId, domain)) }, { skipValidation: true }).$toDatabaseJson();
  const [row] = await db('domains').insert(columns).onConflict(['project_id', 'domain']).ignore().returning('*');
  return row ? Domain.fromDatabaseJson(row) : undefined;
}

/**
 * Gives a domain without a DKIM key (a row from before keys, or one added by addDomain below) its key;
 * returns the row as stored. A concurrent caller may win: then its key is the one kept.
 */
export async function ensureDomainKey(db: Knex, secret: Buffer, domain: Domain): Promise<Domain> {
  if (domain.dkimPrivateKey) return domain;
  const columns = Domain.fromJson(await newKeyColumns(secret, domain.projectId, domain.domain), { patch: true, skipValidation: true }).$toDatabaseJson();
  await db('domains').where({ project_id: domain.projectId, id: domain.id }).whereNull('dkim_private_key').update(columns);
  return (await getDomain(db, domain.projectId, domain.id))!;
}

/**
 * Stores the outcome of a DNS check of one domain (records.ts afterCheck decides the status), under a row
 * lock so that two checks (the schedule and an API call) do not interleave. Undefined when the domain is gone.
 */
export async function saveCheck(db: Knex, projectId: string, id: string, found: RecordStatuses, now = new Date()): Promise<Domain | undefined> {
  return db.transaction(async (trx) => {
    const current = await Domain.query(trx).findOne({ project_id: projectId, id }).forUpdate();
    if (!current) return undefined;
    const next = afterCheck({ status: current.status, verifiedBy: current.verifiedBy, verifiedAt: current.verifiedAt, records: current.records ?? {} }, found, now);
    const [row] = await trx('domains').where({ project_id: projectId, id }).update({
      status: next.status, verified_by: next.verifiedBy, verified_at: next.verifiedAt, records: JSON.stringify(next.records), checked_at: now, updated_at: now,
    }).returning('*');
    return Domain.fromDatabaseJson(row);
  });
}

/**
 * Adds a sending domain to a project. `verified` records it as verified by the operator, without a DNS check
 * (DNS verification is the API's job); otherwise it waits as PENDING. Adding an existing domain again with
 * `verified` marks it verified; without, it is left as it is. Returns null when the project does not exist.
 */
export async function addDomain(projectId: string, domain: string, verified: boolean): Promise<Domain | null> {
  const project = await Project.query().findById(projectId);
  if (!project) return null;
  const now = new Date();
  const insert = Domain.query().insert({ projectId, domain, status: verified ? 'VERIFIED' : 'PENDING', verifiedAt: verified ? now : null })
    .onConflict(['project_id', 'domain']);
  if (verified) {
    return (await insert.merge({ status: 'VERIFIED', verified_at: now, updated_at: now } as never).returning('*')) as unknown as Domain;
  }
  // ON CONFLICT DO NOTHING returns no row for an existing domain, yet Objection's insert() still resolves to a model
  // built from the input (no id, status PENDING): read the stored row instead.
  await insert.ignore();
  return (await Domain.query().findOne({ project_id: projectId, domain }))!;
}
