import path from 'node:path';

/**
 * Whether this process runs Herald compiled to JavaScript (scripts/run.cjs's build: `npm start`, `npm run worker`, the
 * image) rather than its TypeScript sources (tsx, Jest's transform). Code that starts a thread or a process on one of
 * Herald's own modules names the module's file as this process loads it, and only the sources need tsx registered.
 */
export const COMPILED = __filename.endsWith('.js');

/** `dir/name.js` in a compiled process, `dir/name.ts` from the sources. */
export function moduleFile(dir: string, name: string): string {
  return path.join(dir, `${name}${COMPILED ? '.js' : '.ts'}`);
}
