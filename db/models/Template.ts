import { BaseModel } from './BaseModel';

export type TemplateType = 'TRANSACTIONAL' | 'MARKETING';

export class Template extends BaseModel {
  static override tableName = 'templates';

  id!: string;
  projectId!: string;
  name!: string;
  description!: string | null;
  subject!: string;
  body!: string;
  fromEmail!: string | null;
  fromName!: string | null;
  replyTo!: string | null;
  type!: TemplateType;
  createdAt!: Date;
  updatedAt!: Date;
}
