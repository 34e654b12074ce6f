import { Webhook } from 'standardwebhooks';
import { WebhookError, type WebhookClient } from '../outbound/http';
import { messageId } from './endpoints';
import { openWebhookSecret } from './secrets';

/** A claimed delivery, with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  projectId: string;
  endpointId: string;
  url: string;
  /** The endpoint's sealed secret. */
  secret: Buffer;
  payload: Record<string, unknown>;
  /** This attempt's number (1-based). */
  attempt: number;
}

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` is the delivery's (the same on every retry and
 * redelivery), `webhook-timestamp` this attempt's time, `webhook-signature` `v1,<base64 HMAC-SHA256>` over
 * `id.timestamp.body` with the endpoint's `whsec_` secret, computed by the `standardwebhooks` package.
 */
export function signedHeaders(secret: string, id: string, body: string, at = new Date()): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

/**
 * Makes one attempt through the guarded client (public addresses only unless allowed, checked on the addresses
 * connected to; redirects not followed; bounded in time). Any 2xx is a success; everything else a failure to retry.
 */
export async function attemptDelivery(client: WebhookClient, installationSecret: Buffer, d: ClaimedDelivery): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    const secret = openWebhookSecret(installationSecret, d.projectId, d.endpointId, d.secret);
    const body = JSON.stringify(d.payload);
    const res = await client.call({ url: d.url, method: 'POST', headers: signedHeaders(secret, messageId(d.id), body), rawBody: body });
    return { ok: true, statusCode: res.status, latencyMs: latency(), error: null };
  } catch (err) {
    const status = err instanceof WebhookError ? err.status ?? null : null;
    return { ok: false, statusCode: status, latencyMs: latency(), error: (err as Error).message.slice(0, 500) };
  }
}
