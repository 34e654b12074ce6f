import { useLocation } from 'preact-iso';
import { api, call } from '../api';
import { Button, EmptyState, Icon, Loading, Page, Pager, Time, useCursorPages } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { EnabledBadge, stepsOf } from './parts/automations';

/**
 * Automations (issue 29; the API's /workflows): each is a trigger event and the steps a contact goes through when it
 * is tracked for them. The list names them with their trigger and whether they run; a row leads to the builder.
 */
const PAGE_SIZE = 50;

export default function Automations() {
  const { route } = useLocation();
  const { can } = useSession();
  const writer = can('write');
  const pages = useCursorPages();
  const list = useLoad(() => call(api.GET('/workflows', { params: { query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })), [pages.cursor]);
  const items = list.data?.items ?? [];
  const newButton = writer ? <Button variant="primary" onClick={() => route('/app/automations/new')}><Icon name="plus" />New automation</Button> : null;

  return (
    <Page title="Automations" lede="Journeys that start when a contact does something: a welcome series, a reminder after a quiet week." actions={items.length ? newButton : null}>
      <div class="stack">
        {list.loading && !list.data ? <Loading what="Loading automations" /> : null}
        {list.error && !list.data ? <EmptyState icon="alert" title="The automations did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState> : null}
        {list.data && !items.length ? (
          <EmptyState icon="automations" title="No automations yet" actions={newButton}>
            An automation starts a journey each time your app tracks its event for a contact: emails, delays, waits for what they do next, and branches on who they are.
            {writer ? '' : ' A member of the project can build one.'}
          </EmptyState>
        ) : null}
        {items.length ? (
          <>
            <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
              <table class="table automations-table">
                <caption class="visually-hidden">Automations</caption>
                <thead><tr>
                  <th scope="col">Name</th><th scope="col" class="hide-phone">Trigger</th><th scope="col" class="num hide-phone">Steps</th>
                  <th scope="col">Status</th><th scope="col" class="hide-phone">Updated</th>
                </tr></thead>
                <tbody>
                  {items.map((w) => (
                    <tr key={w.id}>
                      <td class="truncate fill">
                        <a class="row-link" href={`/app/automations/${w.id}`}>{w.name}</a>
                        <span class="sub show-phone mono">{w.trigger.event}</span>
                        {w.description ? <span class="sub hide-phone">{w.description}</span> : null}
                      </td>
                      <td class="hide-phone"><code>{w.trigger.event}</code></td>
                      <td class="num hide-phone">{stepsOf(w).length}</td>
                      <td><EnabledBadge enabled={w.enabled} /></td>
                      <td class="hide-phone"><Time value={w.updatedAt} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Automations" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
    </Page>
  );
}
