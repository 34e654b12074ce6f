import { randomUUID } from 'node:crypto';
import { listen, notifier } from '../db/notifications';
import type { Logger } from '../logging/logger';
import { onEmailsQueued } from '../metrics/queued';

/**
 * News of committed emails between processes. An API process stores a /v1/send's email and a worker's delivery loop
 * had to find it by looking at the queue every 100 ms: 10 statements a second from every idle worker (a third of its
 * idle statements, BENCHMARKS.md section 67), and up to 100 ms before a transactional email left. Now every process
 * that commits emails (metrics/queued.ts's news) announces it (`NOTIFY`), and every worker listens: the one idle loop
 * that hears it looks at once, and an idle loop looks by itself only every IDLE_POLL_WITH_NEWS_MS, for what no one
 * announces (retries and scheduled sends whose time has come, news lost with a dropped connection).
 */
export const EMAILS_QUEUED_CHANNEL = 'herald_emails_queued';

/** How often an idle delivery loop that hears the news looks by itself. */
export const IDLE_POLL_WITH_NEWS_MS = 1000;

/**
 * At most one announcement per this many milliseconds from a process: a loaded API commits a batch of sends every few
 * milliseconds, and the workers, busy then, need to hear only the first.
 */
const ANNOUNCE_SPACING_MS = 20;

/**
 * Announces this process's committed emails, and when `heard` is given (a worker: its delivery loop's), hands it the
 * other processes' announcements (its own are not news to it). On DATABASE_SESSION_URL: LISTEN hears nothing through a
 * transaction pooler.
 */
export async function startEmailNews(opts: { databaseUrl: string; log: Logger; heard?: () => void }): Promise<{ stop(): Promise<void> }> {
  const self = randomUUID();
  const out = notifier(opts.databaseUrl, opts.log);
  let stopped = false;
  let sending = false;
  let pending = false;
  let lastAt = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  const fire = async () => {
    timer = undefined;
    pending = false;
    sending = true;
    lastAt = performance.now();
    await out.notify(EMAILS_QUEUED_CHANNEL, self);
    sending = false;
    if (pending) announce();
  };
  const announce = () => {
    if (stopped) return;
    if (sending || timer) {
      pending = true;
      return;
    }
    const wait = lastAt + ANNOUNCE_SPACING_MS - performance.now();
    if (wait > 0) timer = setTimeout(() => { void fire(); }, wait);
    else void fire();
  };
  const stopHearing = onEmailsQueued(announce);
  const { heard } = opts;
  const listening = heard
    ? await listen(opts.databaseUrl, [EMAILS_QUEUED_CHANNEL], opts.log, (_channel, from) => { if (from !== self) heard(); })
      .catch(async (err: unknown) => { stopHearing(); await out.close(); throw err; })
    : undefined;
  return {
    async stop() {
      stopped = true;
      stopHearing();
      clearTimeout(timer);
      await listening?.stop();
      await out.close();
    },
  };
}
