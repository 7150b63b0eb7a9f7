import { useEffect, useRef, useState, type FormEvent } from 'react';
import { codeOf, problemOf, publicClient } from '../api.ts';
import { AuthLayout, Field, FormProblem, Notice } from '../components/auth-layout.tsx';
import { Loading } from '../components/states.tsx';
import { dropQueryParameter, Link, navigate, useLocation } from '../router.tsx';
import { useSession } from '../session.tsx';

const LINK_PROBLEMS: Record<string, string> = {
  token_used: 'This sign-in link was already used.',
  token_expired: 'This sign-in link has expired (they last 15 minutes).',
  invalid_token: 'This sign-in link is not valid (a newer one may have replaced it).',
};

/** The page the emailed sign-in link opens: `/sign-in-link?token=…` (redirected into /app). */
export function SignInLinkPage() {
  const { search } = useLocation();
  const { begin } = useSession();
  const [token] = useState(() => search.get('token') ?? '');
  useEffect(() => dropQueryParameter('token'), []);
  const [needsCode, setNeedsCode] = useState(false);
  const [code, setCode] = useState('');
  const [problem, setProblem] = useState<string | undefined>(
    token ? undefined : 'This page needs the link from the email.',
  );
  const [linkProblem, setLinkProblem] = useState<string>();
  const started = useRef(false);

  const confirm = async (totp?: string) => {
    setProblem(undefined);
    try {
      const { data } = await publicClient.POST('/api/auth/sign-in-link/confirm', {
        body: { token, ...(totp ? { totp_code: totp } : {}) },
      });
      await begin(data.csrf_token);
      navigate('/app/inbox', { replace: true });
    } catch (error) {
      const errorCode = codeOf(error);
      if (errorCode === 'second_factor_missing') setNeedsCode(true);
      else if (errorCode && errorCode in LINK_PROBLEMS) setLinkProblem(LINK_PROBLEMS[errorCode]);
      else setProblem(problemOf(error));
    }
  };

  useEffect(() => {
    if (!token || started.current) return;
    started.current = true;
    void confirm();
    // Once, with the token the page opened with (confirm is a new function each render).
  }, [token]);

  if (linkProblem || (!token && problem)) {
    return (
      <AuthLayout title="Sign in">
        <FormProblem message={linkProblem ?? problem} />
        <div className="auth-links">
          <Link to="/app/sign-in">Sign in with a password, or ask for a new link</Link>
        </div>
      </AuthLayout>
    );
  }
  if (!needsCode) {
    return (
      <AuthLayout title="Sign in">
        <FormProblem message={problem} />
        {!problem && <Loading label="Signing you in…" />}
      </AuthLayout>
    );
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void confirm(code.replace(/\s+/g, ''));
  };
  return (
    <AuthLayout title="Sign in">
      <Notice message="Enter the six-digit code from your authenticator app." />
      <FormProblem message={problem} />
      <form onSubmit={submit}>
        <Field id="totp" label="Authentication code">
          <input
            id="totp"
            inputMode="numeric"
            autoComplete="one-time-code"
            required
            autoFocus
            value={code}
            onChange={(e) => setCode(e.target.value)}
          />
        </Field>
        <button type="submit" className="button button-primary button-wide">
          Sign in
        </button>
      </form>
    </AuthLayout>
  );
}
