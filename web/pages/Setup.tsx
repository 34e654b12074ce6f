import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, call } from '../api';
import { useSubmit } from '../hooks';
import { Button, FormError, TextField } from '../components';
import { takeFragmentToken } from '../navigation';
import { AuthLayout, MIN_PASSWORD } from './AuthLayout';

/**
 * First start (`/app/setup#token=…`, the link Herald prints while no account exists): creates the first account, an
 * operator who owns every project (POST /auth/setup), then signs in with it.
 */
export default function Setup() {
  const { route } = useLocation();
  const [token] = useState(takeFragmentToken);
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, fields, error, submit } = useSubmit(async () => {
    await call(api.POST('/auth/setup', { body: { token, name, email, password } }), { form: true });
    await call(api.POST('/auth/login', { body: { email, password } }), { form: true });
    route('/app', true);
  }, { fallback: 'Setup failed.', tokenHint: 'Restart Herald to print a new setup link.', initialError: token ? '' : 'This page needs the setup link Herald printed when it started (…/app/setup#token=…).' });

  return (
    <AuthLayout title="Set up Herald" lede="Create the first account. It is an operator and owns every project; you can invite your team next."
      foot={<>Already set up? <a href="/app/login">Sign in</a></>}>
      <form class="form" onSubmit={submit} noValidate>
        <FormError>{error}</FormError>
        <TextField label="Name" value={name} onValue={setName} error={fields.name} autocomplete="name" required autoFocus />
        <TextField label="Email" type="email" value={email} onValue={setEmail} error={fields.email} autocomplete="username" required />
        <TextField label="Password" type="password" value={password} onValue={setPassword} error={fields.password} autocomplete="new-password" required
          hint={`At least ${MIN_PASSWORD} characters.`} />
        <Button type="submit" variant="primary" block busy={busy} disabled={!token}>Create account</Button>
      </form>
    </AuthLayout>
  );
}
