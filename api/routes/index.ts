import type { Route } from '../route';
import { accountRoutes } from './accounts';
import { authRoutes } from './auth';
import { auditLogRoutes } from './auditLog';
import { automationRoutes } from './automations';
import { campaignRoutes } from './campaigns';
import { contactRoutes } from './contacts';
import { contactImportRoutes } from './contactImports';
import { customEventRoutes } from './customEvents';
import { domainRoutes } from './domains';
import { inboundRoutes } from './inbound';
import { emailRoutes } from './emails';
import { keyRoutes } from './keys';
import { eventRoutes } from './events';
import { invitationRoutes } from './invitations';
import { memberRoutes } from './members';
import { opensAndClicksRoutes } from './opensAndClicks';
import { overviewRoutes } from './overview';
import { segmentRoutes } from './segments';
import { sendRoutes } from './send';
import { systemRoutes } from './system';
import { settingsRoutes } from './settings';
import { suppressionRoutes } from './suppressions';
import { templateRoutes } from './templates';
import { unsubscribeRoutes } from './unsubscribe';
import { verifyRoutes } from './verify';
import { webhookRoutes } from './webhooks';

/**
 * The route table: every operation of the API, declared once (api/route.ts). The routers (api/routing.ts) and the
 * OpenAPI document (api/openapi/document.ts) are built from it, in this order; a new resource adds its file here.
 */
export const ROUTES: readonly Route[] = [
  ...systemRoutes,
  // People signing in: the login and their sessions.
  ...authRoutes,
  // Recipients' links: the signed token authorises.
  ...unsubscribeRoutes,
  ...opensAndClicksRoutes,
  // The public API.
  ...sendRoutes,
  ...customEventRoutes,
  ...verifyRoutes,
  // Management.
  ...contactImportRoutes,
  ...contactRoutes,
  ...templateRoutes,
  ...segmentRoutes,
  ...campaignRoutes,
  ...eventRoutes,
  ...emailRoutes,
  ...overviewRoutes,
  ...suppressionRoutes,
  ...settingsRoutes,
  ...webhookRoutes,
  ...automationRoutes,
  ...domainRoutes,
  ...inboundRoutes,
  // People: members and invitations of the project; accounts' links (open: the token authorises).
  ...memberRoutes,
  ...invitationRoutes,
  ...accountRoutes,
  ...keyRoutes,
  ...auditLogRoutes,
];
