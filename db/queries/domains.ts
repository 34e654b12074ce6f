import type { Knex } from 'knex';
import { listPage, type Listed, type PageRequest } from '../pages';
import { encryptPrivateKey, generateDkimKey } from '../../mail/dkim';
import { afterCheck, type RecordStatuses } from '../../verify/domainRecords';
import { Domain } from '../models/Domain';

/**
 * The SQL condition that a sender is at a VERIFIED domain of its project, or at a subdomain of one: `projectId` and
 * `email` are SQL expressions. It reads the project's verified domains through domains' (project_id, domain) key.
 */
export function verifiedSenderSql(projectId: string, email: string): string {
  const domain = `lower(regexp_replace(${email}, '^.*@', ''))`;
  return `EXISTS (SELECT 1 FROM domains d WHERE d.project_id = ${projectId} AND d.status = 'VERIFIED'
    AND (d.domain = ${domain} OR right(${domain}, length(d.domain) + 1) = '.' || d.domain))`;
}

/** True when the address is at a verified domain of the project, or at a subdomain of one. One indexed query. */
export async function isVerifiedSender(db: Knex, projectId: string, email: string): Promise<boolean> {
  const { rows } = await db.raw(`SELECT ${verifiedSenderSql('s.project_id', 's.email')} AS ok FROM (SELECT ?::uuid AS project_id, ?::text AS email) s`, [projectId, email]);
  return rows[0].ok === true;
}

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
 * Gives a domain without a DKIM key (a row from before keys, or one added by projects/service addDomain) its key;
 * returns the row as stored. A concurrent caller may win: then its key is the one kept.
 */
export async function ensureDomainKey(db: Knex, secret: Buffer, domain: Domain): Promise<Domain> {
  if (domain.dkimPrivateKey) return domain;
  const columns = Domain.fromJson(await newKeyColumns(secret, domain.projectId, domain.domain), { patch: true, skipValidation: true }).$toDatabaseJson();
  await db('domains').where({ project_id: domain.projectId, id: domain.id }).whereNull('dkim_private_key').update(columns);
  return (await getDomain(db, domain.projectId, domain.id))!;
}

/** Records that the operator vouches for the domain (CLI `domain add --verified`): an override of failing DNS checks. */
export async function markOperatorVerified(db: Knex, domain: Domain): Promise<Domain> {
  if (domain.status !== 'VERIFIED' || domain.verifiedBy === 'OPERATOR') return domain;
  await db('domains').where({ project_id: domain.projectId, id: domain.id }).update({ verified_by: 'OPERATOR', updated_at: db.fn.now() });
  return (await getDomain(db, domain.projectId, domain.id))!;
}

export async function getDomain(db: Knex, projectId: string, id: string): Promise<Domain | undefined> {
  return Domain.query(db).findOne({ project_id: projectId, id });
}

export async function deleteDomain(db: Knex, projectId: string, id: string): Promise<boolean> {
  return (await db('domains').where({ project_id: projectId, id }).delete()) > 0;
}

export function listDomains(db: Knex, projectId: string, filter: { status?: string }, page: PageRequest): Promise<Listed<Domain>> {
  return listPage(() => {
    const q = db('domains').where('project_id', projectId);
    if (filter.status) q.where('status', filter.status);
    return q;
  }, page, (row) => Domain.fromDatabaseJson(row));
}

/**
 * Stores the outcome of a DNS check of one domain (verify/domainRecords.ts afterCheck decides the status), under a row
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

/** One page of every project's domains in id order (the scheduled re-check walks them all). */
export async function domainsAfter(db: Knex, afterId: string | null, size: number): Promise<Domain[]> {
  const q = Domain.query(db).orderBy('id').limit(size);
  if (afterId) q.where('id', '>', afterId);
  return q;
}
