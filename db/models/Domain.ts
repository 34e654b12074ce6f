import type { RecordStatuses, VerifiedBy } from '../../verify/domainRecords';
import { BaseModel } from './BaseModel';

export type DomainStatus = 'PENDING' | 'VERIFIED' | 'FAILED';

export class Domain extends BaseModel {
  static override tableName = 'domains';

  id!: string;
  projectId!: string;
  domain!: string;
  status!: DomainStatus;
  verifiedAt!: Date | null;
  /** DNS selector of the DKIM key; null only on rows from before DKIM keys (they get one on first use). */
  dkimSelector!: string | null;
  /** base64 SubjectPublicKeyInfo DER (the p= of the DKIM record). */
  dkimPublicKey!: string | null;
  /** AES-256-GCM ciphertext of the private key (mail/dkim.ts). Never serialised into a response or a log. */
  dkimPrivateKey!: Buffer | null;
  verifiedBy!: VerifiedBy | null;
  records!: RecordStatuses;
  checkedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;

  static override get jsonAttributes() {
    return ['records'];
  }
}
