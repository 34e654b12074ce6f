import type { Knex } from 'knex';
import { listPage, type Listed, type PageRequest } from '../pages';
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

/** One page of every project's domains in id order (the scheduled re-check walks them all). */
export async function domainsAfter(db: Knex, afterId: string | null, size: number): Promise<Domain[]> {
  const q = Domain.query(db).orderBy('id').limit(size);
  if (afterId) q.where('id', '>', afterId);
  return q;
}
