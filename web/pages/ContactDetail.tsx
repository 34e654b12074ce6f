import { useEffect, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, ApiFailure, call, download, type Schemas } from '../api';
import {
  Button, ConfirmDialog, Dialog, EmailStatus, Icon, Loading, Page, TextAreaField, TextField, Time, toast,
} from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { dataPatch, parseData, SubscriptionBadge } from './parts/contacts';
import { NotLoaded } from './parts/NotLoaded';

/**
 * One contact (issue 28): its subscription (subscribe / unsubscribe), its data as JSON (checked before it is sent;
 * the API's 422 shown under the field), delete with a confirmation that names the address, and what happened to it:
 * its emails (each opens the email's page) and its events, newest first. Issue 30: "Download data" saves everything
 * Herald holds about the contact (GET /contacts/:id/export), and an admin may erase it (DELETE ?erase=true) after
 * typing its address.
 */
type Contact = Schemas['Contact'];

const pretty = (data: Contact['data']) => JSON.stringify(data, null, 2);

function DataEditor({ contact, onSaved }: { contact: Contact; onSaved: (c: Contact) => void }) {
  const [text, setText] = useState(pretty(contact.data));
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { setText(pretty(contact.data)); setError(''); }, [contact.id, contact.updatedAt]);
  const changed = text.trim() !== pretty(contact.data).trim();

  const save = async (e: Event) => {
    e.preventDefault();
    const parsed = parseData(text);
    if ('error' in parsed) { setError(parsed.error); return; }
    setBusy(true);
    setError('');
    try {
      const saved = await call(api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body: { data: dataPatch(contact.data, parsed.value) } }), { form: true });
      toast('Data saved');
      onSaved(saved);
    } catch (err) {
      if (err instanceof ApiFailure) {
        const fieldError = Object.entries(err.fields).find(([f]) => f === 'data' || f.startsWith('data.'));
        setError(fieldError ? fieldError[1] : err.message);
      } else setError('The data was not saved. Try again.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="stack" noValidate onSubmit={save}>
      <TextAreaField label="Data (JSON)" mono rows={Math.min(18, Math.max(6, text.split('\n').length + 1))} value={text} onValue={(v) => { setText(v); setError(''); }} error={error}
        hint="A JSON object. Keys you remove are removed from the contact; templates read the rest as {{ contact.data.key }}." />
      <div class="row">
        <Button type="submit" variant="primary" busy={busy} disabled={!changed}>Save data</Button>
        {changed ? <Button variant="ghost" onClick={() => { setText(pretty(contact.data)); setError(''); }}>Discard changes</Button> : null}
      </div>
    </form>
  );
}

function ContactEmails({ email }: { email: string }) {
  const list = useLoad(() => call(api.GET('/emails', { params: { query: { to: email, limit: 20 } } })), [email]);
  return (
    <section class="card" aria-labelledby="contact-emails">
      <div class="card-header"><h2 id="contact-emails">Emails</h2>{list.data?.hasMore ? <a href={`/app/emails?to=${encodeURIComponent(email)}`}>All emails to this address</a> : null}</div>
      {list.loading && !list.data ? <Loading what="Loading emails" /> : null}
      {list.data && !list.data.items.length ? <p class="card-body muted">No email has been sent to {email} yet.</p> : null}
      {list.data?.items.length ? (
        <div class="table-flush">
          <table class="table">
            <thead><tr><th scope="col">Subject</th><th scope="col">Status</th><th scope="col" class="hide-phone">Queued</th></tr></thead>
            <tbody>
              {list.data.items.map((m) => (
                <tr key={m.id}>
                  <td class="truncate fill"><a class="row-link" href={`/app/emails/${m.id}`}>{m.subject || '(no subject)'}</a><span class="sub show-phone"><Time value={m.createdAt} /></span></td>
                  <td><EmailStatus status={m.status} /></td>
                  <td class="hide-phone"><Time value={m.createdAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

function ContactEvents({ id }: { id: string }) {
  const list = useLoad(() => call(api.GET('/events', { params: { query: { contactId: id, limit: 25 } } })), [id]);
  return (
    <section class="card" aria-labelledby="contact-events">
      <div class="card-header"><h2 id="contact-events">Events</h2>{list.data?.hasMore ? <a href={`/app/events?contactId=${id}`}>All events</a> : null}</div>
      {list.loading && !list.data ? <Loading what="Loading events" /> : null}
      {list.data && !list.data.items.length ? <p class="card-body muted">No events yet. Your app records them with POST /events, and Herald records sends, opens and clicks.</p> : null}
      {list.data?.items.length ? (
        <div class="table-flush">
          <table class="table">
            <thead><tr><th scope="col">Event</th><th scope="col">When</th></tr></thead>
            <tbody>
              {list.data.items.map((ev) => (
                <tr key={ev.id}>
                  <td class="truncate fill">
                    <span class="mono">{ev.emailId ? <a href={`/app/emails/${ev.emailId}`}>{ev.name}</a> : ev.name}</span>
                    {Object.keys(ev.data).length ? <span class="sub mono truncate-line" title={JSON.stringify(ev.data)}>{JSON.stringify(ev.data)}</span> : null}
                  </td>
                  <td><Time value={ev.createdAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

/**
 * Erasure's confirmation: what is erased, that it cannot be undone, and the address typed to confirm (a click alone is
 * not enough for what no one can take back). Enter submits once it matches.
 */
function EraseDialog({ contact, onClose, onErased }: { contact: Contact; onClose: () => void; onErased: () => void }) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const matches = typed.trim().toLowerCase() === contact.email.toLowerCase();
  const erase = async () => {
    if (!matches) return;
    setBusy(true);
    try {
      await call(api.DELETE('/contacts/{id}', { params: { path: { id: contact.id }, query: { erase: true } } }));
      onErased();
    } catch { /* the API wrapper showed it; the dialog stays */ } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open title={`Erase ${contact.email}?`} onClose={onClose} onSubmit={erase} actions={<>
      <Button onClick={onClose} disabled={busy}>Cancel</Button>
      <Button type="submit" variant="danger" busy={busy} disabled={!matches}>Erase permanently</Button>
    </>}>
      <div class="erase-what">
        <p>Erasure (GDPR article 17) deletes the contact with its data, events, emails and segment memberships, and removes the address and what its emails said from everything Herald keeps after it:</p>
        <ul>
          <li>other emails’ recipients, Reply-To and headers that name it;</li>
          <li>raw messages and attachments of its emails;</li>
          <li>other events, webhook deliveries and the audit log.</li>
        </ul>
        <p>Campaign statistics keep their counts. The suppression list keeps only a keyed hash of the address, so that it is not mailed again by accident. <strong>This cannot be undone.</strong></p>
      </div>
      <TextField label={`Type ${contact.email} to confirm`} value={typed} onValue={setTyped} autoComplete="off" spellcheck={false} />
    </Dialog>
  );
}

export default function ContactDetail() {
  const { params } = useRoute();
  const { route } = useLocation();
  const { can } = useSession();
  const id = params.id ?? '';
  const loaded = useLoad(() => call(api.GET('/contacts/{id}', { params: { path: { id } } }), { expect: [404] }), [id]);
  const [contact, setContact] = useState<Contact | undefined>(undefined);
  const [deleting, setDeleting] = useState(false);
  const [switching, setSwitching] = useState(false);
  const [erasing, setErasing] = useState(false);
  const [downloading, setDownloading] = useState(false);
  useEffect(() => { setContact(loaded.data); }, [loaded.data]);

  const breadcrumb = <a href="/app/contacts"><Icon name="arrowLeft" size={14} />Contacts</a>;
  if (loaded.error) {
    return <NotLoaded error={loaded.error} thing="contact" title="Contact" icon="contacts" breadcrumb={breadcrumb} back={{ href: '/app/contacts', label: 'Back to contacts' }} />;
  }
  if (!contact) return <Page title="Contact" breadcrumb={breadcrumb}><Loading what="Loading the contact" /></Page>;

  const toggle = async () => {
    setSwitching(true);
    try {
      const saved = await call(api.PATCH('/contacts/{id}', { params: { path: { id } }, body: { subscribed: !contact.subscribed } }));
      setContact(saved);
      toast(saved.subscribed ? `${saved.email} subscribed` : `${saved.email} unsubscribed`);
    } catch { /* the API wrapper showed it */ } finally {
      setSwitching(false);
    }
  };

  const downloadData = async () => {
    setDownloading(true);
    try {
      const name = await download(api.GET('/contacts/{id}/export', { params: { path: { id } }, parseAs: 'blob' }), `contact-${id}.json`);
      toast(`Downloaded ${name}`);
    } catch { /* the API wrapper showed it */ } finally {
      setDownloading(false);
    }
  };

  return (
    <Page title={contact.email} breadcrumb={breadcrumb}
      lede={<span class="row"><SubscriptionBadge subscribed={contact.subscribed} /><span class="muted">Added <Time value={contact.createdAt} /></span></span>}
      actions={<>
        <Button busy={downloading} onClick={downloadData}><Icon name="download" />Download data</Button>
        {can('write') ? <>
          <Button busy={switching} onClick={toggle}>{contact.subscribed ? 'Unsubscribe' : 'Subscribe'}</Button>
          <Button variant="danger" onClick={() => setDeleting(true)}><Icon name="trash" />Delete</Button>
        </> : null}
      </>}>
      <div class="contact-grid">
        <div class="stack">
          <section class="card" aria-labelledby="contact-data">
            <div class="card-header"><h2 id="contact-data">Data</h2><span class="muted nowrap">Updated <Time value={contact.updatedAt} relative /></span></div>
            <div class="card-body">
              {can('write') ? <DataEditor contact={contact} onSaved={setContact} />
                : Object.keys(contact.data).length ? <pre class="code-block">{pretty(contact.data)}</pre> : <p class="muted">No data.</p>}
            </div>
          </section>
          <ContactEmails email={contact.email} />
        </div>
        <div class="stack">
          <section class="card" aria-labelledby="contact-details">
            <div class="card-header"><h2 id="contact-details">Details</h2></div>
            <dl class="kv card-body">
              <dt>Email</dt><dd>{contact.email}</dd>
              <dt>Subscription</dt><dd><SubscriptionBadge subscribed={contact.subscribed} /></dd>
              <dt>Added</dt><dd><Time value={contact.createdAt} /></dd>
              <dt>Updated</dt><dd><Time value={contact.updatedAt} /></dd>
              <dt>ID</dt><dd class="mono">{contact.id}</dd>
            </dl>
          </section>
          <ContactEvents id={contact.id} />
          {can('admin') ? (
            // Apart from the page's actions: erasure answers a person's request to be forgotten, not everyday work.
            <section class="card" aria-labelledby="contact-erasure">
              <div class="card-header"><h2 id="contact-erasure">Erasure</h2></div>
              <div class="card-body stack contact-erasure">
                <p class="muted">When this person asks to be forgotten (GDPR article 17): deletes the contact and removes its address from everything Herald keeps. It cannot be undone.</p>
                <div><Button variant="danger" onClick={() => setErasing(true)}>Erase contact</Button></div>
              </div>
            </section>
          ) : null}
        </div>
      </div>
      <ConfirmDialog open={deleting} title={`Delete ${contact.email}?`} confirm="Delete contact" danger onClose={() => setDeleting(false)}
        onConfirm={async () => {
          await call(api.DELETE('/contacts/{id}', { params: { path: { id } } }));
          toast(`${contact.email} deleted`);
          route('/app/contacts');
        }}>
        The contact is removed with their data, events and email log, and leaves every segment. This cannot be undone; sending to the address again makes a new contact.
      </ConfirmDialog>
      {erasing ? <EraseDialog contact={contact} onClose={() => setErasing(false)} onErased={() => { toast(`${contact.email} erased`); route('/app/contacts'); }} /> : null}
    </Page>
  );
}
