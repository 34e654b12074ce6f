import Joi from 'joi';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../people/passwords';
import { ROLES, type Role } from '../../projects/roles';
import { emailSchema } from './common';

/** Members, invitations, password resets and first-start setup (people/). */

export const roleSchema = Joi.string().valid(...ROLES).example('member').description('owner, admin, member or viewer (projects/roles.ts).');
/** A link's token (43 base64url characters); any other string is refused as an unusable link would be. */
const tokenSchema = Joi.string().example('0197a2f1.3kTz8QpW1vYc6NbR2mXe9LdA4sHf7JgU5oKi0PqZt').max(200).description('The token from the link (after `#token=`).');
const passwordSchema = Joi.string().example('correct horse battery staple').min(MIN_PASSWORD_LENGTH).max(MAX_PASSWORD_LENGTH)
  .description(`At least ${MIN_PASSWORD_LENGTH} characters; no other rule (NIST SP 800-63B).`);
const nameSchema = Joi.string().trim().min(1).max(200).example('Grace Hopper');

export interface ChangeRoleBody { role: Role }
export const changeRoleSchema = Joi.object<ChangeRoleBody, true>({ role: roleSchema.required() });

export interface InviteBody { email: string; role: Role }
export const inviteSchema = Joi.object<InviteBody, true>({ email: emailSchema.required(), role: roleSchema.required() });

export interface AcceptBody { token: string; name: string; password: string }
export const acceptSchema = Joi.object<AcceptBody, true>({
  token: tokenSchema.required(),
  name: nameSchema.required().description("The new account's name (kept as it is when the address has an account)."),
  password: passwordSchema.required().description("The new account's password, or the existing account's."),
});

export interface ResetRequestBody { email: string }
export const resetRequestSchema = Joi.object<ResetRequestBody, true>({ email: emailSchema.required() });

export interface ResetConfirmBody { token: string; password: string }
export const resetConfirmSchema = Joi.object<ResetConfirmBody, true>({ token: tokenSchema.required(), password: passwordSchema.required() });

export interface SetupBody { token: string; email: string; name: string; password: string }
export const setupSchema = Joi.object<SetupBody, true>({
  token: tokenSchema.required(), email: emailSchema.required(), name: nameSchema.required(), password: passwordSchema.required(),
});
