/**
 * The example of a request body or an answer, composed from its JSON Schema (as api/openapi/jsonSchema.ts wrote it
 * from Joi): the schema's own example (Joi `.example()`, `examples[0]` in JSON Schema) when it has one, else its
 * `const`, first `enum` value or default, else its parts put together: an object of its properties' examples, an array
 * of one item, the first alternative of an `anyOf` that has one. The document gives every request body and JSON answer
 * the example composed here (api/openapi/document.ts), so that the reference shows what a person would send and see
 * rather than the `"string"` placeholders Redoc would make up.
 *
 * A boolean without one is `true`, a value that may be null and has none is `null`. An object's required properties
 * must all have one; an optional property is shown when it has one, unless it is
 * marked `x-herald-example: false` (keys that appear only in some answers: the reason of a SUPPRESSED recipient).
 * What has none is listed in `missing`, by its path (`data.emails[].status`): test/api/openapi.test.ts names those
 * fields, so that whoever adds a route knows which `.example()` to write.
 */

type Json = Record<string, unknown>;

export interface Composed {
  value?: unknown;
  /** The paths of the required values that have no example (empty when `value` is whole). */
  missing: string[];
}

const own = (schema: Json): { found: boolean; value?: unknown } => {
  if (Array.isArray(schema.examples) && schema.examples.length) return { found: true, value: schema.examples[0] };
  if ('example' in schema) return { found: true, value: schema.example };
  if ('const' in schema) return { found: true, value: schema.const };
  if (Array.isArray(schema.enum) && schema.enum.length) return { found: true, value: schema.enum.find((v) => v !== null) ?? schema.enum[0] };
  if ('default' in schema) return { found: true, value: schema.default };
  return { found: false };
};

function resolve(schema: Json, components: Json): Json {
  let at = schema;
  for (let hops = 0; typeof at.$ref === 'string' && hops < 10; hops++) {
    const name = at.$ref.replace('#/components/schemas/', '');
    at = (components[name] ?? {}) as Json;
  }
  return at;
}

function compose(given: Json, components: Json, path: string): Composed {
  const schema = resolve(given, components);
  const mine = own(schema);
  if (mine.found) return { value: mine.value, missing: [] };
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (Array.isArray(alternatives)) {
    const each = alternatives.map((alt) => compose(alt, components, path));
    const whole = each.find((c) => c.missing.length === 0);
    return whole ?? { missing: each[0]?.missing ?? [path || '(the value)'] };
  }
  if (schema.type === 'null') return { value: null, missing: [] };
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : schema.type;
  if (type === 'array') {
    if (!schema.items) return { value: [], missing: [] };
    const item = compose(schema.items as Json, components, `${path}[]`);
    return item.missing.length ? item : { value: [item.value], missing: [] };
  }
  if (type === 'object' || schema.properties) {
    const properties = (schema.properties ?? {}) as Record<string, Json>;
    const required = new Set((schema.required ?? []) as string[]);
    const value: Json = {};
    const missing: string[] = [];
    for (const [key, property] of Object.entries(properties)) {
      const at = path ? `${path}.${key}` : key;
      if (!required.has(key) && resolve(property, components)['x-herald-example'] === false) continue;
      const part = compose(property, components, at);
      if (part.missing.length) {
        if (required.has(key)) missing.push(...part.missing);
      } else value[key] = part.value;
    }
    if (!Object.keys(properties).length && schema.additionalProperties !== false && !required.size) return { value: {}, missing: [] };
    return missing.length ? { missing } : { value, missing };
  }
  if (type === 'boolean') return { value: true, missing: [] };
  // A value that may be null and has no example of its own: null is what a person would see (no error, not yet sent).
  if (Array.isArray(schema.type) && schema.type.includes('null')) return { value: null, missing: [] };
  return { missing: [path || '(the value)'] };
}

/** The example of a schema of the document (its `$ref`s resolved in `components`, the document's `components.schemas`). */
export function exampleOf(schema: Json, components: Json): Composed {
  return compose(schema, components, '');
}
