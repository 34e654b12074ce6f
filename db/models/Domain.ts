import { BaseModel } from './BaseModel';

// The stored values of a domain row; domains/records.ts decides them (afterCheck).
export type DomainStatus = 'PENDING' | 'VERIFIED' | 'FAILED';
export type VerifiedBy = 'DNS' | 'OPERATOR';
/** RETURN_PATH_*: the bounce domain's records (installation-wide: the same for every sending domain), see ReturnPath. */
export type RecordPurpose = 'DKIM' | 'SPF' | 'DMARC' | 'RETURN_PATH_MX' | 'RETURN_PATH_SPF';
export type RecordStatus = 'PENDING' | 'VERIFIED' | 'FAILED';
/** What the last check found per record; a record missing here has not been checked (or could not be). */
export type RecordStatuses = Partial<Record<RecordPurpose, RecordStatus>>;

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
  /** AES-256-GCM ciphertext of the private key (domains/dkim.ts). Never serialised into a response or a log. */
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
