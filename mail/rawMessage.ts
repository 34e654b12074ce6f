/**
 * A message submitted over SMTP is sent as its client built it, apart from the headers Herald sets: its own Message-ID
 * (derived from the email's id, as for every email: a retried delivery carries the same one, and replies and bounces
 * map back to the email), no Bcc (a blind copy must not show its other recipients), no Return-Path (the receiving
 * server writes it from the envelope). Everything else — the body, its MIME structure, the client's other headers and
 * their order — stays byte for byte.
 */

/** Headers of the submitted message that Herald removes; it sets Message-ID itself. */
const REPLACED = new Set(['message-id', 'bcc', 'return-path']);

/** Where the header block ends: the first empty line (CRLF CRLF, or bare LF LF from a lax client). */
function headerEnd(raw: Buffer): { end: number; eol: string } {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { end: crlf + 2, eol: '\r\n' };
  if (lf !== -1) return { end: lf + 1, eol: '\n' };
  return { end: raw.length, eol: '\r\n' }; // headers only, no body
}

/**
 * The submitted bytes with Herald's headers: the header block is split into fields (a line starting with space or tab
 * continues the field before it, RFC 5322 folding), the replaced fields are dropped, `set` are written first.
 */
export function withHeraldHeaders(raw: Buffer, set: Record<string, string>): Buffer {
  const { end, eol } = headerEnd(raw);
  const lines = raw.subarray(0, end).toString('latin1').split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  const kept: string[] = [];
  let dropping = false;
  for (const line of lines) {
    if (/^[ \t]/.test(line)) {
      if (!dropping) kept.push(line);
      continue;
    }
    const name = line.slice(0, Math.max(0, line.indexOf(':'))).trim().toLowerCase();
    dropping = REPLACED.has(name) || Object.keys(set).some((k) => k.toLowerCase() === name);
    if (!dropping) kept.push(line);
  }
  const head = [...Object.entries(set).map(([k, v]) => `${k}: ${v}`), ...kept].join(eol) + eol;
  return Buffer.concat([Buffer.from(head, 'latin1'), raw.subarray(end)]);
}

/**
 * The submitted bytes with the reply address Herald signed for this email (inbound/replyAddress.ts) in place of the
 * `name+*@domain` the client wrote in its Reply-To: only in that field (and its folded lines), the display name and
 * everything else as written.
 */
export function withReplyAddress(raw: Buffer, wildcard: string, signed: string): Buffer {
  const { end, eol } = headerEnd(raw);
  const lines = raw.subarray(0, end).toString('latin1').split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  const pattern = new RegExp(wildcard.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
  let inReplyTo = false;
  const out = lines.map((line) => {
    if (!/^[ \t]/.test(line)) inReplyTo = line.slice(0, Math.max(0, line.indexOf(':'))).trim().toLowerCase() === 'reply-to';
    return inReplyTo ? line.replace(pattern, signed) : line;
  });
  return Buffer.concat([Buffer.from(out.join(eol) + eol, 'latin1'), raw.subarray(end)]);
}
