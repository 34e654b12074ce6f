import { BaseModel } from './BaseModel';

export type ApiKeyType = 'secret' | 'public';

export class ApiKey extends BaseModel {
  static override tableName = 'api_keys';

  id!: string;
  projectId!: string;
  type!: ApiKeyType;
  name!: string;
  /** `full` or `sending` (projects/roles.ts KeyScope); a public key's is `full` but it only reaches /v1/track. */
  scope!: 'full' | 'sending';
  /** The sending domains the key may use (and their subdomains); null: any. */
  domains!: string[] | null;
  lookup!: string;
  hash!: Buffer;
  hint!: string;
  createdAt!: Date;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
}
