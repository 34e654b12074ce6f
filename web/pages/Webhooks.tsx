import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import {
  Button, Checkbox, Dialog, EmptyState, FormError, Icon, Loading, Page, Pager, SecretDialog, TextField, Time, toast, useCursorPages,
} from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { EndpointBadges, EventTypePicker } from './parts/webhooks';
import type { WebhookEventType } from '../../webhooks/types';

/**
 * Webhooks (issue 28): the project's endpoints, and a new one with its URL and event types. Its signing secret is
 * shown once, right after it is made. Creating, changing and deleting endpoints is for admins (the route table's
 * permission); an endpoint's page (WebhookDetail) has its deliveries.
 */
const PAGE_SIZE = 50;

function NewWebhook({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (hook: Schemas['WebhookWithSecret']) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>([]);
  const [enabled, setEnabled] = useState(true);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (open) { setUrl(''); setEvents([]); setEnabled(true); setFields({}); setError(''); } }, [open]);

  const save = async () => {
    if (!events.length) { setFields({ events: 'Choose at least one event type' }); return; }
    setBusy(true);
    setFields({});
    setError('');
    try {
      const hook = await call(api.POST('/webhooks', { body: { url: url.trim(), events, enabled } }), { form: true });
      onCreated(hook);
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      const eventsError = Object.entries(f).find(([k]) => k.startsWith('events'))?.[1];
      setFields({ ...f, ...(eventsError ? { events: eventsError } : {}) });
      setError(Object.keys(f).length ? '' : err instanceof Error ? err.message : 'The endpoint was not created.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title="New webhook endpoint" onClose={onClose} onSubmit={save} wide actions={<>
      <Button onClick={onClose} disabled={busy}>Cancel</Button>
      <Button type="submit" variant="primary" busy={busy}>Create endpoint</Button>
    </>}>
      <FormError>{error}</FormError>
      <TextField label="URL" type="url" inputMode="url" autoComplete="off" spellcheck={false} required value={url} onValue={setUrl} error={fields.url}
        placeholder="https://example.org/webhooks/herald" hint="Herald POSTs each event here, signed (Standard Webhooks). Redirects are not followed." />
      <EventTypePicker value={events} onValue={setEvents} error={fields.events} />
      <Checkbox label="Enabled" hint="A disabled endpoint gets nothing until it is enabled." checked={enabled} onChecked={setEnabled} />
    </Dialog>
  );
}

export default function Webhooks() {
  const { route } = useLocation();
  const { can } = useSession();
  const admin = can('admin');
  const pages = useCursorPages();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Schemas['WebhookWithSecret'] | null>(null);
  const list = useLoad(() => call(api.GET('/webhooks', { params: { query: { limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })), [pages.cursor]);
  const items = list.data?.items ?? [];
  const endpoint = `${location.origin}/webhooks`;
  const newButton = admin ? <Button variant="primary" onClick={() => setCreating(true)}><Icon name="plus" />New endpoint</Button> : null;

  return (
    <Page title="Webhooks" lede="Herald tells your app what happens to its emails and contacts by POSTing signed events to these endpoints." actions={items.length ? newButton : null}>
      <div class="stack">
        {list.loading && !list.data ? <Loading what="Loading endpoints" /> : null}
        {list.error && !list.data ? <EmptyState icon="alert" title="The endpoints did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState> : null}
        {list.data && !items.length ? (
          <EmptyState icon="webhooks" title="No webhook endpoints yet" actions={newButton}
            code={admin ? `curl ${endpoint} \\\n  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"url": "https://example.org/webhooks/herald", "events": ["email.sent", "email.bounced"]}'` : undefined}>
            Add an endpoint to hear about sends, bounces, opens, clicks and contact changes as they happen. {admin ? '' : 'An admin of the project can add one.'}
          </EmptyState>
        ) : null}
        {items.length ? (
          <>
            <div class="table-wrap">
              <table class="table">
                <caption class="visually-hidden">Webhook endpoints</caption>
                <thead><tr><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col" class="hide-phone">Events</th><th scope="col" class="hide-phone">Created</th></tr></thead>
                <tbody>
                  {items.map((h) => (
                    <tr key={h.id}>
                      <td class="truncate fill"><a class="row-link mono" href={`/app/webhooks/${h.id}`}>{h.url}</a></td>
                      <td><EndpointBadges hook={h} /></td>
                      <td class="truncate muted hide-phone" title={h.events.join(', ')}>{h.events.length > 2 ? `${h.events.slice(0, 2).join(', ')} +${h.events.length - 2}` : h.events.join(', ')}</td>
                      <td class="hide-phone"><Time value={h.createdAt} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Endpoints" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
      {admin ? <NewWebhook open={creating} onClose={() => setCreating(false)} onCreated={(hook) => { setCreating(false); setCreated(hook); toast('Endpoint created'); }} /> : null}
      {created ? (
        <SecretDialog open title="Endpoint created: its signing secret" what="signing secret" secret={created.secret}
          onClose={() => { const id = created.id; setCreated(null); route(`/app/webhooks/${id}`); }}>
          <p class="muted">Your receiver checks each request's <code>webhook-signature</code> with it (any Standard Webhooks library does).</p>
        </SecretDialog>
      ) : null}
    </Page>
  );
}
