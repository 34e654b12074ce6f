import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiFailure, call } from '../api';
import { Button, EmptyState, FormError, Icon, Loading, Page, TextField, Time, toast } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { DomainStatus, recordsFound } from './parts/domain';

/**
 * Domains: the project's sending domains with their status and last DNS check, and (admins) adding one: POST /domains,
 * its 422 under the field, then the new domain's page with the records to publish (DomainDetail.tsx).
 */
const PAGE_SIZE = 50;

function AddDomain({ onCancel }: { onCancel: () => void }) {
  const { route } = useLocation();
  const [domain, setDomain] = useState('');
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<ApiFailure | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFailure(null);
    try {
      const added = await call(api.POST('/domains', { body: { domain } }), { form: true });
      toast(`${added.domain} added: publish its records`);
      route(`/app/domains/${added.id}`);
    } catch (err) {
      if (err instanceof ApiFailure) setFailure(err);
      setBusy(false);
    }
  };
  const fieldError = failure?.fields.domain ?? (failure?.status === 409 ? failure.message : undefined);
  return (
    <form class="card add-domain" onSubmit={submit} aria-label="Add a domain">
      <div class="card-header"><h2>Add a domain</h2></div>
      <div class="card-body form">
        <TextField label="Domain" name="domain" value={domain} onValue={setDomain} error={fieldError} autoFocus autoComplete="off" spellcheck={false}
          placeholder="mail.example.com" hint="The domain in your From addresses. A subdomain such as mail.example.com keeps its reputation apart from your team's own mail." />
        <FormError>{failure && !fieldError ? failure.message : null}</FormError>
        <div class="row">
          <Button type="submit" variant="primary" busy={busy}>Add domain</Button>
          <Button onClick={onCancel} disabled={busy}>Cancel</Button>
        </div>
      </div>
    </form>
  );
}

export default function Domains() {
  const { can } = useSession();
  const { query, route } = useLocation();
  const cursor = query.cursor || undefined;
  const [adding, setAdding] = useState(query.add === '1');
  const [previous, setPrevious] = useState<(string | undefined)[]>([]);
  const list = useLoad(() => call(api.GET('/domains', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })), [cursor]);
  const admin = can('admin');
  const go = (next: string | undefined) => route(next ? `/app/domains?cursor=${encodeURIComponent(next)}` : '/app/domains');

  const addButton = admin && !adding
    ? <Button variant="primary" onClick={() => setAdding(true)}><Icon name="plus" />Add domain</Button>
    : null;
  const page = list.data;
  return (
    <Page title="Domains" lede="The domains you send from. Herald signs their mail with DKIM once their records are in DNS." actions={page && page.items.length ? addButton : null}>
      <div class="stack">
        {adding ? <AddDomain onCancel={() => setAdding(false)} /> : null}
        {list.loading && !page ? <Loading what="Loading domains" /> : null}
        {list.error && !page ? (
          <EmptyState icon="alert" title="The domains did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>
        ) : null}
        {page && page.items.length === 0 && !cursor && !adding ? (
          <EmptyState icon="domains" title="No sending domain yet" actions={addButton}
            code={`curl -X POST ${location.origin}/domains \\\n  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"domain": "mail.example.com"}'`}>
            {admin
              ? 'Add the domain you send from: Herald gives you its DNS records to publish, then checks them. Or add it from a script:'
              : 'An admin of the project adds the domains it sends from. From a script with a secret key:'}
          </EmptyState>
        ) : null}
        {page && page.items.length > 0 ? (
          <>
            <div class="table-wrap">
              <table class="table domains-table">
                <thead>
                  <tr><th>Domain</th><th>Status</th><th>Records</th><th>Last check</th><th>Added</th></tr>
                </thead>
                <tbody>
                  {page.items.map((d) => (
                    <tr key={d.id}>
                      <td><a class="row-link" href={`/app/domains/${d.id}`}>{d.domain}</a></td>
                      <td><DomainStatus status={d.status} /></td>
                      <td class="muted">{recordsFound(d)}</td>
                      <td>{d.checkedAt ? <Time value={d.checkedAt} relative /> : <span class="muted">Never</span>}</td>
                      <td><Time value={d.createdAt} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {cursor || page.nextCursor ? (
              <div class="pager">
                <span>{page.total === 1 ? '1 domain' : `${page.total} domains`}</span>
                <div class="pager-buttons">
                  <Button size="sm" disabled={!cursor} onClick={() => { const back = previous.slice(0, -1); const to = previous[previous.length - 1]; setPrevious(back); go(to); }}>Previous</Button>
                  <Button size="sm" disabled={!page.nextCursor} onClick={() => { setPrevious([...previous, cursor]); go(page.nextCursor ?? undefined); }}>Next</Button>
                </div>
              </div>
            ) : null}
          </>
        ) : null}
      </div>
    </Page>
  );
}
