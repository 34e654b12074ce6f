import { sendCommand, type Sender } from '../sending/sender';
import type { SystemMail } from './links';

/**
 * The system sender: invitations and resets go out as plain-text sends of the configured project
 * (SYSTEM_PROJECT_ID), from SYSTEM_FROM_EMAIL, through the one send pipeline (sending/sender.ts), as POST /v1/send:
 * the same domain check, suppression list, queue, retries and events. Such a send is the system project's email like
 * any other (its logs, its webhooks). Not tracked: the link must not be rewritten through the click redirect.
 */
export function systemMail(sender: Pick<Sender, 'send'>, from: { projectId: string; email: string }): SystemMail {
  return async ({ to, subject, text }) => {
    const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
      // The link clickable; its token is base64url, nothing in it to escape.
      .replace(/https?:\/\/\S+/g, (url) => `<a href="${url}">${url}</a>`);
    await sender.send(sendCommand(from.projectId, {
      from: { email: from.email, name: 'Herald' },
      to: { email: to },
      subject,
      body: `<pre style="font-family: sans-serif; white-space: pre-wrap">${escaped}</pre>`,
      track: { opens: false, clicks: false },
    }));
  };
}
