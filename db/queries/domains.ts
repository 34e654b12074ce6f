import type { Knex } from 'knex';

/** mail.eu.example.com → [mail.eu.example.com, eu.example.com, example.com, com]. */
function suffixes(domain: string): string[] {
  const labels = domain.split('.');
  return labels.map((_, i) => labels.slice(i).join('.'));
}

/** True when the address is at a verified domain of the project, or at a subdomain of one. One indexed query. */
export async function isVerifiedSender(db: Knex, projectId: string, email: string): Promise<boolean> {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const row = await db('domains').where({ project_id: projectId, status: 'VERIFIED' }).whereIn('domain', suffixes(domain)).first(db.raw('1 AS ok'));
  return row !== undefined;
}
