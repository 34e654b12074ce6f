import { domainToASCII } from 'node:url';
import Joi from 'joi';
import { parse } from 'tldts';
import { cursorSchema, limitSchema } from '../pagination';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A registrable host name: letter-digit-hyphen labels (after IDNA, so bücher.example becomes xn--bcher-kva.example),
 * under a public suffix of the ICANN section of the Public Suffix List (tldts), and not itself a public suffix:
 * example.com and mail.example.co.uk are, co.uk, localhost and 192.0.2.1 are not. Trimmed, lower-cased, no final dot.
 */
export function registrableDomain(input: string): string | undefined {
  const host = domainToASCII(input.trim().toLowerCase().replace(/\.$/, ''));
  if (!host || host.length > 253 || !host.split('.').every((l) => LABEL.test(l))) return undefined;
  const info = parse(host);
  if (info.isIp || !info.isIcann || !info.domain || host === info.publicSuffix) return undefined;
  return host;
}

export const domainNameSchema = Joi.string().example('example.com').max(300).custom((value: string, helpers) => {
  const host = registrableDomain(value);
  return host ?? helpers.error('string.domain');
}).messages({ 'string.domain': '{{#label}} must be a registrable domain name, e.g. example.com or mail.example.com' });

export interface CreateDomainBody {
  domain: string;
}

export const createDomainSchema = Joi.object<CreateDomainBody, true>({
  domain: domainNameSchema.required(),
});

export interface ListDomainsQuery {
  limit: number;
  cursor?: string;
  status?: 'PENDING' | 'VERIFIED' | 'FAILED';
}

export const listDomainsQuerySchema = Joi.object<ListDomainsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  status: Joi.string().valid('PENDING', 'VERIFIED', 'FAILED'),
});
