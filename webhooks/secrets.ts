import { randomBytes } from 'node:crypto';
import { seal, unseal } from '../core/sealed';

/**
 * Endpoint secrets: `whsec_` and 24 random bytes in base64 (the Standard Webhooks format, which `standardwebhooks`
 * reads). Shown once, in the answer that creates or rotates them; stored sealed to the endpoint's row (core/sealed.ts).
 */
const PURPOSE = 'webhook-secret/v1';

export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

const boundTo = (projectId: string, endpointId: string) => `${projectId}/${endpointId}`;

export const sealWebhookSecret = (secret: Buffer, projectId: string, endpointId: string, plain: string): Buffer =>
  seal(secret, PURPOSE, boundTo(projectId, endpointId), plain);

export const openWebhookSecret = (secret: Buffer, projectId: string, endpointId: string, sealed: Buffer): string =>
  unseal(secret, PURPOSE, boundTo(projectId, endpointId), sealed);
