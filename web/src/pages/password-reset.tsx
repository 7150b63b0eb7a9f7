import { useEffect, useState, type FormEvent } from 'react';
import { codeOf, problemOf, publicClient } from '../api.ts';
import {
  AuthLayout,
  EmailField,
  describedBy,
  Field,
  FormProblem,
  Notice,
} from '../components/auth-layout.tsx';
import { dropQueryParameter, Link, navigate, useLocation } from '../router.tsx';

/** Asks for a reset link (also how a user made by `remit init` sets a first password). */
export function ForgotPasswordPage() {
  const { search } = useLocation();
  const [email, setEmail] = useState(search.get('email') ?? '');
  const [sentTo, setSentTo] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      await publicClient.POST('/api/auth/password-reset', { body: { email } });
      setSentTo(email);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthLayout title="Reset your password">
      <FormProblem message={problem} />
      {sentTo ? (
        <Notice
          message={`If ${sentTo} has an account, a link to set a new password is on its way. It works once, for an hour.`}
        />
      ) : (
        <p className="auth-lead">We will email you a link to set a new password.</p>
      )}
      <form onSubmit={(e) => void submit(e)}>
        <EmailField value={email} onChange={setEmail} />
        <button type="submit" className="button button-primary button-wide" disabled={busy}>
          {sentTo ? 'Send the link again' : 'Email me a link'}
        </button>
      </form>
      <div className="auth-links">
        <Link to="/app/sign-in">Back to sign in</Link>
      </div>
    </AuthLayout>
  );
}

const LINK_PROBLEMS: Record<string, string> = {
  token_used: 'This link was already used. Ask for a new one.',
  token_expired: 'This link has expired. Ask for a new one.',
  invalid_token: 'This link is not valid (it may have been replaced by a newer one). Ask for a new one.',
};

export const MIN_PASSWORD = 12;

/** Why a new password and its repetition cannot be sent, or undefined when they can. */
export function newPasswordProblem(password: string, repeat: string): string | undefined {
  if (password !== repeat) return 'The two passwords differ.';
  if (password.length < MIN_PASSWORD) return `Use at least ${MIN_PASSWORD} characters.`;
  return undefined;
}

/** The page the emailed reset link opens: `/reset-password?token=…` (redirected into /app). */
export function ResetPasswordPage() {
  const { search } = useLocation();
  // Kept in the page, taken out of the address bar (and so out of the history and any screenshot).
  const [token] = useState(() => search.get('token') ?? '');
  useEffect(() => dropQueryParameter('token'), []);
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [linkProblem, setLinkProblem] = useState<string | undefined>(
    token ? undefined : 'This page needs the link from the email.',
  );
  const tooShort = password.length > 0 && password.length < MIN_PASSWORD;
  const mismatch = repeat.length > 0 && repeat !== password;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const refused = newPasswordProblem(password, repeat);
    if (refused) {
      setProblem(refused);
      return;
    }
    setBusy(true);
    setProblem(undefined);
    try {
      await publicClient.POST('/api/auth/password-reset/confirm', { body: { token, password } });
      navigate('/app/sign-in?reset=1', { replace: true });
    } catch (error) {
      const code = codeOf(error);
      if (code && code in LINK_PROBLEMS) setLinkProblem(LINK_PROBLEMS[code]);
      else setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  if (linkProblem) {
    return (
      <AuthLayout title="Set a new password">
        <FormProblem message={linkProblem} />
        <div className="auth-links">
          <Link to="/app/forgot-password">Ask for a new link</Link>
          <Link to="/app/sign-in">Sign in</Link>
        </div>
      </AuthLayout>
    );
  }
  const hint = `At least ${MIN_PASSWORD} characters. A phrase of several words is easy to remember.`;
  return (
    <AuthLayout title="Set a new password">
      <FormProblem message={problem} />
      <form onSubmit={(e) => void submit(e)}>
        <PasswordFields
          password={password}
          repeat={repeat}
          onPassword={setPassword}
          onRepeat={setRepeat}
          hint={hint}
          passwordError={tooShort ? `Use at least ${MIN_PASSWORD} characters.` : undefined}
          repeatError={mismatch ? 'The two passwords differ.' : undefined}
        />
        <button type="submit" className="button button-primary button-wide" disabled={busy}>
          {busy ? 'Saving…' : 'Set password'}
        </button>
      </form>
    </AuthLayout>
  );
}

export function PasswordFields(props: {
  password: string;
  repeat: string;
  onPassword(value: string): void;
  onRepeat(value: string): void;
  hint: string;
  passwordError: string | undefined;
  repeatError: string | undefined;
}) {
  return (
    <>
      <Field id="new-password" label="New password" hint={props.hint} error={props.passwordError}>
        <input
          id="new-password"
          type="password"
          autoComplete="new-password"
          required
          minLength={MIN_PASSWORD}
          aria-invalid={props.passwordError ? true : undefined}
          aria-describedby={describedBy('new-password', props.hint, props.passwordError)}
          value={props.password}
          onChange={(e) => props.onPassword(e.target.value)}
        />
      </Field>
      <Field id="repeat-password" label="Repeat the password" error={props.repeatError}>
        <input
          id="repeat-password"
          type="password"
          autoComplete="new-password"
          required
          aria-invalid={props.repeatError ? true : undefined}
          aria-describedby={describedBy('repeat-password', undefined, props.repeatError)}
          value={props.repeat}
          onChange={(e) => props.onRepeat(e.target.value)}
        />
      </Field>
    </>
  );
}
