import { Ago } from '../../components/ago.tsx';
import { useId, useMemo, useRef, useState, type FormEvent, type RefObject } from 'react';
import { create as createQrCode } from 'qrcode';
import { codeOf, problemOf, publicClient } from '../../api.ts';
import { Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { formatAgo, formatDateTime } from '../../format.ts';
import {
  describeUserAgent,
  groupSecret,
  PASSWORD_RULES,
  passwordProblem,
  qrPath,
  SESSION_METHODS,
  totpCodeOf,
} from '../../settings-people.ts';
import { useSession, useSignedIn } from '../../session.tsx';
import { useResource } from '../../use-resource.ts';
import { ConfirmButton } from './confirm-button.tsx';
import '../../tables.css';
import './people.css';

/**
 * Your account: who you are here, your password, the second factor (TOTP) and your sign-in sessions
 * (docs/people.md). Everything on it is the person's own, through the sign-in routes.
 */
export default function AccountSettings() {
  useDocumentTitle('Your account');
  const { user, organization } = useSignedIn();
  // Bumped after any change here: the session (second factor) and the session list are read again.
  const [version, setVersion] = useState(0);
  const changed = () => setVersion((v) => v + 1);
  return (
    <div className="people-settings">
      <h1>Your account</h1>
      <section className="panel" aria-labelledby="profile-heading">
        <h2 id="profile-heading">Profile</h2>
        <dl className="facts">
          <div>
            <dt>Name</dt>
            <dd>{user.full_name || '—'}</dd>
          </div>
          <div>
            <dt>Email</dt>
            <dd className="wrap-long">{user.email}</dd>
          </div>
          <div>
            <dt>Role</dt>
            <dd>
              {organization.role === 'admin' ? 'Admin' : 'Member'} of {organization.organization_name}
            </dd>
          </div>
        </dl>
      </section>
      <ApprovalEmails />
      <ChangePassword onChanged={changed} />
      <SecondFactor version={version} onChanged={changed} />
      <Sessions version={version} onChanged={changed} />
    </div>
  );
}

/**
 * Approval requests by email (docs/approval-emails.md): this person's choice in this organization,
 * saved as soon as the box changes.
 */
function ApprovalEmails() {
  const { client, user, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const [version, setVersion] = useState(0);
  const preferences = useResource(`preferences:${user.uid}:${organizationUid}:${version}`, async () => {
    const { data } = await client.GET('/api/me/preferences', {
      params: { query: { organization_uid: organizationUid } },
    });
    return data;
  });
  const [saving, setSaving] = useState(false);
  // What was last saved here: shown at once, so the box follows the click (the read is not repeated).
  const [saved, setSaved] = useState<boolean>();
  const [notice, setNotice] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const change = async (on: boolean) => {
    const before = saved;
    setSaving(true);
    setSaved(on);
    setNotice(undefined);
    setProblem(undefined);
    try {
      await client.PATCH('/api/me/preferences', {
        body: { organization_uid: organizationUid, approval_emails: on },
      });
      setNotice(
        on
          ? `Approval requests in ${organization.organization_name} will be emailed to ${user.email}.`
          : 'Approval requests will no longer be emailed to you.',
      );
    } catch (error) {
      setSaved(before);
      setProblem(problemOf(error));
    } finally {
      setSaving(false);
    }
  };
  return (
    <section className="panel" aria-labelledby="approval-emails-heading">
      <h2 id="approval-emails-heading">Approval requests by email</h2>
      {preferences.status === 'loading' && <Loading label="Loading your preferences…" />}
      {preferences.status === 'error' && (
        <Problem
          title="Your preferences could not be loaded"
          message={preferences.message}
          onRetry={() => setVersion((v) => v + 1)}
        />
      )}
      {preferences.status === 'ready' && (
        <div className="field">
          <label className="checkbox">
            <input
              type="checkbox"
              checked={saved ?? preferences.data.approval_emails}
              disabled={saving}
              onChange={(event) => void change(event.currentTarget.checked)}
            />
            Email me each approval an agent asks for in {organization.organization_name}, with a link to
            approve or reject it (each link works once, only for me, and expires)
          </label>
        </div>
      )}
      <div aria-live="polite" className="live-notice">
        {notice && <p className="form-notice">{notice}</p>}
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
      </div>
    </section>
  );
}

function ChangePassword({ onChanged }: { onChanged: () => void }) {
  const { client, user } = useSignedIn();
  const { begin } = useSession();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<{ current?: string; next?: string; repeat?: string }>({});
  const [problem, setProblem] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const currentInput = useRef<HTMLInputElement>(null);
  const nextInput = useRef<HTMLInputElement>(null);
  const repeatInput = useRef<HTMLInputElement>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(undefined);
    setNotice(undefined);
    const found = {
      current: current ? undefined : 'Type your current password.',
      next: passwordProblem(next, user.email),
      repeat: next === repeat ? undefined : 'The two new passwords are not the same.',
    };
    setErrors(found);
    if (found.current) return currentInput.current?.focus();
    if (found.next) return nextInput.current?.focus();
    if (found.repeat) return repeatInput.current?.focus();
    setBusy(true);
    try {
      const { data } = await client.POST('/api/auth/password', {
        body: { current_password: current, new_password: next },
      });
      // Every session ended with the change and this browser got a new one (a new cookie): its
      // anti-forgery token is in the answer, and the console goes on with it.
      let csrf = data.csrf_token;
      if (csrf === null) csrf = (await publicClient.GET('/api/auth/session')).data.csrf_token;
      await begin(csrf);
      setCurrent('');
      setNext('');
      setRepeat('');
      setNotice(
        'Your password is changed. Every other browser and device was signed out; this one stays signed in.',
      );
      onChanged();
    } catch (error) {
      if (codeOf(error) === 'invalid_credentials') {
        setErrors({ current: 'This is not your current password.' });
        currentInput.current?.focus();
      } else {
        setProblem(problemOf(error));
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="password-heading">
      <h2 id="password-heading">Password</h2>
      <form onSubmit={(event) => void submit(event)} noValidate className="narrow-form">
        <PasswordField
          id="current-password"
          label="Current password"
          autoComplete="current-password"
          value={current}
          onChange={setCurrent}
          error={errors.current}
          input={currentInput}
        />
        <PasswordField
          id="new-password"
          label="New password"
          hint={PASSWORD_RULES}
          autoComplete="new-password"
          value={next}
          onChange={setNext}
          error={errors.next}
          input={nextInput}
        />
        <PasswordField
          id="repeat-password"
          label="Repeat the new password"
          autoComplete="new-password"
          value={repeat}
          onChange={setRepeat}
          error={errors.repeat}
          input={repeatInput}
        />
        <div aria-live="polite">
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
          {notice && <p className="form-notice">{notice}</p>}
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Changing…' : 'Change password'}
        </button>
      </form>
    </section>
  );
}

function PasswordField({
  id,
  label,
  hint,
  autoComplete,
  value,
  onChange,
  error,
  input,
}: {
  id: string;
  label: string;
  hint?: string;
  autoComplete: string;
  value: string;
  onChange: (value: string) => void;
  error: string | undefined;
  input: RefObject<HTMLInputElement | null>;
}) {
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <input
        ref={input}
        id={id}
        type="password"
        autoComplete={autoComplete}
        value={value}
        onChange={(event) => onChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described || undefined}
      />
      {error && (
        <p className="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** Set up → scan (or type the key) → confirm a code → on; off with a code or the password. */
function SecondFactor({ version, onChanged }: { version: number; onChanged: () => void }) {
  const { client, user } = useSignedIn();
  const session = useResource(`account-session:${user.uid}:${version}`, async () => {
    const { data } = await client.GET('/api/auth/session');
    return data;
  });
  const [setup, setSetup] = useState<{ secret: string; otpauth_uri: string }>();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [notice, setNotice] = useState<string>();

  const start = async () => {
    setBusy(true);
    setProblem(undefined);
    setNotice(undefined);
    try {
      const { data } = await client.POST('/api/auth/totp/setup');
      setSetup(data);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  let body;
  if (session.status === 'loading') body = <Loading label="Loading…" />;
  else if (session.status === 'error')
    body = (
      <Problem
        title="Whether the second factor is on could not be loaded"
        message={session.message}
        onRetry={onChanged}
      />
    );
  else if (session.data.user.totp_enabled)
    body = (
      <TurnOff
        onDone={() => {
          setNotice('The second factor is off. Signing in asks for your password only.');
          onChanged();
        }}
      />
    );
  else if (setup)
    body = (
      <TurnOn
        setup={setup}
        onCancel={() => setSetup(undefined)}
        onDone={() => {
          setSetup(undefined);
          setNotice('The second factor is on. Signing in now asks for a code from your authenticator app.');
          onChanged();
        }}
      />
    );
  else
    body = (
      <>
        <p>
          <strong>Off.</strong> With a second factor, signing in also asks for a six-digit code from an
          authenticator app on your phone (1Password, Google Authenticator, Authy, …): a stolen password alone
          is not enough.
        </p>
        <button type="button" className="button button-primary" disabled={busy} onClick={() => void start()}>
          {busy ? 'Starting…' : 'Set up a second factor'}
        </button>
      </>
    );

  return (
    <section className="panel" aria-labelledby="totp-heading">
      <h2 id="totp-heading">Second factor</h2>
      <div aria-live="polite">
        {notice && <p className="form-notice">{notice}</p>}
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
      </div>
      {body}
    </section>
  );
}

function TurnOn({
  setup,
  onCancel,
  onDone,
}: {
  setup: { secret: string; otpauth_uri: string };
  onCancel: () => void;
  onDone: () => void;
}) {
  const { client } = useSignedIn();
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const input = useRef<HTMLInputElement>(null);
  const secretId = useId();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const code = totpCodeOf(typed);
    if (!code) {
      setError('Type the six digits the app shows.');
      input.current?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await client.POST('/api/auth/totp/enable', { body: { code } });
      onDone();
    } catch (failure) {
      setError(
        codeOf(failure) === 'validation_failed'
          ? 'That code is not right. Type the one the app shows now (it changes every 30 seconds).'
          : problemOf(failure),
      );
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={(event) => void submit(event)} noValidate>
      <ol className="totp-steps">
        <li>
          <p>Scan this code with your authenticator app.</p>
          <QrCode uri={setup.otpauth_uri} />
          <p className="muted" id={secretId}>
            Can’t scan it? Add an account by hand with this key (time-based, 6 digits):
          </p>
          <p>
            <code className="totp-secret" aria-labelledby={secretId} data-testid="totp-secret">
              {groupSecret(setup.secret)}
            </code>
          </p>
        </li>
        <li>
          <div className="field narrow-form">
            <label htmlFor="totp-enable-code">Code from the app</label>
            <p className="field-hint" id="totp-enable-code-hint">
              The six digits it shows for Remit now.
            </p>
            <input
              ref={input}
              id="totp-enable-code"
              inputMode="numeric"
              autoComplete="one-time-code"
              value={typed}
              onChange={(event) => setTyped(event.target.value)}
              aria-invalid={error ? true : undefined}
              aria-describedby={
                error ? 'totp-enable-code-hint totp-enable-code-error' : 'totp-enable-code-hint'
              }
            />
            {error && (
              <p className="field-error" id="totp-enable-code-error" role="alert">
                {error}
              </p>
            )}
          </div>
        </li>
      </ol>
      <div className="button-row">
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Turning on…' : 'Turn on'}
        </button>
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The otpauth:// URI as a QR code, drawn as SVG by the page (no image request, nothing inline). */
function QrCode({ uri }: { uri: string }) {
  const { size, path } = useMemo(() => {
    const modules = createQrCode(uri, { errorCorrectionLevel: 'M' }).modules;
    return {
      size: modules.size + 8,
      path: qrPath(modules.size, (row, column) => modules.get(row, column) === 1),
    };
  }, [uri]);
  return (
    <svg
      className="qr-code"
      role="img"
      aria-label="QR code for your authenticator app"
      viewBox={`0 0 ${size} ${size}`}
      shapeRendering="crispEdges"
    >
      <rect width={size} height={size} fill="#ffffff" />
      <path d={path} fill="#000000" />
    </svg>
  );
}

function TurnOff({ onDone }: { onDone: () => void }) {
  const { client } = useSignedIn();
  const [proof, setProof] = useState<'code' | 'password'>('code');
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const input = useRef<HTMLInputElement>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const code = proof === 'code' ? totpCodeOf(typed) : undefined;
    if (proof === 'code' ? !code : !typed) {
      setError(proof === 'code' ? 'Type the six digits the app shows.' : 'Type your password.');
      input.current?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await client.POST('/api/auth/totp/disable', {
        body: proof === 'code' ? { code } : { password: typed },
      });
      onDone();
    } catch (failure) {
      setError(
        codeOf(failure) === 'invalid_credentials'
          ? proof === 'code'
            ? 'That code is not right, or was just used. Type the one the app shows now.'
            : 'That is not your password.'
          : problemOf(failure),
      );
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  const id = proof === 'code' ? 'totp-disable-code' : 'totp-disable-password';
  return (
    <>
      <p>
        <strong>On.</strong> Signing in asks for a six-digit code from your authenticator app.
      </p>
      <form onSubmit={(event) => void submit(event)} noValidate className="narrow-form">
        <fieldset className="choice">
          <legend>Turn it off, confirming with</legend>
          <label className="checkbox">
            <input
              type="radio"
              name="totp-proof"
              checked={proof === 'code'}
              onChange={() => {
                setProof('code');
                setTyped('');
                setError(undefined);
              }}
            />
            a code from the app
          </label>
          <label className="checkbox">
            <input
              type="radio"
              name="totp-proof"
              checked={proof === 'password'}
              onChange={() => {
                setProof('password');
                setTyped('');
                setError(undefined);
              }}
            />
            my password (the phone is lost)
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor={id}>{proof === 'code' ? 'Code from the app' : 'Password'}</label>
          <input
            ref={input}
            id={id}
            type={proof === 'code' ? 'text' : 'password'}
            inputMode={proof === 'code' ? 'numeric' : undefined}
            autoComplete={proof === 'code' ? 'one-time-code' : 'current-password'}
            value={typed}
            onChange={(event) => setTyped(event.target.value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? `${id}-error` : undefined}
          />
          {error && (
            <p className="field-error" id={`${id}-error`} role="alert">
              {error}
            </p>
          )}
        </div>
        <button type="submit" className="button button-danger" disabled={busy}>
          {busy ? 'Turning off…' : 'Turn off the second factor'}
        </button>
      </form>
    </>
  );
}

type SessionItem = {
  uid: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip_address: string | null;
  user_agent: string | null;
  method: string;
  current: boolean;
};

/** Where you are signed in; any other session can be signed out, one or all. */
function Sessions({ version, onChanged }: { version: number; onChanged: () => void }) {
  const { client, user } = useSignedIn();
  const sessions = useResource(`account-sessions:${user.uid}:${version}`, async () => {
    const { data } = await client.GET('/api/auth/sessions');
    return data.items as SessionItem[];
  });
  const [notice, setNotice] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const noticeRef = useRef<HTMLDivElement>(null);

  const said = (message: string) => {
    setProblem(undefined);
    setNotice(message);
    onChanged();
    // The button that was pressed is gone with its row: the message takes the focus.
    noticeRef.current?.focus();
  };

  const signOut = async (session: SessionItem) => {
    setNotice(undefined);
    try {
      await client.DELETE('/api/auth/sessions/{uid}', { params: { path: { uid: session.uid } } });
      said(`Signed out ${describeUserAgent(session.user_agent)}.`);
    } catch (error) {
      setProblem(problemOf(error));
    }
  };

  const others = sessions.status === 'ready' ? sessions.data.filter((s) => !s.current) : [];
  return (
    <section className="panel" aria-labelledby="sessions-heading">
      <h2 id="sessions-heading">Where you are signed in</h2>
      <div aria-live="polite" tabIndex={-1} ref={noticeRef} className="live-notice">
        {notice && <p className="form-notice">{notice}</p>}
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
      </div>
      {sessions.status === 'loading' && <Loading label="Loading your sessions…" />}
      {sessions.status === 'error' && (
        <Problem title="Your sessions could not be loaded" message={sessions.message} onRetry={onChanged} />
      )}
      {sessions.status === 'ready' && (
        <>
          <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="sessions-heading">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Browser</th>
                  <th scope="col" className="wide-only">
                    Last active
                  </th>
                  <th scope="col" className="wide-only">
                    Signed in
                  </th>
                  <th scope="col" className="wide-only">
                    IP address
                  </th>
                  <th scope="col" className="wide-only">
                    Ends
                  </th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {sessions.data.map((session) => {
                  const browser = describeUserAgent(session.user_agent);
                  return (
                    <tr key={session.uid} data-uid={session.uid}>
                      <th scope="row">
                        <span title={session.user_agent ?? undefined}>{browser}</span>
                        {session.current && <span className="status-pill status-current">This browser</span>}
                        <span className="cell-note muted narrow-only">
                          Last active {formatAgo(session.last_seen_at)}
                        </span>
                      </th>
                      <td className="wide-only nowrap">
                        <Ago at={session.last_seen_at} />
                      </td>
                      <td className="wide-only">
                        {formatDateTime(session.created_at)}
                        <span className="cell-note muted">
                          {SESSION_METHODS[session.method] ?? session.method}
                        </span>
                      </td>
                      <td className="wide-only">{session.ip_address ?? '—'}</td>
                      <td className="wide-only">{formatDateTime(session.expires_at)}</td>
                      <td>
                        {!session.current && (
                          <button
                            type="button"
                            className="button"
                            aria-label={`Sign out ${browser}, last active ${formatAgo(session.last_seen_at)}`}
                            onClick={() => void signOut(session)}
                          >
                            Sign out
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {others.length > 0 ? (
            <p className="section-actions">
              <ConfirmButton
                label="Sign out everywhere else"
                title="Sign out everywhere else?"
                confirmLabel="Sign out everywhere else"
                onConfirm={async () => {
                  const { data } = await client.POST('/api/auth/sessions/revoke-all', {
                    body: { keep_current: true },
                  });
                  return () =>
                    said(
                      `Signed out ${data.revoked} other ${data.revoked === 1 ? 'session' : 'sessions'}. This browser stays signed in.`,
                    );
                }}
              >
                <p>
                  Every other browser and device signed in as you ({others.length}) is signed out at once;
                  this one stays signed in.
                </p>
              </ConfirmButton>
            </p>
          ) : (
            <p className="muted">You are signed in only here.</p>
          )}
        </>
      )}
    </section>
  );
}
