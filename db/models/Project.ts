import { BaseModel } from './BaseModel';

export class Project extends BaseModel {
  static override tableName = 'projects';

  id!: string;
  name!: string;
  disabled!: boolean;
  createdAt!: Date;
  updatedAt!: Date;
}
