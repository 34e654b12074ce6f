import { useMemo, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { api, call, downloadFile, type Schemas } from '../api';
import { Badge, Button, EmailStatus, Icon, Loading, MessagePreview, Page, Time, type Tone } from '../components';
import { useLoad } from '../hooks';
import { Fragment } from 'preact';
import { NotLoaded } from './parts/NotLoaded';

/**
 * One email (GET /emails/:id): its status and fields, its timeline, opens and clicks, and the message as it was
 * rendered (MessagePreview: its own document and policy, no scripts; inline styles and data: images only, until
 * "Load remote images").
 */
type EmailDetailT = Schemas['EmailDetail'];
type TimelineEntry = EmailDetailT['timeline'][number];

const STEPS: Record<string, [string, Tone]> = {
  'email.queued': ['Queued', 'neutral'],
  'email.sent': ['Sent', 'success'],
  'email.delivered': ['Delivered', 'success'],
  'email.opened': ['Opened', 'info'],
  'email.clicked': ['Clicked', 'info'],
  'email.failed': ['Failed', 'danger'],
  'email.bounced': ['Bounced', 'danger'],
  'email.complained': ['Marked as spam', 'danger'],
  'email.suppressed': ['Suppressed', 'warning'],
  'email.cancelled': ['Cancelled', 'neutral'],
  'email.deferred': ['Deferred, will retry', 'warning'],
};

const stepWords = (type: string): [string, Tone] => STEPS[type] ?? [type.replace(/^email\./, '').replace(/[._]/g, ' ').replace(/^./, (c) => c.toUpperCase()), 'neutral'];

function detailLine(data: Record<string, unknown>): string {
  return Object.entries(data).filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' · ');
}

/** The message's remote resources (http/https images and backgrounds): the preview loads them only on request. */
const REMOTE = /(<img[^>]+src\s*=\s*["']?\s*https?:|url\(\s*["']?\s*https?:|background\s*=\s*["']?\s*https?:)/i;

/** GET /emails/:id/raw, saved as <id>.eml (a 409 says a campaign email has no message). */
const downloadRaw = (id: string) => downloadFile(`/emails/${encodeURIComponent(id)}/raw`, `${id}.eml`, 'The raw message',
  (status) => (status === 409 ? 'this campaign email has no message (its contact unsubscribed, or it could not be rendered)' : undefined));

export default function EmailDetail() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const email = useLoad(() => call(api.GET('/emails/{id}', { params: { path: { id } } }), { expect: [404, 400, 422] }), [id]);

  if (email.loading && !email.data) return <Page title="Email" breadcrumb={<a href="/app/emails">Emails</a>}><Loading what="Loading the email" /></Page>;
  if (email.error || !email.data) {
    return <NotLoaded error={email.error} thing="email" title="Email" icon="alert" breadcrumb={<a href="/app/emails">Emails</a>} back={{ href: '/app/emails', label: 'Back to emails' }}
      missingHint="It may belong to another project: switch project in the side bar, or search the log." retry={email.reload} />;
  }
  return <EmailView email={email.data} />;
}

function EmailView({ email: e }: { email: EmailDetailT }) {
  const [remote, setRemote] = useState(false);
  const [downloading, setDownloading] = useState(false);
  const hasRemote = useMemo(() => REMOTE.test(e.html ?? ''), [e.html]);
  const title = e.subject ?? 'Campaign email';

  return (
    <Page title={title} breadcrumb={<a href="/app/emails">Emails</a>}
      lede={<>To {e.toName ? `${e.toName} <${e.to}>` : e.to} · queued <Time value={e.createdAt} /></>}
      actions={<>
        <EmailStatus status={e.status} />
        <Button size="sm" busy={downloading} onClick={() => { setDownloading(true); void downloadRaw(e.id).finally(() => setDownloading(false)); }}><Icon name="download" />Download raw</Button>
      </>}>
      <div class="email-detail-grid">
        <div class="stack">
          <section class="card" aria-labelledby="preview-title">
            <div class="card-header preview-bar">
              <h2 id="preview-title">Message</h2>
              {hasRemote ? (
                remote ? <span class="muted">Remote images loaded</span>
                  : <Button size="sm" onClick={() => setRemote(true)}><Icon name="image" />Load remote images</Button>
              ) : null}
            </div>
            {e.html ? (
              <MessagePreview html={e.html} title={`The message: ${title}`} remoteImages={remote} />
            ) : (
              <div class="card-body muted">{e.campaignId ? 'Campaign emails are rendered for each recipient at delivery and not stored: see the campaign for its content.' : 'This email has no HTML body.'}</div>
            )}
          </section>
          <section class="card" aria-labelledby="details-title">
            <div class="card-header"><h2 id="details-title">Details</h2></div>
            <dl class="kv card-body">
              <dt>From</dt><dd>{e.fromName ? `${e.fromName} <${e.from}>` : e.from}</dd>
              <dt>To</dt><dd>{e.toName ? `${e.toName} <${e.to}>` : e.to}</dd>
              {e.replyTo ? <><dt>Reply-To</dt><dd>{e.replyTo}</dd></> : null}
              <dt>Subject</dt><dd>{e.subject ?? <span class="muted">Rendered at delivery (campaign)</span>}</dd>
              <dt>Message-ID</dt><dd class="mono">{e.messageId ?? <span class="muted">Not sent yet</span>}</dd>
              {e.campaignId ? <><dt>Campaign</dt><dd><a href={`/app/emails?campaignId=${e.campaignId}`} class="mono">{e.campaignId}</a></dd></> : null}
              {e.templateId ? <><dt>Template</dt><dd class="mono">{e.templateId}</dd></> : null}
              <dt>Attempts</dt><dd class="num">{e.attempts}</dd>
              <dt>Sent</dt><dd><Time value={e.sentAt} /></dd>
              {e.error ? <><dt>Error</dt><dd class="mono">{e.error}</dd></> : null}
              <dt>ID</dt><dd class="mono">{e.id}</dd>
            </dl>
          </section>
          {Object.keys(e.headers ?? {}).length ? (
            <section class="card" aria-labelledby="headers-title">
              <div class="card-header"><h2 id="headers-title">Headers</h2></div>
              <dl class="kv card-body">
                {Object.entries(e.headers).map(([name, value]) => <Fragment key={name}><dt>{name}</dt><dd class="mono">{value}</dd></Fragment>)}
              </dl>
            </section>
          ) : null}
        </div>
        <div class="stack">
          <section class="card" aria-labelledby="engagement-title">
            <div class="card-header"><h2 id="engagement-title">Opens and clicks</h2></div>
            <div class="card-body stats">
              <div><div class="stat-label">Opens</div><div class="stat-value">{e.tracking.opens ? e.opens : '—'}</div>
                <div class="stat-label">{e.tracking.opens ? (e.firstOpenedAt ? <>First <Time value={e.firstOpenedAt} relative /></> : 'Not opened yet') : 'Tracking off'}</div></div>
              <div><div class="stat-label">Clicks</div><div class="stat-value">{e.tracking.clicks ? e.clicks : '—'}</div>
                <div class="stat-label">{e.tracking.clicks ? (e.firstClickedAt ? <>First <Time value={e.firstClickedAt} relative /></> : 'No click yet') : 'Tracking off'}</div></div>
            </div>
          </section>
          <section class="card" aria-labelledby="timeline-title">
            <div class="card-header"><h2 id="timeline-title">Timeline</h2><Badge>{e.timeline.length} {e.timeline.length === 1 ? 'step' : 'steps'}</Badge></div>
            <div class="card-body">
              <ol class="timeline" aria-label="Timeline">
                {e.timeline.map((t: TimelineEntry, i: number) => {
                  const [words, tone] = stepWords(t.type);
                  const detail = detailLine(t.data ?? {});
                  return (
                    <li key={`${t.type}-${t.at}-${i}`}>
                      <span class={`dot${tone === 'neutral' ? '' : ` dot-${tone}`}`} aria-hidden="true" />
                      <div>
                        <div class="what">{words}</div>
                        <div class="when"><Time value={t.at} /></div>
                        {detail ? <div class="detail">{detail}</div> : null}
                      </div>
                    </li>
                  );
                })}
              </ol>
            </div>
          </section>
        </div>
      </div>
    </Page>
  );
}
