import { useState } from 'preact/hooks';
import { api, ApiFailure, call, type Schemas } from '../../api';
import { Badge, Button, ConfirmDialog, CopyButton, CopyField, Dialog, EmptyState, FormError, Icon, Loading, TextField, Time, toast } from '../../components';
import { useLoad } from '../../hooks';
import { useSession } from '../../session';
import { QrCode } from '../../components/QrCode';

type SessionInfo = Schemas['SessionInfo'];

/** A browser in a few words from its User-Agent ("Firefox on macOS"), enough to tell one's sessions apart. */
export function deviceOf(ua: string | null): string {
  if (!ua) return 'Unknown browser';
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari' : /curl\//.test(ua) ? 'curl' : ua.split(/[\s/]/)[0] || 'A browser';
  const os = /iPhone|iPad/.test(ua) ? 'iOS' : /Android/.test(ua) ? 'Android' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows'
    : /Linux/.test(ua) ? 'Linux' : '';
  return os ? `${browser} on ${os}` : browser;
}

/** The person signed in (not the project): their sessions, and two-factor authentication. */
export function Account() {
  const { me } = useSession();
  return (
    <div class="stack">
      <section class="card" aria-labelledby="account-title">
        <div class="card-header"><h2 id="account-title">You</h2></div>
        <div class="card-body">
          <dl class="kv">
            <dt>Name</dt><dd>{me.user.name || <span class="muted">—</span>}</dd>
            <dt>Email</dt><dd>{me.user.email}</dd>
            <dt>Projects</dt><dd>{me.projects.map((p) => `${p.projectName} (${p.role})`).join(', ') || <span class="muted">None</span>}</dd>
          </dl>
        </div>
      </section>
      <TwoFactor />
      <Sessions />
    </div>
  );
}

function Sessions() {
  const loaded = useLoad(() => call(api.GET('/auth/sessions')), []);
  const [ending, setEnding] = useState<SessionInfo | null>(null);
  const sessions = loaded.data?.items ?? [];
  return (
    <section class="card" aria-labelledby="sessions-title">
      <div class="card-header">
        <div>
          <h2 id="sessions-title">Where you are signed in</h2>
          <p class="muted card-sub">Every browser signed in to your account. End one you do not recognise, or left signed in elsewhere.</p>
        </div>
      </div>
      {loaded.loading && !loaded.data ? <Loading what="Loading your sessions" /> : loaded.error ? (
        <div class="card-body"><EmptyState icon="alert" title="Your sessions did not load" actions={<Button onClick={loaded.reload}>Try again</Button>}>{loaded.error.message}</EmptyState></div>
      ) : (
        <div class="table-wrap table-flush" tabIndex={0} role="region" aria-label="Your sessions">
          <table class="table">
            <thead><tr><th>Browser</th><th>From</th><th>Signed in</th><th>Last active</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id}>
                  <td>
                    <span class="strong"><Icon name="monitor" /> {deviceOf(s.userAgent)}</span>{s.current ? <> <Badge tone="success">This browser</Badge></> : null}
                    {s.userAgent ? <span class="sub truncate" title={s.userAgent}>{s.userAgent}</span> : null}
                  </td>
                  <td class="mono nowrap">{s.address ?? <span class="muted">—</span>}</td>
                  <td><Time value={s.createdAt} /></td>
                  <td><Time value={s.lastSeenAt} relative /></td>
                  <td class="actions-cell">
                    {s.current ? null : <Button size="sm" variant="ghost" class="danger-text" aria-label={`End session: ${deviceOf(s.userAgent)}${s.address ? ` from ${s.address}` : ''}`} onClick={() => setEnding(s)}>End session</Button>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog open={ending !== null} danger title={`End the session of ${ending ? deviceOf(ending.userAgent) : ''}?`} confirm="End session"
        onClose={() => setEnding(null)}
        onConfirm={async () => {
          await call(api.DELETE('/auth/sessions/{id}', { params: { path: { id: ending!.id } } }));
          toast('Session ended');
          loaded.reload();
        }}>
        That browser{ending?.address ? ` (from ${ending.address})` : ''} is signed out at its next request and must sign in again.
      </ConfirmDialog>
    </section>
  );
}

type Enrolment = Schemas['TwoFactorEnrolment'];

function TwoFactor() {
  const { me, refresh } = useSession();
  const on = me.twoFactor.enabled;
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [starting, setStarting] = useState(false);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [disabling, setDisabling] = useState(false);

  const start = async () => {
    setStarting(true);
    try { setEnrolment(await call(api.POST('/auth/two-factor'))); } catch { /* shown by the API wrapper */ } finally { setStarting(false); }
  };

  return (
    <section class="card" aria-labelledby="two-factor-title">
      <div class="card-header">
        <div>
          <h2 id="two-factor-title">Two-factor authentication {on ? <Badge tone="success">On</Badge> : <Badge>Off</Badge>}</h2>
          <p class="muted card-sub">{on
            ? 'Signing in asks for a code from your authenticator app after your password.'
            : 'Ask for a code from an authenticator app (1Password, Google Authenticator, Authy…) after your password, so a leaked password is not enough.'}</p>
        </div>
        {on
          ? <Button onClick={() => setDisabling(true)}>Turn off</Button>
          : enrolment ? null : <Button variant="primary" busy={starting} onClick={start}><Icon name="shield" />Set up two-factor</Button>}
      </div>
      {enrolment && !on ? (
        <Enrol enrolment={enrolment} onCancel={() => setEnrolment(null)} onDone={async (recovery) => {
          setEnrolment(null);
          setCodes(recovery);
          await refresh();
        }} />
      ) : null}

      <Dialog open={codes !== null} wide title="Save your recovery codes" onClose={() => setCodes(null)}
        lede="If you lose your phone, each of these codes signs you in once instead of the app. This is the only time Herald shows them: you will not see them again."
        actions={<Button variant="primary" onClick={() => setCodes(null)}>I have saved them</Button>}>
        {codes ? (
          <>
            <ul class="recovery-codes" aria-label="Recovery codes">{codes.map((c) => <li key={c} class="mono">{c}</li>)}</ul>
            <div class="row"><CopyButton value={codes.join('\n')} label="Copy the recovery codes" text="Copy" size="md" /><span class="muted">Keep them in your password manager.</span></div>
          </>
        ) : null}
      </Dialog>

      <DisableTwoFactor open={disabling} onClose={() => setDisabling(false)} onDone={refresh} />
    </section>
  );
}

function Enrol({ enrolment, onCancel, onDone }: { enrolment: Enrolment; onCancel: () => void; onDone: (codes: string[]) => Promise<void> }) {
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const confirm = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const answer = await call(api.POST('/auth/two-factor/confirm', { body: { code: code.replace(/\s+/g, '') } }), { form: true });
      toast('Two-factor authentication is on');
      await onDone(answer.recoveryCodes);
    } catch (err) {
      setError(err instanceof ApiFailure ? (err.fields.code ?? err.message) : 'Two-factor was not turned on.');
      setBusy(false);
    }
  };
  return (
    <form class="card-body enrol" onSubmit={confirm} noValidate>
      <ol class="enrol-steps">
        <li>
          <p class="strong">Add Herald to your authenticator app</p>
          <p class="muted">Scan the code with the app, or add an account by setup key and copy the key in.</p>
          <QrCode value={enrolment.uri} label="QR code of the two-factor setup link: scan it with your authenticator app" />
          <div class="stack enrol-values">
            <CopyField label="Setup key" value={enrolment.secret} secret />
            <CopyField label="otpauth link" value={enrolment.uri} />
          </div>
        </li>
        <li>
          <p class="strong">Enter the 6-digit code the app shows</p>
          <div class="enrol-confirm">
            <TextField label="Authentication code" value={code} onValue={setCode} error={error} inputMode="numeric" autocomplete="one-time-code" placeholder="123456" maxLength={8} required />
            <Button type="submit" variant="primary" busy={busy}>Turn on two-factor</Button>
            <Button variant="ghost" onClick={onCancel} disabled={busy}>Cancel</Button>
          </div>
        </li>
      </ol>
    </form>
  );
}

function DisableTwoFactor({ open, onClose, onDone }: { open: boolean; onClose: () => void; onDone: () => Promise<void> }) {
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const close = () => { setPassword(''); setError(''); onClose(); };
  const submit = async () => {
    setBusy(true);
    setError('');
    try {
      // A wrong password is a 401 here, an answer for this form (not a signed-out session).
      await call(api.DELETE('/auth/two-factor', { body: { password } }), { form: true, expect: [401, 429] });
      toast('Two-factor authentication is off');
      close();
      await onDone();
    } catch (err) {
      setError(err instanceof ApiFailure && err.status === 401 ? 'That password is not right.'
        : err instanceof ApiFailure && err.status === 429 ? `Too many tries: wait ${err.retryAfter ?? 60} seconds.`
          : err instanceof ApiFailure ? (err.fields.password ?? err.message) : 'Two-factor was not turned off.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={open} title="Turn off two-factor authentication?" onClose={close} onSubmit={submit}
      lede="Signing in will ask for your password only. Your recovery codes stop working. Confirm with your password."
      actions={<><Button onClick={close} disabled={busy}>Cancel</Button><Button type="submit" variant="danger" busy={busy}>Turn off two-factor</Button></>}>
      <FormError>{error}</FormError>
      <TextField label="Password" type="password" value={password} onValue={setPassword} autocomplete="current-password" required autoFocus />
    </Dialog>
  );
}
