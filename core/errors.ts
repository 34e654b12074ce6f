/**
 * The business's errors, whichever way in asked (HTTP, an engine's activity, later SMTP): neutral of transport. The
 * API maps them to its envelope (api/middleware/errorHandler.ts); an activity reads them as a step's failure.
 */

/** One field-level problem of a request (spec section 7: `errors[]`). */
export interface FieldError {
  field: string;
  message: string;
  code: string;
}

/**
 * What kind of refusal: the request's values, something it names that is not there, the state it meets, or a caller
 * who may run the operation but not with these values (a role above their own: people/members.ts).
 */
export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'forbidden' | 'too_large' | 'unsupported_media';

export class DomainError extends Error {
  constructor(readonly kind: DomainErrorKind, message: string, readonly details: { errors?: FieldError[]; suggestion?: string } = {}) {
    super(message);
    this.name = 'DomainError';
  }
}

/** A request whose values the business refuses: every offending field, and a hint when there is one. */
export const invalid = (errors: FieldError[], suggestion?: string) =>
  new DomainError('invalid', errors.length === 1 ? errors[0]!.message : `${errors.length} fields are invalid`, { errors, suggestion });

/** Something the request names (in its path or its body) is not in the caller's project: a foreign id is not found. */
export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);

/** The request meets a state that refuses it (a campaign already sent, a segment still in use…). */
export const conflict = (message: string, suggestion?: string) => new DomainError('conflict', message, { suggestion });

/** An upload over its limit (a contact import's file): refused with nothing stored. */
export const tooLarge = (message: string, suggestion?: string) => new DomainError('too_large', message, { suggestion });

/** An upload in a format the operation does not read (a contact import that is neither CSV nor JSON Lines). */
export const unsupportedMedia = (message: string, suggestion?: string) => new DomainError('unsupported_media', message, { suggestion });

/** The caller may not do this with these values (grant a role above their own, say). */
export const refused = (message: string, suggestion?: string) => new DomainError('forbidden', message, { suggestion });

/**
 * An audience condition that cannot be compiled (audience/compile.ts): a stored row the rules no longer accept (a
 * field, operator or value refused since, a shape that is not a condition), a segment it names that is gone, or
 * segments nested in a loop. Compiling it again can never succeed: callers treat it as a permanent failure (a 422, a
 * row flagged in a list, a FAILED campaign). Here, below the audience, so that the engines' reading of permanent
 * failures (engine/permanent.ts) needs no business module.
 */
export class AudienceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AudienceError';
  }
}
