import Joi from 'joi';
import { MAX_PASSWORD_LENGTH } from '../../people/passwords';

/** POST /auth/login. The address is matched lower-cased (people/users.ts); any length of password up to the cap is checked. */
export interface LoginBody {
  email: string;
  password: string;
}

export const loginSchema = Joi.object<LoginBody, true>({
  // Not the strict address rule: a malformed address is one more wrong login (the same 401), not a hint.
  email: Joi.string().trim().min(1).max(254).required(),
  password: Joi.string().min(1).max(MAX_PASSWORD_LENGTH).required(),
});
