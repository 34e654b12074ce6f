import type { Overview } from '../../emails/overview';
import { ok } from '../openapi/operations';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { overviewQuerySchema } from '../schemas/overview';

export function overviewJson(o: Overview) {
  return {
    days: o.days, from: o.from, to: o.to, series: o.series, totals: o.totals, queue: o.queue,
    domains: o.domains.map((d) => ({ id: d.id, domain: d.domain, status: d.status, checkedAt: d.checkedAt?.toISOString() ?? null, issues: d.issues })),
  };
}

/** The project at a glance (emails/overview.ts): the console's Overview page, and any script's. */
export const overviewRoutes = [
  route({ operationId: 'getOverview', method: 'get', path: '/stats/overview', summary: 'Email volume by day, the delivery queue and the domains needing attention', tag: 'Stats', access: 'secret', permission: 'read', query: overviewQuerySchema, answers: ok('The overview.', A.overviewAnswer),
    handle: async ({ auth, query, services }) => reply(overviewJson(await services.overview.get(auth.projectId, query.days))) }),
];
