import type { BodyType } from '../db/models/Template';

/**
 * How a template applies to a message that uses it: POST /v1/send's `template` (sending/sends.ts) and a campaign's
 * `templateId` (campaigns/campaigns.ts, and its delivery: sending/delivery.ts) merge the same way, here. Each part the
 * message gives itself wins; each part it leaves out (undefined or null) is the template's.
 */

/** A template's parts as stored (a `templates` row's columns). */
export interface TemplateParts {
  subject: string;
  body: string;
  body_type: string;
  from_email: string | null;
  from_name: string | null;
  reply_to: string | null;
}

/** What a message says of its own. */
export interface OwnParts {
  subject?: string | null;
  body?: string | null;
  /** How its own body is written; by default HTML. */
  bodyType?: BodyType;
  from?: { email: string; name?: string } | null;
  fromName?: string | null;
  replyTo?: string | null;
}

/** The parts the message goes out with (subject, body or from may still be missing when neither gives them). */
export interface AppliedParts {
  subject: string | undefined;
  body: string | undefined;
  /** The body is Markdown (mail/render.ts converts it after Liquid). */
  markdown: boolean;
  from: { email: string; name?: string } | undefined;
  fromName: string | null;
  replyTo: string | null;
}

export function applyTemplate(own: OwnParts, template: TemplateParts | undefined): AppliedParts {
  const templateFrom = template?.from_email ? { email: template.from_email, ...(template.from_name ? { name: template.from_name } : {}) } : undefined;
  return {
    subject: own.subject ?? template?.subject,
    body: own.body ?? template?.body,
    // The message's own type, else the template's for the template's own body, else HTML.
    markdown: (own.bodyType ?? (own.body == null ? template?.body_type : undefined) ?? 'html') === 'markdown',
    from: own.from ?? templateFrom,
    // A sender of the message's own comes with its own name or none: the template's name belongs to the template's address.
    fromName: own.fromName ?? own.from?.name ?? (own.from ? null : template?.from_name ?? null),
    replyTo: own.replyTo ?? template?.reply_to ?? null,
  };
}
