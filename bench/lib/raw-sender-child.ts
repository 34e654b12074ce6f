/**
 * The raw side of bench/delivery.ts: the same stored emails, built into the same message fields as Herald's
 * (mail/message.ts: Message-ID from the email id, From with name, To, Subject, HTML body, stored headers) and sent
 * through the same pooled nodemailer transport (mail/transport.ts createMailer, 10 connections), with nothing else
 * around them: no workflow engine, no status updates, no events. All sends are handed to the pool at once.
 */
import type { SendMailOptions } from 'nodemailer';
import { createKnex } from '../../db/database';
import { createMailer } from '../../mail/transport';

interface Row { id: string; from_email: string; from_name: string | null; to_email: string; subject: string; html: string; headers: Record<string, string> }

/** BENCH_DKIM_SELECTOR + BENCH_DKIM_KEY: sign like Herald does (bench/delivery.ts with BENCH_DKIM=1). */
const dkim: SendMailOptions['dkim'] = process.env.BENCH_DKIM_KEY
  ? { domainName: 'example.com', keySelector: process.env.BENCH_DKIM_SELECTOR!, privateKey: process.env.BENCH_DKIM_KEY }
  : undefined;

function message(r: Row): SendMailOptions {
  return {
    ...(dkim ? { dkim } : {}),
    messageId: `<${r.id}@${r.from_email.slice(r.from_email.lastIndexOf('@') + 1)}>`,
    from: r.from_name ? { name: r.from_name, address: r.from_email } : r.from_email,
    to: r.to_email,
    subject: r.subject,
    html: r.html,
    headers: r.headers ?? {},
  };
}

async function main() {
  const knex = createKnex(process.env.DATABASE_URL!, { applicationName: 'herald-bench-raw' });
  const rows: Row[] = await knex('emails').where('status', 'QUEUED').orderBy('id').limit(Number(process.env.BENCH_COUNT))
    .select('id', 'from_email', 'from_name', 'to_email', 'subject', 'html', 'headers');
  const messages = rows.map(message);
  await knex.destroy();
  // Plain pooled nodemailer on this process's own thread: the floor (Herald's SMTP runs on a thread of its own).
  const mailer = createMailer({ smtpUrl: process.env.SMTP_URL!, dataDir: '/nonexistent' }, { thread: false });
  process.send!({ type: 'ready', count: messages.length });
  process.once('message', async () => {
    const started = performance.now();
    let failed = 0;
    await Promise.all(messages.map((m) => mailer.send(m).catch(() => { failed++; })));
    process.send!({ type: 'done', ms: performance.now() - started, failed });
    mailer.close();
  });
}

// An exit of its own (not the signal's default) writes the V8 profile of BENCH_CPU_PROF.
process.once('SIGTERM', () => process.exit(0));

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
