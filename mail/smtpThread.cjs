// The SMTP thread of mail/transport.ts. Threads do not inherit a loader that Jest's transform gives the main thread,
// so this bootstrap registers tsx (a no-op cost when the process already runs under tsx) and loads the thread's code.
require('tsx/cjs/api').register();
require('./smtpThread.ts');
