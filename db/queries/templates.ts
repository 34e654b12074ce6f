import type { Knex } from 'knex';
import { Template } from '../models/Template';

export async function getTemplate(db: Knex, projectId: string, id: string): Promise<Template | undefined> {
  return Template.query(db).findOne({ project_id: projectId, id });
}

export function templateListQueries(db: Knex, projectId: string, filter: { type?: string }, limit: number, afterId?: string) {
  const filtered = () => {
    const q = Template.query(db).where('project_id', projectId);
    if (filter.type) q.where('type', filter.type);
    return q;
  };
  const page = filtered().orderBy('id', 'desc').limit(limit + 1);
  if (afterId) page.where('id', '<', afterId);
  return { page, count: filtered().resultSize() };
}
