import { listen, notifier } from '../../db/notifications';
import { createLogger } from '../../logging/logger';
import { createMailer, type Mailer } from '../../mail/transport';
import { emailsQueued } from '../../metrics/queued';
import { createProject } from '../../projects/service';
import { createDeliverer } from '../../sending/delivery';
import { startDeliveryQueue, type DeliveryQueue } from '../../worker/deliveryQueue';
import { EMAILS_QUEUED_CHANNEL, startEmailNews } from '../../worker/emailNews';
import { TEST_SECRET } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/processes';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * News of committed emails between processes (worker/emailNews.ts) against a real PostgreSQL: what a process commits
 * is announced with NOTIFY, another process's idle delivery loop hears it and looks at once, and a process does not
 * take its own announcements for news. Two "processes" here are two sets of connections of this one.
 */
let smtp: TestSmtpServer;
let db: TestDatabase;
let mailer: Mailer;
let projectId: string;
const log = createLogger('silent');
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  db = await createTestDatabase();
  mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
  projectId = (await createProject('news')).id;
});
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});
afterAll(async () => {
  mailer.close();
  await db.close();
  await smtp.close();
});

/** A listener of its own: how many announcements another process would hear, and from whom. */
async function hearing(): Promise<string[]> {
  const heard: string[] = [];
  const l = await listen(db.url, [EMAILS_QUEUED_CHANNEL], log, (_channel, from) => heard.push(from));
  stops.push(() => l.stop());
  return heard;
}

test('an idle delivery loop that looks by itself once a minute sends another process\'s email as soon as it is announced', async () => {
  const deliverer = createDeliverer({ knex: db.knex, mailer, log, secret: TEST_SECRET, publicUrl: 'http://herald.test' });
  const queue: DeliveryQueue = startDeliveryQueue({ knex: db.knex, log, deliverer, ratePerSecond: 1000, executorId: 'news-worker', idlePollMs: 60_000 });
  stops.push(() => queue.stop());
  const news = await startEmailNews({ databaseUrl: db.url, log, heard: () => queue.heard() });
  stops.push(() => news.stop());
  // The loop has looked once at start, found nothing and naps its minute.
  await new Promise((r) => setTimeout(r, 500));

  // Another process stores an email (as the API does) and announces it.
  const [contact] = await db.knex('contacts').insert({ project_id: projectId, email: 'news@example.org' }).returning('id');
  await db.knex('emails').insert({ project_id: projectId, contact_id: contact.id, from_email: 'hi@example.com', to_email: 'news@example.org', subject: 'news', html: '<p>hi</p>' });
  await new Promise((r) => setTimeout(r, 300));
  expect(smtp.received.filter((m) => m.envelopeTo[0] === 'news@example.org')).toHaveLength(0);
  const other = notifier(db.url, log);
  stops.push(() => other.close());
  const announcedAt = performance.now();
  await other.notify(EMAILS_QUEUED_CHANNEL, 'another-process');

  const [mail] = await waitFor('the announced email', () => {
    const got = smtp.received.filter((m) => m.envelopeTo[0] === 'news@example.org');
    return got.length ? got : undefined;
  }, 10_000, 10);
  // Well before the loop's own next look, a minute after its last.
  expect(mail!.at - announcedAt).toBeLessThan(5_000);
});

test('what a process commits is announced to the others, not to itself; a burst is one or two announcements', async () => {
  const others = await hearing();
  const heardByItself: number[] = [];
  const news = await startEmailNews({ databaseUrl: db.url, log, heard: () => heardByItself.push(1) });
  stops.push(() => news.stop());

  emailsQueued('http', 1);
  await waitFor('the announcement', () => (others.length === 1 ? true : undefined), 5_000, 10);
  // A hundred commits at once, as a loaded API makes them: announced once at once and once more after the spacing.
  for (let i = 0; i < 100; i++) emailsQueued('http', 1);
  await new Promise((r) => setTimeout(r, 500));
  expect(others.length).toBeGreaterThanOrEqual(2);
  expect(others.length).toBeLessThanOrEqual(3);
  // Every announcement came from this process (one id), and it heard none of its own.
  expect(new Set(others).size).toBe(1);
  expect(heardByItself).toHaveLength(0);
});

test('a stopped announcer is silent', async () => {
  const others = await hearing();
  const news = await startEmailNews({ databaseUrl: db.url, log });
  await news.stop();
  emailsQueued('http', 1);
  await new Promise((r) => setTimeout(r, 300));
  expect(others).toHaveLength(0);
});
