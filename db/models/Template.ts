import { BaseModel } from './BaseModel';

export type TemplateType = 'TRANSACTIONAL' | 'MARKETING';
export type BodyType = 'html' | 'markdown';

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
  bodyType!: BodyType;
  createdAt!: Date;
  updatedAt!: Date;
}
