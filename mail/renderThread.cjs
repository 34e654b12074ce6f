// A render thread of mail/renderPool.ts. Threads do not inherit a loader that Jest's transform gives the main thread:
// from the sources this bootstrap registers tsx (a no-op cost when the process already runs under tsx) and loads the
// renderer's TypeScript; in scripts/run.cjs's compiled build the renderer's JavaScript sits beside it.
const compiled = require('node:fs').existsSync(require('node:path').join(__dirname, 'render.js'));
if (!compiled) require('tsx/cjs/api').register();
const { renderJobs } = require(compiled ? './render.js' : './render.ts');

module.exports = renderJobs;
