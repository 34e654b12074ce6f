import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, call, type Schemas } from '../api';
import {
  Button, ConfirmDialog, EmptyState, formatDateTime, formatRelative, Icon, LinkButton, Loading, MessagePreview, Page, Progress, Time, toast,
} from '../components';
import { laterSaved, useLoad, useVisibleInterval } from '../hooks';
import { useSession } from '../session';
import { CampaignComposer } from './parts/CampaignComposer';
import { audienceWords, campaignContent, CampaignStatus, contacts, formatWhen, viewerZone, type Campaign } from './parts/campaigns';
import { usePreview } from './parts/templates';
import { percent, Stat } from './parts/stats';
import { VolumeChart } from './parts/VolumeChart';
import { NotLoaded } from './parts/NotLoaded';
import { AbTestReport } from './parts/abReport';
import { METRIC_WORDS, waitWords } from './parts/abWords';

/**
 * A campaign (issue 29): `/app/campaigns/new` and a DRAFT are its composer (parts/CampaignComposer.tsx) for those
 * who may write; anything else is its report. Scheduled: when, in the viewer's zone, and a cancel. Sending: its
 * progress (queued, sent, failed, bounced), asked again every few seconds while the page is visible and until it is
 * done. Sent (or stopped): GET /campaigns/:id/stats as numbers, its opens and clicks over time (`?series=hour|day`, a
 * uPlot chart), the clicks per link. "Open in Temporal UI" when the API gives the workflow's link (TEMPORAL_UI_URL).
 */
type Stats = Schemas['CampaignStats'];
type Interval = 'hour' | 'day';

const POLL_MS = 3000;
const started = (c: Campaign) => c.startedAt !== null || c.status === 'SENDING' || c.status === 'SENT';
/** A campaign whose figures are still moving: sending, or scheduled and due within a minute. */
const live = (c: Campaign) => c.status === 'SENDING' || (c.status === 'SCHEDULED' && c.scheduledAt !== null && Date.parse(c.scheduledAt) - Date.now() < 60_000);

export default function CampaignPage() {
  const { params } = useRoute();
  const { route } = useLocation();
  const { can } = useSession();
  const id = params.id ?? '';
  const isNew = id === 'new';
  const loaded = useLoad(() => (isNew ? Promise.resolve(null) : call(api.GET('/campaigns/{id}', { params: { path: { id } } }), { expect: [404] })), [id]);
  const [campaign, setShown] = useState<Campaign | null>(null);
  const setCampaign = (next: Campaign) => setShown((shown) => laterSaved(shown, next));
  useEffect(() => { if (loaded.data) setCampaign(loaded.data); }, [loaded.data]);
  const breadcrumb = <a href="/app/campaigns"><Icon name="arrowLeft" size={14} />Campaigns</a>;

  if (loaded.error && !campaign) {
    return <NotLoaded error={loaded.error} thing="campaign" title="Campaign" icon="campaigns" breadcrumb={breadcrumb} back={{ href: '/app/campaigns', label: 'Back to campaigns' }} retry={loaded.reload} />;
  }
  if (isNew && !can('write')) {
    return (
      <Page title="New campaign" breadcrumb={breadcrumb}>
        <EmptyState icon="lock" title="Your role cannot write campaigns" actions={<LinkButton href="/app/campaigns">Back to campaigns</LinkButton>}>
          Members, admins and owners of the project compose and send campaigns; you can read them and their results.
        </EmptyState>
      </Page>
    );
  }
  // The composer keeps its place through a new campaign's first save (the URL moves from /new to its id).
  if (isNew || (campaign?.status === 'DRAFT' && can('write'))) {
    return (
      <CampaignComposer campaign={isNew && !campaign ? null : campaign}
        onSaved={(c) => { setCampaign(c); if (isNew) route(`/app/campaigns/${c.id}`, true); }}
        onSent={setCampaign} onDeleted={() => route('/app/campaigns')} />
    );
  }
  if (!campaign) return <Page title="Campaign" breadcrumb={breadcrumb}><Loading what="Loading the campaign" /></Page>;
  return <CampaignReport campaign={campaign} onChange={setCampaign} breadcrumb={breadcrumb} />;
}

function CampaignReport({ campaign: c, onChange, breadcrumb }: { campaign: Campaign; onChange: (c: Campaign) => void; breadcrumb: ComponentChildren }) {
  const { query, route } = useLocation();
  const { can } = useSession();
  const [asking, setAsking] = useState<'cancel' | 'delete' | null>(null);
  // By hour for the first two days of a campaign, by UTC day after; the viewer may choose (?by=).
  const sinceStart = c.startedAt ? Date.now() - Date.parse(c.startedAt) : 0;
  const by: Interval = query.by === 'hour' || query.by === 'day' ? query.by : sinceStart > 2 * 86_400_000 ? 'day' : 'hour';
  const hasStats = started(c);
  const stats = useLoad(() => (hasStats ? call(api.GET('/campaigns/{id}/stats', { params: { path: { id: c.id }, query: { series: by } } })) : Promise.resolve(null)),
    [c.id, by, hasStats, c.status]);
  const segment = useLoad(() => (c.audienceType === 'SEGMENT' && c.segmentId
    ? call(api.GET('/segments/{id}', { params: { path: { id: c.segmentId } } }), { expect: [404] }).catch(() => null)
    : Promise.resolve(null)), [c.segmentId]);

  // Live figures: the campaign and its stats again every few seconds while it sends (or is about to) and the page is seen.
  useVisibleInterval(() => {
    call(api.GET('/campaigns/{id}', { params: { path: { id: c.id } } })).then(onChange, () => undefined);
    if (hasStats) stats.reload();
  }, POLL_MS, live(c));

  // Written from a template: what it takes from it is the template's until it starts sending, then its own copy.
  const template = useLoad(() => (c.templateId
    ? call(api.GET('/templates/{id}', { params: { path: { id: c.templateId } } }), { expect: [404] }).catch(() => null)
    : Promise.resolve(null)), [c.templateId]);
  const content = campaignContent(c, template.data);
  // An HTML body of its own is shown as written; a template's (or a Markdown one) is rendered by Herald.
  const asWritten = c.body !== null && c.bodyType === 'html';
  const rendered = usePreview(!asWritten && content.body ? { subject: content.subject, body: content.body, bodyType: content.bodyType } : null);

  const s = stats.data ?? null;
  const writer = can('write');
  const segmentName = segment.data ? segment.data.name : c.audienceType === 'SEGMENT' ? 'a deleted segment' : null;
  const zone = viewerZone();

  let lede: ComponentChildren;
  if (c.status === 'SCHEDULED') lede = <>Scheduled for <Time value={c.scheduledAt} /> ({zone})</>;
  else if (c.status === 'SENDING') lede = <>Sending since <Time value={c.startedAt} /></>;
  else if (c.status === 'SENT') lede = <>Sent <Time value={c.completedAt ?? c.startedAt} /> to {contacts(c.totalRecipients ?? s?.totalRecipients ?? 0)}</>;
  else if (c.status === 'CANCELLED') lede = <>Cancelled <Time value={c.cancelledAt} /></>;
  else if (c.status === 'FAILED') lede = <>Failed{c.error ? `: ${c.error}` : ''}</>;
  else lede = <>Draft, not sent</>;

  return (
    <Page title={c.name} breadcrumb={breadcrumb} lede={<span class="campaign-lede"><CampaignStatus status={c.status} /><span>{lede}</span></span>}
      actions={<>
        {c.temporalUiUrl ? <LinkButton href={c.temporalUiUrl} target="_blank" rel="noopener noreferrer"><Icon name="external" />Open in Temporal UI</LinkButton> : null}
        {writer && (c.status === 'SCHEDULED' || c.status === 'SENDING') ? <Button variant="danger" onClick={() => setAsking('cancel')}>Cancel campaign</Button> : null}
        {writer && c.status === 'CANCELLED' ? <Button variant="ghost" class="danger-text" onClick={() => setAsking('delete')}><Icon name="trash" />Delete</Button> : null}
      </>}>
      <div class="stack campaign-report">
        {c.status === 'SCHEDULED' ? <ScheduledCard campaign={c} /> : null}
        {/* An A/B test's sample and wait are its own card's: the campaign's progress is shown again once the rest goes. */}
        {c.status === 'SENDING' && (!c.abTest || c.abTest.phase === 'DECIDED') ? <ProgressCard stats={s} loading={stats.loading && !s} abTest={c.abTest !== null} /> : null}
        {hasStats && c.status !== 'SENDING' ? (s ? <Results stats={s} /> : <Loading what="Loading the results" />) : null}
        {c.abTest ? <AbTestReport campaign={c} stats={s} baseSubject={content.subject} onChange={onChange} /> : null}
        {hasStats ? <Engagement stats={s} by={by} onBy={(next) => route(`/app/campaigns/${c.id}?by=${next}`, true)} campaign={c} /> : null}
        {hasStats && s ? <Links links={s.links} /> : null}
        <div class="campaign-details-grid">
          <section class="card" aria-labelledby="campaign-details">
            <div class="card-header"><h2 id="campaign-details">Details</h2></div>
            <dl class="kv card-body">
              {c.templateId ? <><dt>Template</dt><dd>{template.data
                ? <a href={`/app/templates/${template.data.id}`}>{template.data.name}</a>
                : template.loading ? '…' : <span class="muted">A deleted template</span>}</dd></> : null}
              <dt>Subject</dt><dd>{content.subject || '—'}</dd>
              {c.previewText ? <><dt>Preview text</dt><dd>{c.previewText}</dd></> : null}
              <dt>From</dt><dd>{content.fromName ? `${content.fromName} <${content.from}>` : content.from || '—'}</dd>
              {content.replyTo ? <><dt>Reply-to</dt><dd>{content.replyTo}</dd></> : null}
              <dt>Audience</dt><dd>{c.audienceType === 'FILTERED'
                ? <details class="campaign-filter"><summary>{audienceWords(c)}</summary><pre class="json">{JSON.stringify(c.audienceFilter, null, 2)}</pre></details>
                : audienceWords(c, segmentName)}</dd>
              {c.scheduledAt ? <><dt>Scheduled for</dt><dd><Time value={c.scheduledAt} /></dd></> : null}
              {c.startedAt ? <><dt>Started</dt><dd><Time value={c.startedAt} /></dd></> : null}
              {c.completedAt ? <><dt>Finished</dt><dd><Time value={c.completedAt} /></dd></> : null}
              {c.totalRecipients !== null ? <><dt>Recipients</dt><dd>{c.totalRecipients.toLocaleString()}</dd></> : null}
              {c.abTest ? <><dt>A/B test</dt><dd>{c.variants?.length ?? 0} variants, {c.abTest.samplePercent} % sample, {waitWords(c.abTest.waitMinutes)} wait, {c.abTest.metric === 'manual' ? 'winner chosen by a person' : `winner by ${METRIC_WORDS[c.abTest.metric]}`}</dd></> : null}
              <dt>Created</dt><dd><Time value={c.createdAt} /></dd>
              {hasStats ? <><dt>Emails</dt><dd><a href={`/app/emails?campaignId=${c.id}`}>See each email and its delivery</a></dd></> : null}
            </dl>
          </section>
          <section class="card campaign-message" aria-labelledby="campaign-message">
            <div class="card-header"><h2 id="campaign-message">Message</h2><span class="muted small">{c.abTest ? 'The campaign’s own: each variant’s parts replace it · ' : ''}{asWritten ? 'Variables shown as written' : 'Rendered for a contact with no data'}</span></div>
            {asWritten ? <MessagePreview html={c.body ?? ''} title="The campaign's message" /> : null}
            {!asWritten && rendered.error ? <div class="preview-error" role="alert"><Icon name="alert" size={14} /><span>{rendered.error}</span></div> : null}
            {!asWritten && rendered.preview ? <MessagePreview html={rendered.preview.html} title="The campaign's message" /> : null}
            {!asWritten && content.body && !rendered.preview && !rendered.error ? <Loading what="Rendering the message" /> : null}
            {!asWritten && !content.body && !template.loading ? <p class="card-body muted small">Its template was deleted before it was sent: there is no message to show.</p> : null}
          </section>
        </div>
      </div>
      {writer ? (
        <>
          <ConfirmDialog open={asking === 'cancel'} danger confirm="Cancel campaign" dismiss={c.status === 'SENDING' ? 'Keep sending' : 'Keep it scheduled'}
            title={c.status === 'SENDING' ? `Stop sending “${c.name}”?` : `Cancel the send of “${c.name}”?`} onClose={() => setAsking(null)}
            onConfirm={async () => {
              const done = await call(api.POST('/campaigns/{id}/cancel', { params: { path: { id: c.id } } }));
              toast('Campaign cancelled');
              onChange(done);
            }}>
            {c.status === 'SENDING'
              ? `Emails that have not left yet are cancelled${s ? ` (${s.queued.toLocaleString()} are waiting)` : ''}; the ${s ? s.sent.toLocaleString() : ''} already sent stay sent. This cannot be undone.`
              : `It will not be sent${c.scheduledAt ? ` on ${formatDateTime(c.scheduledAt)}` : ''}. A cancelled campaign cannot be scheduled again; it can be deleted.`}
          </ConfirmDialog>
          <ConfirmDialog open={asking === 'delete'} danger confirm="Delete campaign" title={`Delete “${c.name}”?`} onClose={() => setAsking(null)}
            onConfirm={async () => {
              await call(api.DELETE('/campaigns/{id}', { params: { path: { id: c.id } } }));
              toast('Campaign deleted');
              route('/app/campaigns');
            }}>
            The campaign is gone from the list. Emails it already sent stay in the email log.
          </ConfirmDialog>
        </>
      ) : null}
    </Page>
  );
}

function ScheduledCard({ campaign: c }: { campaign: Campaign }) {
  // "in 3 hours" while it is near; a date further off is said by the line above.
  const soon = c.scheduledAt !== null && Date.parse(c.scheduledAt) - Date.now() < 20 * 86_400_000;
  return (
    <section class="card" aria-labelledby="campaign-scheduled">
      <div class="card-header"><h2 id="campaign-scheduled">Scheduled</h2></div>
      <div class="card-body campaign-when">
        <Icon name="clock" size={20} />
        <div>
          <p class="strong">{c.scheduledAt ? formatWhen(c.scheduledAt) : '—'}</p>
          <p class="muted small">
            In your time zone, {viewerZone()}{soon ? `: ${formatRelative(c.scheduledAt!)}` : ''}. The audience is read when it goes, so whoever subscribes or leaves meanwhile counts then.
          </p>
        </div>
      </div>
    </section>
  );
}

function ProgressCard({ stats: s, loading, abTest }: { stats: Stats | null; loading: boolean; abTest: boolean }) {
  // Every recipient not still queued has been handled: sent (bounced or not), failed, cancelled or suppressed.
  const done = s ? s.totalRecipients - s.queued : 0;
  return (
    <section class="card" aria-labelledby="campaign-progress">
      <div class="card-header"><h2 id="campaign-progress">Progress</h2><span class="muted small live-note"><span class="live-dot" aria-hidden="true" />Live</span></div>
      <div class="card-body stack">
        {loading || !s ? <Loading what="Counting" /> : (
          <>
            <p class="progress-line"><strong>{s.sent.toLocaleString()}</strong> sent of <strong>{s.totalRecipients.toLocaleString()}</strong> so far</p>
            <Progress label="Emails handled" value={done} max={Math.max(s.totalRecipients, 1)} />
            <div class="stats campaign-stats">
              <Stat label="Queued" value={s.queued} note="waiting to leave" />
              <Stat label="Sent" value={s.sent} note={`${percent(s.sent, s.totalRecipients)} of recipients`} />
              <Stat label="Failed" value={s.failed} />
              <Stat label="Bounced" value={s.bounced} />
            </div>
            <p class="muted small">The audience is read in batches as it sends, so the total grows until every contact has an email.{abTest ? ' The test’s sample went first; the winner now goes to the rest.' : ''}</p>
          </>
        )}
      </div>
    </section>
  );
}

const count = (n: number, word: string) => `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;

function Results({ stats: s }: { stats: Stats }) {
  return (
    <div class="stats campaign-stats" role="group" aria-label="Results">
      <Stat label="Recipients" value={s.totalRecipients} note={s.queued ? `${s.queued.toLocaleString()} still queued` : undefined} />
      <Stat label="Delivered" value={s.delivered} note={`${percent(s.delivered, s.totalRecipients)} of recipients`} />
      <Stat label="Opened" value={s.uniqueOpens} note={`${percent(s.uniqueOpens, s.delivered)} of delivered · ${count(s.opens, 'open')} in all`} />
      <Stat label="Clicked" value={s.uniqueClicks} note={`${percent(s.uniqueClicks, s.delivered)} of delivered · ${count(s.clicks, 'click')} in all`} />
      <Stat label="Bounced" value={s.bounced} note={`${percent(s.bounced, s.sent)} of sent`} />
      <Stat label="Complaints" value={s.complained} note={`${percent(s.complained, s.sent)} of sent`} />
      <Stat label="Unsubscribed" value={s.unsubscribed} note={`${percent(s.unsubscribed, s.sent)} of sent`} />
      <Stat label="Failed" value={s.failed} />
      {s.cancelled + s.suppressed > 0 ? (
        <Stat label="Not sent" value={s.cancelled + s.suppressed} note={[s.cancelled ? `${s.cancelled.toLocaleString()} cancelled` : '', s.suppressed ? `${s.suppressed.toLocaleString()} suppressed` : ''].filter(Boolean).join(' · ')} />
      ) : null}
    </div>
  );
}

function Engagement({ stats: s, by, onBy, campaign: c }: { stats: Stats | null; by: Interval; onBy: (by: Interval) => void; campaign: Campaign }) {
  const points = s?.series?.points ?? [];
  const chart = useMemo(() => ({
    at: points.map((p) => (by === 'day' ? p.at.slice(0, 10) : p.at)),
    series: [{ label: 'Opens', values: points.map((p) => p.opens) }, { label: 'Clicks', values: points.map((p) => p.clicks) }],
  }), [s, by]);
  const opens = points.reduce((n, p) => n + p.opens, 0);
  const clicks = points.reduce((n, p) => n + p.clicks, 0);
  const summary = `Opens and clicks per ${by === 'day' ? 'UTC day' : 'hour'} since ${c.startedAt ? formatDateTime(c.startedAt) : 'the first open'}: ${count(opens, 'open')}, ${count(clicks, 'click')}.`;
  return (
    <section class="card" aria-labelledby="campaign-engagement">
      <div class="card-header">
        <h2 id="campaign-engagement">Opens and clicks over time</h2>
        <div class="segmented" role="group" aria-label="Per">
          {(['hour', 'day'] as const).map((b) => <button key={b} type="button" aria-pressed={by === b ? 'true' : 'false'} onClick={() => onBy(b)}>By {b}</button>)}
        </div>
      </div>
      <div class="card-body">
        {!s ? <Loading what="Loading the chart" /> : opens + clicks === 0 ? <p class="muted small">Nothing to draw yet: no open or click has been recorded.</p> : (
          <>
            <VolumeChart at={chart.at} step={by} series={chart.series} label={summary} />
            <p class="muted small chart-note">
              {by === 'hour' ? `Hours in your time zone (${viewerZone()}), the first 7 days.` : 'UTC days, the first 90.'} Open and click events as the event log has them: at most one per email (and link) a minute, mail privacy proxies included.
            </p>
          </>
        )}
      </div>
    </section>
  );
}

function Links({ links }: { links: Stats['links'] }) {
  return (
    <section class="card" aria-labelledby="campaign-links">
      <div class="card-header"><h2 id="campaign-links">Clicks per link</h2></div>
      {links.length === 0 ? <p class="card-body muted small">No link has been clicked yet.</p> : (
        <div class="table-flush">
          <table class="table">
            <caption class="visually-hidden">Clicks per link, most clicked first</caption>
            <thead><tr><th scope="col">Link</th><th scope="col" class="num">Clicks</th><th scope="col" class="num">Unique</th></tr></thead>
            <tbody>
              {links.map((l) => (
                <tr key={l.url}>
                  <td class="fill"><span class="truncate-line mono small" title={l.url}>{l.url}</span></td>
                  <td class="num">{l.clicks.toLocaleString()}</td>
                  <td class="num">{l.uniqueClicks.toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
