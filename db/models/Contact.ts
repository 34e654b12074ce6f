import { BaseModel } from './BaseModel';

export type ContactData = Record<string, unknown>;

export class Contact extends BaseModel {
  static override tableName = 'contacts';
  static override jsonAttributes = ['data'];
  // The primary key is (project_id, id); `id` alone is unique too (UUIDv7) and is what the API exposes.
  static override idColumn = 'id';

  id!: string;
  projectId!: string;
  email!: string;
  subscribed!: boolean;
  data!: ContactData;
  createdAt!: Date;
  updatedAt!: Date;
}
