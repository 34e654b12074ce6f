import { compileMessage, messageScope, renderMessage, type CompiledMessage } from './render';
import type { MessageContent } from './message';

export interface CampaignContent {
  id: string;
  subject: string;
  body: string;
  updatedAt: Date;
}

export interface Recipient {
  id: string | null;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

// Parsed templates of recent campaigns: a campaign's thousands of deliveries parse it once per worker.
const compiled = new Map<string, CompiledMessage>();
const CACHE_SIZE = 100;

function compiledFor(c: CampaignContent): CompiledMessage {
  const key = `${c.id}:${c.updatedAt.getTime()}`;
  let hit = compiled.get(key);
  if (!hit) {
    hit = compileMessage(c.subject, c.body);
    compiled.set(key, hit);
    if (compiled.size > CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  }
  return hit;
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * A campaign email for one recipient: rendered with the contact's fields, an unsubscribe footer when the body has
 * no {{ unsubscribeUrl }} of its own, and the bulk-mail headers (RFC 2369 List-Unsubscribe, RFC 8058 one-click,
 * Precedence: bulk). `[TEST]` copies say so in the subject.
 */
export function renderCampaignEmail(campaign: CampaignContent, recipient: Recipient, unsubscribeUrl: string | null, isTest: boolean): MessageContent {
  const url = unsubscribeUrl ?? '#';
  const rendered = renderMessage(compiledFor(campaign), messageScope({}, { id: recipient.id ?? '', email: recipient.email, subscribed: recipient.subscribed, data: recipient.data }, url));
  const footer = campaign.body.includes('unsubscribeUrl')
    ? ''
    : `\n<p style="font-size:12px;color:#666;margin-top:32px">You receive this email because you subscribed. <a href="${escapeAttr(url)}">Unsubscribe</a></p>`;
  return {
    subject: isTest ? `[TEST] ${rendered.subject}` : rendered.subject,
    html: rendered.html + footer,
    extraHeaders: {
      Precedence: 'bulk',
      ...(unsubscribeUrl ? { 'List-Unsubscribe': `<${unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {}),
    },
  };
}
