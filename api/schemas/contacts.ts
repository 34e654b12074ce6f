import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import type { AudienceCondition } from '../../audience/condition';
import { DEFAULT_EXPORT_COLUMNS, EXPORT_FORMATS, RECORD_COLUMNS, type ExportFormat } from '../../contacts/export';
import { contactDataSchema, emailSchema } from './common';

export interface UpsertContactBody {
  email: string;
  subscribed?: boolean;
  data?: Record<string, unknown>;
}

export const upsertContactSchema = Joi.object<UpsertContactBody, true>({
  email: emailSchema.required(),
  subscribed: Joi.boolean(),
  data: contactDataSchema,
});

export interface PatchContactBody {
  subscribed?: boolean;
  data?: Record<string, unknown>;
}

export const patchContactSchema = Joi.object<PatchContactBody, true>({
  subscribed: Joi.boolean(),
  data: contactDataSchema,
}).min(1).messages({ 'object.min': 'body must contain subscribed or data' });

export interface ListContactsQuery {
  limit: number;
  cursor?: string;
  subscribed?: boolean;
  search?: string;
}

export const listContactsQuerySchema = Joi.object<ListContactsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  subscribed: Joi.boolean(),
  search: Joi.string().trim().lowercase().min(1).max(254),
});

export interface ExportContactsQuery {
  format: ExportFormat;
  columns: string[];
  segmentId?: string;
  /** Parsed JSON, not checked yet: the export checks it as a condition. */
  filter?: AudienceCondition;
  bom: boolean;
}

/**
 * GET /contacts/export. `columns` is a comma-separated list (record columns and data.<key>); `filter` an audience
 * condition as JSON text (the language of FILTERED campaigns).
 */
// Not a strict key map: columns and filter arrive as text and leave parsed (the custom rules convert them).
export const exportContactsQuerySchema = Joi.object<ExportContactsQuery>({
  format: Joi.string().valid(...EXPORT_FORMATS).default('csv').description('csv (RFC 4180, a header line) or jsonl (JSON Lines: one object per contact).'),
  // Split here; which names are columns is the export's to say (contacts/export.ts checkColumns), as a 400 naming `columns`.
  // Bounded so that the URL fits the server's 32 KB of request head (bin/runtime.ts) however the characters encode.
  columns: Joi.string().max(500).default([...DEFAULT_EXPORT_COLUMNS])
    .custom((value: string) => value.split(',').map((c) => c.trim()).filter((c) => c !== ''))
    .description(`Comma-separated, in the order wanted: ${RECORD_COLUMNS.join(', ')} and data.<key> (data.address.city for a nested key). Default: ${DEFAULT_EXPORT_COLUMNS.join(',')}.`)
    .example('email,subscribed,createdAt,data.plan'),
  segmentId: Joi.string().guid().lowercase().description('Only the contacts of this segment (static or dynamic).'),
  // Parsed here; checked as an audience condition by the export, as a 400 naming the rule at fault (filter.groups.0…).
  filter: Joi.string().max(1_500)
    .custom((value: string, helpers) => {
      try {
        return JSON.parse(value) as unknown;
      } catch {
        return helpers.message({ custom: 'filter is not JSON: an audience condition as JSON text is expected' });
      }
    })
    .description('Only the contacts this audience condition selects, as JSON text: the language of FILTERED campaigns and dynamic segments (at most 1,500 characters: a longer condition belongs in a segment, `segmentId`).')
    .example('{"logic":"AND","groups":[{"filters":[{"field":"data.plan","operator":"equals","value":"pro"}]}]}'),
  bom: Joi.boolean().default(false).description('CSV only: start the file with a UTF-8 byte order mark, so that Excel reads non-ASCII text (Zoë, 日本語) as UTF-8. Ignored for jsonl (JSON Lines has none).'),
}).oxor('segmentId', 'filter');

export interface DeleteContactQuery {
  erase: boolean;
}

export const deleteContactQuerySchema = Joi.object<DeleteContactQuery, true>({
  erase: Joi.boolean().default(false).description('Also erase the contact (GDPR article 17): redact its address and its emails\' content everywhere they stay, and keep only a keyed hash of the address on the suppression list. Needs the admin permission.'),
});
