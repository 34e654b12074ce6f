import { useState } from 'preact/hooks';
import { mayGrant, ROLES, type Role } from '../../../projects/roles';
import { api, ApiFailure, call } from '../../api';
import { Badge, Button, ConfirmDialog, CopyField, Dialog, EmptyState, FormError, Icon, Loading, SelectField, TextField, Time, toast, type Tone } from '../../components';
import { formatDateTime } from '../../components/DateTime';
import { useLoad } from '../../hooks';
import { useSession } from '../../session';

interface Member { userId: string; email: string; name: string; role: Role; createdAt: string }
interface Invitation { id: string; email: string; role: Role; createdAt: string; expiresAt: string; link?: string }

export const ROLE_WORDS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member', viewer: 'Viewer' };
const ROLE_HINTS: Record<Role, string> = {
  owner: 'everything, and may hand over or delete the project',
  admin: 'keys, domains, webhooks, settings and members',
  member: 'sends, contacts, templates and campaigns',
  viewer: 'reads everything, changes nothing',
};
const roleTone = (role: Role): Tone => (role === 'owner' ? 'accent' : role === 'admin' ? 'info' : 'neutral');

/** Members and invitations (GET/PATCH/DELETE /members, GET/POST/DELETE /invitations). */
export function Members() {
  const { me, project } = useSession();
  const mine = (project?.role ?? 'viewer') as Role;
  const grantable = ROLES.filter((r) => mayGrant(mine, r));
  const loaded = useLoad(() => Promise.all([
    call(api.GET('/members')).then((p): Member[] => p.items),
    call(api.GET('/invitations')).then((p): Invitation[] => p.items),
  ]), []);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  const [link, setLink] = useState<Invitation | null>(null);
  const [changing, setChanging] = useState<string | null>(null);

  if (loaded.loading && !loaded.data) return <Loading what="Loading the members" />;
  if (loaded.error || !loaded.data) {
    return <EmptyState icon="alert" title="The members did not load" actions={<Button onClick={loaded.reload}>Try again</Button>}>{loaded.error?.message}</EmptyState>;
  }
  const [members, invitations] = loaded.data;
  const sorted = [...members].sort((a, b) => ROLES.indexOf(a.role) - ROLES.indexOf(b.role) || (a.name || a.email).localeCompare(b.name || b.email));
  const who = (m: Member) => m.name || m.email;

  const changeRole = async (m: Member, role: Role) => {
    setChanging(m.userId);
    try {
      await call(api.PATCH('/members/{userId}', { params: { path: { userId: m.userId } }, body: { role } }));
      toast(`${who(m)} is now ${ROLE_WORDS[role].toLowerCase()}`);
      loaded.reload();
    } catch {
      loaded.reload(); // the select goes back to the role the member has
    } finally {
      setChanging(null);
    }
  };

  return (
    <div class="stack">
      <Invite roles={grantable} onInvited={(inv) => { loaded.reload(); if (inv.link) setLink(inv); }} />

      <section class="card" aria-labelledby="members-title">
        <div class="card-header">
          <h2 id="members-title">Members <span class="muted">{members.length}</span></h2>
        </div>
        <div class="table-wrap table-flush" tabIndex={0} role="region" aria-label="The members">
          <table class="table">
            <thead><tr><th>Person</th><th>Role</th><th>Joined</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              {sorted.map((m) => {
                const self = m.userId === me.user.id;
                // Nobody changes or removes a member above them (people/members.ts), nor themselves here.
                const mayChange = !self && mayGrant(mine, m.role);
                return (
                  <tr key={m.userId}>
                    <td>
                      <span class="strong">{m.name || m.email}</span>{self ? <> <Badge>You</Badge></> : null}
                      {m.name ? <span class="sub">{m.email}</span> : null}
                    </td>
                    <td>
                      {mayChange ? (
                        <select class="select select-sm" aria-label={`Role of ${who(m)}`} value={m.role} disabled={changing === m.userId}
                          onChange={(e) => void changeRole(m, e.currentTarget.value as Role)}>
                          {grantable.map((r) => <option key={r} value={r}>{ROLE_WORDS[r]}</option>)}
                        </select>
                      ) : <Badge tone={roleTone(m.role)}>{ROLE_WORDS[m.role]}</Badge>}
                    </td>
                    <td><Time value={m.createdAt} /></td>
                    <td class="actions-cell">
                      {mayChange ? <Button size="sm" variant="ghost" class="danger-text" aria-label={`Remove ${who(m)}`} onClick={() => setRemoving(m)}>Remove</Button> : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>

      <section class="card" aria-labelledby="invitations-title">
        <div class="card-header"><h2 id="invitations-title">Pending invitations <span class="muted">{invitations.length}</span></h2></div>
        {invitations.length === 0 ? (
          <div class="card-body"><p class="muted">No invitation is waiting. Invite someone above: they get a link to choose a password and join.</p></div>
        ) : (
          <div class="table-wrap table-flush" tabIndex={0} role="region" aria-label="The pending invitations">
            <table class="table">
              <thead><tr><th>Email</th><th>Role</th><th>Invited</th><th>Expires</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                {invitations.map((i) => (
                  <tr key={i.id}>
                    <td><span class="strong">{i.email}</span></td>
                    <td><Badge tone={roleTone(i.role)}>{ROLE_WORDS[i.role]}</Badge></td>
                    <td><Time value={i.createdAt} /></td>
                    <td><Time value={i.expiresAt} /></td>
                    <td class="actions-cell">
                      {mayGrant(mine, i.role) ? <Button size="sm" variant="ghost" class="danger-text" aria-label={`Revoke the invitation of ${i.email}`} onClick={() => setRevoking(i)}>Revoke</Button> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <Dialog open={link !== null} wide title={`Send ${link?.email ?? ''} their invitation link`} onClose={() => setLink(null)}
        lede={<>Herald has no system sender to mail it, so pass this link on yourself. It works once, until {link ? formatDateTime(link.expiresAt) : ''}, and you will not see it again.</>}
        actions={<Button variant="primary" onClick={() => setLink(null)}>Done</Button>}>
        {link?.link ? <CopyField label="Invitation link" value={link.link} /> : null}
      </Dialog>

      <ConfirmDialog open={removing !== null} danger title={`Remove ${removing ? who(removing) : ''} from ${project?.projectName ?? 'the project'}?`} confirm="Remove member"
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          const m = removing!;
          await call(api.DELETE('/members/{userId}', { params: { path: { userId: m.userId } } }));
          toast(`${who(m)} removed`);
          loaded.reload();
        }}>
        They lose access to this project at once (their account stays, with its other projects). To bring them back, invite them again.
      </ConfirmDialog>

      <ConfirmDialog open={revoking !== null} danger title={`Revoke the invitation of ${revoking?.email ?? ''}?`} confirm="Revoke invitation"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          const i = revoking!;
          await call(api.DELETE('/invitations/{id}', { params: { path: { id: i.id } } }));
          toast(`Invitation of ${i.email} revoked`);
          loaded.reload();
        }}>
        Their link stops working now. You can invite them again later.
      </ConfirmDialog>
    </div>
  );
}

function Invite({ roles, onInvited }: { roles: Role[]; onInvited: (i: Invitation) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>(roles.includes('member') ? 'member' : roles[roles.length - 1]!);
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFields({});
    setError('');
    try {
      const made = await call(api.POST('/invitations', { body: { email: email.trim(), role } }), { form: true });
      toast(made.link ? `Invitation for ${made.email} created` : `Invitation sent to ${made.email}`);
      setEmail('');
      onInvited(made);
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      if (!f.email && !f.role) setError(err instanceof Error ? err.message : 'The invitation was not created.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="invite-title">
      <div class="card-header"><h2 id="invite-title">Invite someone</h2></div>
      <form class="card-body invite-form" onSubmit={submit} noValidate>
        <FormError>{error}</FormError>
        <div class="invite-row">
          <TextField label="Email" type="email" value={email} onValue={setEmail} error={fields.email} placeholder="colleague@example.com" required fieldClass="grow" autocomplete="off" />
          <SelectField label="Role" value={role} onValue={(v) => setRole(v as Role)} error={fields.role} options={roles.map((r) => [r, ROLE_WORDS[r]])} />
          <Button type="submit" variant="primary" busy={busy}><Icon name="users" />Send invitation</Button>
        </div>
        <p class="field-hint">{ROLE_WORDS[role]}: {ROLE_HINTS[role]}. You can give a role up to your own.</p>
      </form>
    </section>
  );
}
