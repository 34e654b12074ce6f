import { loadDnsConfig } from '../config';
import { unsubscribeService, type Unsubscribes } from '../audience/subscription';
import { segmentService, type Segments } from '../audience/segments';
import { suppressionService, type Suppressions } from '../audience/suppressions';
import { workflowService, type Workflows } from '../automations/workflows';
import { campaignService, type Campaigns } from '../campaigns/campaigns';
import { contactService, type Contacts } from '../contacts/contacts';
import { ping } from '../db/database';
import { domainService, type Domains } from '../domains/domains';
import { emailService, type Emails } from '../emails/emails';
import { eventService, type Events } from '../events/events';
import { createTracker as createCustomEvents, type CustomEvents } from '../events/track';
import { createMetrics, type Metrics } from '../metrics/metrics';
import { createSender, type Sender } from '../sending/sender';
import { templateService, type Templates } from '../templates/templates';
import { settingsService, type Settings } from '../tracking/settings';
import { createTracker, type Tracker } from '../tracking/tracker';
import { verifyService, type Verifier } from '../verify/address';
import type { ReturnPath } from '../verify/domainRecords';
import { webhookService, type Webhooks } from '../webhooks/endpoints';
import type { AppDeps } from './app';

/**
 * The business the routes call: one object per resource, built once per app from its deps (listmonk's core), each
 * method taking the caller's project first. A route reaches them as `call.services` (api/route.ts).
 */
export interface Services {
  health: { ping(): Promise<boolean> };
  unsubscribes: Unsubscribes;
  /** The open pixel and click redirect of tracked mail (tracking/). */
  opensAndClicks: Tracker;
  /** Absent when METRICS_PORT serves them elsewhere (api/metricsApp.ts). */
  metrics?: { metrics: Metrics; token: string | undefined };
  send: Sender;
  /** POST /v1/track (events/track.ts). */
  customEvents: CustomEvents;
  verify: Verifier;
  contacts: Contacts;
  templates: Templates;
  segments: Segments;
  campaigns: Campaigns;
  events: Events;
  emails: Emails;
  suppressions: Suppressions;
  settings: Settings;
  webhooks: Webhooks;
  automations: Workflows;
  domains: Domains;
  /** The bounce domain's records, shown with every sending domain's. */
  returnPath: ReturnPath | undefined;
}

export function createServices(deps: AppDeps): Services {
  const { knex } = deps;
  const dns = deps.dns ?? loadDnsConfig();
  return {
    health: { ping: () => ping(knex) },
    unsubscribes: unsubscribeService(deps),
    opensAndClicks: createTracker(knex, deps.secret),
    ...(deps.metricsOnOwnPort ? {} : { metrics: { metrics: createMetrics(knex, { log: deps.log }), token: deps.metricsToken } }),
    send: deps.sender ?? createSender(knex, deps),
    customEvents: createCustomEvents(knex),
    verify: verifyService(dns),
    contacts: contactService(deps),
    templates: templateService(deps),
    segments: segmentService(deps),
    campaigns: campaignService(deps),
    events: eventService(deps),
    emails: emailService(deps),
    suppressions: suppressionService(deps),
    settings: settingsService(deps),
    webhooks: webhookService(deps),
    automations: workflowService(deps),
    domains: domainService({ ...deps, dns }),
    returnPath: deps.returnPath,
  };
}
