import net from 'node:net';
import nodeTls from 'node:tls';

/**
 * A raw SMTP client for the listeners' fuzz tests (test/inbound/fuzz.test.ts, test/smtp/fuzz.test.ts): writes bytes as
 * given (no dot-stuffing, no line-end repair), reads whole replies (the last line of a multi-line one), and upgrades
 * to TLS on STARTTLS. What a real client hides: pipelining, bytes sent too early, a connection dropped mid-DATA.
 */
export class SmtpClient {
  private buffer = '';
  private closed = false;
  private wake: (() => void) | undefined;
  readonly transcript: string[] = [];
  private constructor(private socket: net.Socket | nodeTls.TLSSocket) {
    this.listen(socket);
  }

  private listen(socket: net.Socket | nodeTls.TLSSocket): void {
    socket.on('data', (d: Buffer) => {
      this.buffer += d.toString('latin1');
      this.wake?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    socket.on('error', () => undefined);
  }

  static async open(port: number): Promise<SmtpClient> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new SmtpClient(socket);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  write(bytes: string | Buffer): void {
    if (!this.closed) this.socket.write(bytes);
  }

  /**
   * The next reply, or undefined when the server closed the connection first (or after `ms`). The default is the
   * server's own command timeout (smtp/listener.ts): a big message's reply took over 10 s on a machine at load 12.
   */
  async reply(ms = 60_000): Promise<string | undefined> {
    const until = Date.now() + ms;
    for (;;) {
      const m = /^(\d{3}) [^\n]*\r\n/m.exec(this.buffer);
      if (m) {
        const end = m.index + m[0].length;
        const last = this.buffer.slice(0, end).trim().split('\r\n').pop()!;
        this.buffer = this.buffer.slice(end);
        this.transcript.push(last);
        return last;
      }
      if (this.closed || Date.now() > until) return undefined;
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, Math.max(1, until - Date.now())).unref();
      });
    }
  }

  /** After the server's 220 to STARTTLS: the handshake (any certificate), then the session goes on encrypted. */
  async upgrade(): Promise<void> {
    const secure = nodeTls.connect({ socket: this.socket as net.Socket, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve());
      secure.once('error', reject);
    });
    this.socket = secure;
    this.listen(secure);
  }

  async close(): Promise<void> {
    if (!this.closed) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 200).unref();
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}
