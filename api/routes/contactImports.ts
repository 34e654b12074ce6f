import { actorOf } from '../../audit/log';
import type { ContactImport } from '../../contacts/imports/imports';
import { IMPORT_MEDIA_TYPES } from '../../contacts/imports/imports';
import { allows } from '../../projects/roles';
import { first, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { createImportQuerySchema, listImportsQuerySchema } from '../schemas/contactImports';

export function contactImportJson(i: ContactImport) {
  return {
    ...i,
    createdAt: i.createdAt.toISOString(),
    startedAt: i.startedAt ? i.startedAt.toISOString() : null,
    finishedAt: i.finishedAt ? i.finishedAt.toISOString() : null,
  };
}

const FILE = 'The body is the file: CSV (RFC 4180, UTF-8 with or without BOM, comma or semicolon, a header row) as `text/csv`, or JSON Lines as `application/x-ndjson`; streamed, up to IMPORT_MAX_BYTES (2 GiB by default).';

/** Contact imports (issue 30; contacts/imports/). Before contactRoutes: `/contacts/imports` is not a contact's id. */
export const contactImportRoutes = [
  route({ operationId: 'previewContactImport', method: 'post', path: '/contacts/imports/preview', summary: 'Preview a contact import', tag: 'Contacts', access: 'secret', permission: 'write',
    upload: IMPORT_MEDIA_TYPES,
    description: `Reads the first rows of a file (its first 256 KB; the rest of the body is read and dropped: sending only the file's beginning is enough) and proposes the column map for POST /contacts/imports, with the rows as read and their problems: the rows that cannot be read, and those the import would refuse under the proposed map (no or invalid email, a row of the wrong width, a value not of its type, an address already on an earlier line). ${FILE}`,
    answers: ok('The proposed column map and the first rows.', A.importPreviewAnswer),
    handle: async ({ upload, services }) => reply(await services.contactImports.preview(upload!)) }),

  route({ operationId: 'createContactImport', method: 'post', path: '/contacts/imports', summary: 'Import contacts from a file', tag: 'Contacts', access: 'secret', permission: 'write',
    upload: IMPORT_MEDIA_TYPES, query: createImportQuerySchema,
    description: `Stores the file and imports it as durable engine work, in batches: GET /contacts/imports/:id shows its progress. Bad rows are refused one by one (GET /contacts/imports/:id/errors); a file that is not CSV or JSON Lines (415, 422) or over the limit (413) is refused at once with nothing stored. ${FILE} An import never subscribes a contact who unsubscribed or is suppressed, unless \`resubscribe\` (admin permission; audited).`,
    answers: { 202: { description: 'Accepted: the import is queued.', data: A.contactImportAnswer } },
    links: { getContactImport: { operationId: 'getContactImport', parameters: { id: '$response.body#/data/id' } } },
    async handle({ auth, query, upload, services }) {
      const created = await services.contactImports.create(auth.projectId, actorOf(auth), { mayResubscribe: allows(auth.principal, 'admin') }, {
        mode: query.mode, dataMode: query.data, columns: query.columns, defaultSubscribed: query.subscribed, resubscribe: query.resubscribe,
        ...(query.segmentId ? { segmentId: query.segmentId } : {}), ...(query.name ? { fileName: query.name } : {}),
      }, upload!);
      return reply(contactImportJson(created), 202);
    } }),

  route({ operationId: 'listContactImports', method: 'get', path: '/contacts/imports', summary: 'List contact imports', tag: 'Contacts', access: 'secret', permission: 'read', query: listImportsQuerySchema,
    answers: ok('A page of imports, newest first.', A.contactImportPageAnswer), links: first('getContactImport'),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.contactImports.list(auth.projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, contactImportJson));
    } }),

  route({ operationId: 'getContactImport', method: 'get', path: '/contacts/imports/:id', summary: 'Get a contact import', tag: 'Contacts', access: 'secret', permission: 'read',
    answers: ok('The import: status, rows read, created, updated, skipped and failed, and its rate.', A.contactImportAnswer),
    handle: async ({ auth, params, services }) => reply(contactImportJson(await services.contactImports.get(auth.projectId, params.id))) }),

  route({ operationId: 'getContactImportErrors', method: 'get', path: '/contacts/imports/:id/errors', summary: 'Download a contact import\'s refused rows', tag: 'Contacts', access: 'secret', permission: 'read',
    answers: { 200: { description: 'CSV: `line,reason,raw`, one row per refused row of the file, in line order.', media: 'csv' } },
    async handle({ auth, params, services }) {
      const body = await services.contactImports.errors(auth.projectId, params.id);
      return { status: 200, body, headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="import-${params.id}-errors.csv"` } };
    } }),

  route({ operationId: 'cancelContactImport', method: 'post', path: '/contacts/imports/:id/cancel', summary: 'Cancel a contact import', tag: 'Contacts', access: 'secret', permission: 'write',
    description: 'Stops the import before its next batch; the rows merged so far stay. An import that has ended is a 409.',
    answers: ok('The import, CANCELLED.', A.contactImportAnswer),
    handle: async ({ auth, params, services }) => reply(contactImportJson(await services.contactImports.cancel(auth.projectId, params.id, actorOf(auth)))) }),
];
