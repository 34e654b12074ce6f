// The SMTP thread of mail/transport.ts. Threads do not inherit a loader that Jest's transform gives the main thread:
// from the sources this bootstrap registers tsx (a no-op cost when the process already runs under tsx) and loads the
// thread's TypeScript; in scripts/run.cjs's compiled build the thread's JavaScript sits beside it.
const compiled = require('node:fs').existsSync(require('node:path').join(__dirname, 'smtpThread.js'));
if (!compiled) require('tsx/cjs/api').register();
require(compiled ? './smtpThread.js' : './smtpThread.ts');
