import type Joi from 'joi';
import { JSON_QUERY_MAX_LENGTH } from '../schemas/contactImports';

/**
 * Joi → JSON Schema 2020-12 (the dialect of OpenAPI 3.1), with joi-to-json's OpenAPI 3.1 parser. The parser is
 * extended where its output would be false for Herald's schemas (each case is what Joi accepts, measured against
 * what the converter wrote):
 * - `Joi.object()` without keys accepts any keys; the converter wrote `additionalProperties: false` (only `{}`).
 * - `.pattern(keySchema, valueSchema)` with a Joi schema for the key (free-form `data`, `headers`): the converter only
 *   knows regular-expression keys and dropped it (again only `{}`); it becomes `propertyNames` and
 *   `additionalProperties`.
 * - A regular expression with flags (`/…/u`) kept its `/u` inside the pattern.
 * - `.min()`, `.max()` and `.length()` of an object (how many keys) were dropped: they become `minProperties` and
 *   `maxProperties`.
 * - A `.when()` that looks at a sibling key (`subject` required unless `template`…) cannot be said of the field alone:
 *   the converter replaced the field's own type with "anything". The field keeps its own rules; what depends on the
 *   sibling is said in its description.
 */

type JsonSchema = Record<string, unknown>;
type Describe = Record<string, unknown> & { rules?: unknown[]; keys?: Record<string, unknown>; patterns?: { schema?: Describe; rule?: Describe; regex?: string }[]; flags?: Record<string, unknown> };

interface ParserBase {
  parse(spec: Describe, definitions?: object, level?: number): JsonSchema;
  _setObjectProperties(schema: JsonSchema, spec: Describe, definitions: object, level: number): void;
  _setConditionCompositionStyle(schema: JsonSchema, condition: Describe, definitions: object, level: number): JsonSchema;
  _parseSwitchCondition(ifThenStyle: boolean, schema: JsonSchema, condition: Describe, definitions: object, level: number): void;
}

/**
 * The parser class, made when the first document is built: joi-to-json loads the whole of lodash (half a megabyte of
 * JavaScript), which every API process and test file paid at start-up for a document that most never build.
 */
let parserClass: (new () => ParserBase) | undefined;
function heraldParser(): new () => ParserBase {
  if (parserClass) return parserClass;
  // joi-to-json ships no types for its parser classes.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const OpenApi31Parser = require('joi-to-json/lib/parsers/open-api-3.1') as new (opts?: object) => ParserBase;
  parserClass = class HeraldParser extends OpenApi31Parser {
    /**
     * An array sent as JSON text in a query parameter (api/schemas/contactImports.ts `jsonArray`, a Joi extension the
     * converter does not know, and wrote as `type: "jsonArray"`): a string whose content is that array.
     */
    override parse(spec: Describe, definitions?: object, level?: number): JsonSchema {
      if (spec.type !== 'jsonArray') return super.parse(spec, definitions, level);
      const array = super.parse({ ...spec, type: 'array' }, definitions, level);
      const { description, examples } = array as { description?: string; examples?: unknown[] };
      delete array.description;
      delete array.examples;
      return {
        type: 'string', maxLength: JSON_QUERY_MAX_LENGTH, contentMediaType: 'application/json', contentSchema: array,
        ...(description ? { description } : {}), ...(examples ? { examples: examples.map((e) => JSON.stringify(e)) } : {}),
      };
    }

    override _setObjectProperties(schema: JsonSchema, spec: Describe, definitions: object, level: number): void {
      super._setObjectProperties(schema, spec, definitions, level);
      if (schema.type !== 'object') return;
      // `.min(n)` / `.max(n)` / `.length(n)` on an object count its keys; the converter dropped them.
      for (const rule of (spec.rules ?? []) as { name: string; args?: { limit?: number } }[]) {
        const limit = rule.args?.limit;
        if (typeof limit !== 'number') continue;
        if (rule.name === 'min' || rule.name === 'length') schema.minProperties = limit;
        if (rule.name === 'max' || rule.name === 'length') schema.maxProperties = limit;
      }
      const keyed = (spec.patterns ?? []).filter((p) => p.schema && p.rule);
      if (keyed.length) {
        const [first] = keyed;
        schema.propertyNames = this.parse(first!.schema!, definitions, level + 1);
        schema.additionalProperties = this.parse(first!.rule!, definitions, level + 1);
        if (Object.keys(schema.properties as object).length === 0) delete schema.properties;
      } else if (spec.keys === undefined && !(spec.patterns ?? []).length && spec.flags?.unknown !== false) {
        delete schema.properties;
        schema.additionalProperties = true;
      }
    }

    /** A condition on a sibling (`ref`): the field keeps its own schema. */
    override _setConditionCompositionStyle(schema: JsonSchema, condition: Describe, definitions: object, level: number): JsonSchema {
      if (condition.ref) return schema;
      return super._setConditionCompositionStyle(schema, condition, definitions, level);
    }

    override _parseSwitchCondition(ifThenStyle: boolean, schema: JsonSchema, condition: Describe, definitions: object, level: number): void {
      if (condition.ref) return;
      super._parseSwitchCondition(ifThenStyle, schema, condition, definitions, level);
    }
  };
  return parserClass;
}

const ANY_TYPES = ['array', 'boolean', 'number', 'object', 'string', 'null'];

/** The types a schema allows, when it says them all (`type`, or an `anyOf` of schemas that do); otherwise undefined. */
function typesOf(schema: JsonSchema): string[] | undefined {
  if (typeof schema.type === 'string') return [schema.type];
  if (!Array.isArray(schema.anyOf)) return undefined;
  const each = (schema.anyOf as JsonSchema[]).map(typesOf);
  return each.every((t) => t !== undefined) ? each.flat() as string[] : undefined;
}

/** Repairs what is left after the parse: flags after a pattern, and "any of every type" written out in full. */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (node === null || typeof node !== 'object') return node;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) out[key] = key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'schemas'
    ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, tidy(v)]))
    : tidy(value);
  if (typeof out.pattern === 'string') out.pattern = out.pattern.replace(/\/[dgimsuvy]+$/, '');
  // Joi.alternatives().conditional(Joi.string(), { then, otherwise }) on the value's type alone: `if: {type}`, a `then`
  // of that type and an `else` of another is the same as `anyOf: [then, else]`, which tools (generated types, Redoc)
  // understand where they read if/then/else as "anything".
  const cond = out.if as JsonSchema | undefined;
  const then = out.then as JsonSchema | undefined;
  const otherwise = out.else as JsonSchema | undefined;
  const elseTypes = otherwise && typesOf(otherwise);
  if (cond && then && elseTypes && Object.keys(cond).every((k) => k === 'type' || k === 'items') && typeof cond.type === 'string'
    && then.type === cond.type && !elseTypes.includes(cond.type)) {
    delete out.if;
    delete out.then;
    delete out.else;
    out.anyOf = [then, otherwise];
  }
  if (Array.isArray(out.type) && ANY_TYPES.every((t) => (out.type as string[]).includes(t))) delete out.type;
  return out;
}

/**
 * The JSON Schema (OpenAPI 3.1) of a Joi schema. A Joi schema with an `.id()` becomes a `$ref` to
 * `#/components/schemas/<id>`, its schema put into `components` (when given: the document's `components.schemas`).
 */
export function jsonSchemaOf(schema: Joi.Schema, components: Record<string, unknown> = {}): JsonSchema {
  const definitions: Record<string, unknown> = {};
  const { schemas: _definitions, ...json } = new (heraldParser())().parse(schema.describe() as Describe, definitions);
  for (const [id, definition] of Object.entries(definitions)) components[id] = tidy(definition);
  return tidy(json) as JsonSchema;
}
