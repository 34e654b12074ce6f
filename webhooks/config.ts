import { ConfigError } from '../config';
import { webhookConfig, type WebhookOptions } from '../outbound/http';

/**
 * Settings of outbound webhook delivery, from the environment. The target guard (WEBHOOK_ALLOW_PRIVATE), the timeout
 * (WEBHOOK_TIMEOUT_MS) and the response cap are those of WEBHOOK steps (outbound/http.ts): one setting for
 * every request Herald makes on a project's behalf.
 */
export interface OutboundWebhookConfig {
  http: WebhookOptions;
  /** Wait before attempt n + 1 after attempt n failed; after the last, the delivery is FAILED. */
  retryDelaysMs: number[];
  /** Requests in flight at once to one endpoint (across a worker's claims). */
  endpointConcurrency: number;
}

/**
 * The default schedule: 10 attempts, each wait four times the last from 5 s, capped at 8 h, about 23.6 h in all
 * (5 s, 20 s, 80 s, 5 min 20 s, 21 min, 85 min, 5.7 h, 8 h, 8 h). Then the endpoint is marked failing.
 */
export const DEFAULT_RETRY_DELAYS_MS = [5_000, 20_000, 80_000, 320_000, 1_280_000, 5_120_000, 20_480_000, 28_800_000, 28_800_000];
export const DEFAULT_ENDPOINT_CONCURRENCY = 32;

export function outboundWebhookConfig(env: NodeJS.ProcessEnv): OutboundWebhookConfig {
  const raw = env.WEBHOOK_RETRY_DELAYS_MS?.trim();
  let retryDelaysMs = DEFAULT_RETRY_DELAYS_MS;
  if (raw) {
    const parts = raw.split(',').map((s) => s.trim());
    if (parts.length > 50 || !parts.every((p) => /^\d{1,9}$/.test(p))) {
      throw new ConfigError('WEBHOOK_RETRY_DELAYS_MS', `Invalid configuration: WEBHOOK_RETRY_DELAYS_MS must be a comma-separated list of at most 50 waits in milliseconds; got ${JSON.stringify(raw)}.`);
    }
    retryDelaysMs = parts.map(Number);
  }
  const c = env.WEBHOOK_ENDPOINT_CONCURRENCY?.trim();
  let endpointConcurrency = DEFAULT_ENDPOINT_CONCURRENCY;
  if (c) {
    if (!/^\d{1,4}$/.test(c) || Number(c) < 1) throw new ConfigError('WEBHOOK_ENDPOINT_CONCURRENCY', `Invalid configuration: WEBHOOK_ENDPOINT_CONCURRENCY must be an integer from 1 to 9999; got ${JSON.stringify(c)}.`);
    endpointConcurrency = Number(c);
  }
  return { http: webhookConfig(env), retryDelaysMs, endpointConcurrency };
}
