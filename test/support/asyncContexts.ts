import asyncHooks from 'node:async_hooks';

/**
 * Disables, as a test file begins, the AsyncLocalStorage instances that the files before it created in this Jest
 * worker. Jest loads every module again for each test file but shares Node's core modules, and an enabled
 * AsyncLocalStorage stays in Node's list until it is disabled: the engine's (DBOS keeps two, in its context module)
 * piled up, one pair per file, and Node 20 visits every one of them for each promise the process creates. A whole run's
 * profile had 35 CPU-seconds of the Jest workers in that propagation (async_hooks `_propagate`); the files that came
 * late in a worker paid the most. A finished file's instances serve nothing: its engine was stopped in its afterAll.
 */
type Storage = asyncHooks.AsyncLocalStorage<unknown>;
const KEY = Symbol.for('herald.test.asyncLocalStorages');
const hooks = asyncHooks as typeof asyncHooks & { [KEY]?: Set<Storage> };

const live = hooks[KEY];
if (live) {
  for (const storage of live) storage.disable();
  live.clear();
} else {
  // Every instance made from now on in this worker (the module object is Node's own, shared by all files) is tracked.
  const tracked = new Set<Storage>();
  class Tracked<T> extends asyncHooks.AsyncLocalStorage<T> {
    constructor() {
      super();
      tracked.add(this as Storage);
    }
  }
  hooks.AsyncLocalStorage = Tracked;
  hooks[KEY] = tracked;
}
