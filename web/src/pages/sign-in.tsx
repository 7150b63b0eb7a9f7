import { useEffect, useRef, useState, type FormEvent } from 'react';
import { codeOf, problemOf, publicClient } from '../api.ts';
import {
  AuthLayout,
  EmailField,
  FormProblem,
  Notice,
  describedBy,
  Field,
} from '../components/auth-layout.tsx';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSession } from '../session.tsx';

/** Only a page of the console is a place to go after signing in. */
export function safeNext(next: string | null): string {
  return next && /^\/app(\/|$|\?)/.test(next) && !next.startsWith('//') ? next : '/app/inbox';
}

export function SignInPage() {
  const { session, begin } = useSession();
  const { search } = useLocation();
  const next = safeNext(search.get('next'));
  const [email, setEmail] = useState(search.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [needsCode, setNeedsCode] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [notice, setNotice] = useState<string | undefined>(() => {
    if (search.get('joined')) return `You joined ${search.get('joined')}. Sign in to start.`;
    if (search.get('reset')) return 'Your password is set. Sign in with it.';
    return session.status === 'signed-out' ? session.notice : undefined;
  });
  const codeInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (session.status === 'signed-in') navigate(next, { replace: true });
  }, [session.status, next]);
  useEffect(() => {
    if (needsCode) codeInput.current?.focus();
  }, [needsCode]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setProblem(undefined);
    setNotice(undefined);
    try {
      const { data } = await publicClient.POST('/api/auth/sign-in', {
        body: { email, password, ...(needsCode ? { totp_code: code.replace(/\s+/g, '') } : {}) },
      });
      await begin(data.csrf_token);
    } catch (error) {
      const code = codeOf(error);
      if (code === 'second_factor_missing') {
        setNeedsCode(true);
        setNotice('Enter the six-digit code from your authenticator app.');
      } else if (code === 'invalid_credentials') {
        setProblem(needsCode ? 'That code or password is not right. Try again.' : 'Wrong email or password.');
      } else {
        setProblem(problemOf(error));
      }
    } finally {
      setBusy(false);
    }
  };

  const emailLink = async () => {
    setProblem(undefined);
    if (!email) {
      setProblem('Type your email address first, then ask for the link.');
      return;
    }
    try {
      await publicClient.POST('/api/auth/sign-in-link', { body: { email } });
      setNotice(`If ${email} has an account, a sign-in link is on its way. It works once, for 15 minutes.`);
    } catch (error) {
      setProblem(problemOf(error));
    }
  };

  return (
    <AuthLayout title="Sign in">
      <Notice message={notice} />
      <FormProblem message={problem} />
      <form onSubmit={(e) => void submit(e)} noValidate={false}>
        <EmailField value={email} onChange={setEmail} />
        <Field id="password" label="Password">
          <input
            id="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </Field>
        {needsCode && (
          <Field id="totp" label="Authentication code" hint="Six digits from your authenticator app">
            <input
              id="totp"
              ref={codeInput}
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="[0-9 ]{6,7}"
              required
              aria-describedby={describedBy('totp', 'hint')}
              value={code}
              onChange={(e) => setCode(e.target.value)}
            />
          </Field>
        )}
        <button type="submit" className="button button-primary button-wide" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <div className="auth-links">
        <Link to="/app/forgot-password">Forgot your password?</Link>
        <button type="button" className="link-button" onClick={() => void emailLink()}>
          Email me a sign-in link
        </button>
      </div>
    </AuthLayout>
  );
}
