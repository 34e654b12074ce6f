import { BaseModel } from './BaseModel';

export class Event extends BaseModel {
  static override tableName = 'events';
  static override jsonAttributes = ['data'];

  id!: string;
  projectId!: string;
  name!: string;
  contactId!: string | null;
  emailId!: string | null;
  data!: Record<string, unknown>;
  createdAt!: Date;
}
