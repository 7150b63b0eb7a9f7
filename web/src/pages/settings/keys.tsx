import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { components } from '@remit/client';
import { problemOf, type Member } from '../../api.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { formatAgo, formatDateTime } from '../../format.ts';
import { formatDay, keyStatus } from '../../settings-people.ts';
import { useSignedIn } from '../../session.tsx';
import { useResource, type Resource } from '../../use-resource.ts';
import { ConfirmButton } from './confirm-button.tsx';
import '../../tables.css';
import './people.css';

type ApiKey = components['schemas']['ApiKey'];
interface ScopeInfo {
  scope: string;
  description: string;
  admin_only: boolean;
}

const PAGE_SIZE = 100;
const NO_SCOPES: ScopeInfo[] = [];
const STATUS_LABELS = { active: 'Active', expired: 'Expired', revoked: 'Revoked' } as const;

/**
 * API keys: the organization's keys an admin may see (all) or a member's own (docs/authentication.md),
 * a form to create one — shown once, then never again — and revocation.
 */
export default function KeySettings() {
  useDocumentTitle('API keys');
  const { client, organization, user } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const isAdmin = organization.role === 'admin';
  const [version, setVersion] = useState(0);
  const [created, setCreated] = useState<ApiKey>();
  const [notice, setNotice] = useState<string>();
  const noticeRef = useRef<HTMLDivElement>(null);

  const keys = useResource(`settings-keys:${organizationUid}:${version}`, async () => {
    const { data } = await client.GET('/api/api-keys', {
      params: { query: { organization_uid: organizationUid, per_page: PAGE_SIZE } },
    });
    return data;
  });
  const scopes = useResource(`settings-scopes:${organizationUid}`, async () => {
    const { data } = await client.GET('/api/api-keys/scopes', {
      params: { query: { organization_uid: organizationUid } },
    });
    return data.items as ScopeInfo[];
  });
  // Admins see whose each key is, and may issue one to a member; the list is theirs only.
  const members = useResource(
    isAdmin ? `settings-key-owners:${organizationUid}:${version}` : null,
    async () => {
      const { data } = await client.GET('/api/organization/{organization_uid}/members', {
        params: { path: { organization_uid: organizationUid }, query: { per_page: 100 } },
      });
      return data.items;
    },
  );
  const people = members.status === 'ready' ? members.data : [];
  const nameOf = (uid: string) => {
    if (uid === user.uid) return `${user.full_name || user.email} (you)`;
    const member = people.find((m) => m.user_uid === uid);
    return member ? member.full_name || member.email : 'A former member';
  };

  return (
    <div className="people-settings">
      <h1>API keys</h1>
      <p className="muted">
        A key lets a program call Remit’s API as the person it belongs to, with at most that person’s role and
        only the scopes it was given.{' '}
        {isAdmin
          ? `As an admin you see every key of ${organization.organization_name}.`
          : 'You see the keys that are yours.'}
      </p>
      {created ? (
        <NewKey apiKey={created} ownerName={nameOf(created.user_uid)} onDone={() => setCreated(undefined)} />
      ) : (
        <CreateKey
          scopes={scopes}
          members={isAdmin ? people : []}
          onCreated={(key) => {
            setNotice(undefined);
            setCreated(key);
            setVersion((v) => v + 1);
          }}
        />
      )}
      <h2 id="keys-heading">Keys</h2>
      <div aria-live="polite" tabIndex={-1} ref={noticeRef} className="live-notice">
        {notice && <p className="form-notice">{notice}</p>}
      </div>
      {keys.status === 'loading' && <Loading label="Loading the keys…" />}
      {keys.status === 'error' && (
        <Problem
          title="The keys could not be loaded"
          message={keys.message}
          onRetry={() => setVersion((v) => v + 1)}
        />
      )}
      {keys.status === 'ready' && keys.data.items.length === 0 && (
        <Empty title="No API keys yet">
          <p>Create one above for a script or an integration.</p>
        </Empty>
      )}
      {keys.status === 'ready' && keys.data.items.length > 0 && (
        <KeyTable
          keys={keys.data.items}
          total={keys.data._meta.total_items}
          ownerOf={isAdmin ? nameOf : undefined}
          onRevoked={(key) => {
            setVersion((v) => v + 1);
            setNotice(`Revoked the key “${key.name}”. Programs using it get 401 from now on.`);
            noticeRef.current?.focus();
          }}
        />
      )}
    </div>
  );
}

function CreateKey({
  scopes,
  members,
  onCreated,
}: {
  scopes: Resource<ScopeInfo[]>;
  members: Member[];
  onCreated: (key: ApiKey) => void;
}) {
  const { client, organization, user } = useSignedIn();
  const [name, setName] = useState('');
  const [access, setAccess] = useState<'full' | 'scoped'>('full');
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set());
  const [days, setDays] = useState('');
  const [owner, setOwner] = useState(user.uid);
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<{ name?: string; scopes?: string; days?: string }>({});
  const [problem, setProblem] = useState<string>();
  const nameInput = useRef<HTMLInputElement>(null);
  const daysInput = useRef<HTMLInputElement>(null);
  const scopesBox = useRef<HTMLFieldSetElement>(null);

  // What the key's owner may hold: a member's key never carries an admin-only scope.
  const ownerRole = owner === user.uid ? organization.role : members.find((m) => m.user_uid === owner)?.role;
  const ownerIsMember = ownerRole !== 'admin';
  const allowed = (scope: ScopeInfo) => !(scope.admin_only && ownerIsMember);
  const scopeList = scopes.status === 'ready' ? scopes.data : NO_SCOPES;
  useEffect(() => {
    // Changing the owner to a member drops what they could not hold.
    if (!ownerIsMember) return;
    setChosen((current) => {
      const kept = [...current].filter((s) => !scopeList.find((i) => i.scope === s)?.admin_only);
      return kept.length === current.size ? current : new Set(kept);
    });
  }, [ownerIsMember, scopeList]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(undefined);
    const expires = days.trim() === '' ? undefined : Number(days);
    const found = {
      name: name.trim() ? undefined : 'Give the key a name that says where it is used.',
      scopes:
        access === 'scoped' && chosen.size === 0 ? 'Choose at least one scope, or full access.' : undefined,
      days:
        expires === undefined || (Number.isInteger(expires) && expires >= 1 && expires <= 36500)
          ? undefined
          : 'A whole number of days from 1 to 36500, or empty for a key that never expires.',
    };
    setErrors(found);
    if (found.name) return nameInput.current?.focus();
    if (found.scopes)
      return scopesBox.current?.querySelector<HTMLInputElement>('input:not(:disabled)')?.focus();
    if (found.days) return daysInput.current?.focus();
    setBusy(true);
    try {
      const { data } = await client.POST('/api/api-keys', {
        body: {
          organization_uid: organization.organization_uid,
          name: name.trim(),
          ...(access === 'scoped'
            ? { scopes: scopeList.map((s) => s.scope).filter((s) => chosen.has(s)) }
            : {}),
          ...(expires !== undefined ? { expires_in_days: expires } : {}),
          ...(owner !== user.uid ? { user_uid: owner } : {}),
        },
      });
      setName('');
      setAccess('full');
      setChosen(new Set());
      setDays('');
      setOwner(user.uid);
      onCreated(data);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  const toggle = (scope: string, on: boolean) =>
    setChosen((current) => {
      const next = new Set(current);
      if (on) next.add(scope);
      else next.delete(scope);
      return next;
    });

  return (
    <section className="panel" aria-labelledby="create-key-heading">
      <h2 id="create-key-heading">Create a key</h2>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <div className="form-row">
          <div className="field">
            <label htmlFor="key-name">Name</label>
            <input
              ref={nameInput}
              id="key-name"
              value={name}
              maxLength={255}
              placeholder="Nightly export"
              onChange={(event) => setName(event.target.value)}
              aria-invalid={errors.name ? true : undefined}
              aria-describedby={errors.name ? 'key-name-error' : undefined}
            />
            {errors.name && (
              <p className="field-error" id="key-name-error">
                {errors.name}
              </p>
            )}
          </div>
          <div className="field">
            <label htmlFor="key-days">Expires after (days)</label>
            <input
              ref={daysInput}
              id="key-days"
              inputMode="numeric"
              value={days}
              onChange={(event) => setDays(event.target.value)}
              aria-invalid={errors.days ? true : undefined}
              aria-describedby={errors.days ? 'key-days-hint key-days-error' : 'key-days-hint'}
            />
            <p className="field-hint" id="key-days-hint">
              Empty: never expires.
            </p>
            {errors.days && (
              <p className="field-error" id="key-days-error">
                {errors.days}
              </p>
            )}
          </div>
          {members.length > 1 && (
            <div className="field">
              <label htmlFor="key-owner">For</label>
              <select id="key-owner" value={owner} onChange={(event) => setOwner(event.target.value)}>
                <option value={user.uid}>Me</option>
                {members
                  .filter((m) => m.user_uid !== user.uid)
                  .map((m) => (
                    <option key={m.user_uid} value={m.user_uid}>
                      {m.full_name || m.email} ({m.role})
                    </option>
                  ))}
              </select>
            </div>
          )}
        </div>
        <fieldset className="choice">
          <legend>Access</legend>
          <label className="checkbox">
            <input
              type="radio"
              name="key-access"
              checked={access === 'full'}
              onChange={() => setAccess('full')}
            />
            Full access: everything {owner === user.uid ? 'your' : 'their'} role allows
          </label>
          <label className="checkbox">
            <input
              type="radio"
              name="key-access"
              checked={access === 'scoped'}
              onChange={() => setAccess('scoped')}
            />
            Only the scopes chosen below
          </label>
        </fieldset>
        {access === 'scoped' && (
          <fieldset
            ref={scopesBox}
            className="scopes"
            aria-describedby={errors.scopes ? 'key-scopes-error' : undefined}
          >
            <legend>Scopes</legend>
            {scopes.status === 'loading' && <Loading label="Loading the scopes…" />}
            {scopes.status === 'error' && (
              <p className="form-problem" role="alert">
                The scopes could not be loaded: {scopes.message}
              </p>
            )}
            {scopeList.map((scope) => {
              const id = `scope-${scope.scope.replace(':', '-')}`;
              return (
                <div className="scope" key={scope.scope}>
                  <input
                    type="checkbox"
                    id={id}
                    checked={chosen.has(scope.scope)}
                    disabled={!allowed(scope)}
                    onChange={(event) => toggle(scope.scope, event.target.checked)}
                    aria-describedby={`${id}-about`}
                  />
                  <label htmlFor={id}>
                    <code>{scope.scope}</code>
                  </label>
                  <span className="scope-about muted" id={`${id}-about`}>
                    {scope.description}
                    {!allowed(scope) && ' (admins only)'}
                  </span>
                </div>
              );
            })}
            {errors.scopes && (
              <p className="field-error" id="key-scopes-error">
                {errors.scopes}
              </p>
            )}
          </fieldset>
        )}
        <div aria-live="polite">
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </form>
    </section>
  );
}

/** The new key's one appearance: copy it now, it is never shown again. */
function NewKey({ apiKey, ownerName, onDone }: { apiKey: ApiKey; ownerName: string; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const [copied, setCopied] = useState<string>();
  useEffect(() => heading.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(apiKey.key ?? '');
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser did not let the page copy it: select the key and copy it yourself.');
    }
  };
  return (
    <section className="panel new-key" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading" ref={heading} tabIndex={-1}>
        Your new key “{apiKey.name}”
      </h2>
      <p className="new-key-warning">
        <strong>Copy it now: this is the only time Remit shows it.</strong> Remit keeps only a hash of the
        key, so it cannot show it again. If it is lost, revoke it and create another.
      </p>
      <div className="field">
        <label htmlFor="new-key-value">Key for {ownerName}</label>
        <div className="copy-row">
          <input
            id="new-key-value"
            className="new-key-value"
            readOnly
            value={apiKey.key ?? ''}
            spellCheck={false}
            onFocus={(event) => event.target.select()}
          />
          <button type="button" className="button button-primary" onClick={() => void copy()}>
            Copy
          </button>
        </div>
        <p className="field-hint" role="status">
          {copied}
        </p>
      </div>
      <button type="button" className="button" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}

function KeyTable({
  keys,
  total,
  ownerOf,
  onRevoked,
}: {
  keys: ApiKey[];
  total: number;
  /** Admins: whose each key is. */
  ownerOf: ((uid: string) => string) | undefined;
  onRevoked: (key: ApiKey) => void;
}) {
  const { client } = useSignedIn();
  const now = Date.now();
  return (
    <>
      <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="keys-heading">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">{ownerOf ? 'Name and owner' : 'Name'}</th>
              <th scope="col" className="wide-only">
                Key
              </th>
              <th scope="col" className="wide-only">
                Scopes
              </th>
              <th scope="col" className="wide-only">
                Created
              </th>
              <th scope="col" className="wide-only">
                Expires
              </th>
              <th scope="col" className="wide-only">
                Last used
              </th>
              <th scope="col">Status</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((key) => {
              const status = keyStatus(key, now);
              return (
                <tr key={key.uid} data-uid={key.uid}>
                  <th scope="row" className="wrap-long key-name">
                    {key.name}
                    {ownerOf && <span className="cell-note muted">{ownerOf(key.user_uid)}</span>}
                    <code className="cell-note narrow-only">{key.key_snippet}</code>
                  </th>
                  <td className="wide-only nowrap">
                    <code>{key.key_snippet}</code>
                  </td>
                  <td className="wide-only scope-cell">
                    {key.scopes.length === 0 ? 'Full access' : key.scopes.join(', ')}
                  </td>
                  <td className="wide-only">
                    <time dateTime={key.created_at} title={formatDateTime(key.created_at)}>
                      {formatAgo(key.created_at, now)}
                    </time>
                  </td>
                  <td className="wide-only nowrap">
                    {key.expires_at ? (
                      <time dateTime={key.expires_at} title={formatDateTime(key.expires_at)}>
                        {formatDay(key.expires_at)}
                      </time>
                    ) : (
                      'Never'
                    )}
                  </td>
                  <td className="wide-only">
                    {key.last_used_at ? (
                      <time dateTime={key.last_used_at} title={formatDateTime(key.last_used_at)}>
                        {formatAgo(key.last_used_at, now)}
                      </time>
                    ) : (
                      'Never'
                    )}
                  </td>
                  <td>
                    <span className={`status-pill key-${status}`}>{STATUS_LABELS[status]}</span>
                  </td>
                  <td>
                    {status === 'active' && (
                      <ConfirmButton
                        label="Revoke"
                        accessibleName={`Revoke the key ${key.name}`}
                        title={`Revoke the key “${key.name}”?`}
                        confirmLabel="Revoke key"
                        onConfirm={async () => {
                          await client.DELETE('/api/api-keys/{uid}', { params: { path: { uid: key.uid } } });
                          return () => onRevoked(key);
                        }}
                      >
                        <p>
                          Programs using <code>{key.key_snippet}</code> get 401 from their very next request.
                          This cannot be undone; the key stays listed as revoked.
                        </p>
                      </ConfirmButton>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {total > keys.length && (
        <p className="muted">
          The newest {keys.length} of {total} keys.
        </p>
      )}
    </>
  );
}
