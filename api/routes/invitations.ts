import { actorOf } from '../../audit/log';
import { grantorOf } from '../../people/members';
import { acceptInvitation, createInvitation, listInvitations, revokeInvitation, type CreatedInvitation } from '../../people/invitations';
import { created, noContent, ok } from '../openapi/operations';
import { deleted, personRoute, reply, route } from '../route';
import * as A from '../schemas/answers';
import { acceptSchema, inviteSchema } from '../schemas/people';
import { wholeList } from './members';

export function invitationJson(i: CreatedInvitation) {
  return {
    id: i.id, email: i.email, role: i.role, createdAt: i.createdAt.toISOString(), expiresAt: i.expiresAt.toISOString(), invitedBy: i.invitedBy,
    ...(i.link ? { link: i.link } : {}),
  };
}

/**
 * Invitations (people/invitations.ts). Creating one needs `admin` and a role the caller may grant (a full key acts as
 * an admin); accepting is open: the token in the body authorises, once.
 */
export const invitationRoutes = [
  route({ operationId: 'createInvitation', method: 'post', path: '/invitations', summary: 'Invite someone to the project', tag: 'Invitations', access: 'secret', permission: 'admin', body: inviteSchema,
    description: 'A single-use link valid INVITATION_TTL_HOURS (72 by default). With a system sender (SYSTEM_PROJECT_ID, SYSTEM_FROM_EMAIL) Herald mails it; otherwise the answer carries it as `link`, to pass on. Nobody invites with a role above their own (403).',
    answers: created('Invited.', A.invitationAnswer),
    links: { deleteInvitation: { operationId: 'deleteInvitation', parameters: { id: '$response.body#/data/id' } } },
    async handle({ auth, body, services }) {
      return reply(invitationJson(await createInvitation(services.accounts, auth.projectId, body, grantorOf(auth))), 201);
    } }),

  route({ operationId: 'listInvitations', method: 'get', path: '/invitations', summary: 'List pending invitations', tag: 'Invitations', access: 'secret', permission: 'admin',
    answers: ok('Invitations not yet accepted, revoked or expired (never their links).', A.pageOf(A.invitationAnswer)),
    async handle({ auth, services }) {
      return reply(wholeList((await listInvitations(services.accounts, auth.projectId)).map(invitationJson)));
    } }),

  route({ operationId: 'deleteInvitation', method: 'delete', path: '/invitations/:id', summary: 'Revoke an invitation', tag: 'Invitations', access: 'secret', permission: 'admin',
    answers: noContent('Revoked: its link is refused from now on.'),
    async handle({ auth, params, services }) {
      await revokeInvitation(services.accounts, auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  personRoute({ people: true, operationId: 'acceptInvitation', method: 'post', path: '/invitations/accept', summary: 'Accept an invitation', tag: 'Invitations', access: 'open', body: acceptSchema,
    description: 'No key: the token authorises, once. An address without an account gets one (name, password); an address with one joins with it, its password given. A used, expired, revoked or unknown token is a 422 naming `token`, and changes nothing.',
    answers: ok('Joined the project.', A.acceptedAnswer), errors: [400, 409, 413, 415],
    async handle({ body, services }) {
      return reply(await acceptInvitation(services.accounts, body));
    } }),
];
