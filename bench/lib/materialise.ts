/**
 * A campaign's materialisation as bench/campaign.ts and bench/abCampaign.ts time it: the campaign workflow itself
 * (workflows/sendCampaign.ts) in this process, with a plain context whose activities are Herald's campaign activities
 * (campaigns/batches.ts), continue-as-new as the workflow does, an engine that starts nothing (the embedded one delivers
 * committed rows; nothing to start); the clock stops when the workflow first asks for the progress of its last part.
 * An A/B campaign's test runs whole except its wait: the sample's batches, the drain (nothing pending: no worker
 * runs), the wait (over at once), the decision (the real activity) and the rest's batches.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { campaignBatches } from '../../campaigns/batches';
import type { WorkflowContext } from '../../workflows/context';
import { sendCampaign } from '../../workflows/sendCampaign';
import type { SendCampaignInput } from '../../workflows/types';
import type { BenchCluster } from './cluster';
import { EMAIL_HTML } from './herald';
import { cpuMs, sleep } from './proc';

const SENDER = { from_email: 'news@example.com', from_name: 'Bench News', reply_to: 'reply@example.com' };
/** The campaign body: the 0.5 KB HTML of the other benchmarks, with the contact's name (rendered per recipient at delivery). */
export const BODY = EMAIL_HTML.replace('Hello Ada', 'Hello {{ contact.data.firstName }}');

/** An A/B campaign's test, as the bench sets it: its variants (each a subject of its own) and its sample's share. */
export interface BenchAbTest {
  variants: number;
  samplePercent: number;
}

/** Time spent per kind of statement, from knex's query / query-response events (wall time, client side). */
export function statementTimer(knex: Knex) {
  const open = new Map<string, { at: number; kind: string }>();
  const totals = new Map<string, { ms: number; n: number }>();
  const kindOf = (sql: string) => {
    const s = sql.trim().toLowerCase();
    if (s.startsWith('with batch')) return 'INSERT … SELECT of the batch (CTE)';
    if (s.includes('from "campaigns"') && s.includes('for share')) return 'campaign row lock (SELECT … FOR SHARE)';
    if (s.startsWith('begin') || s.startsWith('commit') || s.startsWith('rollback')) return 'BEGIN / COMMIT';
    return 'other (beginCampaign, finishCampaign)';
  };
  const onQuery = (q: { __knexQueryUid?: string; sql: string }) => { if (q.__knexQueryUid) open.set(q.__knexQueryUid, { at: performance.now(), kind: kindOf(q.sql) }); };
  const onDone = (_r: unknown, q: { __knexQueryUid?: string }) => {
    const o = q.__knexQueryUid ? open.get(q.__knexQueryUid) : undefined;
    if (!o) return;
    open.delete(q.__knexQueryUid!);
    const t = totals.get(o.kind) ?? { ms: 0, n: 0 };
    t.ms += performance.now() - o.at;
    t.n++;
    totals.set(o.kind, t);
  };
  return {
    start() { totals.clear(); open.clear(); knex.on('query', onQuery); knex.on('query-response', onDone); },
    stop() { knex.off('query', onQuery); knex.off('query-response', onDone); return new Map(totals); },
  };
}

export async function newCampaign(knex: Knex, projectId: string, name: string, status: string, ab?: BenchAbTest): Promise<string> {
  const [row] = await knex('campaigns').insert({
    project_id: projectId, name, subject: 'News for {{ contact.data.firstName }}', body: BODY, audience_type: 'ALL', status, ...SENDER,
    ...(ab ? { ab_sample_percent: ab.samplePercent, ab_wait_minutes: 60, ab_metric: 'opens' } : {}),
  }).returning('id');
  const id = (row as { id: string }).id;
  if (ab) {
    await knex('campaign_variants').insert(Array.from({ length: ab.variants }, (_, position) => ({
      project_id: projectId, campaign_id: id, position, subject: `Variant ${position} for {{ contact.data.firstName }}`,
    })));
  }
  return id;
}

/** Deletes a run's rows and vacuums, so that every run starts from the same empty table. */
export async function cleanEmails(knex: Knex, campaignId: string): Promise<void> {
  await knex('emails').where('campaign_id', campaignId).delete();
  await knex('events').whereRaw("data->>'campaignId' = ?", [campaignId]).delete(); // an A/B campaign's campaign.winner
  for (const table of ['campaign_stats', 'campaign_variant_stats']) await knex(table).where('campaign_id', campaignId).delete();
  await knex('campaigns').where('id', campaignId).delete();
  await knex.raw('VACUUM ANALYZE emails');
  await knex.raw('CHECKPOINT');
}

export async function countRows(knex: Knex, campaignId: string): Promise<number> {
  return Number(((await knex('emails').where('campaign_id', campaignId).count('* as n').first()) as { n: string }).n);
}

export interface HeraldRun { ms: number; batches: number; runs: number; rows: number; sample: number; statements: Map<string, { ms: number; n: number }>; pgCpuMs: number; selfCpuMs: number }

/** The campaign workflow with Herald's campaign activities and a clock that stops at the first progress check. */
export async function heraldMaterialise(cluster: BenchCluster, projectId: string, name: string, ab?: BenchAbTest): Promise<HeraldRun> {
  const { knex } = cluster;
  const campaignId = await newCampaign(knex, projectId, name, 'SCHEDULED', ab);
  // A secret of its own: the bench's project has no erased addresses, so no hash is ever compared.
  const acts = campaignBatches({ knex, secret: randomBytes(32) });
  let batches = 0;
  let runs = 0;
  let doneAt = 0;
  let progressLooks = 0;
  const ctx: WorkflowContext = {
    activities: {
      ...({} as WorkflowContext['activities']), // only the campaign activities take part here
      ...acts,
      beginCampaign: (ref) => { runs++; return acts.beginCampaign(ref); },
      campaignBatch: (ref) => { batches++; return acts.campaignBatch(ref); },
      // An A/B campaign's first look is at its sample (before the wait): the clock stops at its rest's.
      campaignProgress: async () => { if (++progressLooks === (ab ? 2 : 1)) doneAt = performance.now(); return { pending: 0, cancelled: false }; },
      testWait: async () => ({ state: 'READY' }),
    },
    continueAsNewSuggested: () => false,
    patched: () => true,
    webhooks: { callWebhook: () => Promise.reject(new Error('no webhooks here')) },
    receive: () => Promise.reject(new Error('no messages here')),
    sleep: async (ms) => { await sleep(ms); },
    now: async () => Date.now(),
    isCancellation: () => false,
    nonCancellable: (fn) => fn(),
    continueAsNew: (_w, input) => sendCampaign(ctx, input as SendCampaignInput) as Promise<never>,
  };
  const timer = statementTimer(knex);
  const pgBefore = cpuMs(cluster.postmasterPid(), true);
  const selfBefore = cpuMs(process.pid);
  timer.start();
  const t0 = performance.now();
  const phase = await sendCampaign(ctx, { projectId, campaignId, ...(ab ? { test: 'sample' as const } : {}) });
  const statements = timer.stop();
  const ms = doneAt - t0;
  const pgCpuMs = cpuMs(cluster.postmasterPid(), true) - pgBefore;
  const selfCpuMs = cpuMs(process.pid) - selfBefore;
  if (phase !== 'SENT') throw new Error(`the campaign workflow ended ${phase}`);
  const rows = await countRows(knex, campaignId);
  const sample = ab ? Number(((await knex('emails').where('campaign_id', campaignId).whereNotNull('variant').count('* as n').first()) as { n: string }).n) : 0;
  await cleanEmails(knex, campaignId);
  return { ms, batches, runs, rows, sample, statements, pgCpuMs, selfCpuMs };
}

