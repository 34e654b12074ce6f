import type { ComponentType } from 'preact';
import { lazy } from 'preact-iso';
import type { IconName } from '../components/icons';
import { routeMatches } from '../../core/routePaths';

/**
 * The console's pages: one line each. A page is a module of web/pages/ with a default export, loaded lazily (its own
 * chunk: the first load carries none of them). To add one: write the module, add its line here (`nav` puts it in
 * the side bar), and a browser test in test/console/. web/README.md says more. Keep the two forms below
 * (`const Name = lazy(() => import('./Module'))`, `{ path: '…', component: Name`): the build reads them to tell
 * Herald which chunks each path preloads (scripts/buildWeb.ts pageRoutes).
 */
export interface ConsolePage {
  path: string;
  component: ComponentType<Record<string, unknown>>;
  /** In the side bar: its link (named exactly `label`), icon and group. */
  nav?: { label: string; icon: IconName; group: NavGroup };
}

export type NavGroup = 'Send' | 'Marketing' | 'Configure';

const Overview = lazy(() => import('./Overview'));
const Emails = lazy(() => import('./Emails'));
const EmailDetail = lazy(() => import('./EmailDetail'));
const Contacts = lazy(() => import('./Contacts'));
const ContactDetail = lazy(() => import('./ContactDetail'));
const Events = lazy(() => import('./Events'));
const Domains = lazy(() => import('./Domains'));
const DomainDetail = lazy(() => import('./DomainDetail'));
const Webhooks = lazy(() => import('./Webhooks'));
const WebhookDetail = lazy(() => import('./WebhookDetail'));
const Suppressions = lazy(() => import('./Suppressions'));
const Settings = lazy(() => import('./Settings'));
const Campaigns = lazy(() => import('./Campaigns'));
const Campaign = lazy(() => import('./Campaign'));
const Segments = lazy(() => import('./Segments'));
const SegmentDetail = lazy(() => import('./SegmentDetail'));
const Templates = lazy(() => import('./Templates'));
const TemplateEditor = lazy(() => import('./TemplateEditor'));
const Automations = lazy(() => import('./Automations'));
const Automation = lazy(() => import('./Automation'));
const AutomationExecution = lazy(() => import('./AutomationExecution'));
const Inbound = lazy(() => import('./Inbound'));
const InboundMessage = lazy(() => import('./InboundMessage'));
const NotFound = lazy(() => import('./NotFound'));

export const APP_PAGES: ConsolePage[] = [
  { path: '/app', component: Overview, nav: { label: 'Overview', icon: 'overview', group: 'Send' } },
  { path: '/app/emails', component: Emails, nav: { label: 'Emails', icon: 'emails', group: 'Send' } },
  { path: '/app/emails/:id', component: EmailDetail },
  { path: '/app/contacts', component: Contacts, nav: { label: 'Contacts', icon: 'contacts', group: 'Send' } },
  { path: '/app/contacts/:id', component: ContactDetail },
  { path: '/app/events', component: Events, nav: { label: 'Events', icon: 'events', group: 'Send' } },
  { path: '/app/inbound', component: Inbound, nav: { label: 'Inbound', icon: 'inbox', group: 'Send' } },
  { path: '/app/inbound/messages/:id', component: InboundMessage },
  { path: '/app/inbound/:tab', component: Inbound },
  { path: '/app/campaigns', component: Campaigns, nav: { label: 'Campaigns', icon: 'campaigns', group: 'Marketing' } },
  // `/app/campaigns/new` too: one page, so that a new campaign's composer keeps its place when its first save gives it an id.
  { path: '/app/campaigns/:id', component: Campaign },
  { path: '/app/templates', component: Templates, nav: { label: 'Templates', icon: 'templates', group: 'Marketing' } },
  // `/app/templates/new` too: one page, so that a new template's editor keeps its place (its preview's contact and
  // variables) when its first save gives it an id.
  { path: '/app/templates/:id', component: TemplateEditor },
  { path: '/app/segments', component: Segments, nav: { label: 'Segments', icon: 'segments', group: 'Marketing' } },
  // One page creates a segment (no id) and shows one; `new` first, as the router takes the first route that matches.
  { path: '/app/segments/new', component: SegmentDetail },
  { path: '/app/segments/:id', component: SegmentDetail },
  { path: '/app/automations', component: Automations, nav: { label: 'Automations', icon: 'automations', group: 'Marketing' } },
  { path: '/app/automations/:id', component: Automation },
  { path: '/app/automations/:id/executions', component: Automation },
  { path: '/app/automations/:id/executions/:executionId', component: AutomationExecution },
  { path: '/app/domains', component: Domains, nav: { label: 'Domains', icon: 'domains', group: 'Configure' } },
  { path: '/app/domains/:id', component: DomainDetail },
  { path: '/app/webhooks', component: Webhooks, nav: { label: 'Webhooks', icon: 'webhooks', group: 'Configure' } },
  { path: '/app/webhooks/:id', component: WebhookDetail },
  { path: '/app/suppressions', component: Suppressions, nav: { label: 'Suppressions', icon: 'suppressions', group: 'Configure' } },
  { path: '/app/settings', component: Settings, nav: { label: 'Settings', icon: 'settings', group: 'Configure' } },
  { path: '/app/settings/:tab', component: Settings },
];

export const NotFoundPage = NotFound;

/** The pages without the shell: signing in, first start, links of invitations and resets (people/links.ts). */
const Login = lazy(() => import('./Login'));
const Setup = lazy(() => import('./Setup'));
const Invitation = lazy(() => import('./Invitation'));
const Reset = lazy(() => import('./Reset'));
const Forgot = lazy(() => import('./Forgot'));

export const AUTH_PAGES: ConsolePage[] = [
  { path: '/app/login', component: Login },
  { path: '/app/setup', component: Setup },
  { path: '/app/invitation', component: Invitation },
  { path: '/app/reset', component: Reset },
  { path: '/app/forgot', component: Forgot },
];

export const isAuthPath = (path: string): boolean => AUTH_PAGES.some((p) => path === p.path || path === `${p.path}/`);

/**
 * Starts loading the chunk of the page at `path` (main.tsx calls it before the first render), so that it arrives while
 * GET /auth/session is asked instead of after it: otherwise a first visit waits for the session, then the chunk, then
 * the page's own call, one after the other (bench/consolePages.ts measured it). A failed load is left to the router,
 * which asks again and shows it.
 */
export function preloadPage(path: string): void {
  const page = [...APP_PAGES, ...AUTH_PAGES].find((p) => routeMatches(p.path, path));
  (page?.component as { preload?: () => Promise<unknown> } | undefined)?.preload?.().catch(() => undefined);
}
