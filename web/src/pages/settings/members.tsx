import { Ago } from '../../components/ago.tsx';
import { useRef, useState, type FormEvent } from 'react';
import type { components } from '@remit/client';
import { problemOf, type Member } from '../../api.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { formatDateTime } from '../../format.ts';
import { formatDay } from '../../settings-people.ts';
import { useSignedIn } from '../../session.tsx';
import { useResource } from '../../use-resource.ts';
import { ConfirmButton } from './confirm-button.tsx';
import '../../tables.css';
import './people.css';

type Invitation = components['schemas']['Invitation'];

const PAGE_SIZE = 100;
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * Members and invitations (admins only: the API answers a member's call 403; docs/people.md): who
 * belongs to the organization, their roles, removal; pending invitations, invite, resend, revoke. The
 * API's rules (the last admin, one open invitation per address) are its answers, said in words.
 */
export default function MemberSettings() {
  useDocumentTitle('Members');
  const { client, organization, user, reload } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const [version, setVersion] = useState(0);
  const [notice, setNotice] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const noticeRef = useRef<HTMLDivElement>(null);
  const path = { organization_uid: organizationUid };

  const members = useResource(`settings-members:${organizationUid}:${version}`, async () => {
    const { data } = await client.GET('/api/organization/{organization_uid}/members', {
      params: { path, query: { per_page: PAGE_SIZE } },
    });
    return data;
  });
  const invitations = useResource(`settings-invitations:${organizationUid}:${version}`, async () => {
    const { data } = await client.GET('/api/organization/{organization_uid}/invitations', {
      params: { path, query: { status: 'pending', per_page: PAGE_SIZE } },
    });
    return data;
  });

  /** Says what happened (or what the API refused, in its words) and reads the lists again. */
  const said = (message: string, focus = false) => {
    setProblem(undefined);
    setNotice(message);
    setVersion((v) => v + 1);
    if (focus) noticeRef.current?.focus();
  };
  const refused = (error: unknown) => {
    setNotice(undefined);
    setProblem(problemOf(error));
    noticeRef.current?.focus();
  };
  const nameOf = (member: Member) =>
    member.user_uid === user.uid
      ? `${member.full_name || member.email} (you)`
      : member.full_name || member.email;
  const inviterOf = (invitation: Invitation) => {
    const uid = invitation.invited_by_user_uid;
    if (!uid) return '—';
    if (members.status !== 'ready') return '…';
    const member = members.data.items.find((m) => m.user_uid === uid);
    return member ? nameOf(member) : 'A former member';
  };

  const changeRole = async (member: Member, role: 'admin' | 'member') => {
    try {
      await client.PATCH('/api/organization/{organization_uid}/members/{user_uid}', {
        params: { path: { ...path, user_uid: member.user_uid } },
        body: { role },
      });
      said(`${member.full_name || member.email} is now ${role === 'admin' ? 'an admin' : 'a member'}.`);
      // One's own role changed: the console acts with the new one (this section closes for a member).
      if (member.user_uid === user.uid) await reload();
    } catch (error) {
      refused(error);
    }
  };

  return (
    <div className="people-settings">
      <h1>Members</h1>
      <p className="muted">
        Who belongs to {organization.organization_name}. Admins manage members, invitations, keys and the
        organization’s settings; members work the invoices, tasks and approvals.
      </p>
      <Invite
        onInvited={(invitation) =>
          said(
            `Invitation sent to ${invitation.email}. The link works until ${formatDateTime(invitation.expires_at)}.`,
          )
        }
      />
      <div aria-live="polite" tabIndex={-1} ref={noticeRef} className="live-notice">
        {notice && <p className="form-notice">{notice}</p>}
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
      </div>

      <h2 id="members-heading">Members</h2>
      {members.status === 'loading' && <Loading label="Loading the members…" />}
      {members.status === 'error' && (
        <Problem
          title="The members could not be loaded"
          message={members.message}
          onRetry={() => setVersion((v) => v + 1)}
        />
      )}
      {members.status === 'ready' && (
        <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="members-heading">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" className="wide-only">
                  Email
                </th>
                <th scope="col">Role</th>
                <th scope="col" className="wide-only">
                  Last active
                </th>
                <th scope="col" className="wide-only">
                  Joined
                </th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data.items.map((member) => {
                const name = member.full_name || member.email;
                const self = member.user_uid === user.uid;
                return (
                  <tr key={member.user_uid} data-uid={member.user_uid}>
                    <th scope="row" className="wrap-long">
                      {nameOf(member)}
                      <span className="cell-note muted narrow-only">{member.email}</span>
                    </th>
                    <td className="wide-only wrap-long">{member.email}</td>
                    <td>{member.role === 'admin' ? 'Admin' : 'Member'}</td>
                    <td className="wide-only nowrap">
                      {member.last_active_at ? <Ago at={member.last_active_at} /> : 'Never'}
                    </td>
                    <td className="wide-only nowrap">
                      <time dateTime={member.joined_at} title={formatDateTime(member.joined_at)}>
                        {formatDay(member.joined_at)}
                      </time>
                    </td>
                    <td>
                      <div className="row-actions">
                        {member.role === 'member' ? (
                          <button
                            type="button"
                            className="button"
                            aria-label={`Make admin: ${name}`}
                            onClick={() => void changeRole(member, 'admin')}
                          >
                            Make admin
                          </button>
                        ) : self ? (
                          <ConfirmButton
                            label="Make member"
                            accessibleName="Make member: yourself"
                            className="button"
                            title="Stop being an admin?"
                            confirmLabel="Make me a member"
                            onConfirm={async () => {
                              await changeRole(member, 'member');
                            }}
                          >
                            <p>
                              You will no longer manage {organization.organization_name}: this page and the
                              other admin settings close for you. Only another admin can make you an admin
                              again.
                            </p>
                          </ConfirmButton>
                        ) : (
                          <button
                            type="button"
                            className="button"
                            aria-label={`Make member: ${name}`}
                            onClick={() => void changeRole(member, 'member')}
                          >
                            Make member
                          </button>
                        )}
                        <ConfirmButton
                          label={self ? 'Leave' : 'Remove'}
                          accessibleName={self ? `Leave ${organization.organization_name}` : `Remove ${name}`}
                          title={
                            self
                              ? `Leave ${organization.organization_name}?`
                              : `Remove ${name} from ${organization.organization_name}?`
                          }
                          confirmLabel={self ? 'Leave' : 'Remove'}
                          onConfirm={async () => {
                            const { data } = await client.DELETE(
                              '/api/organization/{organization_uid}/members/{user_uid}',
                              { params: { path: { ...path, user_uid: member.user_uid } } },
                            );
                            if (self) {
                              await reload();
                              return;
                            }
                            return () =>
                              said(
                                `Removed ${data.email}: ${plural(data.revoked_api_keys, 'API key', 'API keys')} revoked, ${plural(data.unassigned_work_tasks, 'open task', 'open tasks')} unassigned.`,
                                true,
                              );
                          }}
                        >
                          <p>
                            {self ? 'You lose' : `${name} loses`} access to {organization.organization_name}{' '}
                            at once: {self ? 'your' : 'their'} API keys for it are revoked and{' '}
                            {self ? 'your' : 'their'} open tasks here are unassigned. The account and its
                            other organizations stay.
                          </p>
                        </ConfirmButton>
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {members.status === 'ready' && members.data._meta.total_items > members.data.items.length && (
        <p className="muted">
          The first {members.data.items.length} of {members.data._meta.total_items} members.
        </p>
      )}

      <h2 id="invitations-heading">Pending invitations</h2>
      {invitations.status === 'loading' && <Loading label="Loading the invitations…" />}
      {invitations.status === 'error' && (
        <Problem
          title="The invitations could not be loaded"
          message={invitations.message}
          onRetry={() => setVersion((v) => v + 1)}
        />
      )}
      {invitations.status === 'ready' && invitations.data.items.length === 0 && (
        <Empty title="No pending invitations">
          <p>Invite someone above; their invitation waits here until they accept it.</p>
        </Empty>
      )}
      {invitations.status === 'ready' && invitations.data.items.length > 0 && (
        <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="invitations-heading">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col" className="wide-only">
                  Invited by
                </th>
                <th scope="col" className="wide-only">
                  Sent
                </th>
                <th scope="col" className="wide-only">
                  Expires
                </th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.data.items.map((invitation) => (
                <tr key={invitation.uid} data-uid={invitation.uid}>
                  <th scope="row" className="wrap-long">
                    {invitation.email}
                  </th>
                  <td>{invitation.role === 'admin' ? 'Admin' : 'Member'}</td>
                  <td className="wide-only">{inviterOf(invitation)}</td>
                  <td className="wide-only nowrap">
                    <Ago at={invitation.last_sent_at} />
                  </td>
                  <td className="wide-only nowrap">{formatDateTime(invitation.expires_at)}</td>
                  <td>
                    <div className="row-actions">
                      <button
                        type="button"
                        className="button"
                        aria-label={`Resend the invitation to ${invitation.email}`}
                        onClick={() => {
                          client
                            .POST('/api/organization/{organization_uid}/invitations/{uid}/resend', {
                              params: { path: { ...path, uid: invitation.uid } },
                            })
                            .then(
                              ({ data }) =>
                                said(
                                  `Sent the invitation to ${data.email} again; the earlier link no longer works. This one works until ${formatDateTime(data.expires_at)}.`,
                                ),
                              refused,
                            );
                        }}
                      >
                        Resend
                      </button>
                      <ConfirmButton
                        label="Revoke"
                        accessibleName={`Revoke the invitation to ${invitation.email}`}
                        title={`Revoke the invitation to ${invitation.email}?`}
                        confirmLabel="Revoke invitation"
                        onConfirm={async () => {
                          await client.DELETE('/api/organization/{organization_uid}/invitations/{uid}', {
                            params: { path: { ...path, uid: invitation.uid } },
                          });
                          return () => said(`Revoked the invitation to ${invitation.email}.`, true);
                        }}
                      >
                        <p>The emailed link stops working at once. You can invite the address again later.</p>
                      </ConfirmButton>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function Invite({ onInvited }: { onInvited: (invitation: Invitation) => void }) {
  const { client, organization } = useSignedIn();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'member' | 'admin'>('member');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const input = useRef<HTMLInputElement>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(undefined);
    const address = email.trim();
    if (!/^[^\s@]+@[^\s@]+$/.test(address)) {
      setError('Type the email address to send the invitation to.');
      input.current?.focus();
      return;
    }
    setError(undefined);
    setBusy(true);
    try {
      const { data } = await client.POST('/api/organization/{organization_uid}/invitations', {
        params: { path: { organization_uid: organization.organization_uid } },
        body: { email: address, role },
      });
      setEmail('');
      setRole('member');
      onInvited(data);
    } catch (failure) {
      setProblem(problemOf(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="invite-heading">
      <h2 id="invite-heading">Invite someone</h2>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <div className="form-row invite-row">
          <div className="field">
            <label htmlFor="invite-email">Email</label>
            <input
              ref={input}
              id="invite-email"
              type="email"
              autoComplete="off"
              value={email}
              onChange={(event) => {
                setEmail(event.target.value);
                setProblem(undefined);
              }}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? 'invite-email-error' : undefined}
            />
            {error && (
              <p className="field-error" id="invite-email-error">
                {error}
              </p>
            )}
          </div>
          <div className="field">
            <label htmlFor="invite-role">Role</label>
            <select
              id="invite-role"
              value={role}
              onChange={(event) => setRole(event.target.value as 'member' | 'admin')}
            >
              <option value="member">Member</option>
              <option value="admin">Admin</option>
            </select>
          </div>
        </div>
        <p className="field-hint">
          They get an email with a link to join {organization.organization_name}; someone new to Remit sets
          their name and password there.
        </p>
        <div aria-live="polite">
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Sending…' : 'Send invitation'}
        </button>
      </form>
    </section>
  );
}
