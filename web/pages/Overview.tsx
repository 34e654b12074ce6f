import { useMemo } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, call, type Schemas } from '../api';
import { Badge, Button, EmptyState, Icon, LinkButton, Loading, Page } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { percent, Stat } from './parts/stats';
import { VolumeChart } from './parts/VolumeChart';

/**
 * Overview: the project at a glance for the last 7, 30 or 90 days: email volume by day and outcome (a uPlot chart and
 * the numbers), the delivery queue, and the sending domains that need attention with a link to fix each. A project that
 * has never sent is shown how to start instead: verify a domain, create a key, the first send's curl.
 *
 * Its data is GET /stats/overview (emails/overview.ts: a daily rollup, so as fast at a million emails as at ten).
 */
const WINDOWS = [7, 30, 90] as const;
type Window = (typeof WINDOWS)[number];
const OUTCOMES = ['sent', 'bounced', 'complained', 'opened', 'clicked', 'failed'] as const;
type Outcome = (typeof OUTCOMES)[number];

export type OverviewJson = Schemas['Overview'];

const OUTCOME_LABEL: Record<Outcome, string> = { sent: 'Sent', bounced: 'Bounced', complained: 'Complained', opened: 'Opened', clicked: 'Clicked', failed: 'Failed' };

async function load(days: Window) {
  const [overview, anyEmail, verified] = await Promise.all([
    call(api.GET('/stats/overview', { params: { query: { days } } })),
    call(api.GET('/emails', { params: { query: { limit: 1 } } })),
    call(api.GET('/domains', { params: { query: { limit: 1, status: 'VERIFIED' } } })),
  ]);
  return { overview, hasSent: anyEmail.items.length > 0, verifiedDomain: verified.items[0]?.domain ?? null };
}

function age(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86_400) return `${(seconds / 3600).toFixed(seconds < 36_000 ? 1 : 0)} h`;
  return `${(seconds / 86_400).toFixed(1)} days`;
}

function sendCurl(from: string): string {
  return `curl -X POST ${location.origin}/v1/send \\
  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
    "from": "hello@${from}",
    "to": "ada@example.com",
    "subject": "Welcome to Acme",
    "body": "<p>Hello Ada, thanks for signing up.</p>"
  }'`;
}

function GettingStarted({ verifiedDomain }: { verifiedDomain: string | null }) {
  const { can } = useSession();
  const steps = [
    {
      title: 'Add and verify a sending domain', done: verifiedDomain !== null,
      body: verifiedDomain ? <>{verifiedDomain} is verified: Herald signs its mail with DKIM.</> : <>Herald gives you three DNS records to publish; once they are found, mail from the domain is signed and sent.</>,
      action: verifiedDomain ? null : <LinkButton size="sm" variant="primary" href={can('admin') ? '/app/domains?add=1' : '/app/domains'}>{can('admin') ? 'Add a domain' : 'See the domains'}</LinkButton>,
    },
    {
      title: 'Create an API key', done: false,
      body: <>A secret key sends from your server; a sending-only key can do nothing else. Keep it out of the browser.</>,
      action: <LinkButton size="sm" href="/app/settings">Open the keys</LinkButton>,
    },
    {
      title: 'Send your first email', done: false,
      body: <>From your app, or from a terminal with the key in <code>HERALD_SECRET_KEY</code>:</>,
      code: sendCurl(verifiedDomain ?? 'your-domain.com'),
    },
  ];
  return (
    <section class="card getting-started" aria-labelledby="start-title">
      <div class="card-header"><h2 id="start-title">Get started</h2><span class="muted small">Nothing sent yet</span></div>
      <ol class="steps">
        {steps.map((s, i) => (
          <li key={s.title} class={s.done ? 'done' : undefined}>
            <span class="step-mark" aria-hidden="true">{s.done ? <Icon name="check" size={14} /> : i + 1}</span>
            <div class="step-text">
              <h3>{s.title}{s.done ? <span class="visually-hidden"> (done)</span> : null}</h3>
              <p>{s.body}</p>
              {s.code ? <pre class="step-code"><code>{s.code}</code></pre> : null}
              {s.action ? <div class="row">{s.action}</div> : null}
            </div>
          </li>
        ))}
      </ol>
    </section>
  );
}

function Attention({ domains }: { domains: OverviewJson['domains'] }) {
  return (
    <section class="card" aria-labelledby="attention-title">
      <div class="card-header"><h2 id="attention-title">Domains needing attention</h2>{domains.length ? <Badge tone="warning">{domains.length}</Badge> : null}</div>
      {domains.length === 0 ? (
        <p class="card-body all-well"><Icon name="check" /> Every sending domain is verified and its records are found.</p>
      ) : (
        <ul class="attention-list">
          {domains.map((d) => (
            <li key={d.id}>
              <div class="attention-text">
                <strong>{d.domain}</strong>
                {d.issues.map((issue) => <span key={`${issue.code}${issue.record ?? ''}`} class="sub">{issue.message}</span>)}
              </div>
              <LinkButton size="sm" href={`/app/domains/${d.id}`} aria-label={`Fix ${d.domain}`}>Fix</LinkButton>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Queue({ queue }: { queue: OverviewJson['queue'] }) {
  return (
    <section class="card" aria-labelledby="queue-title">
      <div class="card-header"><h2 id="queue-title">Delivery queue</h2></div>
      <dl class="queue card-body">
        <div><dt>Waiting to send</dt><dd>{queue.depthExact ? '' : 'at least '}{queue.depth.toLocaleString()}</dd></div>
        <div><dt>Oldest waiting</dt><dd>{queue.depth ? age(queue.oldestAgeSeconds) : '—'}</dd></div>
      </dl>
      <p class="card-body queue-note muted small">{queue.depth ? 'Emails are queued until delivery; retries wait here too.' : 'Nothing is waiting: every email has been handed to its recipient\'s server.'}</p>
    </section>
  );
}

export default function Overview() {
  const { query } = useLocation();
  const days: Window = WINDOWS.find((w) => String(w) === query.days) ?? 30;
  const loaded = useLoad(() => load(days), [days]);
  const data = loaded.data;
  const chart = useMemo(() => data && {
    days: data.overview.series.map((d) => d.day),
    series: OUTCOMES.map((o) => ({ label: OUTCOME_LABEL[o], values: data.overview.series.map((d) => d[o]) })),
  }, [data]);

  const picker = (
    <div class="segmented" role="group" aria-label="Period">
      {WINDOWS.map((w) => <a key={w} href={w === 30 ? '/app' : `/app?days=${w}`} aria-current={w === days ? 'page' : undefined}>{w} days</a>)}
    </div>
  );

  if (!data) {
    return (
      <Page title="Overview">
        {loaded.error
          ? <EmptyState icon="alert" title="The overview did not load" actions={<Button onClick={loaded.reload}>Try again</Button>}>{loaded.error.message}</EmptyState>
          : <Loading what="Loading the overview" />}
      </Page>
    );
  }
  const { overview, hasSent } = data;
  if (!hasSent) {
    return (
      <Page title="Overview" lede="Three steps, and your app sends its first email through Herald.">
        <div class="overview-start">
          <GettingStarted verifiedDomain={data.verifiedDomain} />
          <Attention domains={overview.domains} />
        </div>
      </Page>
    );
  }
  const t = overview.totals;
  const summary = `Emails per day, the last ${days} days: ${OUTCOMES.map((o) => `${t[o].toLocaleString()} ${o}`).join(', ')}.`;
  return (
    <Page title="Overview" lede={`The last ${days} days, by UTC day.`} actions={picker}>
      <div class={`stack${loaded.loading ? ' refreshing' : ''}`} aria-busy={loaded.loading}>
        <div class="stats overview-stats">
          <Stat label="Sent" value={t.sent} />
          <Stat label="Bounced" value={t.bounced} note={`${percent(t.bounced, t.sent)} of sent`} />
          <Stat label="Complained" value={t.complained} note={`${percent(t.complained, t.sent)} of sent`} />
          <Stat label="Opened" value={t.opened} note={`${percent(t.opened, t.sent)} of sent`} />
          <Stat label="Clicked" value={t.clicked} note={`${percent(t.clicked, t.sent)} of sent`} />
          <Stat label="Failed" value={t.failed} />
        </div>
        <section class="card" aria-labelledby="volume-title">
          <div class="card-header"><h2 id="volume-title">Volume by day</h2><span class="muted small">{overview.from} to {overview.to} (UTC)</span></div>
          <div class="card-body">
            {chart ? <VolumeChart at={chart.days} step="day" series={chart.series} label={summary} /> : null}
            <details class="volume-table">
              <summary>The numbers by day</summary>
              <div class="table-wrap" tabIndex={0} role="region" aria-label="The numbers by day">
                <table class="table">
                  <thead><tr><th>Day (UTC)</th>{OUTCOMES.map((o) => <th key={o} class="num">{OUTCOME_LABEL[o]}</th>)}</tr></thead>
                  <tbody>
                    {[...overview.series].reverse().map((d) => (
                      <tr key={d.day}><td class="nowrap">{d.day}</td>{OUTCOMES.map((o) => <td key={o} class="num">{d[o].toLocaleString()}</td>)}</tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </details>
          </div>
        </section>
        <div class="grid-2">
          <Queue queue={overview.queue} />
          <Attention domains={overview.domains} />
        </div>
      </div>
    </Page>
  );
}
