import { useEffect, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import {
  Button, ConfirmDialog, Dialog, FormError, Icon, LinkButton, Loading, Page, Pager, TextAreaField, TextField, Time, toast, useCursorPages,
} from '../components';
import { useLoad, useSubmit } from '../hooks';
import { useSession } from '../session';
import { SubscriptionBadge } from './parts/contacts';
import {
  AudiencePanel, AudienceSummary, ConditionBuilder, conditionErrors, newCondition, sameCondition, useAudiencePreview, type AudienceCondition, type AudiencePreview,
} from './parts/ConditionBuilder';
import { parseAddresses, SegmentType } from './parts/segments';
import { NotLoaded } from './parts/NotLoaded';

/**
 * A segment (issue 29), new or existing: its name, description and type. A DYNAMIC segment is its condition, edited
 * with the audience builder while the live count and the newest matching contacts show beside it; a STATIC one is its
 * members, added by address (one per line or comma separated) and removed by selection, each after a confirmation.
 * Deleting asks first; the API's 409 (the segment is in use) is its toast. A viewer reads it all and changes nothing.
 */
type Segment = Schemas['Segment'];
type Kind = Segment['type'];

const MEMBERS_PAGE = 25;
const MAX_ADD = 1000;

const plural = (n: number, one: string, many: string) => `${n.toLocaleString()} ${n === 1 ? one : many}`;
const breadcrumb = <a href="/app/segments"><Icon name="arrowLeft" size={14} />Segments</a>;

export default function SegmentDetail() {
  const { params } = useRoute();
  // /app/segments/new has no id: the same page, creating.
  return params.id ? <ExistingSegment key={params.id} id={params.id} /> : <NewSegment />;
}

/** The builder beside its live count: the condition's editor on the left, who it matches on the right. */
function AudienceEditor({ condition, onChange, preview, errors, disabled, selfId, panelTitle, note }: {
  condition: AudienceCondition; onChange: (c: AudienceCondition) => void; preview: AudiencePreview; errors: Record<string, string>;
  disabled?: boolean; selfId?: string; panelTitle?: string; note?: string;
}) {
  return (
    <div class="segment-audience">
      <section class="card" aria-labelledby="segment-condition">
        <div class="card-header">
          <div>
            <h2 id="segment-condition">Who is in it</h2>
            <p class="card-sub muted">Contacts are members while they match: the segment follows their data and events.</p>
          </div>
        </div>
        <div class="card-body">
          <ConditionBuilder value={condition} onChange={onChange} disabled={disabled} errors={errors} selfId={selfId} />
        </div>
        {disabled ? null : <AudienceSummary preview={preview} />}
      </section>
      <AudiencePanel preview={preview} title={panelTitle} note={note} />
    </div>
  );
}

function TypeChoice({ value, onValue }: { value: Kind; onValue: (k: Kind) => void }) {
  const choices: [Kind, string, string][] = [
    ['DYNAMIC', 'Dynamic', 'Contacts who match a condition on their data and activity, now and as they change.'],
    ['STATIC', 'Static', 'A list you keep: add addresses, remove them. It changes only when you change it.'],
  ];
  return (
    <fieldset class="segment-types">
      <legend class="field-label">Type</legend>
      {choices.map(([kind, title, hint]) => (
        <label key={kind} class="segment-type">
          <input type="radio" name="segment-type" value={kind} checked={value === kind} onChange={() => onValue(kind)} />
          <span><span class="segment-type-title">{title}</span><span class="segment-type-hint">{hint}</span></span>
        </label>
      ))}
    </fieldset>
  );
}

function NewSegment() {
  const { route } = useLocation();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [type, setType] = useState<Kind>('DYNAMIC');
  const [condition, setCondition] = useState<AudienceCondition>(newCondition);
  const [tried, setTried] = useState('');
  const preview = useAudiencePreview(type === 'DYNAMIC' ? condition : null);
  const save = useSubmit(async () => {
    setTried(JSON.stringify(condition));
    const saved = await call(api.POST('/segments', { body: {
      name: name.trim(), description: description.trim() || null, type, ...(type === 'DYNAMIC' ? { condition } : {}),
    } }), { form: true });
    toast(`Segment ${saved.name} created`);
    route(`/app/segments/${saved.id}`);
  }, { fallback: 'The segment was not created.' });
  // What the save was refused for, while the condition is still the one that was sent; then the preview's.
  const errors = { ...(tried === JSON.stringify(condition) ? conditionErrors(save.fields, 'condition') : {}), ...preview.error?.fields };

  return (
    <Page title="New segment" breadcrumb={breadcrumb}>
      <form class="stack segment-form" noValidate onSubmit={save.submit}>
        <FormError>{save.error}</FormError>
        <section class="card" aria-labelledby="segment-details">
          <div class="card-header"><h2 id="segment-details">Details</h2></div>
          <div class="card-body segment-details">
            <TextField label="Name" value={name} onValue={setName} error={save.fields.name} required maxLength={200} placeholder="Pro customers" autoComplete="off" />
            <TextField label="Description" value={description} onValue={setDescription} error={save.fields.description} hint="Optional: what the segment is for, for your team." autoComplete="off" />
            <TypeChoice value={type} onValue={setType} />
          </div>
        </section>
        {type === 'DYNAMIC'
          ? <AudienceEditor condition={condition} onChange={setCondition} preview={preview} errors={errors} />
          : <p class="form-note">Create the segment, then add its members by address on its page.</p>}
        <div class="segment-save">
          <LinkButton href="/app/segments">Cancel</LinkButton>
          <Button type="submit" variant="primary" busy={save.busy}>Create segment</Button>
        </div>
      </form>
    </Page>
  );
}

function ExistingSegment({ id }: { id: string }) {
  const loaded = useLoad(() => call(api.GET('/segments/{id}', { params: { path: { id } } }), { expect: [404] }), [id]);
  const [segment, setSegment] = useState<Segment | undefined>(undefined);
  useEffect(() => { setSegment(loaded.data); }, [loaded.data]);

  if (loaded.error) {
    return <NotLoaded error={loaded.error} thing="segment" title="Segment" icon="segments" breadcrumb={breadcrumb} back={{ href: '/app/segments', label: 'Back to segments' }} />;
  }
  if (!segment) return <Page title="Segment" breadcrumb={breadcrumb}><Loading what="Loading the segment" /></Page>;
  return <SegmentPage segment={segment} onChanged={setSegment} />;
}

function SegmentPage({ segment, onChanged }: { segment: Segment; onChanged: (s: Segment) => void }) {
  const { route } = useLocation();
  const { can } = useSession();
  const write = can('write');
  const [name, setName] = useState(segment.name);
  const [description, setDescription] = useState(segment.description ?? '');
  const [condition, setCondition] = useState<AudienceCondition>(segment.condition ?? newCondition());
  const [tried, setTried] = useState('');
  const [deleting, setDeleting] = useState(false);
  const discard = () => {
    setName(segment.name);
    setDescription(segment.description ?? '');
    setCondition(segment.condition ?? newCondition());
  };
  useEffect(discard, [segment.id, segment.updatedAt]);

  const dynamic = segment.type === 'DYNAMIC';
  const conditionChanged = dynamic && !sameCondition(condition, segment.condition);
  const changed = name.trim() !== segment.name || description.trim() !== (segment.description ?? '') || conditionChanged;

  // A viewer may not preview (it needs `write`): the panel shows the stored members instead.
  const preview = useAudiencePreview(dynamic && write ? condition : null);
  const members = useLoad(() => (dynamic && !write
    ? call(api.GET('/segments/{id}/contacts', { params: { path: { id: segment.id }, query: { limit: 10 } } }))
    : Promise.resolve(null)), [segment.id, segment.updatedAt, write]);
  const stored: AudiencePreview = {
    count: segment.memberCount, contacts: members.data?.items ?? [], loading: members.loading,
    error: segment.error ? { message: segment.error, fields: {} } : null, incomplete: false,
  };

  const save = useSubmit(async () => {
    setTried(JSON.stringify(condition));
    const body = {
      ...(name.trim() !== segment.name ? { name: name.trim() } : {}),
      ...(description.trim() !== (segment.description ?? '') ? { description: description.trim() || null } : {}),
      ...(conditionChanged ? { condition } : {}),
    };
    const saved = await call(api.PATCH('/segments/{id}', { params: { path: { id: segment.id } }, body }), { form: true });
    toast('Segment saved');
    onChanged(saved);
  }, { fallback: 'The segment was not saved.' });
  const errors = { ...(tried === JSON.stringify(condition) ? conditionErrors(save.fields, 'condition') : {}), ...preview.error?.fields };

  return (
    <Page title={segment.name} breadcrumb={breadcrumb}
      lede={<span class="row">
        <SegmentType type={segment.type} />
        <span class="muted">
          {segment.memberCount !== null ? plural(segment.memberCount, 'member', 'members') : 'No count'}
          {/* A kept count, recounted in the background a minute after (audience/segments.ts): say when it was counted. */}
          {segment.memberCount !== null && segment.memberCountAt ? <> (counted <Time value={segment.memberCountAt} relative />)</> : null}
          {' '}· updated <Time value={segment.updatedAt} relative />
        </span>
      </span>}
      actions={write ? <Button variant="danger" onClick={() => setDeleting(true)}><Icon name="trash" />Delete</Button> : null}>
      <form class="stack segment-form" noValidate onSubmit={save.submit}>
        <FormError>{save.error}</FormError>
        {segment.error ? <FormError>This segment cannot be counted: {segment.error}. Change its condition and save to fix it.</FormError> : null}
        <section class="card" aria-labelledby="segment-details">
          <div class="card-header"><h2 id="segment-details">Details</h2></div>
          {write ? (
            <div class="card-body segment-details">
              <TextField label="Name" value={name} onValue={setName} error={save.fields.name} required maxLength={200} autoComplete="off" />
              <TextField label="Description" value={description} onValue={setDescription} error={save.fields.description} hint="Optional: what the segment is for, for your team." autoComplete="off" />
            </div>
          ) : (
            <dl class="kv card-body">
              <dt>Name</dt><dd>{segment.name}</dd>
              <dt>Description</dt><dd>{segment.description || <span class="muted">None</span>}</dd>
              <dt>Created</dt><dd><Time value={segment.createdAt} /></dd>
            </dl>
          )}
        </section>
        {dynamic ? (
          <AudienceEditor condition={condition} onChange={setCondition} preview={write ? preview : stored} errors={errors} disabled={!write} selfId={segment.id}
            panelTitle={conditionChanged ? 'Matching contacts' : 'Members'}
            note={conditionChanged ? 'Counted for the condition as you edited it: save to make it the segment’s.' : undefined} />
        ) : null}
        {write && (dynamic || changed) ? (
          <div class="segment-save">
            {changed ? <Button variant="ghost" onClick={discard} disabled={save.busy}>Discard changes</Button> : null}
            <Button type="submit" variant="primary" busy={save.busy} disabled={!changed}>Save changes</Button>
          </div>
        ) : null}
      </form>
      {dynamic ? null : <Members segment={segment} onCount={(memberCount) => onChanged({ ...segment, memberCount, memberCountAt: new Date().toISOString() })} />}
      {write ? (
        <ConfirmDialog open={deleting} title={`Delete the segment ${segment.name}?`} confirm="Delete segment" danger onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await call(api.DELETE('/segments/{id}', { params: { path: { id: segment.id } } }));
            toast(`Segment ${segment.name} deleted`);
            route('/app/segments');
          }}>
          {dynamic ? 'Its contacts stay as they are; only the group goes.' : 'Its members stay contacts, with their data and history; only the list goes.'} A segment that other
          segments or campaigns not yet sent use cannot be deleted: Herald says which. This cannot be undone.
        </ConfirmDialog>
      ) : null}
    </Page>
  );
}

/** A STATIC segment's members: cursor pages, a selection to remove, addresses to add. */
function Members({ segment, onCount }: { segment: Segment; onCount: (n: number) => void }) {
  const { can } = useSession();
  const write = can('write');
  const pages = useCursorPages(segment.id);
  const [version, setVersion] = useState(0);
  const list = useLoad(() => call(api.GET('/segments/{id}/contacts', { params: { path: { id: segment.id }, query: { limit: MEMBERS_PAGE, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } })),
    [segment.id, pages.cursor, version]);
  const [selected, setSelected] = useState<string[]>([]);
  const [adding, setAdding] = useState(false);
  const [removing, setRemoving] = useState(false);
  useEffect(() => { setSelected([]); }, [list.data]);
  const items = list.data?.items ?? [];
  const all = items.length > 0 && items.every((c) => selected.includes(c.email));
  const toggle = (email: string, on: boolean) => setSelected((s) => (on ? [...s, email] : s.filter((x) => x !== email)));
  const changed = (count: number) => {
    onCount(count);
    setVersion((v) => v + 1);
  };

  return (
    <section class="card segment-members" aria-labelledby="segment-members">
      <div class="card-header">
        <div>
          <h2 id="segment-members">Members</h2>
          <p class="card-sub muted">{segment.memberCount !== null ? plural(segment.memberCount, 'contact', 'contacts') : ''}</p>
        </div>
        {write ? (
          <div class="row">
            <Button size="sm" disabled={!selected.length} onClick={() => setRemoving(true)}>
              <Icon name="trash" />{selected.length ? `Remove ${plural(selected.length, 'member', 'members')}` : 'Remove selected'}
            </Button>
            <Button size="sm" variant="primary" onClick={() => setAdding(true)}><Icon name="plus" />Add members</Button>
          </div>
        ) : null}
      </div>
      {list.loading && !list.data ? <Loading what="Loading members" /> : null}
      {list.error && !list.data ? <p class="card-body muted">The members did not load: {list.error.message}</p> : null}
      {list.data && !items.length ? (
        <p class="card-body muted">{pages.number > 1 ? 'No members on this page.' : write ? 'No members yet. Add addresses to start the list: an address that is not a contact yet becomes one.' : 'No members yet.'}</p>
      ) : null}
      {items.length ? (
        <div class="table-flush">
          <table class="table" aria-busy={list.loading ? 'true' : undefined}>
            <caption class="visually-hidden">Members of {segment.name}</caption>
            <thead><tr>
              {write ? <th scope="col" class="cell-check"><input type="checkbox" aria-label="Select every member on this page" checked={all} onChange={(e) => setSelected(e.currentTarget.checked ? items.map((c) => c.email) : [])} /></th> : null}
              <th scope="col">Email</th><th scope="col">Subscription</th><th scope="col" class="hide-phone">Contact since</th>
            </tr></thead>
            <tbody>
              {items.map((c) => (
                <tr key={c.id}>
                  {write ? <td class="cell-check"><input type="checkbox" aria-label={`Select ${c.email}`} checked={selected.includes(c.email)} onChange={(e) => toggle(c.email, e.currentTarget.checked)} /></td> : null}
                  <td class="truncate fill"><a class="row-link" href={`/app/contacts/${c.id}`}>{c.email}</a></td>
                  <td><SubscriptionBadge subscribed={c.subscribed} /></td>
                  <td class="hide-phone"><Time value={c.createdAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {items.length && (pages.number > 1 || list.data?.nextCursor) ? <div class="card-body"><Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Members" pageSize={MEMBERS_PAGE} /></div> : null}
      {write ? (
        <>
          <AddMembers open={adding} segment={segment} onClose={() => setAdding(false)} onAdded={changed} />
          <ConfirmDialog open={removing} title={`Remove ${plural(selected.length, 'member', 'members')} from ${segment.name}?`} confirm={selected.length === 1 ? 'Remove member' : 'Remove members'} danger
            onClose={() => setRemoving(false)}
            onConfirm={async () => {
              const result = await call(api.DELETE('/segments/{id}/members', { params: { path: { id: segment.id } }, body: { emails: selected } }));
              toast(`${plural(result.removed, 'member', 'members')} removed`);
              changed(result.memberCount);
            }}>
            {selected.length === 1 ? `${selected[0]} leaves the list.` : `${selected.slice(0, 3).join(', ')}${selected.length > 3 ? ` and ${selected.length - 3} more` : ''} leave the list.`} They stay contacts, with their data and history.
          </ConfirmDialog>
        </>
      ) : null}
    </section>
  );
}

function AddMembers({ open, segment, onClose, onAdded }: { open: boolean; segment: Segment; onClose: () => void; onAdded: (count: number) => void }) {
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (open) { setText(''); setError(''); } }, [open]);
  const addresses = parseAddresses(text);

  const add = async () => {
    if (!addresses.length) { setError('Enter at least one address.'); return; }
    if (addresses.length > MAX_ADD) { setError(`At most ${MAX_ADD.toLocaleString()} addresses at a time: these are ${addresses.length.toLocaleString()}.`); return; }
    setBusy(true);
    setError('');
    try {
      const result = await call(api.POST('/segments/{id}/members', { params: { path: { id: segment.id } }, body: { emails: addresses } }), { form: true });
      const already = addresses.length - result.added;
      toast(`${plural(result.added, 'member', 'members')} added${result.created ? ` (${plural(result.created, 'new contact', 'new contacts')})` : ''}${already ? `; ${already.toLocaleString()} already in it` : ''}`);
      onAdded(result.memberCount);
      onClose();
    } catch (err) {
      if (err instanceof ApiFailure) {
        // `emails.3` names the fourth address: say which one.
        const named = Object.entries(err.fields).map(([field, message]) => {
          const at = /^emails\.(\d+)$/.exec(field);
          return at ? `${addresses[Number(at[1])] ?? field}: ${message.replace(/^emails\[\d+\]\s*/, '')}` : message;
        });
        setError(named.length ? named.join('; ') : err.message);
      } else setError('The members were not added. Try again.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title={`Add members to ${segment.name}`} onClose={onClose} onSubmit={add} wide actions={<>
      <Button onClick={onClose} disabled={busy}>Cancel</Button>
      <Button type="submit" variant="primary" busy={busy}>{addresses.length ? `Add ${plural(addresses.length, 'member', 'members')}` : 'Add members'}</Button>
    </>}>
      <TextAreaField label="Email addresses" mono rows={7} value={text} onValue={(v) => { setText(v); setError(''); }} error={error} placeholder={'ada@example.org\ngrace@example.org'}
        hint={`One per line, or separated by commas; up to ${MAX_ADD.toLocaleString()} at a time. An address that is not a contact yet becomes one, subscribed.`} />
    </Dialog>
  );
}
