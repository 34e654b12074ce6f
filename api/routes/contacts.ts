import { actorOf } from '../../audit/log';
import type { Contact } from '../../db/models/Contact';
import { crud, first, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { listContactsQuerySchema, patchContactSchema, upsertContactSchema } from '../schemas/contacts';

export interface ContactJson {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export function contactJson(c: Contact): ContactJson {
  return { id: c.id, email: c.email, subscribed: c.subscribed, data: c.data, createdAt: c.createdAt.toISOString(), updatedAt: c.updatedAt.toISOString() };
}

/** Spec 4.2 (contacts/contacts.ts). */
export const contactRoutes = [
  route({ operationId: 'listContacts', method: 'get', path: '/contacts', summary: 'List contacts', tag: 'Contacts', access: 'secret', permission: 'read', query: listContactsQuerySchema,
    answers: ok('A page of contacts, newest first; total exact up to 1,000 (totalExact).', A.contactPageAnswer), links: first('getContact'),
    async handle({ auth, query: q, services }) {
      const { rows, total, totalExact } = await services.contacts.list(auth.projectId, { subscribed: q.subscribed, search: q.search }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      const page = toPage(rows, q.limit, total, contactJson);
      // The spec names the list fields both ways; contacts/cursor are aliases of items/nextCursor.
      return reply({ ...page, totalExact, contacts: page.items, cursor: page.nextCursor });
    } }),

  route({ operationId: 'createContact', method: 'post', path: '/contacts', summary: 'Create or update a contact by email', tag: 'Contacts', access: 'secret', permission: 'write', body: upsertContactSchema,
    answers: { 201: { description: 'Created.', data: A.savedContactAnswer }, 200: { description: 'Updated (the address was known).', data: A.savedContactAnswer } },
    links: crud('Contact'),
    async handle({ auth, body, services }) {
      const { contact, isNew } = await services.contacts.save(auth.projectId, body);
      return reply({ ...contactJson(contact), _meta: { isNew, isUpdate: !isNew } }, isNew ? 201 : 200);
    } }),

  route({ operationId: 'getContact', method: 'get', path: '/contacts/:id', summary: 'Get a contact', tag: 'Contacts', access: 'secret', permission: 'read', answers: ok('The contact.', A.contactAnswer),
    handle: async ({ auth, params, services }) => reply(contactJson(await services.contacts.get(auth.projectId, params.id))) }),

  route({ operationId: 'updateContact', method: 'patch', path: '/contacts/:id', summary: 'Update a contact', tag: 'Contacts', access: 'secret', permission: 'write', body: patchContactSchema, answers: ok('The contact.', A.contactAnswer),
    handle: async ({ auth, params, body, services }) => reply(contactJson(await services.contacts.update(auth.projectId, params.id, body))) }),

  route({ operationId: 'deleteContact', method: 'delete', path: '/contacts/:id', summary: 'Delete a contact', tag: 'Contacts', access: 'secret', permission: 'write', answers: noContent('Deleted.'),
    async handle({ auth, params, services }) {
      await services.contacts.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),
];
