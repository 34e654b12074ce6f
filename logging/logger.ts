import pino from 'pino';

export type Logger = pino.Logger;

/**
 * One structured JSON logger for the whole process. Redaction is a second line of defence: request
 * logs never include bodies or headers in the first place, but a stray `log.info({ req })` must not
 * leak an API key or an SMTP password either.
 * `to`: a file descriptor (1, or 2 written synchronously), or a stream of the caller's (the CLI's injected stderr).
 */
export function createLogger(level: string, name = 'herald', to: 1 | 2 | pino.DestinationStream = 1): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: [
        'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
        'password', '*.password', 'secretKey', '*.secretKey', 'apiKey', '*.apiKey',
        'databaseUrl', '*.databaseUrl', 'databaseSessionUrl', '*.databaseSessionUrl', 'smtpUrl', '*.smtpUrl',
        // People's sessions and links (issue 27): the cookie, its token, and the tokens of invitations and resets.
        'cookie', '*.cookie', 'headers.cookie', '*.headers.cookie', '["set-cookie"]', '*["set-cookie"]', 'token', '*.token', 'sessionToken', '*.sessionToken',
      ],
      censor: '[redacted]',
    },
  }, typeof to === 'number' ? pino.destination({ fd: to, sync: to === 2 }) : to);
}
