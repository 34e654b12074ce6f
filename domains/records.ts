import type { ReturnPath } from '../config';
import type { DnsClient } from '../verify/dns';
import type { DomainStatus, RecordPurpose, RecordStatus, RecordStatuses, VerifiedBy } from '../db/models/Domain';

/**
 * The DNS records a sending domain publishes for Herald, and how a check against DNS turns into statuses.
 * DKIM decides the domain's status: it is what proves that the domain's owner gave Herald the right to sign for it.
 * SPF and DMARC are reported record by record, as advice: they depend on the relay the operator delivers through.
 */

export interface DomainRecord {
  purpose: RecordPurpose;
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  status: RecordStatus;
  note?: string;
}

export const SPF_VALUE = 'v=spf1 a mx ~all';
export const DMARC_VALUE = 'v=DMARC1; p=none;';

export function dkimRecordName(domain: string, selector: string): string {
  return `${selector}._domainkey.${domain}`;
}

/** The DKIM TXT value of a public key (base64 of its SubjectPublicKeyInfo DER, RFC 6376 section 3.6.1). */
export function dkimRecordValue(publicKey: string): string {
  return `v=DKIM1; k=rsa; p=${publicKey}`;
}

function returnPathRecords(rp: ReturnPath, statuses: RecordStatuses): DomainRecord[] {
  return [
    {
      purpose: 'RETURN_PATH_MX', type: 'MX', name: rp.domain, value: `10 ${rp.mxHost}`, status: statuses.RETURN_PATH_MX ?? 'PENDING',
      note: 'Bounces and complaints come back to Herald through this MX. The bounce domain is the installation\'s: the same record for every sending domain.',
    },
    {
      purpose: 'RETURN_PATH_SPF', type: 'TXT', name: rp.domain, value: SPF_VALUE, status: statuses.RETURN_PATH_SPF ?? 'PENDING',
      note: 'The envelope sender (Return-Path) of every message is at the bounce domain: its SPF record must allow the servers Herald delivers through.',
    },
  ];
}

/** The records to publish, each with the status of the last check (PENDING before the first). */
export function domainRecords(domain: string, selector: string, publicKey: string, statuses: RecordStatuses, returnPath?: ReturnPath): DomainRecord[] {
  return [
    ...domainOwnRecords(domain, selector, publicKey, statuses),
    ...(returnPath ? returnPathRecords(returnPath, statuses) : []),
  ];
}

function domainOwnRecords(domain: string, selector: string, publicKey: string, statuses: RecordStatuses): DomainRecord[] {
  return [
    { purpose: 'DKIM', type: 'TXT', name: dkimRecordName(domain, selector), value: dkimRecordValue(publicKey), status: statuses.DKIM ?? 'PENDING' },
    {
      purpose: 'SPF', type: 'TXT', name: domain, value: SPF_VALUE, status: statuses.SPF ?? 'PENDING',
      note: 'One SPF record per domain: if the domain has one, add the mechanisms of the servers Herald delivers through (e.g. include: of your SMTP relay) to it instead of adding a second.',
    },
    {
      purpose: 'DMARC', type: 'TXT', name: `_dmarc.${domain}`, value: DMARC_VALUE, status: statuses.DMARC ?? 'PENDING',
      note: 'A starter policy: p=none only monitors. Add rua=mailto:… to receive reports, and move to p=quarantine or p=reject once they show that all your mail passes.',
    },
  ];
}

/** RFC 6376 tag list → map (tag names are case-sensitive; whitespace around tags and inside p= is ignored). */
function tags(record: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of record.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

/** True when one of the TXT records at the selector is a DKIM key record carrying exactly our public key. */
export function dkimMatches(txts: string[], publicKey: string): boolean {
  return txts.some((txt) => {
    const t = tags(txt);
    const version = t.get('v');
    if (version !== undefined && version !== 'DKIM1') return false;
    if ((t.get('k') ?? 'rsa') !== 'rsa') return false;
    return (t.get('p') ?? '').replace(/\s+/g, '') === publicKey;
  });
}

/** Exactly one SPF record (RFC 7208 section 4.5: two or more is a permanent error). */
export function spfPresent(txts: string[]): boolean {
  return txts.filter((t) => /^v=spf1(\s|$)/i.test(t.trim())).length === 1;
}

/** Exactly one DMARC record at _dmarc (RFC 7489 section 6.6.3). */
export function dmarcPresent(txts: string[]): boolean {
  return txts.filter((t) => /^v=DMARC1\s*(;|$)/.test(t.trim())).length === 1;
}

/**
 * Looks the three records up (in parallel). A record whose lookup did not answer (timeout, server failure) is left
 * out: unknown, so the caller keeps what it knew.
 */
export async function checkDomainRecords(dns: DnsClient, domain: string, selector: string, publicKey: string, returnPath?: ReturnPath): Promise<RecordStatuses> {
  const [dkim, spf, dmarc, rpMx, rpSpf] = await Promise.all([
    dns.lookup('TXT', dkimRecordName(domain, selector)),
    dns.lookup('TXT', domain),
    dns.lookup('TXT', `_dmarc.${domain}`),
    ...(returnPath ? [dns.lookup('MX', returnPath.domain), dns.lookup('TXT', returnPath.domain)] : []),
  ]);
  const statuses: RecordStatuses = {};
  const judge = (purpose: RecordPurpose, answer: NonNullable<typeof dkim>, ok: (txts: string[]) => boolean) => {
    if (answer.status === 'FOUND') statuses[purpose] = ok(answer.records) ? 'VERIFIED' : 'FAILED';
    else if (answer.status === 'NXDOMAIN' || answer.status === 'NODATA') statuses[purpose] = 'FAILED';
  };
  judge('DKIM', dkim, (txts) => dkimMatches(txts, publicKey));
  judge('SPF', spf, spfPresent);
  judge('DMARC', dmarc, dmarcPresent);
  if (returnPath) {
    const host = returnPath.mxHost.toLowerCase().replace(/\.$/, '');
    judge('RETURN_PATH_MX', rpMx!, (hosts) => hosts.some((h) => h.toLowerCase().replace(/\.$/, '') === host));
    judge('RETURN_PATH_SPF', rpSpf!, spfPresent);
  }
  return statuses;
}

export interface DomainState {
  status: DomainStatus;
  /** Who made it VERIFIED: a DNS check, or the operator (CLI `domain add --verified`, or a row from before DNS checks). */
  verifiedBy: VerifiedBy | null;
  verifiedAt: Date | null;
  records: RecordStatuses;
}

/**
 * The domain's state after a check. The DKIM record decides: found → VERIFIED (by DNS); missing or wrong → FAILED,
 * except that a domain the operator vouched for stays VERIFIED (an override) until DNS has verified it once; from
 * then on losing the record fails it. An unanswered DKIM lookup changes nothing.
 */
export function afterCheck(current: DomainState, found: RecordStatuses, now: Date): DomainState {
  const records = { ...current.records, ...found };
  if (found.DKIM === 'VERIFIED') {
    return { status: 'VERIFIED', verifiedBy: 'DNS', verifiedAt: current.status === 'VERIFIED' && current.verifiedAt ? current.verifiedAt : now, records };
  }
  if (found.DKIM === 'FAILED') {
    const operatorOverride = current.status === 'VERIFIED' && current.verifiedBy !== 'DNS';
    if (!operatorOverride) return { status: 'FAILED', verifiedBy: null, verifiedAt: null, records };
  }
  return { ...current, records };
}
