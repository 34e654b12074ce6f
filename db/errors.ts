/**
 * PostgreSQL's errors, as the callers of a failed statement need to tell them apart: a statement that fails because
 * of the values it carries fails the same way every time, and must not be retried as if the database were away.
 */

/**
 * The SQLSTATE of a failed statement (pg's `code`), or undefined for anything else. Objection wraps a failed query's
 * error (db-errors: DataError, ForeignKeyViolationError…) and keeps pg's on `nativeError`: read there too, or such an
 * error would be retried as if the database were away.
 */
export function sqlState(err: unknown): string | undefined {
  const e = err as { code?: unknown; nativeError?: { code?: unknown } } | null;
  const code = e?.code ?? e?.nativeError?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Class 22, "data exception": a value the statement computes with cannot be represented or converted (a date out of
 * range such as year 0, an invalid cast, U+0000 in text, a division by zero); and 54001, "statement too complex"
 * (JSON nested beyond the server's stack). Retrying the same statement gives the same error.
 */
export function isDataError(err: unknown): boolean {
  const code = sqlState(err);
  return code !== undefined && (code.startsWith('22') || code === '54001');
}

/**
 * The server's own message of a failed statement and its SQLSTATE, without what knex puts in front of it (the whole
 * statement with its bound values: project ids, email addresses), so that it can be shown to an API user or stored as
 * a reason: `date/time field value out of range: "0000-01-01T00:00:00Z" (SQLSTATE 22008)`.
 */
export function databaseMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = sqlState(err);
  if (!code) return message;
  // knex: `${statement} - ${message}`; PostgreSQL's own messages do not contain " - ".
  const at = message.lastIndexOf(' - ');
  return `${at >= 0 ? message.slice(at + 3) : message} (SQLSTATE ${code})`;
}
