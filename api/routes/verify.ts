import type Router from '@koa/router';
import type { DnsConfig } from '../../config';
import { verifyAddress } from '../../verify/address';
import { DnsClient } from '../../verify/dns';
import { verifyBodySchema, type VerifyBody } from '../schemas/verify';
import { validateBody } from '../validate';

/**
 * POST /v1/verify. One DNS client per app, with a bounded cache of positive and negative answers (verify/dns.ts), so
 * repeated domains cost no lookup; each call spends at most VERIFY_DNS_BUDGET_MS waiting for DNS.
 */
export function verifyRoutes(router: Router, config: DnsConfig): void {
  const dns = new DnsClient({ servers: config.servers, timeoutMs: config.timeoutMs, tries: config.tries });
  router.post('/v1/verify', async (ctx) => {
    const body = validateBody<VerifyBody>(ctx, verifyBodySchema);
    ctx.body = { success: true, data: await verifyAddress(body.email, dns, { budgetMs: config.verifyBudgetMs }) };
  });
}
