import type Router from '@koa/router';
import type { Knex } from 'knex';
import { deleteContact, getContact, listContacts, saveContact, updateContact } from '../../contacts/contacts';
import type { Contact } from '../../db/models/Contact';
import { decodeCursor, toPage } from '../pagination';
import { listContactsQuerySchema, patchContactSchema, upsertContactSchema, type ListContactsQuery, type PatchContactBody, type UpsertContactBody } from '../schemas/contacts';
import { validateBody, validateQuery } from '../validate';
import type { AuthState } from '../middleware/auth';

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
export function contactRoutes(router: Router, knex: Knex): void {
  router.get('/contacts', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListContactsQuery>(ctx, listContactsQuerySchema);
    const { rows, total } = await listContacts(knex, projectId, { subscribed: q.subscribed, search: q.search }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    const page = toPage(rows, q.limit, total, contactJson);
    // The spec names the list fields both ways; contacts/cursor are aliases of items/nextCursor.
    ctx.body = { success: true, data: { ...page, contacts: page.items, cursor: page.nextCursor } };
  });

  router.post('/contacts', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const { contact, isNew } = await saveContact(knex, projectId, validateBody<UpsertContactBody>(ctx, upsertContactSchema));
    ctx.status = isNew ? 201 : 200;
    ctx.body = { success: true, data: { ...contactJson(contact), _meta: { isNew, isUpdate: !isNew } } };
  });

  router.get('/contacts/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: contactJson(await getContact(knex, projectId, ctx.params.id!)) };
  });

  router.patch('/contacts/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<PatchContactBody>(ctx, patchContactSchema);
    ctx.body = { success: true, data: contactJson(await updateContact(knex, projectId, ctx.params.id!, body)) };
  });

  router.delete('/contacts/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await deleteContact(knex, projectId, ctx.params.id!);
    ctx.status = 204;
  });
}
