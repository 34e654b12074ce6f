import { useState } from 'preact/hooks';
import { api, call } from '../api';
import { useSubmit } from '../hooks';
import { Button, FormError, LinkButton, TextField } from '../components';
import { takeFragmentToken } from '../navigation';
import { AuthLayout, MIN_PASSWORD } from './AuthLayout';

/** A password reset's link (`/app/reset#token=…`): a new password; every session of the account ends. */
export default function Reset() {
  const [token] = useState(takeFragmentToken);
  const [password, setPassword] = useState('');
  const [done, setDone] = useState(false);
  const { busy, fields, error, submit } = useSubmit(async () => {
    await call(api.POST('/auth/password-reset/confirm', { body: { token, password } }), { form: true });
    setDone(true);
  }, { fallback: 'The reset failed.', tokenHint: 'Ask for a new password reset.', initialError: token ? '' : 'This page needs the link of your password reset (…/app/reset#token=…).' });

  if (done) {
    return (
      <AuthLayout title="Password changed" lede="Your new password is set, and every session of your account has ended.">
        <LinkButton href="/app/login" variant="primary" block>Sign in</LinkButton>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout title="Choose a new password" foot={error ? <a href="/app/forgot">Ask for a new link</a> : <a href="/app/login">Back to sign in</a>}>
      <form class="form" onSubmit={submit} noValidate>
        <FormError>{error}</FormError>
        <TextField label="New password" type="password" value={password} onValue={setPassword} error={fields.password} autocomplete="new-password" required autoFocus
          hint={`At least ${MIN_PASSWORD} characters.`} />
        <Button type="submit" variant="primary" block busy={busy} disabled={!token}>Set password</Button>
      </form>
    </AuthLayout>
  );
}
