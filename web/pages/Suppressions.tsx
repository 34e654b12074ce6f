import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import {
  Badge, Button, ConfirmDialog, Dialog, EmptyState, FormError, Icon, Loading, Page, Pager, SelectField, TextField, Time, toast, useCursorPages, type Tone,
} from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';

/**
 * Suppressions (issue 28): the addresses Herald will not send to, with why and since when; adding one and removing
 * one are for admins (the route table's permission), so others see the list only. The reason filter lives in the URL.
 */
const PAGE_SIZE = 50;

type Suppression = Schemas['Suppression'];
type Reason = Suppression['reason'];

const REASONS: Record<Reason, [string, Tone, string]> = {
  manual: ['Manual', 'neutral', 'Added by a person or your app'],
  soft_bounce: ['Soft bounces', 'warning', 'Bounced softly too many times'],
  hard_bounce: ['Hard bounce', 'danger', 'The receiving server said the address does not exist'],
  complaint: ['Complaint', 'danger', 'The recipient marked an email as spam'],
  erased: ['Erased contact', 'neutral', 'A contact erased on request: only a keyed hash of its address is kept'],
};
/** What a person may add by hand: an erased contact's entry is made by its erasure only. */
type AddableReason = Exclude<Reason, 'erased'>;

const isReason = (v: string | undefined): v is Reason => v !== undefined && v in REASONS;

function ReasonBadge({ reason }: { reason: Reason }) {
  const [word, tone, why] = REASONS[reason];
  return <span title={why}><Badge tone={tone}>{word}</Badge></span>;
}

/** What the entry's details say (a note, a bounce's diagnostic), in one line. */
function detailLine(details: Suppression['details']): string {
  if (!details) return '';
  if (typeof details.note === 'string') return details.note;
  if (typeof details.diagnostic === 'string') return details.diagnostic;
  if (typeof details.source === 'string') return `From ${details.source}`;
  const keys = Object.keys(details);
  return keys.length ? JSON.stringify(details) : '';
}

function AddSuppression({ open, onClose, onAdded }: { open: boolean; onClose: () => void; onAdded: () => void }) {
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState<AddableReason>('manual');
  const [note, setNote] = useState('');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (open) { setEmail(''); setReason('manual'); setNote(''); setFields({}); setError(''); } }, [open]);

  const save = async () => {
    setBusy(true);
    setFields({});
    setError('');
    try {
      const saved = await call(api.POST('/suppressions', { body: { email: email.trim(), reason, ...(note.trim() ? { note: note.trim() } : {}) } }), { form: true });
      toast(`${saved.email} suppressed`);
      onClose();
      onAdded();
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      setError(Object.keys(f).length ? '' : err instanceof Error ? err.message : 'The address was not added.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title="Suppress an address" onClose={onClose} onSubmit={save} actions={<>
      <Button onClick={onClose} disabled={busy}>Cancel</Button>
      <Button type="submit" variant="primary" busy={busy}>Suppress address</Button>
    </>}>
      <p class="muted">Herald will not send to it again, transactional email included, until it is removed from this list.</p>
      <FormError>{error}</FormError>
      <TextField label="Email" type="email" autoComplete="off" required value={email} onValue={setEmail} error={fields.email} placeholder="someone@example.org" />
      <SelectField label="Reason" value={reason} onValue={(v) => isReason(v) && v !== 'erased' && setReason(v)} error={fields.reason}
        options={Object.entries(REASONS).filter(([v]) => v !== 'erased').map(([v, [word]]) => [v, word])} hint="Hard bounce and complaint let you bring a list over from another provider." />
      <TextField label="Note (optional)" value={note} onValue={setNote} error={fields.note} maxLength={500} placeholder="Asked us by email not to write again" />
    </Dialog>
  );
}

/** An address that a phone's narrow cell wraps after its `@` first (a `<wbr>`), and only then anywhere. */
function breakableAddress(email: string) {
  const at = email.lastIndexOf('@');
  return at < 0 ? email : <>{email.slice(0, at + 1)}<wbr />{email.slice(at + 1)}</>;
}

export default function Suppressions() {
  const { query, route } = useLocation();
  const { can } = useSession();
  const reason = isReason(query.reason) ? query.reason : undefined;
  const pages = useCursorPages(reason ?? '');
  const [adding, setAdding] = useState(false);
  const [removing, setRemoving] = useState<Suppression | null>(null);
  const list = useLoad(() => call(api.GET('/suppressions', { params: { query: {
    limit: PAGE_SIZE, ...(pages.cursor ? { cursor: pages.cursor } : {}), ...(reason ? { reason } : {}),
  } } })), [reason, pages.cursor]);
  const items = list.data?.items ?? [];
  const admin = can('admin');
  const endpoint = `${location.origin}/suppressions`;

  return (
    <Page title="Suppressions" lede="Addresses Herald will not send to: hard bounces and complaints land here by themselves, and you can add others."
      actions={admin ? <Button variant="primary" onClick={() => setAdding(true)}><Icon name="plus" />Add address</Button> : null}>
      <div class="stack">
        <div class="toolbar">
          <SelectField label="Reason" value={reason ?? ''} onValue={(v) => route(v ? `/app/suppressions?reason=${v}` : '/app/suppressions', true)}
            options={[['', 'Every reason'], ...Object.entries(REASONS).map(([v, [word]]): [string, string] => [v, word])]} />
        </div>
        {list.loading && !list.data ? <Loading what="Loading suppressions" /> : null}
        {list.error && !list.data ? <EmptyState icon="alert" title="The list did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState> : null}
        {list.data && !items.length ? (reason || pages.number > 1 ? (
          <EmptyState icon="suppressions" title="No address suppressed for this reason" actions={<Button onClick={() => route('/app/suppressions', true)}>Show every reason</Button>} />
        ) : (
          <EmptyState icon="suppressions" title="No suppressed addresses"
            code={admin ? `curl ${endpoint} \\\n  -H "Authorization: Bearer $HERALD_SECRET_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"email": "someone@example.org", "note": "asked not to be emailed"}'` : undefined}
            actions={admin ? <Button variant="primary" onClick={() => setAdding(true)}><Icon name="plus" />Add address</Button> : null}>
            Herald adds an address by itself when it bounces hard or its recipient complains, and never sends to it again. {admin ? 'You can add one by hand or through the API.' : 'An admin can add one by hand.'}
          </EmptyState>
        )) : null}
        {items.length ? (
          <>
            <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
              <table class="table">
                <caption class="visually-hidden">Suppressed addresses</caption>
                <thead><tr>
                  <th scope="col">Email</th><th scope="col">Reason</th><th scope="col" class="hide-phone">Details</th><th scope="col" class="hide-phone">Since</th>
                  {admin ? <th scope="col"><span class="visually-hidden">Actions</span></th> : null}
                </tr></thead>
                <tbody>
                  {items.map((s) => (
                    <tr key={s.id}>
                      <td class="truncate fill wrap-phone">{breakableAddress(s.email)}<span class="sub show-phone">Since <Time value={s.createdAt} /></span></td>
                      <td><ReasonBadge reason={s.reason} /></td>
                      <td class="truncate muted hide-phone">{detailLine(s.details)}</td>
                      <td class="hide-phone"><Time value={s.createdAt} /></td>
                      {admin ? <td class="cell-actions"><Button size="sm" variant="ghost" aria-label={`Remove ${s.email}`} onClick={() => setRemoving(s)}>Remove</Button></td> : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Addresses" pageSize={PAGE_SIZE} />
          </>
        ) : null}
      </div>
      {admin ? <AddSuppression open={adding} onClose={() => setAdding(false)} onAdded={list.reload} /> : null}
      {admin ? (
        <ConfirmDialog open={removing !== null} title={`Remove ${removing?.email ?? ''} from the list?`} confirm="Remove suppression" danger onClose={() => setRemoving(null)}
          onConfirm={async () => {
            if (!removing) return;
            await call(api.DELETE('/suppressions/{email}', { params: { path: { email: removing.email } } }));
            toast(`${removing.email} can be sent to again`);
            list.reload();
          }}>
          Herald will send to this address again.{removing && removing.reason !== 'manual' ? ` It was suppressed because of a ${REASONS[removing.reason][0].toLowerCase()}: sending to it again can hurt your domain's reputation.` : ''}
        </ConfirmDialog>
      ) : null}
    </Page>
  );
}
