import { signToken, verifyToken } from '../mail/tokens';

/**
 * Signed, expiring links to a received message's raw bytes and attachments, put in the `email.received` payload so
 * that an app fetches what it needs instead of being sent every byte (mail/tokens.ts signs them; the purpose keeps
 * them apart from every other token). The token names the project, the message, the file (-1: the raw message, n: the
 * nth attachment) and when it stops working; the link works without a key until then.
 */

const PURPOSE = 'inbound-file';
export const RAW_FILE = -1;

/** How long a payload's links work: longer than the webhook retry schedule (about 24 hours). */
export const FILE_LINK_TTL_MS = 7 * 24 * 3600_000;

export interface FileRef {
  projectId: string;
  messageId: string;
  /** RAW_FILE, or the attachment's index. */
  file: number;
  expiresAt: Date;
}

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (b: Buffer) => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');

export function fileToken(secret: Buffer, ref: FileRef): string {
  const payload = Buffer.alloc(38);
  uuidBytes(ref.projectId).copy(payload, 0);
  uuidBytes(ref.messageId).copy(payload, 16);
  payload.writeInt16BE(ref.file, 32);
  payload.writeUInt32BE(Math.floor(ref.expiresAt.getTime() / 1000), 34);
  return signToken(secret, PURPOSE, payload);
}

/** What a token names, or null when it is not one Herald signed; `expired` when its time has passed. */
export function fileOfToken(secret: Buffer, token: string, now = Date.now()): (FileRef & { expired: boolean }) | null {
  const payload = verifyToken(secret, PURPOSE, token);
  if (!payload || payload.length !== 38) return null;
  const expiresAt = new Date(payload.readUInt32BE(34) * 1000);
  return { projectId: uuidOf(payload.subarray(0, 16)), messageId: uuidOf(payload.subarray(16, 32)), file: payload.readInt16BE(32), expiresAt, expired: expiresAt.getTime() <= now };
}

export function fileUrl(publicUrl: string, secret: Buffer, ref: FileRef): string {
  return `${publicUrl.replace(/\/$/, '')}/inbound-files/${fileToken(secret, ref)}`;
}
