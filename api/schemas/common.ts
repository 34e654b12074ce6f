import Joi from 'joi';

/** An email address as Herald stores it: trimmed and lower-cased (RFC 5321 syntax, any TLD). */
export const emailSchema = Joi.string().trim().lowercase().max(254).email({ tlds: { allow: false } });

/**
 * Free-form contact data: keys merge into what is stored; a `null` value deletes its key.
 * Keys are bounded so a single request cannot bloat a row without limit.
 */
export const contactDataSchema = Joi.object().pattern(Joi.string().min(1).max(100), Joi.any()).max(200);

/** Text that ends up in a mail header (subject, display names): no CR or LF, which would inject headers. */
export const headerTextSchema = Joi.string().pattern(/^[^\r\n]*$/, 'a single line').messages({
  'string.pattern.name': '{{#label}} must not contain line breaks (CR or LF)',
});
