import { actorOf } from '../../audit/log';
import type { KeyRow } from '../../projects/apiKeys';
import { created, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { createKeySchema, listKeysQuerySchema } from '../schemas/keys';

export function keyJson(k: KeyRow) {
  return {
    id: k.id, name: k.name, type: k.type, scope: k.scope, domains: k.domains, hint: `…${k.hint}`,
    createdAt: k.created_at.toISOString(), lastUsedAt: k.last_used_at ? k.last_used_at.toISOString() : null,
  };
}

/** The project's API keys (issue 27, point 3; projects/apiKeys.ts). The key itself is in POST's answer only. */
export const keyRoutes = [
  route({ operationId: 'listKeys', method: 'get', path: '/keys', summary: 'List API keys', tag: 'Keys', access: 'secret', permission: 'admin', query: listKeysQuerySchema,
    description: 'The live keys of the project, secret and public (pk_), newest first; revoked keys are not listed. `lastUsedAt` is kept to the minute.',
    answers: ok('A page of keys.', A.pageOf(A.keyAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.keys.list(auth.projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, keyJson));
    } }),

  route({ operationId: 'createKey', method: 'post', path: '/keys', summary: 'Create an API key', tag: 'Keys', access: 'secret', permission: 'admin', body: createKeySchema,
    description: 'A new secret key. `scope: sending` limits it to /v1/send, /v1/track, /v1/verify and SMTP submission; `domains` to sending From those domains and their subdomains.',
    answers: created('Created; the key is shown here only.', A.keyWithSecretAnswer),
    links: { revokeKey: { operationId: 'revokeKey', parameters: { id: '$response.body#/data/id' } } },
    async handle({ auth, body, services }) {
      const made = await services.keys.create(auth.projectId, actorOf(auth), body);
      return reply({ ...keyJson(made), key: made.key }, 201);
    } }),

  route({ operationId: 'revokeKey', method: 'delete', path: '/keys/:id', summary: 'Revoke an API key', tag: 'Keys', access: 'secret', permission: 'admin',
    description: 'The key stops working at the next request. A key of another project, or one already revoked, is not found.',
    answers: noContent('Revoked.'),
    async handle({ auth, params, services }) {
      await services.keys.revoke(auth.projectId, actorOf(auth), params.id);
      return deleted;
    } }),
];
