import { useEffect, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import {
  Button, ConfirmDialog, CopyButton, Dialog, EmptyState, FormError, Icon, LinkButton, Loading, Page, Pager, SelectField, Tabs, TextField, Time, toast, useCursorPages,
} from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { DomainStatus, RecordStatus } from './parts/domain';
import { AuthBadges, mailbox } from './parts/inbound';

/**
 * Inbound mail (issue 31): the messages received (From, To, Subject, their SPF/DKIM/DMARC results; a message's own page
 * has its body and files), the routes that decide what becomes of an address's mail (admins create, edit and delete
 * them), and the domains that receive, with the DNS records to publish and "Verify now". One page, three tabs that
 * are links (/app/inbound, /app/inbound/routes, /app/inbound/domains).
 */
const PAGE_SIZE = 50;
type Route = Schemas['InboundRoute'];
type Domain = Schemas['InboundDomain'];

const ACTIONS: [Route['action'], string][] = [['webhook', 'Deliver to a webhook'], ['store', 'Store only'], ['reject', 'Reject (550)']];
const actionWords = (a: Route['action']) => ACTIONS.find(([v]) => v === a)![1];

function Messages() {
  const pages = useCursorPages();
  const list = useLoad(() => call(api.GET('/inbound', { params: { query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })), [pages.cursor]);
  const items = list.data?.items ?? [];
  if (list.loading && !list.data) return <Loading what="Loading received mail" />;
  if (list.error && !list.data) return <EmptyState icon="alert" title="Received mail did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>;
  if (!items.length) {
    return (
      <EmptyState icon="inbox" title="No mail received yet" actions={<LinkButton href="/app/inbound/domains">Set up a domain</LinkButton>}>
        Mail sent to an address a route of a verified inbound domain takes shows here, with its authentication results.
      </EmptyState>
    );
  }
  return (
    <>
      <div class="table-wrap">
        <table class="table">
          <caption class="visually-hidden">Received mail</caption>
          <thead><tr><th scope="col">From</th><th scope="col">Subject</th><th scope="col" class="hide-phone">To</th><th scope="col" class="hide-phone">Authentication</th><th scope="col">Received</th></tr></thead>
          <tbody>
            {items.map((m) => (
              <tr key={m.id}>
                <td class="truncate">{mailbox(m.from) || <span class="muted">{m.mailFrom || 'No sender'}</span>}</td>
                <td class="truncate fill"><a class="row-link" href={`/app/inbound/messages/${m.id}`}>{m.subject || <span class="muted">(no subject)</span>}</a></td>
                <td class="truncate mono hide-phone">{m.recipient}</td>
                <td class="hide-phone"><AuthBadges auth={m.auth} /></td>
                <td><Time value={m.createdAt} relative /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Messages" pageSize={PAGE_SIZE} />
    </>
  );
}

/** A route's form: new (no `route`) or an edit of one. */
function RouteDialog({ open, route, domains, onClose, onSaved }: { open: boolean; route: Route | null; domains: Domain[]; onClose: () => void; onSaved: () => void }) {
  const [match, setMatch] = useState('');
  const [priority, setPriority] = useState('100');
  const [action, setAction] = useState<Route['action']>('webhook');
  const [endpointId, setEndpointId] = useState('');
  const [rejectMessage, setRejectMessage] = useState('');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const endpoints = useLoad(() => (open ? call(api.GET('/webhooks', { params: { query: { limit: 100 } } })) : Promise.resolve(null)), [open]);
  useEffect(() => {
    if (!open) return;
    setMatch(route?.match ?? (domains[0] ? `support@${domains[0].domain}` : ''));
    setPriority(String(route?.priority ?? 100));
    setAction(route?.action ?? 'webhook');
    setEndpointId(route?.endpointId ?? '');
    setRejectMessage(route?.rejectMessage ?? '');
    setFields({});
    setError('');
  }, [open, route]);
  const hooks = endpoints.data?.items ?? [];
  useEffect(() => { if (action === 'webhook' && !endpointId && hooks[0]) setEndpointId(hooks[0].id); }, [action, hooks.length]);

  const save = async () => {
    setBusy(true);
    setFields({});
    setError('');
    const body = { match: match.trim(), priority: Number(priority), action, ...(action === 'webhook' ? { endpointId } : {}), ...(action === 'reject' ? { rejectMessage: rejectMessage.trim() || undefined } : {}) };
    try {
      if (route) await call(api.PATCH('/inbound/routes/{id}', { params: { path: { id: route.id } }, body }), { form: true });
      else await call(api.POST('/inbound/routes', { body }), { form: true });
      onSaved();
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      setError(Object.keys(f).length ? '' : err instanceof Error ? err.message : 'The route was not saved.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title={route ? 'Edit route' : 'New route'} onClose={onClose} onSubmit={save} wide actions={<>
      <Button onClick={onClose} disabled={busy}>Cancel</Button>
      <Button type="submit" variant="primary" busy={busy}>{route ? 'Save route' : 'Create route'}</Button>
    </>}>
      <FormError>{error}</FormError>
      <TextField label="Match" required spellcheck={false} autoComplete="off" value={match} onValue={setMatch} error={fields.match} class="input mono"
        hint={<>An address (<code>support@in.example.com</code>), a local part with any tag (<code>reply+*@in.example.com</code>) or the whole domain (<code>*@in.example.com</code>).</>} />
      <TextField label="Priority" type="number" inputMode="numeric" min={0} required value={priority} onValue={setPriority} error={fields.priority} hint="Lower first; the first route that matches decides." />
      <SelectField label="Action" value={action} onValue={(v) => setAction(v as Route['action'])} options={ACTIONS} error={fields.action} />
      {action === 'webhook' ? (
        hooks.length || endpoints.loading
          ? <SelectField label="Webhook endpoint" value={endpointId} onValue={setEndpointId} options={hooks.map((h) => [h.id, h.url])} error={fields.endpointId}
            hint="Gets each message as an email.received event, signed." />
          : <p class="form-note">No webhook endpoint yet: <a href="/app/webhooks">add one</a> first, or store the mail only.</p>
      ) : null}
      {action === 'reject' ? <TextField label="Reply to the sender" value={rejectMessage} onValue={setRejectMessage} error={fields.rejectMessage} placeholder="This address does not take mail" hint="Sent with the 550 refusal at RCPT TO." /> : null}
    </Dialog>
  );
}

function Routes() {
  const { can } = useSession();
  const admin = can('admin');
  const pages = useCursorPages();
  const [editing, setEditing] = useState<Route | 'new' | null>(null);
  const [removing, setRemoving] = useState<Route | null>(null);
  const list = useLoad(() => call(api.GET('/inbound/routes', { params: { query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })), [pages.cursor]);
  const domains = useLoad(() => call(api.GET('/inbound/domains', { params: { query: { limit: 100 } } })), []);
  // In the order the listener tries them: the API pages by (priority, id).
  const items = list.data?.items ?? [];
  const newButton = admin && domains.data?.items.length ? <Button variant="primary" onClick={() => setEditing('new')}><Icon name="plus" />New route</Button> : null;

  const remove = async () => {
    await call(api.DELETE('/inbound/routes/{id}', { params: { path: { id: removing!.id } } }));
    toast(`Route ${removing!.match} deleted`);
    list.reload();
  };

  let body;
  if (list.loading && !list.data) body = <Loading what="Loading routes" />;
  else if (list.error && !list.data) body = <EmptyState icon="alert" title="The routes did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>;
  else if (!items.length) {
    body = (
      <EmptyState icon="webhooks" title="No routes yet" actions={newButton ?? (admin ? <LinkButton href="/app/inbound/domains">Add a domain</LinkButton> : null)}>
        A route decides what becomes of an address's mail: delivered to your app's webhook, stored, or refused. Mail no route takes is refused.
        {admin ? '' : ' An admin of the project can add one.'}
      </EmptyState>
    );
  } else {
    body = (
      <>
        {newButton ? <div class="toolbar inbound-toolbar">{newButton}</div> : null}
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Inbound routes</caption>
            <thead><tr><th scope="col">Match</th><th scope="col">Action</th><th scope="col" class="hide-phone">Priority</th>{admin ? <th scope="col"><span class="visually-hidden">Changes</span></th> : null}</tr></thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.id}>
                  <td class="truncate fill mono">{r.match}</td>
                  <td>{actionWords(r.action)}{r.action === 'webhook' && !r.endpointId ? <span class="sub">Its endpoint was deleted: stores only</span> : null}</td>
                  <td class="hide-phone">{r.priority}</td>
                  {admin ? (
                    <td class="row-actions">
                      <Button size="sm" variant="ghost" onClick={() => setEditing(r)} aria-label={`Edit the route ${r.match}`}>Edit</Button>
                      <Button size="sm" variant="ghost" onClick={() => setRemoving(r)} aria-label={`Delete the route ${r.match}`}><Icon name="trash" /></Button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Routes" pageSize={PAGE_SIZE} />
      </>
    );
  }
  return (
    <>
      {body}
      {admin ? (
        <RouteDialog open={editing !== null} route={editing === 'new' ? null : editing} domains={domains.data?.items ?? []} onClose={() => setEditing(null)}
          onSaved={() => { toast(editing === 'new' ? 'Route created' : 'Route saved'); setEditing(null); list.reload(); }} />
      ) : null}
      <ConfirmDialog open={removing !== null} title={`Delete the route ${removing?.match ?? ''}?`} confirm="Delete route" danger onConfirm={remove} onClose={() => setRemoving(null)}>
        Mail to its addresses goes to the next route that matches, or is refused when none does. The messages it received stay.
      </ConfirmDialog>
    </>
  );
}

function DomainCard({ domain, admin, onChanged }: { domain: Domain; admin: boolean; onChanged: (d: Domain | null) => void }) {
  const [verifying, setVerifying] = useState(false);
  const [asking, setAsking] = useState(false);
  const verify = async () => {
    setVerifying(true);
    try {
      const after = await call(api.POST('/inbound/domains/{id}/verify', { params: { path: { id: domain.id } } }));
      onChanged(after);
      (after.status === 'VERIFIED' ? toast : toast.error)(after.status === 'VERIFIED' ? `${after.domain} is verified: it takes mail` : `${after.domain} is not verified: a record was not found`);
    } catch {
      // the API wrapper showed the failure
    } finally {
      setVerifying(false);
    }
  };
  const remove = async () => {
    await call(api.DELETE('/inbound/domains/{id}', { params: { path: { id: domain.id } } }));
    toast(`${domain.domain} removed`);
    onChanged(null);
  };
  return (
    <section class="card" aria-labelledby={`domain-${domain.id}`}>
      <div class="card-header">
        <h2 id={`domain-${domain.id}`} class="inbound-domain-title"><span class="mono">{domain.domain}</span><DomainStatus status={domain.status} /></h2>
        {admin ? (
          <span class="inbound-domain-actions">
            <Button size="sm" variant="secondary" busy={verifying} onClick={verify}>{verifying ? 'Checking DNS…' : <><Icon name="refresh" />Verify now</>}</Button>
            <Button size="sm" variant="ghost" onClick={() => setAsking(true)} aria-label={`Remove ${domain.domain}`}><Icon name="trash" /></Button>
          </span>
        ) : null}
      </div>
      <div class="records-wrap">
        <table class="table records-table">
          <thead><tr><th>Type</th><th>Host</th><th>Value</th><th>Status</th></tr></thead>
          <tbody>
            {domain.records.map((r) => (
              <tr key={r.type}>
                <td data-label="Type"><span class="record-type">{r.type}</span><span class="sub">{r.type === 'MX' ? 'Mail reaches Herald' : 'Proves the project owns it'}</span></td>
                <td data-label="Host"><div class="record-cell"><code class="record-host">{r.name}</code><CopyButton value={r.name} label={`Copy the host of the ${r.type} record of ${domain.domain}`} /></div></td>
                <td data-label="Value"><div class="record-cell"><code class="record-value">{r.value}</code><CopyButton value={r.value} label={`Copy the value of the ${r.type} record of ${domain.domain}`} /></div></td>
                <td data-label="Status">{verifying ? <span class="muted small">Checking…</span> : <RecordStatus status={r.status} />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="card-body muted small">Last checked {domain.checkedAt ? <Time value={domain.checkedAt} relative /> : 'never'}{domain.verifiedAt ? <>; verified <Time value={domain.verifiedAt} /></> : null}</p>
      <ConfirmDialog open={asking} title={`Remove ${domain.domain}?`} confirm="Remove domain" danger onConfirm={remove} onClose={() => setAsking(false)}>
        Its routes go with it and its mail is refused from then on. The messages already received stay until their retention ends.
      </ConfirmDialog>
    </section>
  );
}

function Domains() {
  const { can } = useSession();
  const admin = can('admin');
  const [adding, setAdding] = useState(false);
  const [name, setName] = useState('');
  const [fieldError, setFieldError] = useState('');
  const [busy, setBusy] = useState(false);
  const list = useLoad(() => call(api.GET('/inbound/domains', { params: { query: { limit: 100 } } })), []);
  const [changed, setChanged] = useState<Record<string, Domain | null>>({});
  const items = (list.data?.items ?? []).map((d) => (d.id in changed ? changed[d.id] : d)).filter((d): d is Domain => d !== null && d !== undefined);
  const addButton = admin ? <Button variant="primary" onClick={() => { setName(''); setFieldError(''); setAdding(true); }}><Icon name="plus" />Add domain</Button> : null;

  const add = async () => {
    setBusy(true);
    setFieldError('');
    try {
      await call(api.POST('/inbound/domains', { body: { domain: name.trim() } }), { form: true });
      setAdding(false);
      toast(`${name.trim()} added: publish its records, then verify`);
      setChanged({});
      list.reload();
    } catch (err) {
      setFieldError(err instanceof ApiFailure ? err.fields.domain ?? err.message : 'The domain was not added.');
    } finally {
      setBusy(false);
    }
  };

  let body;
  if (list.loading && !list.data) body = <Loading what="Loading inbound domains" />;
  else if (list.error && !list.data) body = <EmptyState icon="alert" title="The domains did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState>;
  else if (!items.length) {
    body = (
      <EmptyState icon="domains" title="No inbound domains yet" actions={addButton}>
        Add a domain to receive mail at, usually a subdomain such as in.example.com. Herald shows the two records to publish: an MX that
        brings its mail here, and a TXT record that proves your project owns it.
      </EmptyState>
    );
  } else {
    body = (
      <>
        {addButton ? <div class="toolbar inbound-toolbar">{addButton}</div> : null}
        {items.map((d) => <DomainCard key={d.id} domain={d} admin={admin} onChanged={(after) => setChanged((c) => ({ ...c, [d.id]: after }))} />)}
      </>
    );
  }
  return (
    <div class="stack">
      {body}
      {admin ? (
        <Dialog open={adding} title="Add an inbound domain" onClose={() => setAdding(false)} onSubmit={add} actions={<>
          <Button onClick={() => setAdding(false)} disabled={busy}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy}>Add domain</Button>
        </>}>
          <TextField label="Domain" required spellcheck={false} autoComplete="off" value={name} onValue={setName} error={fieldError} placeholder="in.example.com"
            hint="A subdomain of your own is best: its MX then points at Herald without touching your people's mail." />
        </Dialog>
      ) : null}
    </div>
  );
}

export default function Inbound() {
  const { params } = useRoute();
  const tab = params.tab === 'routes' || params.tab === 'domains' ? params.tab : 'messages';
  return (
    <Page title="Inbound" lede="Mail sent to your app: routed by address, authenticated, stored, and delivered to your webhooks.">
      <div class="stack">
        <Tabs label="Inbound" current={tab} tabs={[
          { id: 'messages', href: '/app/inbound', label: 'Received' },
          { id: 'routes', href: '/app/inbound/routes', label: 'Routes' },
          { id: 'domains', href: '/app/inbound/domains', label: 'Domains' },
        ]} />
        {tab === 'messages' ? <Messages /> : tab === 'routes' ? <Routes /> : <Domains />}
      </div>
    </Page>
  );
}
