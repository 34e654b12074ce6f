// The SMTP thread of mail/transport.ts: the thread's code, loaded as this process can (core/requireSource.cjs).
require('../core/requireSource.cjs')(__dirname, 'smtpThread');
