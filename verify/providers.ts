import { domainSuffixes } from '../mail/message';

/**
 * Which domains are disposable, personal (free webmail) or alias relays.
 * - Disposable: mailchecker's list (tens of thousands of throwaway-mail domains, maintained with releases every few weeks).
 * - Personal: email-providers' list of free email providers (derived from the free-email-provider lists, monthly releases),
 *   minus the disposable ones.
 * - Alias relays: the forwarding services people use to hide their real address. No maintained package lists them, and
 *   they are few and well known, so they are listed here with their operators' documented domains.
 */

interface DomainLists {
  disposable: Set<string>;
  personal: Set<string>;
}
let lists: DomainLists | undefined;

/**
 * The two lists, read at the first check: mailchecker's is a megabyte of JavaScript that becomes a set of ~55,000
 * domains, 0.15 CPU-s of every process's start-up (API, worker, each test file) whether it verifies an address or not.
 */
function domainLists(): DomainLists {
  if (lists) return lists;
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { blacklist } = require('mailchecker') as typeof import('mailchecker');
  const providers = require('email-providers/all.json') as string[];
  /* eslint-enable @typescript-eslint/no-require-imports */
  const disposable = blacklist();
  lists = { disposable, personal: new Set(providers.map((d) => d.toLowerCase()).filter((d) => !disposable.has(d))) };
  return lists;
}

/** Relay domains, matched with their subdomains (addy.io and SimpleLogin give users subdomains of their own). */
export const ALIAS_SERVICES: Record<string, string> = {
  'privaterelay.appleid.com': 'Apple Hide My Email',
  'mozmail.com': 'Firefox Relay',
  'relay.firefox.com': 'Firefox Relay',
  'simplelogin.com': 'SimpleLogin',
  'simplelogin.co': 'SimpleLogin',
  'simplelogin.fr': 'SimpleLogin',
  'slmail.me': 'SimpleLogin',
  'aleeas.com': 'SimpleLogin',
  '8alias.com': 'SimpleLogin',
  '8shield.net': 'SimpleLogin',
  'silomails.com': 'SimpleLogin',
  'dralias.com': 'SimpleLogin',
  'addy.io': 'addy.io',
  'anonaddy.com': 'addy.io',
  'anonaddy.me': 'addy.io',
  'duck.com': 'DuckDuckGo Email Protection',
  'passmail.net': 'Proton Pass',
  'passmail.com': 'Proton Pass',
  'passinbox.com': 'Proton Pass',
  'passfwd.com': 'Proton Pass',
};

/** domain, then each parent but the top-level one: mail.eu.example.com → mail.eu.example.com, eu.example.com, example.com. */
const selfAndParents = (domain: string): string[] => domainSuffixes(domain).slice(0, -1);

/** The relay service of an alias domain, or undefined. */
export function aliasService(domain: string): string | undefined {
  for (const d of selfAndParents(domain)) if (ALIAS_SERVICES[d]) return ALIAS_SERVICES[d];
  return undefined;
}

/** Disposable: the domain or a parent is listed. Relays are aliases, not disposable: they forward to a lasting inbox. */
export function isDisposableDomain(domain: string): boolean {
  if (aliasService(domain)) return false;
  const { disposable } = domainLists();
  for (const d of selfAndParents(domain)) if (disposable.has(d)) return true;
  return false;
}

export function isPersonalDomain(domain: string): boolean {
  return domainLists().personal.has(domain);
}
