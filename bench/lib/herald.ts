import path from 'node:path';
import { ensureDomainKey } from '../../domains/rows';
import { decryptPrivateKey } from '../../domains/dkim';
import { createProject, type CreatedProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import type { BenchCluster } from './cluster';
import { spawnChild, type Child } from './proc';

/** The environment of a Herald child process (bin/runtime.ts reads it like bin/api.ts and bin/worker.ts do). */
export function heraldEnv(cluster: BenchCluster, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: cluster.url,
    DATA_DIR: path.join(cluster.dataDir, 'herald'),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    SECRET_KEY: BENCH_SECRET,
    PUBLIC_URL: 'http://127.0.0.1:3000',
    ENGINE: 'embedded',
    // Several API children may run at once: none takes the fixed submission port unless the benchmark asks.
    SMTP_SUBMISSION_PORT: '0',
    SMTP_INBOUND_PORT: '0',
    // The domains' DNS re-check runs at each slot of its interval (default: on the hour), and its first look gives a
    // domain without a DKIM key one: an "unsigned" bench:delivery run that crossed 14:00 signed its mail from then on.
    // At its longest interval (a week), a run of minutes meets a slot about never.
    DOMAIN_CHECK_INTERVAL_MINUTES: String(7 * 24 * 60),
    ...extra,
  };
}

/**
 * Starts a Herald child: roles `api`, `worker` or `all`. `root`: another working tree (older code on the same
 * database, in the same run; its migrations must be the same).
 */
export function startHeraldChild(name: string, cluster: BenchCluster, roles: 'api' | 'worker' | 'all', env: Record<string, string>, nodeArgs: string[] = [], root?: string): Child {
  return spawnChild(name, 'bench/lib/herald-child.ts', heraldEnv(cluster, { BENCH_ROLES: roles, ...env }), nodeArgs, root);
}

/**
 * DBOS creates its schema (dbos.*) when a worker launches, not when a DBOSClient connects, so an API process on a
 * database where no worker ever ran cannot enqueue yet. Like a real deployment, run a worker once (then stop it).
 */
export async function prepareEngineSchema(cluster: BenchCluster, smtpUrl: string): Promise<void> {
  const w = startHeraldChild('herald worker (schema setup)', cluster, 'worker', { EXECUTOR_ID: 'bench-setup', SMTP_URL: smtpUrl });
  await w.ready;
  await w.stop();
}

export const BENCH_SECRET = 'bench-secret-bench-secret-bench-secret-0123';

/**
 * A project with a verified example.com. With `dkim`, the domain also gets its DKIM key (as `domain add --verified`
 * gives it), so that every message is signed; returns the key's PEM for the raw side of the delivery bench.
 */
export async function benchProject(cluster?: BenchCluster, options: { dkim?: boolean } = {}): Promise<CreatedProject & { dkim?: { selector: string; privateKey: string } }> {
  const project = await createProject('Bench');
  const added = (await addDomain(project.id, 'example.com', true))!;
  if (!options.dkim || !cluster) return project;
  const secret = Buffer.from(BENCH_SECRET, 'utf8');
  const domain = await ensureDomainKey(cluster.knex, secret, added);
  return { ...project, dkim: { selector: domain.dkimSelector!, privateKey: decryptPrivateKey(secret, project.id, 'example.com', domain.dkimPrivateKey!) } };
}

export const EMAIL_HTML = `<html><body><h1>Hello Ada</h1><p>Your order <b>#100042</b> has shipped and should arrive within three working days.</p>
<p>You can follow it at any time from your account page. If anything is wrong with it, reply to this email and we will sort it out.</p>
<p>Thank you for shopping with us.</p></body></html>`;

/** Queues `n` emails as POST /v1/send leaves them on the embedded engine: a contact and a QUEUED email row each, distinct recipients. */
export async function queueEmails(cluster: BenchCluster, projectId: string, n: number, tag: string): Promise<{ ids: string[]; enqueueMs: number }> {
  const { knex } = cluster;
  const started = performance.now();
  await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ?::uuid, ? || '-' || g || '@example.org', false, '{}'::jsonb FROM generate_series(1, ?::int) g`, [projectId, tag, n]);
  const rows: { id: string }[] = (await knex.raw(`INSERT INTO emails (project_id, contact_id, from_email, from_name, to_email, subject, html)
    SELECT c.project_id, c.id, 'orders@example.com', 'Bench Shop', c.email, 'Your order #100042 has shipped', ?
    FROM contacts c WHERE c.project_id = ?::uuid AND c.email LIKE ? ORDER BY c.id RETURNING id`, [EMAIL_HTML, projectId, `${tag}-%`])).rows;
  return { ids: rows.map((r) => r.id), enqueueMs: performance.now() - started };
}
