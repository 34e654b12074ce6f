import { BaseModel } from './BaseModel';

export type ContactData = Record<string, unknown>;

export class Contact extends BaseModel {
  static override tableName = 'contacts';
  static override jsonAttributes = ['data'];

  id!: string;
  projectId!: string;
  email!: string;
  subscribed!: boolean;
  data!: ContactData;
  createdAt!: Date;
  updatedAt!: Date;
}
