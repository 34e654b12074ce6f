import { generateKeyPairSync } from 'node:crypto';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real OpenID Connect provider for the single sign-on tests (issue 27): `oidc-provider` (a certified OP) on
 * 127.0.0.1, in the test process. Its people are `accounts` (the claims it vouches for, email_verified included); the
 * login and consent "pages" are a handler that signs in whoever `nextLogin` names (or refuses with access_denied), so
 * the whole flow runs over real HTTP with no form to fill. PKCE is required of every client (`pkce.required`).
 */
export interface TestAccount { email: string; email_verified: boolean; name?: string }

export interface TestProvider {
  issuer: string;
  /** Accounts by their subject (`sub`). */
  accounts: Map<string, TestAccount>;
  /** Who the next interaction signs in (a `sub`), or `deny` to answer access_denied. */
  nextLogin: string;
  /** Registers a client: its redirect URIs and, for a confidential one, its secret (client_secret_post); none: public. */
  addClient(client: { id: string; secret?: string; redirectUri: string }): void;
  close(): Promise<void>;
}

export async function startTestProvider(): Promise<TestProvider> {
  const { default: Provider } = await import('oidc-provider');
  const server: Server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, TestAccount>();
  const clients: Record<string, unknown>[] = [];
  let provider: InstanceType<typeof Provider> | undefined;

  const state: TestProvider = {
    issuer,
    accounts,
    nextLogin: '',
    addClient({ id, secret, redirectUri }) {
      clients.push({
        client_id: id, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'],
        ...(secret ? { client_secret: secret, token_endpoint_auth_method: 'client_secret_post' } : { token_endpoint_auth_method: 'none' }),
      });
      provider = undefined; // built again with the new client list at the next request
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };

  const signingKey = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' };
  const build = () => new Provider(issuer, {
    clients: clients as never,
    // Every client, confidential ones too, must send a S256 code challenge: an exchange without the verifier fails.
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['herald-test-provider-cookie-key'] },
    // A signing key and lifetimes of our own: the provider's development defaults print notices into the test output.
    jwks: { keys: [signingKey] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx: unknown, sub: string) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...account }) };
    },
  });

  async function interaction(p: InstanceType<typeof Provider>, req: IncomingMessage, res: ServerResponse) {
    const details = await p.interactionDetails(req, res);
    if (state.nextLogin === 'deny') {
      await p.interactionFinished(req, res, { error: 'access_denied', error_description: 'The person said no' }, { mergeWithLastSubmission: false });
      return;
    }
    if (details.prompt.name === 'login') {
      await p.interactionFinished(req, res, { login: { accountId: state.nextLogin } }, { mergeWithLastSubmission: false });
      return;
    }
    // Consent: grant what the client asked for.
    const grant = new p.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
    grant.addOIDCScope(String(details.params.scope));
    await p.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    provider ??= build();
    const p = provider;
    if (req.url?.startsWith('/interaction/')) {
      interaction(p, req, res).catch((err: Error) => { res.statusCode = 500; res.end(err.message); });
      return;
    }
    void p.callback()(req, res);
  });
  return state;
}
