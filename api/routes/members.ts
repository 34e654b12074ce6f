import { changeRole, grantorOf, listMembers, removeMember, type Member } from '../../people/members';
import { noContent, ok, uuidParam } from '../openapi/operations';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { changeRoleSchema } from '../schemas/people';

export function memberJson(m: Member) {
  return { userId: m.userId, email: m.email, name: m.name, role: m.role, createdAt: m.createdAt.toISOString() };
}

/** A whole list in the shape of a page (api/pagination.ts): a project's members and invitations are few. */
export const wholeList = <T>(items: T[]) => ({ items, nextCursor: null, hasMore: false, total: items.length });

/**
 * The project's members (people/members.ts): who, with which role. Changing and removing need `admin`, and then the
 * roles themselves decide: nobody grants or takes away a role above their own; the last owner stays.
 */
export const memberRoutes = [
  route({ operationId: 'listMembers', method: 'get', path: '/members', summary: 'List members', tag: 'Members', access: 'secret', permission: 'admin',
    answers: ok("The project's members and their roles, all of them.", A.pageOf(A.memberAnswer)),
    async handle({ auth, services }) {
      return reply(wholeList((await listMembers(services.accounts.knex, auth.projectId)).map(memberJson)));
    } }),

  route({ operationId: 'updateMember', method: 'patch', path: '/members/:userId', summary: "Change a member's role", tag: 'Members', access: 'secret', permission: 'admin',
    params: { userId: uuidParam }, body: changeRoleSchema, errors: [404],
    description: 'Nobody grants a role above their own, nor changes the role of a member above them (403); only an owner makes an owner; the last owner cannot be demoted (409).',
    answers: ok('The member with their new role.', A.memberAnswer),
    async handle({ auth, params, body, services }) {
      return reply(memberJson(await changeRole(services.accounts.knex, auth.projectId, params.userId, body.role, grantorOf(auth))));
    } }),

  route({ operationId: 'deleteMember', method: 'delete', path: '/members/:userId', summary: 'Remove a member', tag: 'Members', access: 'secret', permission: 'admin',
    params: { userId: uuidParam }, errors: [404],
    description: 'The account stays (it may belong to other projects); its membership of this project goes. A member above the caller cannot be removed (403), nor the last owner (409).',
    answers: noContent('Removed.'),
    async handle({ auth, params, services }) {
      await removeMember(services.accounts.knex, auth.projectId, params.userId, grantorOf(auth));
      return deleted;
    } }),
];
