/**
 * What test/support/smtp.ts uses of `html-to-text` (mailparser's own HTML-to-text converter), which ships no type
 * declarations of its version 10.
 */
declare module 'html-to-text' {
  /** Compiles the options into a converter once; html-to-text's convert() does this on every call. */
  export function compile(options?: Record<string, unknown>): (html: string) => string;
}
