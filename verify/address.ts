import { domainToASCII } from 'node:url';
import { run as suggestDomain } from '@zootools/email-spell-checker';
import emailAddresses from 'email-addresses';
import type { DnsConfig } from '../config';
import { DnsClient, type DnsAnswer } from './dns';
import { aliasService, isDisposableDomain, isPersonalDomain } from './providers';

/** The answer of POST /v1/verify (spec section 2, plus `suggestion`). */
export interface VerifyResult {
  email: string;
  valid: boolean;
  isDisposable: boolean;
  isAlias: boolean;
  isTypo: boolean;
  isPlusAddressed: boolean;
  isPersonalEmail: boolean;
  domainExists: boolean;
  hasWebsite: boolean;
  hasMxRecords: boolean;
  reasons: string[];
  /** The corrected address when isTypo; otherwise null. */
  suggestion: string | null;
}

export type Syntax = { ok: true; local: string; domain: string } | { ok: false; reason: string };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * RFC 5322 addr-spec syntax through a real parser (email-addresses, strict: no obsolete forms), then the limits of
 * RFC 5321 for an address one can send to: local part at most 64 octets, the whole at most 254, and a domain that
 * is a host name (letter-digit-hyphen labels after IDNA, at least two of them). Address literals ([192.0.2.1]) are
 * syntactically valid but cannot be checked by DNS: they are refused here with their own reason.
 */
export function parseAddress(input: string): Syntax {
  if (input.length === 0) return { ok: false, reason: 'The address is empty.' };
  const parsed = emailAddresses.parseOneAddress({ input, rfc6532: true, strict: true, rejectTLD: true });
  // Compared as written (tokens), not as interpreted: "a b"@x.com is valid as quoted, and comments or folding are not.
  if (!parsed || parsed.type !== 'mailbox' || parsed.name !== null || parsed.parts.address.tokens !== input) {
    return { ok: false, reason: 'The address is not valid RFC 5322 syntax (expected local-part@domain, with no display name or comments).' };
  }
  const local = parsed.parts.local.tokens;
  const rawDomain = parsed.parts.domain.tokens;
  if (rawDomain.startsWith('[')) return { ok: false, reason: 'Address literals (user@[192.0.2.1]) are not accepted: the domain must be a host name.' };
  if (Buffer.byteLength(local, 'utf8') > 64) return { ok: false, reason: 'The local part (before @) is longer than 64 octets (RFC 5321 section 4.5.3.1.1).' };
  const domain = domainToASCII(rawDomain.toLowerCase());
  if (!domain || domain.length > 253 || !domain.split('.').every((l) => LABEL.test(l)) || !domain.includes('.')) {
    return { ok: false, reason: `The domain ${JSON.stringify(rawDomain)} is not a valid host name.` };
  }
  if (Buffer.byteLength(local, 'utf8') + 1 + domain.length > 254) return { ok: false, reason: 'The address is longer than 254 characters (RFC 5321 path limit).' };
  return { ok: true, local, domain };
}

/** Plus addressing (sub-addressing, RFC 5233): a tag after a '+' in the local part, e.g. ada+news@example.com. */
export function isPlusAddressed(local: string): boolean {
  const plus = local.replace(/^"|"$/g, '').indexOf('+');
  return plus > 0;
}

/**
 * A likely misspelling of a popular domain (gmial.com → gmail.com), from @zootools/email-spell-checker. Typo domains
 * are often registered to catch such mail, so they may exist, have MX records, and be listed as disposable as well.
 */
export function typoSuggestion(local: string, domain: string): string | null {
  if (aliasService(domain)) return null; // relay domains are what they are
  const s = suggestDomain({ email: `${local}@${domain}` });
  return s && s.domain !== domain ? `${local}@${s.domain}` : null;
}

export interface VerifyOptions {
  /** Total time for the DNS lookups of one call; what has not answered by then is unknown. */
  budgetMs: number;
}

const found = (a: DnsAnswer) => a.status === 'FOUND';
const unknown = (a: DnsAnswer) => a.status === 'TIMEOUT' || a.status === 'ERROR';

/** Verifies one address: syntax, the domain's lists, and its DNS (MX, A, AAAA in parallel, within the budget). */
export async function verifyAddress(input: string, dns: DnsClient, opts: VerifyOptions): Promise<VerifyResult> {
  const email = input.trim();
  const result: VerifyResult = {
    email, valid: false, isDisposable: false, isAlias: false, isTypo: false, isPlusAddressed: false, isPersonalEmail: false,
    domainExists: false, hasWebsite: false, hasMxRecords: false, reasons: [], suggestion: null,
  };
  const syntax = parseAddress(email);
  if (!syntax.ok) {
    result.reasons.push(syntax.reason);
    return result;
  }
  const { local, domain } = syntax;
  const reasons = result.reasons;

  const deadline = Date.now() + opts.budgetMs;
  const [mx, a, aaaa] = await Promise.all([dns.lookup('MX', domain, deadline), dns.lookup('A', domain, deadline), dns.lookup('AAAA', domain, deadline)]);

  const alias = aliasService(domain);
  result.isAlias = alias !== undefined;
  if (alias) reasons.push(`${domain} belongs to ${alias}, an email relay service: the address forwards to an inbox it hides.`);
  result.isDisposable = isDisposableDomain(domain);
  if (result.isDisposable) reasons.push(`${domain} is a disposable (throwaway) email provider.`);
  result.isPersonalEmail = isPersonalDomain(domain);
  if (result.isPersonalEmail) reasons.push(`${domain} is a personal (free) email provider, not a company domain.`);
  result.isPlusAddressed = isPlusAddressed(local);
  if (result.isPlusAddressed) reasons.push('The address uses plus addressing: the part after "+" is a tag on the same mailbox.');
  result.suggestion = typoSuggestion(local, domain);
  result.isTypo = result.suggestion !== null;
  if (result.suggestion) reasons.push(`The domain looks like a typo: did you mean ${result.suggestion}?`);

  const answers = [mx, a, aaaa];
  const nxdomain = answers.some((x) => x.status === 'NXDOMAIN') && !answers.some(found);
  result.domainExists = answers.some((x) => found(x) || x.status === 'NODATA');
  result.hasWebsite = found(a) || found(aaaa);
  const exchanges = mx.status === 'FOUND' ? mx.records.filter((r) => r !== '') : [];
  // RFC 5321 section 5.1: without MX records the domain's own A/AAAA record is the mail exchanger (implicit MX);
  // RFC 7505: a null MX ("0 .") says the domain accepts no mail.
  result.hasMxRecords = exchanges.length > 0 || (mx.status === 'NODATA' && result.hasWebsite);

  const budget = `${opts.budgetMs} ms`;
  if (nxdomain) {
    reasons.push(`The domain ${domain} does not exist (DNS answers NXDOMAIN).`);
  } else if (!result.domainExists) {
    reasons.push(`DNS did not answer for ${domain} within ${budget}: whether it exists is unknown.`);
  } else {
    if (mx.status === 'FOUND' && exchanges.length === 0) reasons.push(`${domain} publishes a null MX record (RFC 7505): it accepts no mail.`);
    else if (mx.status === 'NODATA' && result.hasMxRecords) reasons.push(`${domain} has no MX records; mail goes to its A/AAAA address (RFC 5321 implicit MX).`);
    else if (unknown(mx)) reasons.push(`The MX lookup of ${domain} did not answer within ${budget}: whether it receives mail is unknown.`);
    if (!result.hasMxRecords && mx.status === 'NODATA' && !unknown(a) && !unknown(aaaa)) reasons.push(`${domain} has no MX records and no A/AAAA address to fall back on: it cannot receive mail.`);
    else if (!result.hasMxRecords && mx.status === 'NODATA') reasons.push(`${domain} has no MX records, and its A/AAAA lookups did not answer within ${budget}.`);
    if (!result.hasWebsite && !unknown(a) && !unknown(aaaa)) reasons.push(`${domain} has no A or AAAA record: there is no website at the domain.`);
    else if (!result.hasWebsite) reasons.push(`The A/AAAA lookups of ${domain} did not answer within ${budget}.`);
  }
  result.valid = result.domainExists && result.hasMxRecords;
  return result;
}

/**
 * One DNS client per app, with a bounded cache of positive and negative answers (verify/dns.ts), so repeated domains
 * cost no lookup; each call spends at most `verifyBudgetMs` waiting for DNS. The API's way in (like campaignService).
 */
export function verifyService(config: Pick<DnsConfig, 'servers' | 'timeoutMs' | 'tries' | 'verifyBudgetMs'>) {
  const dns = new DnsClient({ servers: config.servers, timeoutMs: config.timeoutMs, tries: config.tries });
  return { verify: (email: string) => verifyAddress(email, dns, { budgetMs: config.verifyBudgetMs }) };
}

export type Verifier = ReturnType<typeof verifyService>;
