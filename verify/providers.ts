import emailProviders from 'email-providers/all.json';
import { blacklist } from 'mailchecker';
import { domainSuffixes } from '../mail/message';

/**
 * Which domains are disposable, personal (free webmail) or alias relays.
 * - Disposable: mailchecker's list (tens of thousands of throwaway-mail domains, maintained with releases every few weeks).
 * - Personal: email-providers' list of free email providers (derived from the free-email-provider lists, monthly releases),
 *   minus the disposable ones.
 * - Alias relays: the forwarding services people use to hide their real address. No maintained package lists them, and
 *   they are few and well known, so they are listed here with their operators' documented domains.
 */

const disposable = blacklist();
const personal = new Set((emailProviders as string[]).map((d) => d.toLowerCase()).filter((d) => !disposable.has(d)));

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
  for (const d of selfAndParents(domain)) if (disposable.has(d)) return true;
  return false;
}

export function isPersonalDomain(domain: string): boolean {
  return personal.has(domain);
}
