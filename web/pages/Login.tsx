import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiFailure, call } from '../api';
import { Button, FormError, LinkButton, TextField } from '../components';
import { safeNext } from '../navigation';
import { AuthLayout, retryWords } from './AuthLayout';

/** The codes of a failed single sign-on (api/routes/auth.ts, people/oidc.ts), in words. */
const SSO_ERRORS: Record<string, string> = {
  state: 'The single sign-on took too long or was started in another tab. Try again.',
  provider: 'The identity provider refused the sign-in. Try again, or ask your administrator.',
  email_unverified: 'Your identity provider has not verified your email address, so Herald cannot use it to sign you in.',
  no_account: 'There is no Herald account for this address (or it is disabled). Ask an admin of your project for an invitation.',
  unavailable: 'Single sign-on is not available right now. Sign in with your password, or try again later.',
};

type Step = { kind: 'password' } | { kind: 'code'; challenge: string };

/** The failure of a sign-in in words (a 401 tells nothing apart; a 429 says when to retry). */
function refusal(err: unknown): string {
  if (!(err instanceof ApiFailure)) return 'Sign-in failed. Try again.';
  if (err.status === 429) return `Too many failed sign-ins. You can try again ${retryWords(err.retryAfter ?? 60)}.`;
  return err.message;
}

export default function Login() {
  const { query, route } = useLocation();
  const [step, setStep] = useState<Step>({ kind: 'password' });
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [recovery, setRecovery] = useState(false);
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState(query.error ? (SSO_ERRORS[query.error] ?? `Single sign-on failed (${query.error}).`) : '');
  const [sso, setSso] = useState<string | null>(null);

  useEffect(() => {
    call(api.GET('/auth/providers'), { form: true }).then((p) => setSso(p.oidc.enabled ? p.oidc.loginUrl : null), () => setSso(null));
  }, []);

  const done = () => route(safeNext(query.next), true);
  const fail = (err: unknown) => {
    const f = err instanceof ApiFailure ? err.fields : {};
    setFields(f);
    setError(Object.keys(f).length ? '' : refusal(err));
  };

  const signIn = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    setFields({});
    try {
      const answer = await call(api.POST('/auth/login', { body: { email, password } }), { form: true });
      if ('twoFactorRequired' in answer) {
        setStep({ kind: 'code', challenge: answer.challenge });
        setBusy(false);
        return;
      }
      done();
    } catch (err) {
      fail(err);
      setBusy(false);
    }
  };

  const prove = async (e: Event) => {
    e.preventDefault();
    if (step.kind !== 'code') return;
    setBusy(true);
    setError('');
    setFields({});
    try {
      const body = recovery ? { challenge: step.challenge, recoveryCode: code.trim() } : { challenge: step.challenge, code: code.replace(/\s+/g, '') };
      await call(api.POST('/auth/login/two-factor', { body }), { form: true });
      done();
    } catch (err) {
      fail(err);
      setBusy(false);
    }
  };

  if (step.kind === 'code') {
    return (
      <AuthLayout title="Two-factor authentication" lede={recovery ? 'Enter one of your recovery codes. Each works once.' : 'Enter the 6-digit code your authenticator app shows for Herald.'}>
        <form class="form" onSubmit={prove} noValidate>
          <FormError>{error}</FormError>
          <TextField label={recovery ? 'Recovery code' : 'Authentication code'} value={code} onValue={setCode} error={fields.code ?? fields.recoveryCode}
            autocomplete="one-time-code" inputMode={recovery ? 'text' : 'numeric'} required autoFocus />
          <Button type="submit" variant="primary" block busy={busy}>Verify</Button>
        </form>
        <Button variant="ghost" size="sm" onClick={() => { setRecovery(!recovery); setCode(''); setFields({}); setError(''); }}>
          {recovery ? 'Use the authenticator app' : 'Use a recovery code'}
        </Button>
      </AuthLayout>
    );
  }

  return (
    <AuthLayout title="Sign in to Herald" foot={<><a href="/app/forgot">Forgot your password?</a> · No account? Ask an admin of your project for an invitation.</>}>
      <form class="form" onSubmit={signIn} noValidate aria-describedby={error ? 'login-error' : undefined}>
        {error ? <div class="form-error" role="alert" id="login-error">{error}</div> : <FormError />}
        <TextField label="Email" type="email" value={email} onValue={setEmail} error={fields.email} autocomplete="username" required autoFocus />
        <TextField label="Password" type="password" value={password} onValue={setPassword} error={fields.password} autocomplete="current-password" required />
        <Button type="submit" variant="primary" block busy={busy}>Sign in</Button>
      </form>
      {sso ? (
        <>
          <div class="divider">or</div>
          <LinkButton href={sso} block data-native="">Sign in with single sign-on</LinkButton>
        </>
      ) : null}
    </AuthLayout>
  );
}
