import type Router from '@koa/router';
import type { Knex } from 'knex';
import type { Contact } from '../../db/models/Contact';
import { deleteContact, getContact, listContacts, patchContact, upsertContacts } from '../../db/queries/contacts';
import { notFound } from '../errors';
import { isUuid } from '../../core/values';
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

/** Spec 4.2. Every query is scoped to the caller's project; another project's id is simply not found. */
export function contactRoutes(router: Router, knex: Knex): void {
  router.get('/contacts', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListContactsQuery>(ctx, listContactsQuerySchema);
    const afterId = decodeCursor(q.cursor);
    const { rows, total } = await listContacts(knex, projectId, { subscribed: q.subscribed, search: q.search }, q.limit, afterId);
    const page = toPage(rows, q.limit, total, contactJson);
    // The spec names the list fields both ways; contacts/cursor are aliases of items/nextCursor.
    ctx.body = { success: true, data: { ...page, contacts: page.items, cursor: page.nextCursor } };
  });

  router.post('/contacts', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<UpsertContactBody>(ctx, upsertContactSchema);
    const [result] = await upsertContacts(knex, projectId, [body], true);
    const { contact, isNew } = result!;
    ctx.status = isNew ? 201 : 200;
    ctx.body = { success: true, data: { ...contactJson(contact), _meta: { isNew, isUpdate: !isNew } } };
  });

  router.get('/contacts/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    const contact = isUuid(id) ? await getContact(knex, projectId, id) : undefined;
    if (!contact) throw notFound('Contact');
    ctx.body = { success: true, data: contactJson(contact) };
  });

  router.patch('/contacts/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    if (!isUuid(id)) throw notFound('Contact');
    const body = validateBody<PatchContactBody>(ctx, patchContactSchema);
    const contact = await patchContact(knex, projectId, id, body);
    if (!contact) throw notFound('Contact');
    ctx.body = { success: true, data: contactJson(contact) };
  });

  router.delete('/contacts/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    const deleted = isUuid(id) && (await deleteContact(knex, projectId, id));
    if (!deleted) throw notFound('Contact');
    ctx.status = 204;
  });
}
