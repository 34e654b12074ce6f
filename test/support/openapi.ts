import { dirname } from 'node:path';
import type { Response } from 'supertest';

/**
 * Checks real answers against the OpenAPI document's response schemas, with Ajv's JSON Schema 2020-12 validator (the
 * dialect of OpenAPI 3.1). The project has no Ajv 8 of its own: the one objection depends on is used (node_modules/ajv
 * at the top is eslint's Ajv 6, which knows no 2020-12).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Ajv2020 = require(require.resolve('ajv/dist/2020', { paths: [dirname(require.resolve('objection'))] })).default as new (opts: object) => AjvLike;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const addFormats = require('ajv-formats') as (ajv: AjvLike) => void;

interface AjvLike {
  addSchema(schema: object, key: string): void;
  compile(schema: object): ((data: unknown) => boolean) & { errors?: unknown[] | null };
}

type Json = Record<string, unknown>;

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export interface AnswerChecker {
  /** Throws (with the schema's complaints) unless the answer's status, content type and body are those the document gives the operation. */
  check(method: string, path: string, res: Response): void;
  /** Throws unless the body matches the operation's request body schema (a body Herald accepts must be one the document allows). */
  checkRequest(method: string, path: string, body: unknown): void;
  /** Throws unless `value` matches the schema at the document's JSON pointer `at` (`#/paths/…/schema`), naming `what`. */
  checkValue(at: string, value: unknown, what: string): void;
  /** The operations whose answers were checked, `METHOD path status`. */
  checked: Set<string>;
}

/** A JSON pointer into the document, from its parts. */
export const pointerOf = (...parts: string[]) => `#/${pointer(...parts)}`;

export function answerChecker(document: Json): AnswerChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, 'herald');
  const checked = new Set<string>();
  return {
    checked,
    checkValue(at, value, what) {
      const validate = ajv.compile({ $ref: `herald${at}` });
      if (!validate(value)) throw new Error(`${what} does not match its schema (${at}): ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(value)}`);
    },
    checkRequest(method, path, body) {
      const where = `herald#/paths/${pointer(path, method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema')}`;
      const validate = ajv.compile({ $ref: where });
      if (!validate(body)) throw new Error(`${method} ${path}: the document refuses a body Herald accepts: ${JSON.stringify(validate.errors, null, 1)}`);
    },
    check(method, path, res) {
      const op = ((document.paths as Json)[path] as Json | undefined)?.[method.toLowerCase()] as Json | undefined;
      if (!op) throw new Error(`the document has no ${method} ${path}`);
      let response = (op.responses as Json)[String(res.status)] as Json | undefined;
      if (!response) throw new Error(`${method} ${path} answered ${res.status}, which the document does not list: ${JSON.stringify(res.body)}`);
      let where = `herald#/paths/${pointer(path, method.toLowerCase(), 'responses', String(res.status))}`;
      if (typeof response.$ref === 'string') {
        where = `herald${response.$ref}`;
        response = ((document.components as Json).responses as Json)[response.$ref.split('/').pop()!] as Json;
      }
      // Headers the document says are always there (X-Request-Id; the rate limit's on authenticated routes).
      for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
        const defined = typeof header.$ref === 'string' ? ((document.components as Json).headers as Json)[header.$ref.split('/').pop()!] as Json : header;
        if (defined.required && res.headers[name.toLowerCase()] === undefined) throw new Error(`${method} ${path} ${res.status} lacks the header ${name}`);
      }
      const content = response.content as Json | undefined;
      const type = (res.headers['content-type'] ?? '').split(';')[0]!.trim();
      if (!content) {
        if (res.text) throw new Error(`${method} ${path} ${res.status} has a body, the document none`);
      } else {
        if (!content[type]) throw new Error(`${method} ${path} ${res.status} answered ${type}; the document says ${Object.keys(content).join(', ')}`);
        if (type === 'application/json') {
          const validate = ajv.compile({ $ref: `${where}/content/${pointer('application/json')}/schema` });
          if (!validate(res.body)) throw new Error(`${method} ${path} ${res.status} does not match its schema: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(res.body)}`);
        }
      }
      checked.add(`${method.toUpperCase()} ${path} ${res.status}`);
    },
  };
}
