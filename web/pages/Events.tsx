import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, call, type Schemas } from '../api';
import { Badge, Button, EmptyState, Field, Icon, Loading, Page, SearchField, SelectField, Time, totalText, type Tone } from '../components';
import { useLoad } from '../hooks';

/**
 * Events: the project's events (GET /events) filtered by name, contact and dates, a cursor page at a time, each
 * event's data as formatted JSON; beside them the names recorded with their counts (GET /events/names), which filter
 * the list when chosen. Filters live in the URL (?name=&contact=&from=&to=&cursor=), so a view can be linked.
 */
type EventJson = Schemas['Event'];
const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An event name's colour: outcomes that need a look in red, engagement in blue, contacts' own in violet. */
function tone(name: string): Tone {
  if (/^email\.(bounced|failed|complained)$/.test(name) || name === 'execution.failed') return 'danger';
  if (name === 'email.sent') return 'success';
  if (/^email\.(opened|clicked)$/.test(name)) return 'info';
  if (name.startsWith('contact.')) return 'accent';
  return 'neutral';
}

export function EventName({ name }: { name: string }) {
  return <Badge tone={tone(name)}><span class="mono">{name}</span></Badge>;
}

/** An id's last characters (its first are a timestamp, the same for ids made together). */
const shortId = (id: string): string => `…${id.slice(-8)}`;

/** A local date (YYYY-MM-DD, from a date input) as the instant its day starts in the viewer's zone. */
const startOfDay = (date: string, plusDays = 0): string => {
  const d = new Date(`${date}T00:00:00`);
  d.setDate(d.getDate() + plusDays);
  return d.toISOString();
};

interface Filters { name: string; contact: string; from: string; to: string }

/** Finds the contact a filter names: an id as given, an email address through GET /contacts?search (exact match). */
async function contactIdOf(contact: string): Promise<string | null> {
  if (UUID.test(contact)) return contact;
  const found = await call(api.GET('/contacts', { params: { query: { search: contact, limit: 20 } } }));
  return found.items.find((c) => c.email.toLowerCase() === contact.toLowerCase())?.id ?? null;
}

async function loadEvents(f: Filters, cursor: string | undefined) {
  const contactId = f.contact ? await contactIdOf(f.contact) : undefined;
  if (contactId === null) return { unknownContact: true as const };
  const page = await call(api.GET('/events', {
    params: {
      query: {
        limit: PAGE_SIZE,
        ...(cursor ? { cursor } : {}),
        ...(f.name ? { name: f.name } : {}),
        ...(contactId ? { contactId } : {}),
        ...(f.from ? { since: startOfDay(f.from) } : {}),
        ...(f.to ? { until: startOfDay(f.to, 1) } : {}),
      },
    },
  }));
  return { unknownContact: false as const, page };
}

function EventRow({ event, open, onToggle }: { event: EventJson; open: boolean; onToggle: () => void }) {
  const dataId = `event-data-${event.id}`;
  return (
    <>
      <tr class={open ? 'is-open' : undefined}>
        <td>
          <button type="button" class="event-toggle" aria-expanded={open} aria-controls={dataId} onClick={onToggle}>
            <Icon name="arrowRight" size={14} /><EventName name={event.name} />
          </button>
        </td>
        <td class="hide-phone">{event.contactId ? <a class="mono small" href={`/app/events?contact=${event.contactId}`} title={`Only the events of contact ${event.contactId}`}>{shortId(event.contactId)}</a> : <span class="muted">—</span>}</td>
        <td class="hide-phone">{event.emailId ? <a class="mono small" href={`/app/emails/${event.emailId}`} title={`Open email ${event.emailId}`}>{shortId(event.emailId)}</a> : <span class="muted">—</span>}</td>
        <td class="num"><Time value={event.createdAt} /></td>
      </tr>
      {open ? (
        <tr class="event-data-row" id={dataId}>
          <td colSpan={4}>
            <dl class="kv event-kv">
              <dt>Event</dt><dd class="mono small">{event.id}</dd>
              <dt>Contact</dt><dd>{event.contactId ? <a class="mono small" href={`/app/contacts/${event.contactId}`}>{event.contactId}</a> : <span class="muted">None (Herald's own work)</span>}</dd>
              {event.emailId ? <><dt>Email</dt><dd><a class="mono small" href={`/app/emails/${event.emailId}`}>{event.emailId}</a></dd></> : null}
            </dl>
            <pre class="json" tabIndex={0} aria-label={`Data of ${event.name}`}><code>{JSON.stringify(event.data, null, 2)}</code></pre>
          </td>
        </tr>
      ) : null}
    </>
  );
}

export default function Events() {
  const { query, route } = useLocation();
  const filters: Filters = { name: query.name ?? '', contact: query.contact ?? '', from: query.from ?? '', to: query.to ?? '' };
  const cursor = query.cursor || undefined;
  const [contactDraft, setContactDraft] = useState(filters.contact);
  const [previous, setPrevious] = useState<(string | undefined)[]>([]);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const names = useLoad(() => call(api.GET('/events/names')), []);
  const list = useLoad(() => loadEvents(filters, cursor), [filters.name, filters.contact, filters.from, filters.to, cursor]);

  /** To other filters (the first page of them) or, with `nextCursor`, to another page of these. */
  const go = (next: Partial<Filters>, nextCursor?: string, stack: (string | undefined)[] = []) => {
    const merged = { ...filters, ...next };
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(merged)) if (v) params.set(k, v);
    if (nextCursor) params.set('cursor', nextCursor);
    setPrevious(stack);
    setOpen(new Set());
    const qs = params.toString();
    route(`/app/events${qs ? `?${qs}` : ''}`);
  };
  const filtered = Boolean(filters.name || filters.contact || filters.from || filters.to);
  const nameItems = names.data?.items ?? [];
  const nameOptions: [string, string][] = [['', 'All events'], ...nameItems.map((n): [string, string] => [n.name, `${n.name} (${n.count.toLocaleString()})`])];
  if (filters.name && !nameItems.some((n) => n.name === filters.name)) nameOptions.push([filters.name, filters.name]);
  const result = list.data;
  const page = result && !result.unknownContact ? result.page : undefined;
  const toggle = (id: string) => setOpen((s) => { const n = new Set(s); if (n.has(id)) n.delete(id); else n.add(id); return n; });

  return (
    <Page title="Events" lede="What happened to your emails and contacts, newest first: Herald's own events and those you track.">
      <div class="events-layout">
        <div class="stack events-main">
          <form class="toolbar events-filters" role="search" aria-label="Filter events" onSubmit={(e) => { e.preventDefault(); go({ contact: contactDraft.trim() }); }}>
            <SelectField label="Event" fieldClass="events-name" value={filters.name} onValue={(name) => go({ name })} options={nameOptions} />
            <div class="field grow">
              <span class="field-label" aria-hidden="true">Contact</span>
              <SearchField label="Contact email or ID" value={contactDraft} onValue={setContactDraft} onBlur={() => { if (contactDraft.trim() !== filters.contact) go({ contact: contactDraft.trim() }); }} />
            </div>
            <Field label="From">{(c) => <input {...c} class="input" type="date" value={filters.from} max={filters.to || undefined} onChange={(e) => go({ from: e.currentTarget.value })} />}</Field>
            <Field label="To">{(c) => <input {...c} class="input" type="date" value={filters.to} min={filters.from || undefined} onChange={(e) => go({ to: e.currentTarget.value })} />}</Field>
            {filtered ? <Button variant="ghost" onClick={() => { setContactDraft(''); go({ name: '', contact: '', from: '', to: '' }); }}>Clear filters</Button> : null}
          </form>

          {list.loading && !result ? <Loading what="Loading events" /> : null}
          {list.error && !result ? <EmptyState icon="alert" title="The events did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState> : null}
          {result?.unknownContact ? (
            <EmptyState icon="contacts" title="No such contact" actions={<Button onClick={() => { setContactDraft(''); go({ contact: '' }); }}>Show every contact's events</Button>}>
              The project has no contact {filters.contact}. Type a contact's whole email address or its ID.
            </EmptyState>
          ) : null}
          {page && page.items.length === 0 ? (
            filtered || cursor ? (
              <EmptyState icon="events" title="No events match these filters" actions={<Button onClick={() => { setContactDraft(''); go({ name: '', contact: '', from: '', to: '' }); }}>Clear filters</Button>}>
                Try another name or a wider range of dates.
              </EmptyState>
            ) : (
              <EmptyState icon="events" title="No events yet"
                code={`curl -X POST ${location.origin}/v1/track \\\n  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"email": "ada@example.com", "event": "signed-up", "data": {"plan": "pro"}}'`}>
                Herald records an event when it sends an email, when one bounces or is opened, and when a contact subscribes. Track your own from your app:
              </EmptyState>
            )
          ) : null}
          {page && page.items.length > 0 ? (
            <>
              <div class={`table-wrap${list.loading ? ' refreshing' : ''}`} aria-busy={list.loading}>
                <table class="table events-table">
                  <thead>
                    <tr><th>Event</th><th class="hide-phone">Contact</th><th class="hide-phone">Email</th><th class="num">When</th></tr>
                  </thead>
                  <tbody>
                    {page.items.map((e) => <EventRow key={e.id} event={e} open={open.has(e.id)} onToggle={() => toggle(e.id)} />)}
                  </tbody>
                </table>
              </div>
              <div class="pager">
                <span>{totalText(page, 'event', 'events')}</span>
                <div class="pager-buttons">
                  <Button size="sm" disabled={!cursor} onClick={() => go({}, previous[previous.length - 1], previous.slice(0, -1))}>Newer</Button>
                  <Button size="sm" disabled={!page.nextCursor} onClick={() => go({}, page.nextCursor ?? undefined, [...previous, cursor])}>Older</Button>
                </div>
              </div>
            </>
          ) : null}
        </div>

        <aside class="card events-names" aria-labelledby="event-names-title">
          <div class="card-header"><h2 id="event-names-title">Event names</h2></div>
          {names.loading && !names.data ? <Loading what="Loading names" /> : null}
          {names.data && nameItems.length === 0 ? <p class="card-body muted small">None recorded yet.</p> : null}
          {nameItems.length ? (
            <ul class="name-list">
              {nameItems.map((n) => (
                <li key={n.name}>
                  <button type="button" class="name-item" aria-pressed={filters.name === n.name} onClick={() => go({ name: filters.name === n.name ? '' : n.name })}>
                    <span class="mono truncate">{n.name}</span>
                    <span class="count">{n.count.toLocaleString()}</span>
                  </button>
                </li>
              ))}
            </ul>
          ) : null}
        </aside>
      </div>
    </Page>
  );
}
