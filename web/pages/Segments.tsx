import { useLocation } from 'preact-iso';
import { api, call } from '../api';
import { Badge, Button, EmptyState, formatDateTime, Icon, Loading, Page, Pager, Time, useCursorPages } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { SegmentType } from './parts/segments';

/**
 * Segments (issue 29): each with its type (DYNAMIC: a condition, evaluated when read; STATIC: a list of members), its
 * member count now, and when it last changed; cursor pages. A segment whose stored condition cannot be evaluated says
 * so in place of its count. "New segment" opens the builder (SegmentDetail).
 */
const PAGE_SIZE = 50;

export default function Segments() {
  const { route } = useLocation();
  const { can } = useSession();
  const pages = useCursorPages();
  const list = useLoad(() => call(api.GET('/segments', { params: { query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })), [pages.cursor]);
  const items = list.data?.items ?? [];
  const create = can('write') ? <Button variant="primary" onClick={() => route('/app/segments/new')}><Icon name="plus" />New segment</Button> : null;

  return (
    <Page title="Segments" lede="Groups of contacts to send campaigns to: by their data and what they did, or a list you keep." actions={create}>
      <div class="stack segments">
        {list.loading && !list.data ? <Loading what="Loading segments" /> : null}
        {list.error && !list.data ? (
          <EmptyState icon="alert" title="The segments did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>
        ) : null}
        {list.data && !items.length && pages.number === 1 ? (
          <EmptyState icon="segments" title="No segments yet" actions={create}>
            A dynamic segment is a condition (“plan is pro and opened an email in the last 30 days”) that follows your contacts as they
            change; a static one is a list of addresses you add and remove.
          </EmptyState>
        ) : null}
        {items.length ? (
          <>
            <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
              <table class="table">
                <caption class="visually-hidden">Segments</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col" class="num">Members</th><th scope="col" class="hide-phone">Updated</th></tr></thead>
                <tbody>
                  {items.map((s) => (
                    <tr key={s.id}>
                      <td class="truncate fill">
                        <a class="row-link" href={`/app/segments/${s.id}`}>{s.name}</a>
                        {s.description ? <span class="sub truncate-line">{s.description}</span> : null}
                      </td>
                      <td><SegmentType type={s.type} /></td>
                      <td class="num">
                        {/* A kept count (GET /segments does not count when read): its time in the tooltip. */}
                        {s.memberCount !== null ? <span title={s.memberCountAt ? `counted ${formatDateTime(s.memberCountAt)}` : undefined}>{s.memberCount.toLocaleString()}</span>
                          : <span title={s.error ?? undefined}><Badge tone="warning">Needs a fix</Badge></span>}
                      </td>
                      <td class="hide-phone"><Time value={s.updatedAt} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Segments" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
    </Page>
  );
}
