import { useLocation } from 'preact-iso';
import { api, call, type Schemas } from '../api';
import { Button, EmptyState, Icon, LinkButton, Loading, Page, Pager, Progress, SelectField, Time, useCursorPages } from '../components';
import { useLoad, useVisibleInterval } from '../hooks';
import { useSession } from '../session';
import { audienceWords, CAMPAIGN_STATUSES, CampaignStatus, type Campaign, type CampaignStatusName } from './parts/campaigns';

/**
 * Campaigns (issue 29): the project's campaigns, newest first, by status (GET /campaigns?status=, kept in the URL),
 * paged by the API's cursor. A sending one shows how far it got (its stats: sent of total, asked again every few
 * seconds while the page is visible); a scheduled one when it goes, in the viewer's zone. "New campaign" opens the
 * composer for those who may write.
 */
const PAGE_SIZE = 25;
const POLL_MS = 5000;
type Stats = Schemas['CampaignStats'];

const FILTERS: [string, string][] = [['', 'Any status'], ...CAMPAIGN_STATUSES.map(([s, word]): [string, string] => [s, word])];

/** When the row's campaign went, goes or stopped. */
function When({ c }: { c: Campaign }) {
  if (c.status === 'SCHEDULED') return <span>Goes <Time value={c.scheduledAt} /></span>;
  if (c.status === 'SENT') return <span>Sent <Time value={c.completedAt ?? c.startedAt} /></span>;
  if (c.status === 'SENDING') return <span>Started <Time value={c.startedAt} /></span>;
  if (c.status === 'CANCELLED') return <span>Cancelled <Time value={c.cancelledAt} /></span>;
  if (c.status === 'FAILED') return <span>Failed <Time value={c.updatedAt} /></span>;
  return <span>Edited <Time value={c.updatedAt} /></span>;
}

function Sending({ stats }: { stats: Stats | undefined }) {
  if (!stats) return null;
  return (
    <span class="campaign-row-progress">
      <Progress label="Sent" value={stats.sent} max={Math.max(stats.totalRecipients, 1)} />
      <span class="sub">{stats.sent.toLocaleString()} of {stats.totalRecipients.toLocaleString()} sent</span>
    </span>
  );
}

export default function Campaigns() {
  const { query, route } = useLocation();
  const { can } = useSession();
  const status = (CAMPAIGN_STATUSES.some(([s]) => s === query.status) ? query.status : '') as CampaignStatusName | '';
  const pages = useCursorPages(status);
  const list = useLoad(() => call(api.GET('/campaigns', { params: { query: { limit: PAGE_SIZE, ...(status ? { status } : {}), ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })),
    [status, pages.cursor]);
  const items = list.data?.items ?? [];
  const sendingIds = items.filter((c) => c.status === 'SENDING').map((c) => c.id);
  // The progress of each campaign sending on this page (one stats call each: a page rarely holds more than one).
  const progress = useLoad(async () => new Map(await Promise.all(sendingIds.map(async (id) =>
    [id, await call(api.GET('/campaigns/{id}/stats', { params: { path: { id } } }))] as const))), [sendingIds.join()]);
  useVisibleInterval(() => { list.reload(); progress.reload(); }, POLL_MS, sendingIds.length > 0);
  // The names of the segments the rows go to (the first 100 segments: a project's list of them is short).
  const bySegment = items.some((c) => c.audienceType === 'SEGMENT');
  const segments = useLoad(() => (bySegment ? call(api.GET('/segments', { params: { query: { limit: 100 } } })) : Promise.resolve(null)), [bySegment]);
  const segmentName = (id: string | null) => segments.data?.items.find((s) => s.id === id)?.name;

  const newButton = can('write') ? <LinkButton variant="primary" href="/app/campaigns/new"><Icon name="plus" />New campaign</LinkButton> : null;
  const filter = (next: string) => route(next ? `/app/campaigns?status=${next}` : '/app/campaigns');

  return (
    <Page title="Campaigns" lede="Marketing mail to your subscribed contacts, and how it was read."
      actions={items.length || status ? newButton : null}>
      <div class="stack">
        {items.length || status ? (
          <div class="toolbar campaigns-filters">
            <SelectField label="Status" value={status} onValue={filter} options={FILTERS} />
          </div>
        ) : null}
        {list.loading && !list.data ? <Loading what="Loading campaigns" /> : null}
        {list.error && !list.data ? <EmptyState icon="alert" title="The campaigns did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState> : null}
        {list.data && !items.length ? (
          status ? (
            <EmptyState icon="search" title={`No ${FILTERS.find(([s]) => s === status)?.[1].toLowerCase()} campaign`} actions={<Button onClick={() => filter('')}>Show every campaign</Button>}>
              No campaign of this project has this status{pages.number > 1 ? ' on this page' : ''}.
            </EmptyState>
          ) : (
            <EmptyState icon="campaigns" title="No campaign yet" actions={newButton}>
              {can('write')
                ? 'Write your first one: a subject, a message, who receives it. Send yourself a test, then send it now or schedule it.'
                : 'When someone of the project writes a campaign, it shows here with its results.'}
            </EmptyState>
          )
        ) : null}
        {items.length ? (
          <>
            <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
              <table class="table campaigns-table">
                <caption class="visually-hidden">Campaigns, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Campaign</th><th scope="col">Status</th><th scope="col" class="hide-sm">Audience</th>
                    <th scope="col" class="hide-sm">When</th><th scope="col" class="num hide-sm">Recipients</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((c) => (
                    <tr key={c.id}>
                      <td class="fill">
                        <a class="row-link truncate-line" href={`/app/campaigns/${c.id}`}>{c.name}</a>
                        <span class="sub truncate-line">{c.abTest ? `A/B test of ${c.variants?.length ?? 0} variants · ` : ''}{c.subject}</span>
                        <span class="sub show-sm"><When c={c} /></span>
                      </td>
                      <td class="campaign-status-cell">
                        <CampaignStatus status={c.status} />
                        {/* An A/B test's wait has its sample sent and the rest not read yet: a bar would stand still at full. */}
                        {c.status === 'SENDING' && c.abTest?.phase === 'WAITING'
                          ? <span class="sub">{c.abTest.chosen ? `${c.abTest.chosen} chosen` : 'Test: waiting'}</span>
                          : c.status === 'SENDING' ? <Sending stats={progress.data?.get(c.id)} /> : null}
                      </td>
                      <td class="hide-sm truncate">{audienceWords(c, segmentName(c.segmentId))}</td>
                      <td class="hide-sm nowrap"><When c={c} /></td>
                      <td class="num hide-sm">{c.totalRecipients !== null ? c.totalRecipients.toLocaleString() : <span class="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Campaigns" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
    </Page>
  );
}
