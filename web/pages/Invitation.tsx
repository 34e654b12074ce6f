import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, call } from '../api';
import { useSubmit } from '../hooks';
import { Button, FormError, TextField } from '../components';
import { takeFragmentToken } from '../navigation';
import { AuthLayout, MIN_PASSWORD } from './AuthLayout';

/**
 * An invitation's link (`/app/invitation#token=…`): POST /invitations/accept with a name and a password (a new
 * account), or the password of the account the address already has; then signed in, in the project.
 */
export default function Invitation() {
  const { route } = useLocation();
  const [token] = useState(takeFragmentToken);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const { busy, fields, error, submit } = useSubmit(async () => {
    const joined = await call(api.POST('/invitations/accept', { body: { token, name, password } }), { form: true });
    try { localStorage.setItem('herald.project', joined.projectId); } catch { /* the first project is used instead */ }
    await call(api.POST('/auth/login', { body: { email: joined.email, password } }), { form: true })
      .then((answer) => route('twoFactorRequired' in answer ? '/app/login' : '/app', true));
  }, { fallback: 'Joining failed.', tokenHint: 'Ask an admin of the project for a new invitation.', initialError: token ? '' : 'This page needs the link of your invitation (…/app/invitation#token=…).' });

  return (
    <AuthLayout title="Join your team on Herald" lede="Choose your name and a password. If you already have a Herald account, enter its password: the project is added to it.">
      <form class="form" onSubmit={submit} noValidate>
        <FormError>{error}</FormError>
        <TextField label="Name" value={name} onValue={setName} error={fields.name} autocomplete="name" required autoFocus />
        <TextField label="Password" type="password" value={password} onValue={setPassword} error={fields.password} autocomplete="new-password" required
          hint={`At least ${MIN_PASSWORD} characters.`} />
        <Button type="submit" variant="primary" block busy={busy} disabled={!token}>Accept invitation</Button>
      </form>
    </AuthLayout>
  );
}
