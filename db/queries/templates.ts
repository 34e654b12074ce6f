import type { Knex } from 'knex';
import { Template } from '../models/Template';
import { listPage, type Listed, type PageRequest } from '../pages';

export async function getTemplate(db: Knex, projectId: string, id: string): Promise<Template | undefined> {
  return Template.query(db).findOne({ project_id: projectId, id });
}

export function listTemplates(db: Knex, projectId: string, filter: { type?: string }, page: PageRequest): Promise<Listed<Template>> {
  return listPage(() => {
    const q = db('templates').where('project_id', projectId);
    if (filter.type) q.where('type', filter.type);
    return q;
  }, page, (row) => Template.fromDatabaseJson(row));
}
