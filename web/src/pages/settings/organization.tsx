import { Ago } from '../../components/ago.tsx';
import { useId, useRef, useState, type Ref } from 'react';
import { problemOf, RemitApiError } from '../../api.ts';
import { Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { Link } from '../../router.tsx';
import { useSignedIn } from '../../session.tsx';
import { isAdmin, useOrganizationSettings, type OrganizationSettings } from './organization-data.ts';
import './organization-settings.css';

type Switch = 'segregation_of_duties' | 'require_admin_mfa';

/** What each switch does, in a sentence (docs/authentication.md, docs/people.md). */
const SWITCHES: { id: Switch; label: string; on: string; off: string; means: string }[] = [
  {
    id: 'segregation_of_duties',
    label: 'Segregation of duties',
    on: 'Segregation of duties is on.',
    off: 'Segregation of duties is off.',
    means:
      'Whoever entered a payable invoice cannot also approve it, admins included: a second person approves it.',
  },
  {
    id: 'require_admin_mfa',
    label: 'Require a second factor for admins',
    on: 'Admins now need a second factor here.',
    off: 'Admins no longer need a second factor here.',
    means:
      'Admins who signed in without a second factor (an authenticator app code) are refused in this organization. Members and API keys are not affected.',
  },
];

/** `/app/settings/organization`: the organization's name and its two switches (admins change them). */
export default function OrganizationSection() {
  useDocumentTitle('Organization · Settings');
  const { organization } = useSignedIn();
  const admin = isAdmin(organization.role);
  const { state, reload, update } = useOrganizationSettings();

  return (
    <section aria-labelledby="organization-heading">
      <h1 id="organization-heading">Organization</h1>
      <dl className="facts settings-facts">
        <div>
          <dt>Name</dt>
          <dd>{organization.organization_name}</dd>
        </div>
        <div>
          <dt>Organization ID</dt>
          <dd>
            <code>{organization.organization_uid}</code>
          </dd>
        </div>
        <div>
          <dt>Your role</dt>
          <dd>{admin ? 'Admin' : 'Member'}</dd>
        </div>
      </dl>
      <p className="muted">
        The name is set when the organization is created (<code>remit init</code>); it cannot be changed here.
        The ID is what the <code>remit</code> command line and the API call it.
      </p>
      {state.status === 'loading' && <Loading label="Loading the organization’s settings…" />}
      {state.status === 'error' && state.code === 'second_factor_required' && (
        <div className="state state-problem" role="alert">
          <p className="state-title">This organization requires admins to use a second factor</p>
          <p>
            You signed in without one, so Remit refuses you here. Set one up in{' '}
            <Link to="/app/settings/account">Your account</Link>; this browser then works again.
          </p>
          <button type="button" className="button" onClick={() => void reload()}>
            Try again
          </button>
        </div>
      )}
      {state.status === 'error' && state.code !== 'second_factor_required' && (
        <Problem
          title="The settings could not be loaded"
          message={state.message}
          onRetry={() => void reload()}
        />
      )}
      {state.status === 'ready' && (
        <Controls settings={state.data} admin={admin} update={update} onReload={reload} />
      )}
    </section>
  );
}

function Controls({
  settings,
  admin,
  update,
  onReload,
}: {
  settings: OrganizationSettings;
  admin: boolean;
  update: (changes: Partial<Record<Switch, boolean>>) => Promise<OrganizationSettings>;
  onReload: () => Promise<void>;
}) {
  const { client, organization } = useSignedIn();
  const [busy, setBusy] = useState<Switch>();
  const [notice, setNotice] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const [lockedOut, setLockedOut] = useState(false);
  // Turning on the second-factor rule asks first: it can refuse the admin who turns it on.
  const [confirming, setConfirming] = useState(false);
  const confirmButton = useRef<HTMLButtonElement>(null);
  const mfaSwitch = useRef<HTMLInputElement>(null);

  const change = async (id: Switch, value: boolean) => {
    setBusy(id);
    setProblem(undefined);
    setNotice(undefined);
    try {
      const saved = await update({ [id]: value });
      const spec = SWITCHES.find((s) => s.id === id)!;
      setNotice(saved[id] ? spec.on : spec.off);
      if (id === 'require_admin_mfa' && saved.require_admin_mfa) {
        // Read again as this session: with no second factor, the organization now refuses it.
        try {
          await client.GET('/api/organization/{organization_uid}/settings', {
            params: { path: { organization_uid: organization.organization_uid } },
          });
        } catch (error) {
          if (error instanceof RemitApiError && error.code === 'second_factor_required') setLockedOut(true);
        }
      }
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <section className="panel" aria-labelledby="controls-heading">
      <h2 id="controls-heading">Controls</h2>
      {!admin && (
        <p className="form-notice">Only admins change these settings. You can see how they are set.</p>
      )}
      <ul className="switches">
        {SWITCHES.map((spec) => (
          <SwitchRow
            key={spec.id}
            spec={spec}
            checked={settings[spec.id]}
            admin={admin}
            busy={busy === spec.id}
            disabled={busy !== undefined || confirming}
            inputRef={spec.id === 'require_admin_mfa' ? mfaSwitch : undefined}
            onChange={(value) => {
              if (spec.id === 'require_admin_mfa' && value) {
                setConfirming(true);
                setNotice(undefined);
                setProblem(undefined);
                // After React has shown the question.
                window.setTimeout(() => confirmButton.current?.focus(), 0);
                return;
              }
              void change(spec.id, value);
            }}
          />
        ))}
      </ul>
      {confirming && (
        <div className="confirm" role="group" aria-labelledby="mfa-confirm-title">
          <p id="mfa-confirm-title" className="confirm-title">
            Require a second factor of every admin?
          </p>
          <p>
            As soon as this is on, admins signed in without a second factor are refused in{' '}
            {organization.organization_name} — <strong>you too</strong>, if your account has none. Set one up
            first in <Link to="/app/settings/account">Your account</Link>; with it, this browser goes on
            working.
          </p>
          <div className="confirm-actions">
            <button
              ref={confirmButton}
              type="button"
              className="button button-primary"
              onClick={() => {
                setConfirming(false);
                void change('require_admin_mfa', true);
              }}
            >
              Require a second factor
            </button>
            <button
              type="button"
              className="button"
              onClick={() => {
                setConfirming(false);
                // Once React has enabled it again.
                window.setTimeout(() => mfaSwitch.current?.focus(), 0);
              }}
            >
              Cancel
            </button>
          </div>
        </div>
      )}
      <div aria-live="polite">
        {notice && <p className="announcement">{notice}</p>}
        {lockedOut && (
          <p className="form-problem">
            Remit now refuses you in this organization, because you signed in without a second factor. Set one
            up in <Link to="/app/settings/account">Your account</Link>, then{' '}
            <button type="button" className="link-button" onClick={() => void onReload()}>
              read the settings again
            </button>
            .
          </p>
        )}
      </div>
      {problem && (
        <p className="form-problem" role="alert">
          {problem}
        </p>
      )}
      <p className="muted settings-updated">
        Last changed <Ago at={settings.updated_at} />.
      </p>
    </section>
  );
}

function SwitchRow({
  spec,
  checked,
  admin,
  busy,
  disabled,
  inputRef,
  onChange,
}: {
  spec: (typeof SWITCHES)[number];
  checked: boolean;
  admin: boolean;
  busy: boolean;
  disabled: boolean;
  inputRef: Ref<HTMLInputElement> | undefined;
  onChange: (value: boolean) => void;
}) {
  const id = useId();
  return (
    <li className="switch-row">
      {admin ? (
        <label className="switch" htmlFor={id}>
          <input
            ref={inputRef}
            id={id}
            type="checkbox"
            role="switch"
            checked={checked}
            disabled={disabled}
            aria-describedby={`${id}-means`}
            onChange={(event) => onChange(event.target.checked)}
          />
          <span className="switch-label">{spec.label}</span>
          {busy && <span className="muted"> Saving…</span>}
        </label>
      ) : (
        <p className="switch switch-readonly">
          <span className="switch-label">{spec.label}</span>
          <span className={`status-pill ${checked ? 'status-on' : 'status-off'}`}>
            {checked ? 'On' : 'Off'}
          </span>
        </p>
      )}
      <p className="field-hint" id={`${id}-means`}>
        {spec.means}
      </p>
    </li>
  );
}
