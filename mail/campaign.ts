import { bulkMailHeaders } from './unsubscribe';
import { compileCached, messageScope, RenderBudget, renderMessage } from './render';
import { testSubject, type MessageContent } from './message';

export interface CampaignContent {
  subject: string;
  body: string;
  /** The body is Markdown (a Markdown template's): converted to HTML after Liquid, as any send of the template is. */
  markdown?: boolean;
}

export interface Recipient {
  id: string | null;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}


const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * A campaign email for one recipient: rendered with the contact's fields, an unsubscribe footer when the body has
 * no {{ unsubscribeUrl }} of its own, and the bulk-mail headers (RFC 2369 List-Unsubscribe, RFC 8058 one-click,
 * Precedence: bulk). `[TEST]` copies say so in the subject.
 */
export function renderCampaignEmail(campaign: CampaignContent, recipient: Recipient, unsubscribeUrl: string | null, isTest: boolean): MessageContent {
  const url = unsubscribeUrl ?? '#';
  const scope = messageScope({}, { id: recipient.id ?? '', email: recipient.email, subscribed: recipient.subscribed, data: recipient.data }, url);
  const rendered = renderMessage(compileCached(campaign.subject, campaign.body), scope, new RenderBudget(), campaign.markdown === true);
  const footer = campaign.body.includes('unsubscribeUrl')
    ? ''
    : `\n<p style="font-size:12px;color:#666;margin-top:32px">You receive this email because you subscribed. <a href="${escapeAttr(url)}">Unsubscribe</a></p>`;
  return {
    subject: isTest ? testSubject(rendered.subject) : rendered.subject,
    html: rendered.html + footer,
    extraHeaders: bulkMailHeaders(unsubscribeUrl),
  };
}
