import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths } from './schema';

export type { components, operations, paths } from './schema';

/**
 * A typed client of Herald's API: openapi-fetch over the types generated from the OpenAPI document
 * (client/schema.d.ts, `npm run client:generate`). Paths, parameters, bodies and answers are checked by TypeScript:
 *
 *   const herald = createHeraldClient({ baseUrl: 'http://localhost:3000', apiKey: process.env.HERALD_KEY! });
 *   const { data, error } = await herald.POST('/v1/send', { body: { to: 'ada@example.org', from: 'hi@example.com', subject: 'Hi', body: 'Hello' } });
 *
 * `data` is the success envelope, `error` the error envelope (the Error schema), as the server answered them.
 */
export interface HeraldClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where Herald answers, e.g. `https://herald.example.com` (no path after the host unless Herald is served under one). */
  baseUrl: string;
  /** A secret key (`sk_…`), or a public key (`pk_…`) for POST /v1/track only. */
  apiKey: string;
}

export type HeraldClient = Client<paths>;

export function createHeraldClient({ baseUrl, apiKey, headers, ...options }: HeraldClientOptions): HeraldClient {
  return createClient<paths>({
    ...options,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: { ...(headers as Record<string, string> | undefined), Authorization: `Bearer ${apiKey}` },
  });
}
