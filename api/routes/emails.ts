import type Router from '@koa/router';
import type { Knex } from 'knex';
import type { Email } from '../../db/models/Email';
import { getEmail, listEmails, type TimelineEntry } from '../../emails/emails';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import { listEmailsQuerySchema, type ListEmailsQuery } from '../schemas/emails';
import { validateQuery } from '../validate';

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
export function emailRoutes(router: Router, knex: Knex): void {
  router.get('/emails', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListEmailsQuery>(ctx, listEmailsQuerySchema);
    const { rows, total, totalExact } = await listEmails(knex, projectId, q, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: { ...toPage(rows, q.limit, total, emailJson), totalExact } };
  });

  router.get('/emails/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const { email, timeline } = await getEmail(knex, projectId, ctx.params.id!);
    ctx.body = { success: true, data: { ...emailJson(email), html: email.html, timeline: timeline.map(timelineJson) } };
  });
}
