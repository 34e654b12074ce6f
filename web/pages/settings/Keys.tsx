import { useState } from 'preact/hooks';
import { api, ApiFailure, call, type Schemas } from '../../api';
import { Badge, Button, ConfirmDialog, Dialog, EmptyState, FormError, Icon, Loading, SecretDialog, SelectField, TextField, Time, toast } from '../../components';
import { useLoad } from '../../hooks';

type Key = Schemas['ApiKey'];
type Created = Schemas['ApiKeyWithSecret'];

const PAGE = 100;

function Scope({ k }: { k: Key }) {
  if (k.type === 'public') return <Badge tone="info">Public (tracking)</Badge>;
  return k.scope === 'sending' ? <Badge tone="accent">Sending only</Badge> : <Badge tone="warning">Full access</Badge>;
}

/** API keys (GET/POST/DELETE /keys): the list, a new key shown once, revoking with a confirmation. */
export function Keys() {
  const [list, setList] = useState<{ items: Key[]; next: string | null }>({ items: [], next: null });
  const loaded = useLoad(async () => {
    const page = await call(api.GET('/keys', { params: { query: { limit: PAGE } } }));
    setList({ items: page.items, next: page.nextCursor });
    return page;
  }, []);
  const [creating, setCreating] = useState(false);
  const [made, setMade] = useState<Created | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);

  const more = async () => {
    const page = await call(api.GET('/keys', { params: { query: { limit: PAGE, cursor: list.next ?? undefined } } }));
    setList({ items: [...list.items, ...page.items], next: page.nextCursor });
  };

  const keys = list.items;
  const origin = location.origin;
  return (
    <div class="stack">
      <section class="card" aria-labelledby="keys-title">
        <div class="card-header">
          <div>
            <h2 id="keys-title">API keys</h2>
            <p class="muted card-sub">Keys let scripts and servers call Herald. A sending-only key can send and nothing else: give that one to your app.</p>
          </div>
          <Button variant="primary" onClick={() => setCreating(true)}><Icon name="plus" />Create API key</Button>
        </div>
        {loaded.loading && !loaded.data ? <Loading what="Loading the keys" /> : loaded.error ? (
          <div class="card-body"><EmptyState icon="alert" title="The keys did not load" actions={<Button onClick={loaded.reload}>Try again</Button>}>{loaded.error.message}</EmptyState></div>
        ) : keys.length === 0 ? (
          <div class="card-body">
            <EmptyState icon="key" title="No API keys yet" code={`curl -X POST ${origin}/keys \\\n  -H "Authorization: Bearer $HERALD_KEY" -H "Content-Type: application/json" \\\n  -d '{"name": "Production app", "scope": "sending"}'`}
              actions={<Button variant="primary" onClick={() => setCreating(true)}>Create API key</Button>}>
              Create a key for each app or script that sends through Herald, so you can revoke one without stopping the others.
            </EmptyState>
          </div>
        ) : (
          <div class="table-wrap table-flush" tabIndex={0} role="region" aria-label="The API keys">
            <table class="table">
              <thead><tr><th>Name</th><th>Scope</th><th>Domains</th><th>Key</th><th>Created</th><th>Last used</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.id}>
                    <td><span class="strong">{k.name}</span></td>
                    <td><Scope k={k} /></td>
                    <td>{k.domains?.length ? k.domains.join(', ') : <span class="muted">Any verified domain</span>}</td>
                    <td class="mono nowrap">{k.hint}</td>
                    <td><Time value={k.createdAt} /></td>
                    <td>{k.lastUsedAt ? <Time value={k.lastUsedAt} relative /> : <span class="muted">Never</span>}</td>
                    <td class="actions-cell"><Button size="sm" variant="ghost" class="danger-text" onClick={() => setRevoking(k)} aria-label={`Revoke ${k.name}`}>Revoke</Button></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {list.next ? <div class="card-body pager"><span>{keys.length} keys shown</span><Button size="sm" onClick={more}>Show more</Button></div> : null}
      </section>

      <CreateKey open={creating} onClose={() => setCreating(false)} onCreated={(k) => { setCreating(false); setMade(k); loaded.reload(); }} />

      <SecretDialog open={made !== null} title="Copy your new API key" what="API key" secret={made?.key ?? ''} onClose={() => setMade(null)}>
        {made ? (
          <div class="form-note">
            The key <strong>{made.name}</strong>: store it in your secret manager, and send it as <code>Authorization: Bearer …</code>.{' '}
            {made.scope === 'sending' ? 'It can only send (POST /v1/send, /v1/track, /v1/verify and SMTP).' : 'It can do what an admin can, through the API.'}
          </div>
        ) : null}
      </SecretDialog>

      <ConfirmDialog open={revoking !== null} danger title={`Revoke the key “${revoking?.name ?? ''}”?`} confirm="Revoke key"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          const k = revoking!;
          await call(api.DELETE('/keys/{id}', { params: { path: { id: k.id } } }));
          toast(`Key “${k.name}” revoked`);
          loaded.reload();
        }}>
        Every request with the key ending in {revoking?.hint.replace('…', '')} is refused from the next one on. Apps using it stop sending. This cannot be undone.
      </ConfirmDialog>
    </div>
  );
}

function CreateKey({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (k: Created) => void }) {
  const [name, setName] = useState('');
  const [scope, setScope] = useState<'full' | 'sending'>('sending');
  const [domains, setDomains] = useState('');
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');

  const close = () => { setName(''); setScope('sending'); setDomains(''); setFields({}); setError(''); onClose(); };
  const submit = async () => {
    setBusy(true);
    setFields({});
    setError('');
    const list = domains.split(/[\s,]+/).map((d) => d.trim()).filter(Boolean);
    try {
      const k = await call(api.POST('/keys', { body: { name: name.trim(), scope, ...(list.length ? { domains: list } : {}) } }), { form: true });
      toast(`Key “${k.name}” created`);
      setName(''); setScope('sending'); setDomains('');
      onCreated(k);
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      const domainError = Object.entries(f).find(([field]) => field.startsWith('domains'))?.[1];
      setFields({ ...f, ...(domainError ? { domains: domainError } : {}) });
      if (!f.name && !f.scope && !domainError) setError(err instanceof Error ? err.message : 'The key was not created.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={open} title="Create an API key" onClose={close} onSubmit={submit}
      actions={<><Button onClick={close} disabled={busy}>Cancel</Button><Button type="submit" variant="primary" busy={busy}>Create key</Button></>}>
      <FormError>{error}</FormError>
      <TextField label="Name" value={name} onValue={setName} error={fields.name} placeholder="Production app" required autoFocus
        hint="What uses it, so you know which key to revoke." />
      <SelectField label="Scope" value={scope} onValue={(v) => setScope(v as 'full' | 'sending')} error={fields.scope}
        options={[['sending', 'Sending only: send, track, verify and SMTP'], ['full', 'Full access: everything an admin can do']]} />
      <TextField label="Sending domains (optional)" value={domains} onValue={setDomains} error={fields.domains} placeholder="example.com, mail.example.org"
        hint="The key may only send From these domains and their subdomains. Empty: any verified domain of the project." />
    </Dialog>
  );
}
