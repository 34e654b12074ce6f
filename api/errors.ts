import type { FieldError } from '../core/errors';
import type { Permission, Principal } from '../projects/roles';

export type { FieldError };

/**
 * An error the client caused or may act on. The error middleware renders it into the spec's envelope;
 * anything that is not an ApiError (or an HTTP error from Koa's stack) is a 500 with nothing internal shown.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: { errors?: FieldError[]; suggestion?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, errors?: FieldError[], suggestion?: string) =>
  new ApiError(400, 'BAD_REQUEST', message, { errors, suggestion });

export const unauthorized = (message: string, suggestion?: string) => new ApiError(401, 'UNAUTHORIZED', message, { suggestion });

export const forbidden = (message: string, suggestion?: string) => new ApiError(403, 'FORBIDDEN', message, { suggestion });

/** A caller without the permission an operation needs (api/routing.ts permit; a route's stricter option, as erase=true). */
export function forbiddenFor(principal: Principal, action: string, needs: Permission): ApiError {
  const who = principal.kind === 'key' ? `This API key (scope ${principal.scope})` : `Your role (${principal.role})`;
  return forbidden(`${who} may not ${action}: it needs the ${needs} permission`,
    principal.kind === 'key' ? 'Use a key with the full scope, or sign in as a member allowed to.' : 'Ask an admin of the project for a role that allows it.');
}

export const notFound = (what: string) => new ApiError(404, 'NOT_FOUND', `${what} not found`);

export const conflict = (message: string, suggestion?: string): ApiError => new ApiError(409, 'CONFLICT', message, { suggestion });

export const validationFailed = (errors: FieldError[], suggestion?: string) =>
  new ApiError(422, 'VALIDATION_ERROR', errors.length === 1 ? errors[0]!.message : `${errors.length} fields are invalid`, { errors, suggestion });
