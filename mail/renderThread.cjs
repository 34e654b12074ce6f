// A render thread of mail/renderPool.ts. Threads do not inherit a loader that Jest's transform gives the main thread,
// so this bootstrap registers tsx (a no-op cost when the process already runs under tsx) and loads the renderer.
require('tsx/cjs/api').register();
const { renderJobs } = require('./render.ts');

module.exports = renderJobs;
