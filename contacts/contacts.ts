import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { isUuid } from '../core/values';
import type { Contact, ContactData } from '../db/models/Contact';
import * as rows from '../db/queries/contacts';
import type { CappedList } from '../db/pages';
import { audited, type Actor } from '../audit/log';

/**
 * Contacts as the dashboard manages them (spec 4.2). Every call is scoped to the caller's project: another
 * project's id, or no id at all, is simply not found.
 */

export type { ContactFilter, ContactPageRequest } from '../db/queries/contacts';
export { searchPositionOf } from '../db/queries/contacts';

export function listContacts(db: Knex, projectId: string, filter: rows.ContactFilter, page: rows.ContactPageRequest): Promise<CappedList<Contact>> {
  return rows.listContacts(db, projectId, filter, page);
}

export async function getContact(db: Knex, projectId: string, id: string): Promise<Contact> {
  const contact = isUuid(id) ? await rows.getContact(db, projectId, id) : undefined;
  if (!contact) throw notFound('Contact');
  return contact;
}

/** Creates the contact, or updates the one with this address (data merges; a `null` value deletes its key). */
export async function saveContact(db: Knex, projectId: string, input: { email: string; subscribed?: boolean; data?: ContactData }): Promise<rows.UpsertedContact> {
  const [result] = await rows.upsertContacts(db, projectId, [input], true);
  return result!;
}

export async function updateContact(db: Knex, projectId: string, id: string, patch: { subscribed?: boolean; data?: ContactData }): Promise<Contact> {
  const contact = isUuid(id) ? await rows.patchContact(db, projectId, id, patch) : undefined;
  if (!contact) throw notFound('Contact');
  return contact;
}

export async function deleteContact(db: Knex, projectId: string, id: string): Promise<void> {
  if (!isUuid(id) || !(await rows.deleteContact(db, projectId, id))) throw notFound('Contact');
}

/** The functions above as one object over the app's database, the API's way in (like campaignService). */
export function contactService({ knex }: { knex: Knex }) {
  return {
    list: (projectId: string, filter: rows.ContactFilter, page: rows.ContactPageRequest) => listContacts(knex, projectId, filter, page),
    get: (projectId: string, id: string) => getContact(knex, projectId, id),
    save: (projectId: string, input: { email: string; subscribed?: boolean; data?: ContactData }) => saveContact(knex, projectId, input),
    update: (projectId: string, id: string, patch: { subscribed?: boolean; data?: ContactData }) => updateContact(knex, projectId, id, patch),
    /** Audited in the transaction of the delete (audit/log.ts). */
    remove: (projectId: string, id: string, actor: Actor) =>
      audited(knex, projectId, actor, { operation: 'deleteContact', resourceType: 'contact', resourceId: id }, (trx) => deleteContact(trx, projectId, id)),
  };
}

export type Contacts = ReturnType<typeof contactService>;
