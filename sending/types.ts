import type { RequestData } from '../core/requestData';

/** A request to send, as every way in gives it to the business (sending/sends.ts) once it is validated. */

/** A mailbox: `{ email, name? }`, or a string `ada@example.com` / `Ada Lovelace <ada@example.com>`. */
export interface Mailbox {
  email: string;
  name?: string;
}

export interface AttachmentInput {
  filename: string;
  content: string;
  contentType?: string;
  contentId?: string;
  disposition?: 'attachment' | 'inline';
}

/** The validated body: strings in `to`/`from` have been parsed into mailboxes by the schema. */
export interface SendBody {
  to: Mailbox | Mailbox[];
  subject?: string;
  body?: string;
  /** How the body is written: `html` (default) or `markdown`; with a template and no `body`, the template's bodyType. */
  type?: 'html' | 'markdown';
  template?: string;
  from?: Mailbox;
  name?: string;
  reply?: string;
  headers?: Record<string, string>;
  attachments?: AttachmentInput[];
  subscribed?: boolean;
  /** Open and click tracking for this send's emails; what is not given follows the project's settings (GET /settings). */
  track?: { opens?: boolean; clicks?: boolean };
  /** Template variables; entries may be `{ value, persistent? }` (common.ts DataEntry). Never stored on the contact. */
  data?: RequestData;
}
