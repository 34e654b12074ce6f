import type { Knex } from 'knex';

/** mail.eu.example.com → [mail.eu.example.com, eu.example.com, example.com, com]. */
function suffixes(domain: string): string[] {
  const labels = domain.split('.');
  return labels.map((_, i) => labels.slice(i).join('.'));
}

/** True when the address is at a verified domain of the project, or at a subdomain of one. One indexed query. */
export async function isVerifiedSender(db: Knex, projectId: string, email: string): Promise<boolean> {
  return (await verifiedSenders(db, [{ projectId, email }])).size > 0;
}

/**
 * Which of these senders are at a verified domain of their project (or a subdomain of one), as `projectId/email`
 * keys. One indexed query for any number of senders.
 */
export async function verifiedSenders(db: Knex, senders: { projectId: string; email: string }[]): Promise<Set<string>> {
  if (senders.length === 0) return new Set();
  const pairs = new Map<string, [string, string]>();
  for (const s of senders) {
    for (const d of suffixes(s.email.slice(s.email.lastIndexOf('@') + 1).toLowerCase())) pairs.set(`${s.projectId}/${d}`, [s.projectId, d]);
  }
  const rows: { project_id: string; domain: string }[] = await db('domains').where('status', 'VERIFIED').whereIn(['project_id', 'domain'], [...pairs.values()]).select('project_id', 'domain');
  const found = new Set(rows.map((r) => `${r.project_id}/${r.domain}`));
  return new Set(senders
    .filter((s) => suffixes(s.email.slice(s.email.lastIndexOf('@') + 1).toLowerCase()).some((d) => found.has(`${s.projectId}/${d}`)))
    .map((s) => `${s.projectId}/${s.email}`));
}
