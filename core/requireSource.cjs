// Loads one of Herald's modules in a thread (mail/renderThread.cjs, mail/smtpThread.cjs, inbound/analysis.ts's
// analysis threads), which does not inherit the loader that tsx or Jest's transform gives the main thread: the module's
// JavaScript when it sits beside it (scripts/run.cjs's compiled build), else its TypeScript through tsx, registered
// first (a no-op cost when the process already runs under tsx).
const fs = require('node:fs');
const path = require('node:path');

module.exports = function requireSource(dir, name) {
  const compiled = path.join(dir, `${name}.js`);
  if (fs.existsSync(compiled)) return require(compiled);
  require('tsx/cjs/api').register();
  return require(path.join(dir, `${name}.ts`));
};
