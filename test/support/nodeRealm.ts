import vm from 'node:vm';

/**
 * Node's own objects, beneath what Jest hands a test file. A test file's `process` is Jest's copy (an event emitter of
 * its own that never hears Node's warnings) and its `module` and `require` are Jest's (a registry per file); code in
 * Node's main context still reaches the real ones.
 */
export const realProcess = vm.runInThisContext('process') as NodeJS.Process;

/** Node's require, resolving from `from`: its modules are loaded once per Jest worker and shared by all its files. */
export const nodeRequire = (from: string): NodeJS.Require =>
  (realProcess.mainModule!.constructor as unknown as { createRequire(from: string): NodeJS.Require }).createRequire(from);
