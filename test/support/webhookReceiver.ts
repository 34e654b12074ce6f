import http from 'node:http';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got: its Standard Webhooks headers and the exact body. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** What the receiver does with a request: answer a status (with headers), or hang until the test ends. */
export type Behaviour = (req: Received, nth: number) => { status: number; headers?: Record<string, string> } | 'hang';

export interface WebhookReceiver {
  url: string;
  port: number;
  received: Received[];
  /** The most requests to `path` that were open at once. */
  maxOpen(path: string): number;
  /** Changes what the receiver answers from now on. */
  behave(b: Behaviour): void;
  /** The requests to `path`, each verified with `secret` by standardwebhooks' own Webhook.verify (which throws on a bad one). */
  verified(secret: string, path: string): { id: string; payload: { type: string; timestamp: string; data: Record<string, unknown> } }[];
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1 (an ephemeral port) recording every request. */
export async function startWebhookReceiver(behaviour: Behaviour = () => ({ status: 204 })): Promise<WebhookReceiver> {
  let behave = behaviour;
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const open = new Map<string, number>();
  const most = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    open.set(path, (open.get(path) ?? 0) + 1);
    most.set(path, Math.max(most.get(path) ?? 0, open.get(path)!));
    res.once('close', () => { open.set(path, open.get(path)! - 1); });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '/', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const answer = behave(r, received.length);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer.status, answer.headers ?? {});
      res.end();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    behave: (b) => { behave = b; },
    maxOpen: (path) => most.get(path) ?? 0,
    verified(secret, path) {
      const wh = new Webhook(secret);
      return received.filter((r) => r.path === path).map((r) => ({
        id: r.headers['webhook-id']!,
        payload: wh.verify(r.body, {
          'webhook-id': r.headers['webhook-id']!, 'webhook-timestamp': r.headers['webhook-timestamp']!, 'webhook-signature': r.headers['webhook-signature']!,
        }) as { type: string; timestamp: string; data: Record<string, unknown> },
      }));
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
