import PostalMime from 'postal-mime';

/**
 * What a message that comes back to a bounce address says, read from its machine-readable part:
 * - a delivery status notification (RFC 3464: `multipart/report; report-type=delivery-status`, with a
 *   `message/delivery-status` part of per-recipient fields);
 * - a feedback report (RFC 5965, ARF: `multipart/report; report-type=feedback-report`, with a `message/feedback-report`
 *   part), sent by a mailbox provider's feedback loop when a recipient marks the mail as spam.
 * postal-mime splits the MIME; the report parts are header-like field blocks (RFC 3464 section 2.1), read here.
 * Anything else (an auto-reply, a bounce in prose only) is no report: it is dropped, as no address is taken out of use
 * on a guess.
 */

export interface DeliveryFailure {
  /** `failed`: the message will not be delivered; `delayed`: still being tried (a soft bounce). */
  action: 'failed' | 'delayed';
  /** hard: permanent (status 5.x.x, or a failure without a status); soft: anything else (4.x.x, an invalid status, delayed). */
  type: 'hard' | 'soft';
  recipient: string | null;
  status: string | null;
  diagnostic: string | null;
}

export type Report =
  | { kind: 'bounce'; failures: DeliveryFailure[]; reportingMta: string | null }
  | { kind: 'complaint'; feedbackType: string; userAgent: string | null; recipient: string | null };

/** Field blocks: unfolded `Name: value` lines, blocks separated by empty lines. Names are lower-cased. */
export function fieldBlocks(text: string): Map<string, string>[] {
  const blocks: Map<string, string>[] = [];
  let current = new Map<string, string>();
  let last: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (current.size) blocks.push(current);
      current = new Map();
      last = undefined;
      continue;
    }
    if (/^[ \t]/.test(line) && last) {
      current.set(last, `${current.get(last)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    last = line.slice(0, colon).trim().toLowerCase();
    current.set(last, line.slice(colon + 1).trim());
  }
  if (current.size) blocks.push(current);
  return blocks;
}

/** `rfc822; ada@example.org` → `ada@example.org`. */
const address = (field: string | undefined) => {
  if (!field) return null;
  const value = field.includes(';') ? field.slice(field.indexOf(';') + 1) : field;
  return value.trim().replace(/^<|>$/g, '').toLowerCase() || null;
};

const text = (content: ArrayBuffer | string) => (typeof content === 'string' ? content : Buffer.from(content).toString('utf8'));

export async function parseReport(raw: Buffer): Promise<Report | undefined> {
  const parsed = await PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' });
  const contentType = parsed.headers.find((h) => h.key === 'content-type')?.value.toLowerCase() ?? '';
  if (!contentType.startsWith('multipart/report')) return undefined;

  const feedback = parsed.attachments.find((a) => a.mimeType.toLowerCase() === 'message/feedback-report');
  if (feedback) {
    const [fields] = fieldBlocks(text(feedback.content as ArrayBuffer));
    if (!fields) return undefined;
    return {
      kind: 'complaint',
      feedbackType: (fields.get('feedback-type') ?? 'abuse').toLowerCase(),
      userAgent: fields.get('user-agent') ?? null,
      recipient: address(fields.get('original-rcpt-to')),
    };
  }

  const status = parsed.attachments.find((a) => ['message/delivery-status', 'message/global-delivery-status'].includes(a.mimeType.toLowerCase()));
  if (!status) return undefined;
  const [perMessage, ...perRecipient] = fieldBlocks(text(status.content as ArrayBuffer));
  const failures: DeliveryFailure[] = [];
  for (const fields of perRecipient) {
    const action = fields.get('action')?.toLowerCase();
    if (action !== 'failed' && action !== 'delayed') continue; // delivered, relayed, expanded: not a bounce
    // RFC 3463: class 2, 4 or 5, subject and detail of 1 to 3 digits. A status that is none (9.9.9, 5.x) is no proof
    // of a permanent failure: soft. Only a failure without any status is taken as hard (as RFC 3464 requires one,
    // an MTA that leaves it out reports a plain failure).
    const given = fields.get('status')?.trim() ?? '';
    const code = /^[245]\.\d{1,3}\.\d{1,3}(?![\d.])/.exec(given)?.[0] ?? null;
    failures.push({
      action,
      type: action === 'failed' && (given === '' || code?.startsWith('5')) ? 'hard' : 'soft',
      recipient: address(fields.get('final-recipient') ?? fields.get('original-recipient')),
      status: code,
      diagnostic: fields.get('diagnostic-code')?.replace(/^smtp;\s*/i, '').slice(0, 1000) ?? null,
    });
  }
  if (failures.length === 0) return undefined;
  return { kind: 'bounce', failures, reportingMta: address(perMessage?.get('reporting-mta')) };
}
