import { ok } from '../openapi/operations';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { verifyBodySchema } from '../schemas/verify';

/** POST /v1/verify (verify/address.ts): each call spends at most VERIFY_DNS_BUDGET_MS waiting for DNS. */
export const verifyRoutes = [
  route({ operationId: 'verify', method: 'post', path: '/v1/verify', summary: 'Verify an address', tag: 'Sending', access: 'secret', permission: 'send', body: verifyBodySchema,
    answers: ok('The verdict (a malformed address is an answer, valid: false, not an error).', A.verifyAnswer),
    handle: async ({ body, services }) => reply(await services.verify.verify(body.email)) }),
];
