import { Ago } from '../../components/ago.tsx';
import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { SuccessBody } from '@remit/client';
import { problemOf, RemitApiError } from '../../api.ts';
import { Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { useSignedIn } from '../../session.tsx';
import { fieldErrorsOf, type Loaded } from './organization-data.ts';
import './organization-settings.css';

type Integration = SuccessBody<'get', '/api/organization/{organization_uid}/integrations/billing'>['data'];

/** The API's bounds on the signing secret (docs/billing-integration.md). */
const SECRET_MIN = 16;
const SECRET_MAX = 500;

/**
 * `/app/settings/billing` (admins): the billing partner invoice updates are synced to
 * (docs/billing-integration.md). Its secret is never shown again once saved; the API has no sync state
 * for the integration as a whole (each invoice's page shows what the partner accepted).
 */
export default function BillingSection() {
  useDocumentTitle('Billing integration · Settings');
  const { client, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  // `data: null`: none configured (the API answers 404).
  const [state, setState] = useState<Loaded<Integration | null>>({ status: 'loading' });
  const [notice, setNotice] = useState<string>();

  const load = useCallback(async () => {
    try {
      const { data } = await client.GET('/api/organization/{organization_uid}/integrations/billing', {
        params: { path: { organization_uid: organizationUid } },
      });
      setState({ status: 'ready', data });
    } catch (error) {
      if (error instanceof RemitApiError && error.code === 'not_found')
        setState({ status: 'ready', data: null });
      else setState({ status: 'error', message: problemOf(error), code: undefined });
    }
  }, [client, organizationUid]);
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="billing-heading">
      <h1 id="billing-heading">Billing integration</h1>
      <p className="muted">
        One outside billing system (the partner) can receive every change to an invoice: Remit sends it,
        signed, before saving it, and saves it only when the partner accepts. Without one, changes are saved
        as they are.
      </p>
      <div aria-live="polite">{notice && <p className="announcement">{notice}</p>}</div>
      {state.status === 'loading' && <Loading label="Loading the billing integration…" />}
      {state.status === 'error' && (
        <Problem
          title="The billing integration could not be loaded"
          message={state.message}
          onRetry={() => {
            setState({ status: 'loading' });
            void load();
          }}
        />
      )}
      {state.status === 'ready' && (
        <>
          <Current
            integration={state.data}
            onRemoved={(removed) => {
              setNotice(
                `Removed the billing integration: invoice changes are no longer sent to ${removed.url}.`,
              );
              setState({ status: 'ready', data: null });
            }}
          />
          <Configure
            current={state.data}
            onSaved={(saved, created) => {
              setNotice(
                created
                  ? `Connected: invoice changes are now sent to ${saved.url}.`
                  : `Saved: invoice changes are now sent to ${saved.url}, signed with the new secret.`,
              );
              setState({ status: 'ready', data: saved });
            }}
          />
        </>
      )}
    </section>
  );
}

function Current({
  integration,
  onRemoved,
}: {
  integration: Integration | null;
  onRemoved: (removed: Integration) => void;
}) {
  const { client, organization } = useSignedIn();
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const removeButton = useRef<HTMLButtonElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);

  if (!integration) {
    return (
      <section className="panel" aria-labelledby="partner-heading">
        <h2 id="partner-heading">Partner</h2>
        <p>No billing partner is connected. Invoice changes are saved without being sent anywhere.</p>
      </section>
    );
  }
  const remove = async () => {
    setBusy(true);
    setProblem(undefined);
    try {
      const { data } = await client.DELETE('/api/organization/{organization_uid}/integrations/billing', {
        params: { path: { organization_uid: organization.organization_uid } },
      });
      setConfirming(false);
      onRemoved(data);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="panel" aria-labelledby="partner-heading">
      <h2 id="partner-heading">Partner</h2>
      <dl className="facts settings-facts">
        <div className="fact-wide">
          <dt>Address</dt>
          <dd>
            <code>{integration.url}</code>
          </dd>
        </div>
        <div>
          <dt>Kind</dt>
          <dd>{integration.type === 'http' ? 'HTTP (signed JSON PUT)' : integration.type}</dd>
        </div>
        <div>
          <dt>Signing secret</dt>
          <dd>{integration.has_secret ? 'Set (never shown again)' : 'None'}</dd>
        </div>
        <div>
          <dt>Connected</dt>
          <dd>
            <Ago at={integration.created_at} />
          </dd>
        </div>
        <div>
          <dt>Last changed</dt>
          <dd>
            <Ago at={integration.updated_at} />
          </dd>
        </div>
      </dl>
      <p className="muted">
        Sync: each invoice’s page shows the revision the partner last accepted and when. An update the partner
        refuses, or does not answer in time (5 seconds by default), is not saved, and the person is told.
      </p>
      {confirming ? (
        <div className="confirm" role="group" aria-labelledby="remove-title">
          <p id="remove-title" className="confirm-title">
            Remove the billing integration?
          </p>
          <p>
            Invoice changes will no longer be sent to <code>{integration.url}</code>; they are saved in Remit
            only. To connect it again you will need its secret.
          </p>
          <div className="confirm-actions">
            <button
              ref={confirmButton}
              type="button"
              className="button button-danger"
              disabled={busy}
              onClick={() => void remove()}
            >
              {busy ? 'Removing…' : 'Remove'}
            </button>
            <button
              type="button"
              className="button"
              onClick={() => {
                setConfirming(false);
                setProblem(undefined);
                window.setTimeout(() => removeButton.current?.focus(), 0);
              }}
            >
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <button
          ref={removeButton}
          type="button"
          className="button button-danger"
          onClick={() => {
            setConfirming(true);
            window.setTimeout(() => confirmButton.current?.focus(), 0);
          }}
        >
          Remove billing integration
        </button>
      )}
      {problem && (
        <p className="form-problem" role="alert">
          {problem}
        </p>
      )}
    </section>
  );
}

/** 32 random bytes as base64url (43 characters): a secret to give the partner as well. */
function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function Configure({
  current,
  onSaved,
}: {
  current: Integration | null;
  onSaved: (saved: Integration, created: boolean) => void;
}) {
  const { client, organization } = useSignedIn();
  const ids = useId();
  const [url, setUrl] = useState(current?.url ?? '');
  const [secret, setSecret] = useState('');
  const [showSecret, setShowSecret] = useState(false);
  const [errors, setErrors] = useState<{ url?: string; secret?: string }>({});
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(undefined);
    const found: { url?: string; secret?: string } = {};
    const address = url.trim();
    if (!/^https?:\/\/\S+$/i.test(address))
      found.url = 'Enter the partner’s address, starting with https://.';
    if (secret.length < SECRET_MIN || secret.length > SECRET_MAX)
      found.secret = `The secret has ${SECRET_MIN} to ${SECRET_MAX} characters (use Generate for a strong one).`;
    setErrors(found);
    if (found.url || found.secret) {
      window.setTimeout(() => document.getElementById(`${ids}-${found.url ? 'url' : 'secret'}`)?.focus(), 0);
      return;
    }
    setBusy(true);
    try {
      // 201 when it was created, 200 when it replaced one.
      const { data, status_code } = await client.PUT(
        '/api/organization/{organization_uid}/integrations/billing',
        {
          params: { path: { organization_uid: organization.organization_uid } },
          body: { type: 'http', url: address, secret },
        },
      );
      setSecret('');
      setShowSecret(false);
      onSaved(data, status_code === 201);
    } catch (error) {
      const byField = fieldErrorsOf(error);
      const fields = {
        ...(byField.url ? { url: `The address was refused: ${byField.url}.` } : {}),
        ...(byField.secret ? { secret: `The secret was refused: ${byField.secret}.` } : {}),
      };
      setErrors(fields);
      setProblem(error instanceof RemitApiError ? error.message : problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  const describedBy = (field: 'url' | 'secret') =>
    [`${ids}-${field}-hint`, errors[field] ? `${ids}-${field}-error` : ''].filter(Boolean).join(' ');
  return (
    <section className="panel" aria-labelledby="configure-heading">
      <h2 id="configure-heading">
        {current ? 'Replace the partner or its secret' : 'Connect a billing partner'}
      </h2>
      <form className="settings-form" onSubmit={(event) => void submit(event)} noValidate>
        <div className="field">
          <label htmlFor={`${ids}-url`}>Partner address</label>
          <p className="field-hint" id={`${ids}-url-hint`}>
            Remit sends each invoice change there as a JSON PUT. A public https:// address: hosts on a private
            or local network are refused.
          </p>
          <input
            id={`${ids}-url`}
            type="url"
            value={url}
            spellCheck={false}
            autoComplete="off"
            placeholder="https://billing.example.com/remit/invoices"
            aria-invalid={errors.url ? true : undefined}
            aria-describedby={describedBy('url')}
            onChange={(event) => setUrl(event.target.value)}
          />
          {errors.url && (
            <p className="field-error" id={`${ids}-url-error`}>
              {errors.url}
            </p>
          )}
        </div>
        <div className="field">
          <label htmlFor={`${ids}-secret`}>Signing secret</label>
          <p className="field-hint" id={`${ids}-secret-hint`}>
            Signs every request (the Remit-Signature header); give the partner the same one. {SECRET_MIN} to{' '}
            {SECRET_MAX} characters. Remit never shows it again once saved
            {current ? ', so replacing the address needs the secret again' : ''}.
          </p>
          <div className="secret-row">
            <input
              id={`${ids}-secret`}
              type={showSecret ? 'text' : 'password'}
              value={secret}
              spellCheck={false}
              autoComplete="new-password"
              aria-invalid={errors.secret ? true : undefined}
              aria-describedby={describedBy('secret')}
              onChange={(event) => setSecret(event.target.value)}
            />
            <button
              type="button"
              className="button"
              onClick={() => {
                setSecret(randomSecret());
                setShowSecret(true);
              }}
            >
              Generate
            </button>
            <button
              type="button"
              className="button"
              aria-pressed={showSecret}
              onClick={() => setShowSecret((shown) => !shown)}
            >
              Show
            </button>
          </div>
          {errors.secret && (
            <p className="field-error" id={`${ids}-secret-error`}>
              {errors.secret}
            </p>
          )}
        </div>
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? 'Saving…' : current ? 'Save' : 'Connect'}
          </button>
        </div>
      </form>
    </section>
  );
}
