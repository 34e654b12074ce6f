import { useLocation } from 'preact-iso';
import { api, call } from '../api';
import { Button, EmptyState, Icon, LinkButton, Loading, Page, Pager, SelectField, Time, useCursorPages } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { TemplateTypeBadge, TYPE_OPTIONS, type TemplateType } from './parts/templates';

/**
 * Templates (issue 29): the project's templates, newest first, filtered by type (in the URL, so a view can be linked
 * and reloaded), by cursor pages. Each opens its editor (TemplateEditor), where it is previewed and tested.
 */
const PAGE_SIZE = 50;

const FILTERS: [string, string][] = [['', 'All types'], ...TYPE_OPTIONS];

export default function Templates() {
  const { query, route } = useLocation();
  const { can } = useSession();
  const type = TYPE_OPTIONS.some(([t]) => t === query.type) ? (query.type as TemplateType) : '';
  const pages = useCursorPages(type);
  const list = useLoad(() => call(api.GET('/templates', { params: { query: {
    limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}), ...(type ? { type } : {}),
  } } })), [type, pages.cursor]);

  const items = list.data?.items ?? [];
  const newTemplate = can('write') ? <LinkButton variant="primary" href="/app/templates/new"><Icon name="plus" />New template</LinkButton> : null;
  const endpoint = `${location.origin}/templates`;

  return (
    <Page title="Templates" lede="The messages you send again and again: Liquid variables, HTML or Markdown, previewed before they go." actions={newTemplate}>
      <div class="stack templates">
        <div class="toolbar">
          <SelectField label="Type" value={type} onValue={(v) => route(`/app/templates${v ? `?type=${v}` : ''}`, true)} options={FILTERS} />
        </div>
        {list.loading && !list.data ? <Loading what="Loading templates" /> : null}
        {list.error && !list.data ? (
          <EmptyState icon="alert" title="The templates did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>
        ) : null}
        {list.data && !items.length && !type && pages.number === 1 ? (
          <EmptyState icon="templates" title="No templates yet" actions={newTemplate}
            code={`curl ${endpoint} \\\n  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"name": "Welcome", "subject": "Welcome, {{ data.firstName }}", "body": "<p>Hello {{ data.firstName }}</p>"}'`}>
            Write a message once, with Liquid variables, then send it by id from your app: <code>"template": "&lt;id&gt;"</code> in POST /v1/send.
          </EmptyState>
        ) : null}
        {list.data && !items.length && (type || pages.number > 1) ? (
          <EmptyState icon="search" title={`No ${type === 'MARKETING' ? 'marketing' : 'transactional'} templates`}
            actions={<Button onClick={() => route('/app/templates', true)}>Show all types</Button>}>
            {type === 'MARKETING' ? 'Marketing templates go to subscribed contacts only, with an unsubscribe link.' : 'Transactional templates go to every recipient: receipts, password resets, alerts.'}
          </EmptyState>
        ) : null}
        {items.length ? (
          <>
            <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
              <table class="table">
                <caption class="visually-hidden">Templates{type ? `, ${type.toLowerCase()}` : ''}</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col" class="hide-phone">Subject</th><th scope="col" class="hide-phone">Updated</th></tr></thead>
                <tbody>
                  {items.map((t) => (
                    <tr key={t.id}>
                      <td class="truncate fill">
                        <a class="row-link" href={`/app/templates/${t.id}`}>{t.name}</a>
                        <span class="sub truncate-line hide-phone">{t.description || [t.bodyType === 'markdown' ? 'Markdown' : 'HTML', t.from ? `from ${t.from}` : ''].filter(Boolean).join(' · ')}</span>
                        <span class="sub truncate-line show-phone">{t.subject} · <Time value={t.updatedAt} relative /></span>
                      </td>
                      <td><TemplateTypeBadge type={t.type} /></td>
                      <td class="truncate hide-phone">{t.subject}</td>
                      <td class="hide-phone"><Time value={t.updatedAt} relative /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Templates" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
    </Page>
  );
}
