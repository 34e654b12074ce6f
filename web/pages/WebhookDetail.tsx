import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, call, type Schemas } from '../api';
import {
  Button, ConfirmDialog, Icon, Loading, Page, Pager, SecretDialog, Spinner, Time, toast, useCursorPages,
} from '../components';
import { useLoad, useRecheck } from '../hooks';
import { useSession } from '../session';
import { DeliveryStatus, EndpointBadges } from './parts/webhooks';
import { NotLoaded } from './parts/NotLoaded';

/**
 * One webhook endpoint (issue 28): enable or disable it, rotate its signing secret (the new one shown once), delete
 * it, and its deliveries with status, response code, latency and time. A delivery can be sent again: the row shows
 * progress until its new attempt is recorded, then its new result.
 */
const PAGE_SIZE = 25;
type Hook = Schemas['Webhook'];
type Delivery = Schemas['WebhookDelivery'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const done = (d: Delivery) => d.status === 'SUCCEEDED' || d.status === 'FAILED';

function Deliveries({ hook }: { hook: Hook }) {
  // Delivering again is an effect on the endpoint's side: a member's (write), not a viewer's.
  const mayRedeliver = useSession().can('write');
  const pages = useCursorPages(hook.id);
  const list = useLoad(() => call(api.GET('/webhooks/{id}/deliveries', { params: { path: { id: hook.id }, query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })), [hook.id, pages.cursor]);
  const [rows, setRows] = useState<Delivery[]>([]);
  const [running, setRunning] = useState<Set<string>>(new Set());
  const alive = useRef(true);
  useEffect(() => () => { alive.current = false; }, []);
  useEffect(() => { if (list.data) setRows(list.data.items); }, [list.data]);

  // Deliveries still on their way are looked at again until they settle (a new endpoint's first events).
  const unsettled = rows.some((d) => !done(d)) && running.size === 0;
  useRecheck(list.reload, { waiting: unsettled, busy: list.loading, seen: rows, maxMs: 1500 });

  const redeliver = async (d: Delivery) => {
    setRunning((s) => new Set(s).add(d.id));
    try {
      await call(api.POST('/webhooks/{id}/deliveries/{deliveryId}/redeliver', { params: { path: { id: hook.id, deliveryId: d.id } } }));
      // No route answers one delivery: the page it is on is read again until its new attempt is in the log.
      const before = d.attemptLog.length;
      const deadline = Date.now() + 60_000;
      let latest: Delivery | undefined;
      while (alive.current && Date.now() < deadline) {
        await sleep(400);
        const page = await call(api.GET('/webhooks/{id}/deliveries', { params: { path: { id: hook.id }, query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } }));
        latest = page.items.find((x) => x.id === d.id);
        if (!latest || (latest.attemptLog.length > before && done(latest))) break;
      }
      if (!alive.current) return;
      if (latest) {
        const now = latest;
        setRows((rs) => rs.map((r) => (r.id === now.id ? now : r)));
        if (now.status === 'SUCCEEDED') toast(`Redelivered: ${now.lastStatusCode ?? 'answered'} in ${now.lastLatencyMs ?? 0} ms`);
        else if (now.status === 'FAILED') toast.error(`Redelivery failed: ${now.lastError ?? `status ${now.lastStatusCode ?? '?'}`}`);
        else toast('Redelivery queued: it is still waiting for its attempt');
      }
    } catch { /* the API wrapper showed it */ } finally {
      if (alive.current) setRunning((s) => { const n = new Set(s); n.delete(d.id); return n; });
    }
  };

  return (
    <section class="card" aria-labelledby="deliveries">
      <div class="card-header">
        <h2 id="deliveries">Deliveries</h2>
        <Button size="sm" variant="ghost" onClick={list.reload} aria-label="Refresh deliveries"><Icon name="refresh" />Refresh</Button>
      </div>
      {list.loading && !list.data ? <Loading what="Loading deliveries" /> : null}
      {list.data && !rows.length ? (
        <p class="card-body muted">No deliveries yet. When one of its event types happens{hook.enabled ? '' : ' (and the endpoint is enabled)'}, Herald POSTs it here and the attempt shows up in this list.</p>
      ) : null}
      {rows.length ? (
        <div class="table-flush">
          <table class="table deliveries">
            <caption class="visually-hidden">Deliveries to this endpoint</caption>
            <thead><tr>
              <th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Response</th><th scope="col" class="num hide-phone">Latency</th>
              <th scope="col" class="num hide-phone">Attempts</th><th scope="col" class="hide-phone">Time</th><th scope="col"><span class="visually-hidden">Actions</span></th>
            </tr></thead>
            <tbody>
              {rows.map((d) => {
                const busy = running.has(d.id);
                return (
                  <tr key={d.id} data-delivery={d.id} aria-busy={busy ? 'true' : undefined}>
                    <td class="truncate fill"><span class="mono">{d.type}</span><span class="sub show-phone"><Time value={d.deliveredAt ?? d.attemptLog[d.attemptLog.length - 1]?.at ?? d.createdAt} /></span></td>
                    <td>{busy ? <span class="row nowrap"><Spinner label="Redelivering" /><span class="muted">Redelivering…</span></span> : <DeliveryStatus status={d.status} />}</td>
                    <td class="num mono" title={d.lastError ?? undefined}>{d.lastStatusCode ?? (d.lastError ? 'error' : '—')}</td>
                    <td class="num hide-phone">{d.lastLatencyMs !== null ? `${d.lastLatencyMs.toLocaleString()} ms` : '—'}</td>
                    <td class="num hide-phone">{d.attempts}</td>
                    <td class="hide-phone"><Time value={d.deliveredAt ?? d.attemptLog[d.attemptLog.length - 1]?.at ?? d.createdAt} /></td>
                    <td class="cell-actions">{mayRedeliver ? <Button size="sm" busy={busy} onClick={() => redeliver(d)} aria-label={`Redeliver ${d.type} of ${d.createdAt}`}>Redeliver</Button> : null}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
      {rows.length && (pages.number > 1 || list.data?.nextCursor) ? <div class="card-body"><Pager pages={pages} shown={rows.length} nextCursor={list.data?.nextCursor} noun="Deliveries" pageSize={PAGE_SIZE} /></div> : null}
    </section>
  );
}

export default function WebhookDetail() {
  const { params } = useRoute();
  const { route } = useLocation();
  const { can } = useSession();
  const admin = can('admin');
  const id = params.id ?? '';
  const loaded = useLoad(() => call(api.GET('/webhooks/{id}', { params: { path: { id } } }), { expect: [404] }), [id]);
  const [hook, setHook] = useState<Hook | undefined>(undefined);
  const [toggling, setToggling] = useState(false);
  const [asking, setAsking] = useState<'rotate' | 'delete' | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  useEffect(() => { setHook(loaded.data); }, [loaded.data]);

  const breadcrumb = <a href="/app/webhooks"><Icon name="arrowLeft" size={14} />Webhooks</a>;
  if (loaded.error) {
    return <NotLoaded error={loaded.error} thing="endpoint" title="Endpoint" icon="webhooks" breadcrumb={breadcrumb} back={{ href: '/app/webhooks', label: 'Back to webhooks' }} />;
  }
  if (!hook) return <Page title="Webhook endpoint" breadcrumb={breadcrumb}><Loading what="Loading the endpoint" /></Page>;

  const toggle = async () => {
    setToggling(true);
    try {
      const saved = await call(api.PATCH('/webhooks/{id}', { params: { path: { id } }, body: { enabled: !hook.enabled } }));
      setHook(saved);
      toast(saved.enabled ? 'Endpoint enabled' : 'Endpoint disabled: new events wait until it is enabled again');
    } catch { /* the API wrapper showed it */ } finally {
      setToggling(false);
    }
  };

  return (
    <Page title="Webhook endpoint" breadcrumb={breadcrumb} lede={<span class="webhook-url mono">{hook.url}</span>}
      actions={admin ? <>
        <Button busy={toggling} onClick={toggle}>{hook.enabled ? 'Disable' : 'Enable'}</Button>
        <Button onClick={() => setAsking('rotate')}><Icon name="key" />Rotate secret</Button>
        <Button variant="danger" onClick={() => setAsking('delete')}><Icon name="trash" />Delete</Button>
      </> : null}>
      <div class="stack">
        <section class="card" aria-labelledby="endpoint-details">
          <div class="card-header"><h2 id="endpoint-details">Endpoint</h2><EndpointBadges hook={hook} /></div>
          <dl class="kv card-body">
            <dt>URL</dt><dd class="mono">{hook.url}</dd>
            <dt>Event types</dt><dd><span class="chips">{hook.events.map((e) => <code key={e} class="chip">{e}</code>)}</span></dd>
            {hook.status === 'failing' ? <><dt>Failing since</dt><dd><Time value={hook.failingSince} /></dd><dt>Last error</dt><dd class="mono">{hook.lastError ?? '—'}</dd></> : null}
            <dt>Created</dt><dd><Time value={hook.createdAt} /></dd>
            <dt>Signing</dt><dd>Standard Webhooks: <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code> (HMAC-SHA256 with the <code>whsec_</code> secret)</dd>
          </dl>
        </section>
        <Deliveries hook={hook} />
      </div>
      {admin ? (
        <>
          <ConfirmDialog open={asking === 'rotate'} title="Rotate the signing secret?" confirm="Rotate secret" onClose={() => setAsking(null)}
            onConfirm={async () => {
              const rotated = await call(api.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } } }));
              setHook(rotated);
              setSecret(rotated.secret);
            }}>
            Herald signs every request with a new secret from now on, retries of older events included. The current secret stops working at once: update your receiver with the new one.
          </ConfirmDialog>
          <ConfirmDialog open={asking === 'delete'} title={`Delete the endpoint ${hook.url}?`} confirm="Delete endpoint" danger onClose={() => setAsking(null)}
            onConfirm={async () => {
              await call(api.DELETE('/webhooks/{id}', { params: { path: { id } } }));
              toast('Endpoint deleted');
              route('/app/webhooks');
            }}>
            Herald stops sending events to it, and the deliveries still waiting for it are dropped. This cannot be undone.
          </ConfirmDialog>
          {secret ? (
            <SecretDialog open title="The new signing secret" what="signing secret" secret={secret} onClose={() => { setSecret(null); toast('Secret rotated'); }}>
              <p class="muted">Requests are signed with it from now on.</p>
            </SecretDialog>
          ) : null}
        </>
      ) : null}
    </Page>
  );
}
