import type { Email } from '../../db/models/Email';
import type { TimelineEntry } from '../../emails/emails';
import { mainHeaders } from '../../mail/message';
import { first, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { listEmailsQuerySchema } from '../schemas/emails';

export interface EmailJson {
  id: string;
  status: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  to: string;
  toName: string | null;
  /** Null for campaign emails: they are rendered per recipient at delivery, and not stored. */
  subject: string | null;
  contactId: string | null;
  campaignId: string | null;
  templateId: string | null;
  /** A campaign's test copy ([TEST]): listed like any email, never counted in the campaign's stats. */
  isTest: boolean;
  attempts: number;
  messageId: string | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  sentAt: string | null;
  /** Open and click tracking (docs/api.md, "Open and click tracking"): whether it is on, and what it counted. */
  tracking: { opens: boolean; clicks: boolean };
  /** Every open and click recorded, proxies and scanners included; the first times are those of real readers only. */
  opens: number;
  firstOpenedAt: string | null;
  clicks: number;
  firstClickedAt: string | null;
}

export function emailJson(e: Email): EmailJson {
  return {
    id: e.id, status: e.status, from: e.fromEmail, fromName: e.fromName, replyTo: e.replyTo, to: e.toEmail, toName: e.toName,
    subject: e.subject, contactId: e.contactId, campaignId: e.campaignId, templateId: e.templateId, isTest: e.isTest,
    attempts: e.attempts, messageId: e.messageId, error: e.error, createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(), sentAt: e.sentAt ? e.sentAt.toISOString() : null,
    tracking: { opens: e.trackOpens, clicks: e.trackClicks }, opens: e.opens, firstOpenedAt: e.firstOpenedAt?.toISOString() ?? null,
    clicks: e.clicks, firstClickedAt: e.firstClickedAt?.toISOString() ?? null,
  };
}

const timelineJson = (t: TimelineEntry) => ({ type: t.type, at: t.at.toISOString(), eventId: t.eventId, data: t.data });

/** Emails as a resource (docs/api.md, "Emails"). The body is in the single email's answer only, never in a list. */
export const emailRoutes = [
  route({ operationId: 'listEmails', method: 'get', path: '/emails', summary: 'List emails', tag: 'Emails', access: 'secret', permission: 'read', query: listEmailsQuerySchema, answers: ok('A page of emails (no bodies).', A.emailPageAnswer), links: first('getEmail'),
    async handle({ auth, query: q, services }) {
      const { rows, total, totalExact } = await services.emails.list(auth.projectId, q, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, emailJson), totalExact });
    } }),

  route({ operationId: 'getEmail', method: 'get', path: '/emails/:id', summary: 'Get an email, its body and timeline', tag: 'Emails', access: 'secret', permission: 'read', answers: ok('The email.', A.emailDetailAnswer),
    async handle({ auth, params, services }) {
      const { email, timeline } = await services.emails.get(auth.projectId, params.id);
      return reply({ ...emailJson(email), html: email.html, headers: mainHeaders(email), timeline: timeline.map(timelineJson) });
    } }),

  route({ operationId: 'getEmailRaw', method: 'get', path: '/emails/:id/raw', summary: 'Download an email\'s message (MIME, .eml)', tag: 'Emails', access: 'secret', permission: 'read',
    description: 'The message as delivery sends it (or will send it): composed by the delivery code itself, without the DKIM signature that is added at the send. 409 when the email has no message (a campaign email whose contact unsubscribed, or that cannot be rendered).',
    answers: { 200: { description: 'The message, as an attachment named <id>.eml.', media: 'mime', headers: { 'Content-Disposition': '`attachment; filename="<id>.eml"`' } } }, errors: [409],
    async handle({ auth, params, services }) {
      const bytes = await services.emails.raw(auth.projectId, params.id);
      return { status: 200, body: bytes, headers: { 'Content-Type': 'message/rfc822', 'Content-Disposition': `attachment; filename="${params.id}.eml"` } };
    } }),
];
