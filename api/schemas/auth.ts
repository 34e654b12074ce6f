import Joi from 'joi';
import { MAX_PASSWORD_LENGTH } from '../../people/passwords';

/** POST /auth/login. The address is matched lower-cased (people/users.ts); any length of password up to the cap is checked. */
export interface LoginBody {
  email: string;
  password: string;
}

export const loginSchema = Joi.object<LoginBody, true>({
  // Not the strict address rule: a malformed address is one more wrong login (the same 401), not a hint.
  email: Joi.string().trim().min(1).max(254).required().example('ada@example.com'),
  password: Joi.string().min(1).max(MAX_PASSWORD_LENGTH).required().example('correct horse battery staple'),
});

const code = Joi.string().trim().example('492039').pattern(/^\d{6}$/).messages({ 'string.pattern.base': '{#label} must be the 6 digits of the authenticator app' });
const token = Joi.string().example('q3G8vN0tXb2kR7yPz5LwC1dM9hJ4sF6aE8uT0iO2nYc').pattern(/^[A-Za-z0-9_-]{43}$/).messages({ 'string.pattern.base': '{#label} must be the challenge answered by POST /auth/login' });

/** POST /auth/login/two-factor: the challenge of the password step with a code of the app, or a recovery code. */
export interface TwoFactorLoginBody {
  challenge: string;
  code?: string;
  recoveryCode?: string;
}

export const twoFactorLoginSchema = Joi.object<TwoFactorLoginBody, true>({
  challenge: token.required(),
  code,
  recoveryCode: Joi.string().trim().min(1).max(64),
}).xor('code', 'recoveryCode').example({ challenge: 'q3G8vN0tXb2kR7yPz5LwC1dM9hJ4sF6aE8uT0iO2nYc', code: '492039' });

/** POST /auth/two-factor/confirm. */
export interface TwoFactorConfirmBody { code: string }

export const twoFactorConfirmSchema = Joi.object<TwoFactorConfirmBody, true>({ code: code.required() });

/** DELETE /auth/two-factor: proven by the password or a current code. */
export interface TwoFactorDisableBody {
  password?: string;
  code?: string;
}

export const twoFactorDisableSchema = Joi.object<TwoFactorDisableBody, true>({
  password: Joi.string().min(1).max(MAX_PASSWORD_LENGTH),
  code,
}).xor('password', 'code').example({ code: '492039' });
