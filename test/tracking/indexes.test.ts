import type { Knex } from 'knex';
import { campaignSeriesBindings, campaignSeriesSql } from '../../campaigns/series';
import { campaignStatsSql, STATS_LINKS } from '../../db/queries/campaigns';
import { backfillCampaignStats } from '../../db/migrations/20261206000010_campaign_outcomes';
import { createProject } from '../../projects/service';
import { HITS_SQL } from '../../tracking/record';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { partitionedPlan } from '../support/plans';

/**
 * The query paths of tracking are served by indexes, read from EXPLAIN of the very SQL the code runs, on enough rows
 * (20 projects, 100 campaigns, 100,000 emails, their sent, open and click events) that a sequential scan would lose.
 */
let db: TestDatabase;
let projectId: string;
let campaignId: string;
let emailIds: string[];

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 20; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  // 5 campaigns per project, interleaved as they would be sent.
  const { rows: campaigns } = await db.knex.raw(
    `INSERT INTO campaigns (project_id, name, subject, body, from_email, audience_type, status)
     SELECT (?::uuid[])[1 + g % 20], 'c' || g, 's', 'b', 'n@example.com', 'ALL', 'SENT' FROM generate_series(0, 99) g RETURNING project_id, id`, [projects]);
  campaignId = campaigns.find((c: { project_id: string }) => c.project_id === projectId).id;
  await db.knex.raw(
    `INSERT INTO emails (project_id, contact_id, campaign_id, from_email, to_email, status, track_opens, track_clicks, opens, clicks, first_opened_at)
     SELECT c.project_id, NULL, c.id, 'n@example.com', 'u' || g || '@example.org', 'SENT', true, true, g % 3, g % 5, CASE WHEN g % 3 > 0 THEN now() END
     FROM generate_series(0, 99999) g JOIN LATERAL (SELECT (?::jsonb -> (g % 100)) AS c) j ON true
     CROSS JOIN LATERAL (SELECT (j.c ->> 'project_id')::uuid AS project_id, (j.c ->> 'id')::uuid AS id) c`, [JSON.stringify(campaigns)]);
  await db.knex.raw(
    `INSERT INTO events (project_id, name, email_id, contact_id, data)
     SELECT e.project_id, n.name, e.id, e.contact_id, CASE WHEN n.name = 'email.clicked' THEN jsonb_build_object('url', 'https://x.example/' || (abs(hashtext(e.id::text)) % 7)) ELSE '{}'::jsonb END
     FROM emails e CROSS JOIN (VALUES ('email.sent'), ('email.opened'), ('email.clicked')) n(name)`);
  // The campaigns' kept results, as the writers would have left them (the rows above were written around them).
  await backfillCampaignStats(db.knex);
  // … and what months of campaigns leave: the other shards, 200 hours and 20 links of every campaign.
  const others = 'SELECT project_id, id, shard FROM campaigns CROSS JOIN generate_series(1, 7) shard';
  await db.knex.raw(`INSERT INTO campaign_stats (project_id, campaign_id, shard, total) SELECT k.project_id, k.id, k.shard, 1 FROM (${others}) k`);
  await db.knex.raw(`INSERT INTO campaign_hourly_stats (project_id, campaign_id, hour, shard, opened)
    SELECT k.project_id, k.id, date_trunc('hour', now()) - h * interval '1 hour', k.shard, 1
    FROM (${others}) k CROSS JOIN generate_series(1, 200) h`);
  await db.knex.raw(`INSERT INTO campaign_link_stats (project_id, campaign_id, url, shard, clicks)
    SELECT k.project_id, k.id, 'https://y.example/' || l, k.shard, 1
    FROM (${others}) k CROSS JOIN generate_series(1, 20) l`);
  await vacuumAnalyze(db.knex, ['emails', 'events', 'campaign_stats', 'campaign_hourly_stats', 'campaign_link_stats']);
  emailIds = (await db.knex('emails').where({ project_id: projectId }).limit(50).select('id')).map((r) => r.id);
}, 240_000); // the seeding: ~20 s alone, over 60 s on a machine at load 12
afterAll(async () => { await db.close(); });

async function plan(sql: string, bindings: unknown[]): Promise<string> {
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}

test('campaign stats read the campaign\'s kept results by their primary keys, never its emails or events', async () => {
  const p = await plan(campaignStatsSql, [projectId, campaignId, projectId, campaignId, projectId, campaignId, STATS_LINKS]);
  for (const index of ['campaign_stats_pkey', 'campaign_hourly_stats_pkey', 'campaign_link_stats_pkey']) expect(p).toContain(index);
  expect(p).not.toMatch(/Seq Scan| on emails| on events/);
});

test('a campaign\'s opens and clicks over time read its hours, not its emails or events', async () => {
  for (const interval of ['hour', 'day'] as const) {
    const p = await plan(campaignSeriesSql, campaignSeriesBindings(projectId, campaignId, interval));
    expect(p).toContain('campaign_hourly_stats_pkey');
    // (The campaign's own row is read too: 100 rows here, which the planner may scan whole; that is not a query path.)
    expect(p).not.toMatch(/Seq Scan on campaign_hourly_stats| on emails| on events/);
  }
});

test('recording a batch of opens and clicks finds the emails by their primary key', async () => {
  const p = await plan(HITS_SQL, [
    emailIds.map(() => projectId), emailIds, emailIds.map(() => 1), emailIds.map(() => true), emailIds.map(() => 0), emailIds.map(() => false), false, false,
    emailIds.map(() => projectId), emailIds, emailIds.map(() => 'email.opened'), emailIds.map(() => '{}'), emailIds.map(() => 'open:person:'), 60_000,
  ]);
  expect(p).toContain('emails_pkey');
  expect(p).not.toMatch(/Seq Scan on emails/);
  expect(p).toContain('tracking_event_windows'); // the window is part of the same statement
});

test('recording clicks of a campaign\'s emails looks up an earlier click of the same email by index, and never reads the events table whole', async () => {
  const p = await plan(HITS_SQL, [
    emailIds.map(() => projectId), emailIds, emailIds.map(() => 0), emailIds.map(() => false), emailIds.map(() => 1), emailIds.map(() => true), false, false,
    emailIds.map(() => projectId), emailIds, emailIds.map(() => 'email.clicked'), emailIds.map(() => '{"url":"https://x.example/1"}'),
    emailIds.map(() => 'click:person:https://x.example/1'), 60_000,
  ]);
  expect(p).toContain('campaign_link_stats');
  expect(p).toMatch(/events_clicks_idx|events_email_idx/);
  expect(p).not.toMatch(/Seq Scan on (emails|events)/);
});
