/** Mail that comes back, as a remote MTA writes it: for the bounce tests (test/bounces.test.ts, test/smtp/fuzz.test.ts). */

/** A delivery status notification (RFC 3464) for `recipient`: the action and the status as given. */
export function dsn(recipient: string, action: 'failed' | 'delayed', status: string): Buffer {
  return Buffer.from([
    'From: MAILER-DAEMON@mx.example.org', 'Subject: Undelivered Mail Returned to Sender', 'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="B"', '',
    '--B', 'Content-Type: text/plain', '', 'Your message could not be delivered.', '',
    '--B', 'Content-Type: message/delivery-status', '',
    'Reporting-MTA: dns; mx.example.org', '',
    `Final-Recipient: rfc822; ${recipient}`, `Action: ${action}`, `Status: ${status}`,
    `Diagnostic-Code: smtp; ${status.startsWith('5') ? '550' : '452'} ${status} <${recipient}>: mailbox`, ' unavailable', '',
    '--B--', '',
  ].join('\r\n'));
}

/** Other spellings of a bounce address, by kind: none of them may name its email (issue 26). */
export function variants(address: string): Record<string, string[]> {
  const [local, domain] = address.split('@') as [string, string];
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const last = alphabet.indexOf(local.at(-1)!);
  const head = local.slice(0, -1);
  return {
    'one extra character': [...alphabet].map((c) => `${local}${c}@${domain}`),
    // The last character carries 3 bits of the tag and 2 unused ones: the 3 other values of those 2 bits.
    'last-character variants': [1, 2, 3].map((b) => `${head}${alphabet[last ^ b]}@${domain}`),
    'upper case': [address.toUpperCase(), `${local.toUpperCase()}@${domain}`, `Bounces+${local.slice(8)}@${domain}`],
    'another domain': [`${local}@evil.test`, `${local}@sub.${domain}`, `${local}@${domain}.evil.test`],
  };
}
