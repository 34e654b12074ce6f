import { BaseModel } from './BaseModel';

export type ApiKeyType = 'secret' | 'public';

export class ApiKey extends BaseModel {
  static override tableName = 'api_keys';

  id!: string;
  projectId!: string;
  type!: ApiKeyType;
  lookup!: string;
  hash!: Buffer;
  hint!: string;
  createdAt!: Date;
  revokedAt!: Date | null;
}
