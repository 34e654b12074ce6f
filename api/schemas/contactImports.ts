import Joi from 'joi';
import { COLUMN_TARGETS, DATA_TYPES, type ColumnMapping } from '../../contacts/imports/columns';
import { cursorSchema, limitSchema } from '../pagination';
import { uuidSchema } from './common';

/** One column of an import's map (contacts/imports/columns.ts). */
export const columnMappingSchema = Joi.object<ColumnMapping, true>({
  column: Joi.string().min(1).max(1000).required().example('Seats').description('The CSV header (or JSON Lines key) of the column.'),
  to: Joi.string().valid(...COLUMN_TARGETS).required().example('data'),
  key: Joi.string().trim().min(1).max(100).example('seats').description('`data`: the key it is stored under (default: the column\'s name).'),
  type: Joi.string().valid(...DATA_TYPES).example('number').description('`data`: its type (default string). Empty cells are no value.'),
});

/**
 * The longest JSON text accepted: the URL must fit the server's 32 KB of request head (bin/runtime.ts) however its
 * characters encode (12 bytes for one of 4 UTF-8 bytes).
 */
export const JSON_QUERY_MAX_LENGTH = 2_500;

/** An array sent as JSON text (a query parameter): parsed, then validated as an array. */
const jsonArray = Joi.extend({
  type: 'jsonArray',
  base: Joi.array(),
  messages: { 'jsonArray.json': '{{#label}} must be a JSON array', 'jsonArray.long': `{{#label}} must be at most ${JSON_QUERY_MAX_LENGTH} characters of JSON` },
  coerce: {
    from: 'string',
    method(value, helpers) {
      if (value.length > JSON_QUERY_MAX_LENGTH) return { errors: [helpers.error('jsonArray.long')] };
      try {
        return { value: JSON.parse(value) };
      } catch {
        return { errors: [helpers.error('jsonArray.json')] };
      }
    },
  },
}) as { jsonArray(): Joi.ArraySchema };

const EXAMPLE_COLUMNS: ColumnMapping[] = [{ column: 'Email', to: 'email' }, { column: 'Seats', to: 'data', key: 'seats', type: 'number' }];

export interface CreateImportQuery {
  columns: ColumnMapping[];
  mode: 'create' | 'update' | 'upsert';
  data: 'merge' | 'replace';
  subscribed: boolean;
  resubscribe: boolean;
  segmentId?: string;
  name?: string;
}

/** The import's options, in the query: the body is the file. `columns` is the map as JSON (POST /contacts/imports/preview proposes it). */
export const createImportQuerySchema = Joi.object<CreateImportQuery, true>({
  columns: jsonArray.jsonArray().items(columnMappingSchema).min(1).max(1000).required()
    .description('The column map, as a JSON array in the query (URL-encoded): one entry per column used; columns left out are ignored. Exactly one `email`.')
    .example(EXAMPLE_COLUMNS),
  mode: Joi.string().valid('create', 'update', 'upsert').default('upsert').description('create: new addresses only; update: known ones only; upsert: both.'),
  data: Joi.string().valid('merge', 'replace').default('merge').description('An existing contact\'s data: merged with the row\'s keys, or replaced by them.'),
  subscribed: Joi.boolean().default(true).description('A new contact\'s subscription when its row gives none.'),
  resubscribe: Joi.boolean().default(false).description('Let the file subscribe contacts who unsubscribed or are suppressed (admin permission; audited). Without it an import never does.'),
  segmentId: uuidSchema.description('A static segment every imported contact is added to.'),
  name: Joi.string().trim().max(255).example('customers.csv').description('The file\'s name, shown with the import.'),
});

export interface ListImportsQuery {
  limit: number;
  cursor?: string;
}

export const listImportsQuerySchema = Joi.object<ListImportsQuery, true>({ limit: limitSchema, cursor: cursorSchema });
