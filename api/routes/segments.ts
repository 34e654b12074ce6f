import { actorOf } from '../../audit/log';
import type { Segment } from '../../audience/segments';
import { crud, created, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route, type Lookup } from '../route';
import * as A from '../schemas/answers';
import { createSegmentSchema, listQuerySchema, membersSchema, patchSegmentSchema, previewSchema } from '../schemas/segments';
import { contactJson } from './contacts';

/**
 * `memberCount` is null, and `error` says why, for a segment whose stored condition cannot be evaluated; it is the
 * count kept as of `memberCountAt` (audience/segments.ts withCounts).
 */
export function segmentJson(s: Segment) {
  return {
    id: s.id, name: s.name, description: s.description, type: s.type, condition: s.condition,
    memberCount: s.members ? s.members.memberCount : 0, memberCountAt: s.countedAt ? s.countedAt.toISOString() : null, error: s.members?.error ?? null,
    createdAt: s.created_at.toISOString(), updatedAt: s.updated_at.toISOString(),
  };
}

// Another project's segment is a 404 whatever the body or query says; members: 404, then 409 for a DYNAMIC one.
const owned = ({ auth, params, services }: Lookup<'/segments/:id'>) => services.segments.get(auth.projectId, params.id);
// The same 404, without counting its members (a count can read every contact): for the routes that do not answer it.
const exists = ({ auth, params, services }: Lookup<'/segments/:id'>) => services.segments.find(auth.projectId, params.id);
const ownedStatic = ({ auth, params, services }: Lookup<'/segments/:id'>) => services.segments.getStatic(auth.projectId, params.id);

/** Spec 4.4 (audience/segments.ts). */
export const segmentRoutes = [
  route({ operationId: 'listSegments', method: 'get', path: '/segments', summary: 'List segments', tag: 'Segments', access: 'secret', permission: 'read', query: listQuerySchema, answers: ok('A page of segments.', A.pageOf(A.segmentAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.segments.list(auth.projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, segmentJson));
    } }),

  route({ operationId: 'createSegment', method: 'post', path: '/segments', summary: 'Create a segment', tag: 'Segments', access: 'secret', permission: 'write', body: createSegmentSchema,
    description: '`condition` is required for a DYNAMIC segment and refused for a STATIC one.',
    answers: created('Created.', A.segmentAnswer), links: crud('Segment', undefined, undefined, ['get', 'update', 'delete', 'listSegmentContacts:', 'addSegmentMembers:', 'removeSegmentMembers:']),
    handle: async ({ auth, body, services }) => reply(segmentJson(await services.segments.create(auth.projectId, body)), 201) }),

  route({ operationId: 'previewSegment', method: 'post', path: '/segments/preview', summary: 'Preview a condition', tag: 'Segments', access: 'secret', permission: 'write', body: previewSchema,
    answers: ok('How many contacts match, and the first of them.', A.segmentPreviewAnswer),
    async handle({ auth, body, services }) {
      const { count, contacts } = await services.segments.preview(auth.projectId, body.condition);
      return reply({ count, contacts: contacts.map(contactJson) });
    } }),

  route({ operationId: 'getSegment', method: 'get', path: '/segments/:id', summary: 'Get a segment', tag: 'Segments', access: 'secret', permission: 'read', answers: ok('The segment.', A.segmentAnswer),
    handle: async (call) => reply(segmentJson(await owned(call))) }),

  route({ operationId: 'updateSegment', method: 'patch', path: '/segments/:id', summary: 'Update a segment', tag: 'Segments', access: 'secret', permission: 'write', body: patchSegmentSchema, answers: ok('The segment.', A.segmentAnswer), errors: [409],
    before: exists,
    handle: async ({ auth, params, body, services }) => reply(segmentJson(await services.segments.update(auth.projectId, params.id, body))) }),

  route({ operationId: 'deleteSegment', method: 'delete', path: '/segments/:id', summary: 'Delete a segment', tag: 'Segments', access: 'secret', permission: 'write', answers: noContent('Deleted.'), errors: [409],
    async handle({ auth, params, services }) {
      await services.segments.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  route({ operationId: 'listSegmentContacts', method: 'get', path: '/segments/:id/contacts', summary: "List a segment's contacts", tag: 'Segments', access: 'secret', permission: 'read', query: listQuerySchema,
    answers: ok('A page of its contacts; total exact up to 1,000 for a STATIC segment, 100 for a DYNAMIC one (totalExact; its size is the segment\'s memberCount).', A.segmentContactPageAnswer),
    before: exists,
    handleLooksUp: true,
    async handle({ auth, params, query: q, services }) {
      const { rows, total, totalExact } = await services.segments.members(auth.projectId, params.id, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, contactJson), totalExact });
    } }),

  route({ operationId: 'addSegmentMembers', method: 'post', path: '/segments/:id/members', summary: 'Add members to a STATIC segment', tag: 'Segments', access: 'secret', permission: 'write', body: membersSchema,
    answers: ok('Added (unknown addresses become contacts).', A.membersAddedAnswer), errors: [409],
    before: ownedStatic,
    handle: async ({ auth, params, body, services }) => reply(await services.segments.addMembers(auth.projectId, params.id, body.emails)) }),

  route({ operationId: 'removeSegmentMembers', method: 'delete', path: '/segments/:id/members', summary: 'Remove members from a STATIC segment', tag: 'Segments', access: 'secret', permission: 'write', body: membersSchema,
    answers: ok('Removed.', A.membersRemovedAnswer), errors: [409],
    before: ownedStatic,
    handle: async ({ auth, params, body, services }) => reply(await services.segments.removeMembers(auth.projectId, params.id, body.emails, actorOf(auth))) }),
];
