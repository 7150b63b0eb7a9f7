import { useEffect, useState, type FormEvent } from 'react';
import type { SuccessBody } from '@remit/client';
import { codeOf, problemOf, publicClient } from '../api.ts';
import { AuthLayout, Field, FormProblem } from '../components/auth-layout.tsx';
import { Loading } from '../components/states.tsx';
import { formatDateTime } from '../format.ts';
import { dropQueryParameter, Link, navigate, useLocation } from '../router.tsx';
import { useSession } from '../session.tsx';
import { MIN_PASSWORD, newPasswordProblem, PasswordFields } from './password-reset.tsx';

type Invitation = SuccessBody<'get', '/api/invitations/{token}'>['data'];

const LINK_PROBLEMS: Record<string, string> = {
  not_found:
    'This invitation is not valid: it was revoked, replaced by a newer one, or the link is incomplete.',
  token_expired: 'This invitation has expired. Ask the person who invited you to send it again.',
  invalid_state: 'This invitation was already accepted. Sign in to continue.',
};

/** The page the invitation email opens: `/accept-invitation?token=…` (redirected into /app). */
export function AcceptInvitationPage() {
  const { search } = useLocation();
  const { session } = useSession();
  const [token] = useState(() => search.get('token') ?? '');
  useEffect(() => dropQueryParameter('token'), []);
  const [invitation, setInvitation] = useState<Invitation>();
  const [linkProblem, setLinkProblem] = useState<string | undefined>(
    token ? undefined : 'This page needs the link from the invitation email.',
  );
  const [problem, setProblem] = useState<string>();
  const [fullName, setFullName] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!token) return;
    publicClient.GET('/api/invitations/{token}', { params: { path: { token } } }).then(
      ({ data }) => setInvitation(data),
      (error: unknown) => setLinkProblem(LINK_PROBLEMS[codeOf(error) ?? ''] ?? problemOf(error)),
    );
  }, [token]);

  const failed = (error: unknown) => {
    const code = codeOf(error);
    if (code === 'already_exists' && invitation) {
      setProblem(
        `${invitation.email} is already a member of ${invitation.organization_name}, or has an account: sign in.`,
      );
    } else if (code && code in LINK_PROBLEMS) setLinkProblem(LINK_PROBLEMS[code]);
    else setProblem(problemOf(error));
  };

  const createAccount = async (event: FormEvent) => {
    event.preventDefault();
    if (!invitation) return;
    const refused = newPasswordProblem(password, repeat);
    if (refused) {
      setProblem(refused);
      return;
    }
    setBusy(true);
    setProblem(undefined);
    try {
      await publicClient.POST('/api/invitations/accept', {
        body: { token, full_name: fullName.trim(), password },
      });
      const query = new URLSearchParams({ email: invitation.email, joined: invitation.organization_name });
      navigate(`/app/sign-in?${query.toString()}`, { replace: true });
    } catch (error) {
      failed(error);
    } finally {
      setBusy(false);
    }
  };

  const join = async () => {
    if (session.status !== 'signed-in' || !invitation) return;
    setBusy(true);
    setProblem(undefined);
    try {
      await session.client.POST('/api/invitations/accept', { body: { token } });
      window.localStorage.setItem('remit.organization', invitation.organization_uid);
      // A full load: the session's memberships are read again with the new organization among them.
      window.location.assign('/app/inbox');
    } catch (error) {
      failed(error);
      setBusy(false);
    }
  };

  const title = invitation ? `Join ${invitation.organization_name}` : 'Accept the invitation';
  if (linkProblem) {
    return (
      <AuthLayout title={title}>
        <FormProblem message={linkProblem} />
        <div className="auth-links">
          <Link to="/app/sign-in">Sign in</Link>
        </div>
      </AuthLayout>
    );
  }
  if (!invitation || session.status === 'loading') {
    return (
      <AuthLayout title={title}>
        <Loading label="Reading the invitation…" />
      </AuthLayout>
    );
  }

  const signedInAs = session.status === 'signed-in' ? session.user.email : undefined;
  const invitedBy = invitation.invited_by_name
    ? `${invitation.invited_by_name} invited you`
    : 'You are invited';
  const lead = (
    <p className="auth-lead">
      {invitedBy} to join <strong>{invitation.organization_name}</strong> as{' '}
      {invitation.role === 'admin' ? 'an admin' : 'a member'}, as <strong>{invitation.email}</strong>. The
      invitation is valid until {formatDateTime(invitation.expires_at)}.
    </p>
  );
  const signOut =
    session.status === 'signed-in' ? (
      <button type="button" className="button" onClick={() => void session.signOut()}>
        Sign out
      </button>
    ) : null;

  if (signedInAs && signedInAs.toLowerCase() !== invitation.email) {
    return (
      <AuthLayout title={title}>
        {lead}
        <FormProblem
          message={`You are signed in as ${signedInAs}. Sign out to accept as ${invitation.email}.`}
        />
        {signOut}
      </AuthLayout>
    );
  }
  if (invitation.account_exists) {
    return (
      <AuthLayout title={title}>
        {lead}
        <FormProblem message={problem} />
        {signedInAs ? (
          <button
            type="button"
            className="button button-primary button-wide"
            disabled={busy}
            onClick={() => void join()}
          >
            Join {invitation.organization_name}
          </button>
        ) : (
          <Link
            className="button button-primary button-wide"
            to={`/app/sign-in?${new URLSearchParams({
              email: invitation.email,
              next: `/app/accept-invitation?token=${token}`,
            }).toString()}`}
          >
            Sign in as {invitation.email} to accept
          </Link>
        )}
      </AuthLayout>
    );
  }
  const hint = `At least ${MIN_PASSWORD} characters, not your email address.`;
  return (
    <AuthLayout title={title}>
      {lead}
      <FormProblem message={problem} />
      <form onSubmit={(e) => void createAccount(e)}>
        <Field id="full-name" label="Your name">
          <input
            id="full-name"
            autoComplete="name"
            required
            maxLength={255}
            value={fullName}
            onChange={(e) => setFullName(e.target.value)}
          />
        </Field>
        <PasswordFields
          password={password}
          repeat={repeat}
          onPassword={setPassword}
          onRepeat={setRepeat}
          hint={hint}
          passwordError={
            password.length > 0 && password.length < MIN_PASSWORD
              ? `Use at least ${MIN_PASSWORD} characters.`
              : undefined
          }
          repeatError={repeat.length > 0 && repeat !== password ? 'The two passwords differ.' : undefined}
        />
        <button type="submit" className="button button-primary button-wide" disabled={busy}>
          {busy ? 'Creating your account…' : 'Create account and join'}
        </button>
      </form>
    </AuthLayout>
  );
}
