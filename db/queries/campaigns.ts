import type { Knex } from 'knex';

export interface CampaignStats {
  totalRecipients: number;
  queued: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  unsubscribed: number;
  openRate: number;
  clickRate: number;
}

/**
 * A campaign's stats in one statement: its email rows by status, and the distinct emails that have each kind of
 * event. Rates are of sent emails. Test copies are not counted.
 */
export async function campaignStats(db: Knex, projectId: string, campaignId: string): Promise<CampaignStats> {
  const { rows } = await db.raw(
    `WITH e AS (SELECT id, status FROM emails WHERE project_id = ?::uuid AND campaign_id = ?::uuid AND NOT is_test),
     ev AS (
       SELECT ev.name, count(DISTINCT ev.email_id)::int AS n
       FROM events ev JOIN e ON ev.email_id = e.id
       WHERE ev.project_id = ?::uuid AND ev.name IN ('email.delivered', 'email.opened', 'email.clicked', 'email.bounced', 'email.complained', 'contact.unsubscribed')
       GROUP BY ev.name)
     SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status IN ('QUEUED', 'SENDING'))::int AS queued,
            count(*) FILTER (WHERE status = 'SENT')::int AS sent,
            count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
            coalesce((SELECT json_object_agg(name, n) FROM ev), '{}'::json) AS events
     FROM e`,
    [projectId, campaignId, projectId],
  );
  const r = rows[0] as { total: number; queued: number; sent: number; failed: number; events: Record<string, number> };
  const ev = (name: string) => r.events[name] ?? 0;
  const rate = (n: number) => (r.sent > 0 ? Math.round((n / r.sent) * 10_000) / 10_000 : 0);
  return {
    totalRecipients: r.total, queued: r.queued, sent: r.sent, delivered: ev('email.delivered'), opened: ev('email.opened'),
    clicked: ev('email.clicked'), bounced: ev('email.bounced'), complained: ev('email.complained'), failed: r.failed,
    unsubscribed: ev('contact.unsubscribed'), openRate: rate(ev('email.opened')), clickRate: rate(ev('email.clicked')),
  };
}
