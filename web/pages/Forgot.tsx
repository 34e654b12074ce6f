import { useState } from 'preact/hooks';
import { api, call } from '../api';
import { useSubmit } from '../hooks';
import { Button, FormError, TextField } from '../components';
import { AuthLayout } from './AuthLayout';

/** "Forgot password": POST /auth/password-reset, whose answer is the same for every address. */
export default function Forgot() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState('');
  const { busy, fields, error, submit } = useSubmit(async () => {
    const answer = await call(api.POST('/auth/password-reset', { body: { email } }), { form: true });
    setSent(answer.message);
  }, { fallback: 'The request failed.' });

  return (
    <AuthLayout title="Reset your password" lede="Enter the address you sign in with, and we will email you a link to choose a new password."
      foot={<a href="/app/login">Back to sign in</a>}>
      {sent ? <div class="form-note" role="status">{sent} If no mail comes, ask your Herald operator for a reset link.</div> : (
        <form class="form" onSubmit={submit} noValidate>
          <FormError>{error}</FormError>
          <TextField label="Email" type="email" value={email} onValue={setEmail} error={fields.email} autocomplete="username" required autoFocus />
          <Button type="submit" variant="primary" block busy={busy}>Send reset link</Button>
        </form>
      )}
    </AuthLayout>
  );
}
