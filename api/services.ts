import { loadDnsConfig, loadTrackingConfig } from '../config';
import { unsubscribeService } from '../audience/subscription';
import { segmentService } from '../audience/segments';
import { suppressionService } from '../audience/suppressions';
import { auditService } from '../audit/log';
import { automationService } from '../automations/automations';
import { campaignService } from '../campaigns/campaigns';
import { contactService } from '../contacts/contacts';
import { contactImportService } from '../contacts/imports/imports';
import { loadImportMaxBytes } from '../config';
import { contactDataService } from '../contacts/dataExport';
import { contactErasureService } from '../contacts/erase';
import { contactExportService } from '../contacts/export';
import { ping } from '../db/database';
import { domainService } from '../domains/domains';
import { emailService } from '../emails/emails';
import { overviewService } from '../emails/overview';
import { eventService } from '../events/events';
import { createTracker as createCustomEvents } from '../events/customEvents';
import { createMetrics } from '../metrics/metrics';
import { peopleService } from '../people/service';
import { loadOidcConfig, loadSessionConfig } from '../config';
import { oidcService } from '../people/oidc';
import { openApiJson } from './openapi/document';
import { keyService } from '../projects/apiKeys';
import { createSender } from '../sending/sender';
import { systemMail } from '../people/mail';
import { templateService } from '../templates/templates';
import { settingsService } from '../tracking/settings';
import { createTracker } from '../tracking/tracker';
import { verifyService } from '../verify/address';
import { webhookService } from '../webhooks/endpoints';
import { inboundSetupService } from '../inbound/domains';
import { inboundMessageService } from '../inbound/messages';
import type { AppDeps } from './app';

/**
 * The business the routes call: one object per resource, built once per app from its deps (listmonk's core), each
 * method taking the caller's project first. A route reaches them as `call.services` (api/route.ts); a new resource
 * adds its line here, and the type follows.
 */
export function createServices(deps: AppDeps) {
  const { knex } = deps;
  const dns = deps.dns ?? loadDnsConfig();
  const send = deps.sender ?? createSender(knex, deps);
  const systemSender = deps.people?.systemSender;
  return {
    health: { ping: () => ping(knex, deps.healthTimeoutMs) },
    /** GET /openapi.json: the document is built from the route table, so a route reaches it here (no circle of files). */
    openApi: { json: openApiJson },
    unsubscribes: unsubscribeService(deps),
    /** The open pixel and click redirect of tracked mail (tracking/). */
    opensAndClicks: createTracker(knex, deps.secret, deps.tracking ?? loadTrackingConfig()),
    /** Absent when METRICS_PORT serves them elsewhere (api/metricsApp.ts). */
    metrics: deps.metricsOnOwnPort ? undefined : { metrics: createMetrics(knex, { log: deps.log }), token: deps.metricsToken },
    send,
    /** Members, invitations, password resets and first-start setup (people/). */
    accounts: {
      knex, publicUrl: deps.publicUrl, invitationTtlHours: deps.people?.invitationTtlHours,
      mail: systemSender ? systemMail(send, systemSender) : undefined,
      log: deps.log,
    },
    /** POST /v1/track (events/customEvents.ts). */
    customEvents: createCustomEvents(knex),
    verify: verifyService(dns),
    contacts: contactService(deps),
    /** Contact imports (contacts/imports/): the file stored, then merged by the engine's importContacts workflow. */
    contactImports: contactImportService({ knex, engine: deps.engine, log: deps.log, maxBytes: deps.importMaxBytes ?? loadImportMaxBytes() }),
    /** GET /contacts/export: streams, each on a connection of its own (contacts/export.ts). */
    contactExports: contactExportService(deps),
    /** GET /contacts/:id/export (contacts/dataExport.ts). */
    contactData: contactDataService(deps),
    /** DELETE /contacts/:id?erase=true (contacts/erase.ts): the address's hash is keyed with the installation's secret. */
    contactErasure: contactErasureService(deps),
    templates: templateService(deps),
    segments: segmentService(deps),
    campaigns: campaignService(deps),
    events: eventService(deps),
    emails: emailService(deps),
    /** GET /stats/overview (emails/overview.ts). */
    overview: overviewService(deps),
    suppressions: suppressionService(deps),
    settings: settingsService(deps),
    webhooks: webhookService(deps),
    automations: automationService(deps),
    domains: domainService({ ...deps, dns }),
    /** Inbound domains, routes and received messages (inbound/). The MX host is the bounce domain's (BOUNCE_MX_HOST). */
    inbound: {
      setup: inboundSetupService({ knex, dns, secret: deps.secret, mxHost: deps.inboundMxHost ?? deps.returnPath?.mxHost ?? new URL(deps.publicUrl).hostname }),
      messages: inboundMessageService(deps),
    },
    /** People's logins and sessions (people/). */
    people: peopleService({ knex, secret: deps.secret, sessions: deps.sessions ?? loadSessionConfig() }),
    /** Single sign-on (OIDC_ISSUER…; people/oidc.ts); `enabled` false when it is not configured. */
    oidc: oidcService({ knex, config: deps.oidc === undefined ? loadOidcConfig() : deps.oidc || undefined, publicUrl: deps.publicUrl, secret: deps.secret,
      sessions: deps.sessions ?? loadSessionConfig(), log: deps.log }),
    /** Whether session cookies are `Secure` (PUBLIC_URL is https), for the raw routes that write one. */
    secureCookies: deps.publicUrl.startsWith('https:'),
    /** GET/POST/DELETE /keys (projects/apiKeys.ts). */
    keys: keyService(deps),
    /** GET /audit-log (audit/log.ts). */
    audit: auditService(deps),
    /** The bounce domain's records, shown with every sending domain's. */
    returnPath: deps.returnPath,
  };
}

export type Services = ReturnType<typeof createServices>;
