import { bulkMailHeaders } from './unsubscribe';
import { compileCached, messageScope, RenderBudget, renderMessage } from './render';
import { testSubject, type MessageContent } from './message';

export interface CampaignContent {
  subject: string;
  body: string;
  /** The body is Markdown (a Markdown template's): converted to HTML after Liquid, as any send of the template is. */
  markdown?: boolean;
  /** The inbox's line after the subject (a hidden preheader at the top of the body), with Liquid like the body. */
  previewText?: string | null;
}

export interface Recipient {
  id: string | null;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}


const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** Liquid's output and tag delimiters with what they hold: left as written when the text around them is escaped. */
const LIQUID = /(\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\})/;

/**
 * The body with its preview text as the hidden preheader that mail clients show after the subject: the text escaped
 * for HTML (its Liquid left as it is, so `{{ firstName }}` renders like the body's, escaped by the renderer), in a
 * block no client displays, first inside `<body>` when the body is a whole document, else before it. A Markdown body
 * gets it as an HTML block of its own (a blank line after it). No preview text: the body unchanged.
 */
export function withPreviewText(body: string, previewText: string | null | undefined, markdown = false): string {
  if (!previewText) return body;
  const text = previewText.split(LIQUID).map((part, i) => (i % 2 === 1 ? part : part.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'))).join('');
  const block = `<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all">${text}</div>`;
  if (markdown) return `${block}\n\n${body}`;
  const open = /<body\b[^>]*>/i.exec(body);
  return open ? body.slice(0, open.index + open[0].length) + block + body.slice(open.index + open[0].length) : block + body;
}

/**
 * A campaign email for one recipient: rendered with the contact's fields, an unsubscribe footer when the body has
 * no {{ unsubscribeUrl }} of its own, and the bulk-mail headers (RFC 2369 List-Unsubscribe, RFC 8058 one-click,
 * Precedence: bulk). `[TEST]` copies say so in the subject (and which variant they are of: `[TEST B]`).
 */
export function renderCampaignEmail(campaign: CampaignContent, recipient: Recipient, unsubscribeUrl: string | null, isTest: boolean, variant?: string): MessageContent {
  const url = unsubscribeUrl ?? '#';
  const scope = messageScope({}, { id: recipient.id ?? '', email: recipient.email, subscribed: recipient.subscribed, data: recipient.data }, url);
  const rendered = renderMessage(compileCached(campaign.subject, withPreviewText(campaign.body, campaign.previewText, campaign.markdown)), scope, new RenderBudget(), campaign.markdown === true);
  const footer = campaign.body.includes('unsubscribeUrl')
    ? ''
    : `\n<p style="font-size:12px;color:#666;margin-top:32px">You receive this email because you subscribed. <a href="${escapeAttr(url)}">Unsubscribe</a></p>`;
  return {
    subject: isTest ? testSubject(rendered.subject, variant) : rendered.subject,
    html: rendered.html + footer,
    extraHeaders: bulkMailHeaders(unsubscribeUrl),
  };
}
