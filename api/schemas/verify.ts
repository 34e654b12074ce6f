import Joi from 'joi';

export interface VerifyBody {
  email: string;
}

/**
 * Only the type is checked here: a malformed address is an answer of POST /v1/verify (valid: false, with the reason),
 * not a request error. The length bound keeps the parser's work small.
 */
export const verifyBodySchema = Joi.object<VerifyBody, true>({
  email: Joi.string().max(1000).required().example('ada@gmial.com'),
});
