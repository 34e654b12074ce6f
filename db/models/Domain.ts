import { BaseModel } from './BaseModel';

export type DomainStatus = 'PENDING' | 'VERIFIED' | 'FAILED';

export class Domain extends BaseModel {
  static override tableName = 'domains';

  id!: string;
  projectId!: string;
  domain!: string;
  status!: DomainStatus;
  verifiedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}
