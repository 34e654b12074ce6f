/** Parts the pages share or split out (web/pages/parts/): modules, not pages (no route, no chunk of their own). */
import { Badge, type Tone } from '../../components';
import type { Schemas } from '../../api';

/** What the Domains pages share: a domain's and a record's status in words, and how many records DNS shows. */
export type DomainJson = Schemas['Domain'];
export type DomainRecordJson = DomainJson['records'][number];

const DOMAIN_STATUS: Record<DomainJson['status'], [string, Tone]> = {
  PENDING: ['Not verified', 'warning'],
  VERIFIED: ['Verified', 'success'],
  FAILED: ['Failed', 'danger'],
};

const RECORD_STATUS: Record<DomainRecordJson['status'], [string, Tone]> = {
  PENDING: ['Not checked', 'neutral'],
  VERIFIED: ['Found', 'success'],
  FAILED: ['Not found', 'danger'],
};

export function DomainStatus({ status }: { status: DomainJson['status'] }) {
  const [word, tone] = DOMAIN_STATUS[status];
  return <Badge tone={tone}>{word}</Badge>;
}

export function RecordStatus({ status }: { status: DomainRecordJson['status'] }) {
  const [word, tone] = RECORD_STATUS[status];
  return <Badge tone={tone}>{word}</Badge>;
}

/** "3 of 5 found" */
export function recordsFound(d: DomainJson): string {
  const found = d.records.filter((r) => r.status === 'VERIFIED').length;
  return `${found} of ${d.records.length} found`;
}

/** The record's name in words (the table's "Purpose" line). */
export const RECORD_PURPOSE: Record<DomainRecordJson['purpose'], string> = {
  DKIM: 'DKIM signing key',
  SPF: 'SPF',
  DMARC: 'DMARC policy',
  RETURN_PATH_MX: 'Bounce domain MX',
  RETURN_PATH_SPF: 'Bounce domain SPF',
};
