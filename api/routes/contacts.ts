import { actorOf } from '../../audit/log';
import type { Contact } from '../../db/models/Contact';
import { crud, first, noContent, ok } from '../openapi/operations';
import { decodeAddressOrIdCursor, decodeCursor, encodeAddressCursor, encodeCursor, toPage } from '../pagination';
import { searchPositionOf } from '../../contacts/contacts';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { DomainError } from '../../core/errors';
import { allows } from '../../projects/roles';
import { badRequest, forbiddenFor } from '../errors';
import { deleteContactQuerySchema, exportContactsQuerySchema, listContactsQuerySchema, patchContactSchema, upsertContactSchema } from '../schemas/contacts';

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
    answers: ok('A page of contacts, newest first; with search, the addresses that begin with the term first, in address order, then the others that hold it, newest first. The total is exact up to 1,000, or up to 100 with search (totalExact).', A.contactPageAnswer), links: first('getContact'),
    async handle({ auth, query: q, services }) {
      const { search } = q;
      const after = search === undefined ? { afterId: decodeCursor(q.cursor) } : decodeAddressOrIdCursor(q.cursor);
      const { rows, total, totalExact } = await services.contacts.list(auth.projectId, { subscribed: q.subscribed, search }, { limit: q.limit, ...after });
      // A search's cursor is its last row's position (db/queries/contacts.ts searchPositionOf).
      const cursorOf = (c: Contact) => {
        if (search === undefined) return encodeCursor(c.id);
        const at = searchPositionOf(search, c);
        return 'afterEmail' in at ? encodeAddressCursor(at.afterEmail) : encodeCursor(at.afterId);
      };
      const page = toPage(rows, q.limit, total, contactJson, cursorOf);
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

  // Before /contacts/:id, which would take `export` for an id.
  route({ operationId: 'exportContacts', method: 'get', path: '/contacts/export', summary: 'Export contacts as CSV or JSON Lines', tag: 'Contacts', access: 'secret', permission: 'read', query: exportContactsQuerySchema,
    description: 'Streams every contact of the project (or of `segmentId`, or that `filter` selects), oldest first, with the columns asked for, at the pace the client reads: '
      + 'nothing is held in memory but a few chunks, whatever the number of contacts. One snapshot: the contacts as they were when the export began. '
      + 'CSV has a header line and RFC 4180 quoting; a data value is its text (an object or array as JSON), a missing one empty. JSON Lines has one object per contact, keyed by the column names, data values as JSON. '
      + 'Audited (exportContacts), as a read of personal data. A 409 when four exports are running already in this process.',
    answers: { 200: { description: 'The file, as an attachment named contacts-<time>.csv or .jsonl.', media: ['csv', 'jsonl'], headers: { 'Content-Disposition': '`attachment; filename="contacts-2026-12-04T10-30-00Z.csv"`' } } },
    errors: [409, 422],
    async handle({ auth, query, services }) {
      const exported = await services.contactExports.start(auth.projectId, query, actorOf(auth)).catch((err: unknown) => {
        // The condition's segments are checked against the project: a problem with them is a bad query parameter too.
        if (err instanceof DomainError && err.kind === 'invalid') throw badRequest(`Invalid query parameter: ${err.message}`, err.details.errors);
        throw err;
      });
      return { status: 200, body: exported.stream, headers: { 'Content-Type': exported.contentType, 'Content-Disposition': `attachment; filename="${exported.filename}"`, 'Cache-Control': 'no-store' } };
    } }),

  route({ operationId: 'getContact', method: 'get', path: '/contacts/:id', summary: 'Get a contact', tag: 'Contacts', access: 'secret', permission: 'read', answers: ok('The contact.', A.contactAnswer),
    handle: async ({ auth, params, services }) => reply(contactJson(await services.contacts.get(auth.projectId, params.id))) }),

  route({ operationId: 'exportContactData', method: 'get', path: '/contacts/:id/export', summary: "Export a contact's data", tag: 'Contacts', access: 'secret', permission: 'read',
    description: 'Everything Herald holds about the contact, as one JSON document (a data subject\'s copy, GDPR article 15): `contact` (the record), `events` (those about the contact; '
      + 'an email\'s events are in its `timeline`), `emails` (every email to it, with subject, HTML, headers, attachments\' names and its timeline), `suppressions` (the entry of its address, if any), '
      + '`segments` (those it is in now) and `automationExecutions` (with their steps). Written as it is read, so a long history costs no memory. Audited (exportContactData).',
    answers: { 200: { description: 'The document, as an attachment named contact-<id>.json.', raw: A.contactDataAnswer, headers: { 'Content-Disposition': '`attachment; filename="contact-<id>.json"`' } } },
    async handle({ auth, params, services }) {
      const stream = await services.contactData.export(auth.projectId, params.id, actorOf(auth));
      return { status: 200, body: stream, headers: { 'Content-Type': 'application/json; charset=utf-8', 'Content-Disposition': `attachment; filename="contact-${params.id}.json"`, 'Cache-Control': 'no-store' } };
    } }),

  route({ operationId: 'updateContact', method: 'patch', path: '/contacts/:id', summary: 'Update a contact', tag: 'Contacts', access: 'secret', permission: 'write', body: patchContactSchema, answers: ok('The contact.', A.contactAnswer),
    handle: async ({ auth, params, body, services }) => reply(contactJson(await services.contacts.update(auth.projectId, params.id, body))) }),

  route({ operationId: 'deleteContact', method: 'delete', path: '/contacts/:id', summary: 'Delete a contact', tag: 'Contacts', access: 'secret', permission: 'write', query: deleteContactQuerySchema,
    description: 'Deletes the contact, its emails and its events; what its campaigns sent stays counted in their stats. '
      + 'With `erase=true` (admins and owners, full keys: it writes the suppression list and cannot be undone) the contact is also erased (GDPR article 17): '
      + 'its address and what its emails said are redacted from every row that outlives it (emails to it that are not its own, other emails\' headers, '
      + 'raw messages and attachments, events, webhook deliveries, audit entries), and the suppression list keeps only a keyed hash of the address, '
      + 'which every send checks, so that it is not mailed again by accident. Audited (deleteContact, or eraseContact with what was redacted). docs/api.md ("Erasure") says what is erased.',
    answers: noContent('Deleted (and erased, with erase=true).'),
    async handle({ auth, params, query, services }) {
      if (query.erase) {
        // The route's permission is write (a plain delete); erasure needs admin, checked as the routers check theirs.
        if (!allows(auth.principal, 'admin')) throw forbiddenFor(auth.principal, 'erase a contact', 'admin');
        await services.contactErasure.erase(auth.projectId, params.id, actorOf(auth));
      } else {
        await services.contacts.remove(auth.projectId, params.id, actorOf(auth));
      }
      return deleted;
    } }),
];
