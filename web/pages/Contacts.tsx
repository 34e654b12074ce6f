import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import {
  Button, Checkbox, Dialog, EmptyState, FormError, Icon, Loading, Page, Pager, SearchField, SelectField, TextAreaField, TextField, Time, toast, useCursorPages,
} from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { parseData, SubscriptionBadge } from './parts/contacts';
import { ExportDialog } from './parts/ExportDialog';
import { ImportDialog } from './parts/ImportDialog';

/**
 * Contacts (issue 28): search by address (`/` focuses it), filter by subscription, cursor pages (never an offset:
 * page 1,000 costs what page 1 does at a million contacts), and a new contact with its data as JSON. A contact's own
 * page (ContactDetail) edits it. The search and the filter live in the URL, so a view can be linked and reloaded.
 */
const PAGE_SIZE = 50;

type Contact = Schemas['Contact'];

const FILTERS: [string, string][] = [['', 'All contacts'], ['true', 'Subscribed'], ['false', 'Unsubscribed']];

/** The first few keys of a contact's data, as a hint of what it holds. */
function dataSummary(data: Contact['data']): string {
  const keys = Object.keys(data);
  if (!keys.length) return '';
  const shown = keys.slice(0, 3).map((k) => {
    const v = data[k];
    return `${k}: ${typeof v === 'object' && v !== null ? '…' : String(v)}`;
  });
  return shown.join(' · ') + (keys.length > 3 ? ` +${keys.length - 3}` : '');
}

function NewContact({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { route } = useLocation();
  const [email, setEmail] = useState('');
  const [subscribed, setSubscribed] = useState(true);
  const [data, setData] = useState('{\n  \n}');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (open) { setEmail(''); setSubscribed(true); setData('{\n  \n}'); setFields({}); setError(''); }
  }, [open]);

  const save = async () => {
    const parsed = parseData(data);
    if ('error' in parsed) { setFields({ data: parsed.error }); return; }
    setBusy(true);
    setFields({});
    setError('');
    try {
      const saved = await call(api.POST('/contacts', { body: { email: email.trim(), subscribed, data: parsed.value } }), { form: true });
      toast(saved._meta.isNew ? `Contact ${saved.email} created` : `${saved.email} was already a contact: updated`);
      onClose();
      route(`/app/contacts/${saved.id}`);
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      setError(Object.keys(f).length ? '' : err instanceof Error ? err.message : 'The contact was not saved.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title="New contact" onClose={onClose} onSubmit={save} wide actions={<>
      <Button onClick={onClose} disabled={busy}>Cancel</Button>
      <Button type="submit" variant="primary" busy={busy}>Create contact</Button>
    </>}>
      <FormError>{error}</FormError>
      <TextField label="Email" type="email" autoComplete="off" required value={email} onValue={setEmail} error={fields.email} placeholder="ada@example.org" />
      <Checkbox label="Subscribed" hint="Receives campaigns and automations. Transactional email is sent either way." checked={subscribed} onChecked={setSubscribed} />
      <TextAreaField label="Data" mono rows={6} value={data} onValue={setData} error={fields.data}
        hint={<>A JSON object, e.g. <code>{'{"firstName": "Ada", "plan": "pro"}'}</code>: templates and segments read it.</>} />
    </Dialog>
  );
}

export default function Contacts() {
  const { query, route } = useLocation();
  const { can } = useSession();
  const search = query.search ?? '';
  const subscribed = query.subscribed === 'true' || query.subscribed === 'false' ? query.subscribed : '';
  const [typed, setTyped] = useState(search);
  const [creating, setCreating] = useState(false);
  const [exporting, setExporting] = useState(false);
  const [importing, setImporting] = useState(false);
  const pages = useCursorPages(`${search}|${subscribed}`);

  const setQuery = (next: { search?: string; subscribed?: string }) => {
    const q = new URLSearchParams();
    const s = next.search ?? search;
    const sub = next.subscribed ?? subscribed;
    if (s) q.set('search', s);
    if (sub) q.set('subscribed', sub);
    const qs = q.toString();
    route(`/app/contacts${qs ? `?${qs}` : ''}`, true);
  };

  // Typing searches after a pause (the URL, and so the list, follows the box).
  useEffect(() => {
    if (typed.trim() === search) return undefined;
    const timer = setTimeout(() => setQuery({ search: typed.trim() }), 250);
    return () => clearTimeout(timer);
  }, [typed]);
  useEffect(() => { if (search !== typed.trim()) setTyped(search); }, [search]);

  const list = useLoad(() => call(api.GET('/contacts', { params: { query: {
    limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}), ...(search ? { search } : {}), ...(subscribed ? { subscribed: subscribed === 'true' } : {}),
  } } })), [search, subscribed, pages.cursor]);

  const filtered = Boolean(search || subscribed);
  const items = list.data?.items ?? [];
  const endpoint = `${location.origin}/contacts`;

  return (
    <Page title="Contacts" lede="The people you send to: their subscription and the data your templates and segments use."
      actions={<>
        {can('write') ? <Button onClick={() => setImporting(true)}><Icon name="upload" />Import</Button> : null}
        <Button onClick={() => setExporting(true)}><Icon name="download" />Export</Button>
        {can('write') ? <Button variant="primary" onClick={() => setCreating(true)}><Icon name="plus" />New contact</Button> : null}
      </>}>
      <div class="stack contacts">
        <div class="toolbar">
          <div class="grow"><SearchField label="Search by email" value={typed} onValue={setTyped} autoComplete="off" spellcheck={false} /></div>
          <SelectField label="Subscription" value={subscribed} onValue={(v) => setQuery({ subscribed: v })} options={FILTERS} />
        </div>
        {list.loading && !list.data ? <Loading what="Loading contacts" /> : null}
        {list.error && !list.data ? (
          <EmptyState icon="alert" title="The contacts did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>
        ) : null}
        {list.data && !items.length && !filtered && pages.number === 1 ? (
          <EmptyState icon="contacts" title="No contacts yet"
            code={`curl ${endpoint} \\\n  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"email": "ada@example.org", "data": {"firstName": "Ada"}}'`}
            actions={can('write') ? <Button variant="primary" onClick={() => setCreating(true)}><Icon name="plus" />New contact</Button> : null}>
            A contact is made when you send to an address, when your app adds one through the API, or here.
          </EmptyState>
        ) : null}
        {list.data && !items.length && (filtered || pages.number > 1) ? (
          <EmptyState icon="search" title="No contact matches"
            actions={<Button onClick={() => { setTyped(''); route('/app/contacts', true); }}>Clear the search and filter</Button>}>
            {search ? <>No address contains “{search}”{subscribed ? ` among the ${subscribed === 'true' ? 'subscribed' : 'unsubscribed'}` : ''}. The search matches part of an address, in any case.</> : 'No contact has this subscription.'}
          </EmptyState>
        ) : null}
        {items.length ? (
          <>
            <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
              <table class="table">
                <caption class="visually-hidden">Contacts{search ? ` matching ${search}` : ''}</caption>
                <thead><tr><th scope="col">Email</th><th scope="col">Subscription</th><th scope="col" class="hide-phone">Data</th><th scope="col" class="hide-phone">Added</th></tr></thead>
                <tbody>
                  {items.map((c) => (
                    <tr key={c.id}>
                      <td class="truncate fill"><a class="row-link" href={`/app/contacts/${c.id}`}>{c.email}</a><span class="sub show-phone">Added <Time value={c.createdAt} /></span></td>
                      <td><SubscriptionBadge subscribed={c.subscribed} /></td>
                      <td class="truncate muted mono hide-phone">{dataSummary(c.data)}</td>
                      <td class="hide-phone"><Time value={c.createdAt} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Contacts" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
      {can('write') ? <NewContact open={creating} onClose={() => setCreating(false)} /> : null}
      {/* Mounted only while open: its look-ups (segments, data keys) are made when someone exports. */}
      {exporting ? <ExportDialog onClose={() => setExporting(false)} /> : null}
      {can('write') ? <ImportDialog open={importing} onClose={() => setImporting(false)} onImported={list.reload} /> : null}
    </Page>
  );
}
