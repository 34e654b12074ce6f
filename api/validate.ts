import type Joi from 'joi';
import type { Context } from 'koa';
import { badRequest, type FieldError, validationFailed } from './errors';
import { checkJsonValues } from './schemas/common';

// Joi's error types mapped to the short, stable codes of the spec's error items (`invalid_string`, …).
function codeFor(type: string): string {
  if (type === 'any.required') return 'required';
  if (type === 'object.unknown' || type === 'any.unknown') return 'unrecognized_key';
  if (type === 'any.only') return 'invalid_enum_value';
  if (type === 'string.email' || type === 'string.uri' || type.startsWith('string.pattern') || type === 'string.guid' || type === 'string.isoDate' || type === 'string.domain' || type === 'string.base64') return 'invalid_string';
  if (type === 'date.format' || type === 'date.range') return 'invalid_string'; // not a date Herald accepts (schemas/common.ts)
  if (type === 'data.depth' || type === 'data.bytes') return 'too_big';
  if (type.endsWith('.base')) return 'invalid_type';
  if (type.endsWith('.min') || type.endsWith('.empty') || type.endsWith('.greater') || type === 'array.includesRequiredUnknowns') return 'too_small';
  if (type.endsWith('.max') || type.endsWith('.less')) return 'too_big';
  if (type === 'any.invalid' || type === 'any.custom') return 'invalid';
  return type.replace(/\./g, '_');
}

export function fieldErrors(error: Joi.ValidationError): FieldError[] {
  return error.details.map((d) => ({
    field: d.path.join('.'),
    message: d.message.replace(/"/g, ''),
    code: codeFor(d.type),
  }));
}

const OPTIONS: Joi.ValidationOptions = { abortEarly: false, convert: true, stripUnknown: false, errors: { wrap: { label: false } } };

/**
 * A value checked against its schema: first with Joi's defaults (the same rules and conversions, stopping at the
 * first error), and only when that fails again with OPTIONS, for every offending field. Why twice: Joi keeps a
 * schema's preferences (each `.messages()` is one) merged only for calls without options; with options it merges and
 * compiles them again for every nested schema at every call, which was half of POST /v1/send's validation (95 → 47 µs
 * a body, BENCHMARKS.md section 50). Valid requests, the many, take the first path only.
 */
function check<T>(schema: Joi.ObjectSchema<T>, value: unknown): Joi.ValidationResult<T> {
  const quick = schema.validate(value);
  return quick.error ? schema.validate(value, OPTIONS) : quick;
}

/**
 * Validates a JSON body: not an object → 400; rule failures → 422 with every offending field. The values every
 * request shares rules for (text PostgreSQL can store, nesting depth) are checked first, for every schema at once,
 * so that Joi never sees a body nested deeper than it can walk.
 */
export function validateBody<T>(ctx: Context, schema: Joi.ObjectSchema<T>): T {
  const body: unknown = ctx.request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  const refused = checkJsonValues(body);
  if (refused.length) throw validationFailed(refused);
  const { value, error } = check(schema, body);
  if (error) throw validationFailed(fieldErrors(error));
  return value as T;
}

const invalidQuery = (errors: FieldError[]) =>
  badRequest(errors.length === 1 ? `Invalid query parameter: ${errors[0]!.message}` : 'Invalid query parameters', errors);

/** Validates query parameters: unknown parameters, wrong types or refused text → 400 naming each parameter. */
export function validateQuery<T>(ctx: Context, schema: Joi.ObjectSchema<T>): T {
  const refused = checkJsonValues(ctx.query);
  if (refused.length) throw invalidQuery(refused);
  const { value, error } = check(schema, ctx.query);
  if (error) throw invalidQuery(fieldErrors(error));
  return value as T;
}
