import { Ago } from '../../components/ago.tsx';
import { useCallback, useEffect, useId, useState, type FormEvent } from 'react';
import type { components } from '@remit/client';
import { problemOf, RemitApiError } from '../../api.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { useSignedIn } from '../../session.tsx';
import {
  buildSmtpUrl,
  DEFAULT_PORTS,
  maskSmtpPassword,
  rawSmtpUrlProblem,
  type SmtpSecurity,
} from '../../smtp-url.ts';
import { fieldErrorsOf, isAdmin, type Loaded } from './organization-data.ts';
import '../../tables.css';
import './organization-settings.css';

type EmailAccount = components['schemas']['EmailAccount'];

const PAGE_SIZE = 100;

/**
 * `/app/settings/email`: the organization's email accounts (the senders of drafts and of the agents'
 * reminders), and connecting one (admins). The API cannot change or remove an account yet.
 */
export default function EmailSection() {
  useDocumentTitle('Email accounts · Settings');
  const { client, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const admin = isAdmin(organization.role);
  const [list, setList] = useState<Loaded<{ items: EmailAccount[]; total: number }>>({ status: 'loading' });

  const load = useCallback(async () => {
    try {
      const { data } = await client.GET('/api/email/accounts', {
        params: { query: { organization_uid: organizationUid, per_page: PAGE_SIZE } },
      });
      setList({ status: 'ready', data: { items: data.items, total: data._meta.total_items } });
    } catch (error) {
      setList({ status: 'error', message: problemOf(error), code: undefined });
    }
  }, [client, organizationUid]);
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="email-heading">
      <h1 id="email-heading">Email accounts</h1>
      <p className="muted">
        The addresses Remit sends from: drafts name one, and the collections agent sends its reminders from
        the first. Each sends through its own SMTP server, or through Remit’s mail server.
      </p>
      <h2 id="accounts-heading">Accounts</h2>
      <AccountList
        list={list}
        onRetry={() => {
          setList({ status: 'loading' });
          void load();
        }}
      />
      <p className="muted">
        Changing or removing an account is not possible yet: the API has no route for it.
      </p>
      {admin ? (
        <ConnectForm onConnected={load} />
      ) : (
        <p className="form-notice">Only admins connect email accounts.</p>
      )}
    </section>
  );
}

function AccountList({
  list,
  onRetry,
}: {
  list: Loaded<{ items: EmailAccount[]; total: number }>;
  onRetry: () => void;
}) {
  if (list.status === 'loading') return <Loading label="Loading the email accounts…" />;
  if (list.status === 'error') {
    return (
      <Problem title="The email accounts could not be loaded" message={list.message} onRetry={onRetry} />
    );
  }
  const { items, total } = list.data;
  if (items.length === 0) {
    return (
      <Empty title="No email account yet">
        <p>Agents need one to send their reminders, and drafts to be sent.</p>
      </Empty>
    );
  }
  return (
    <>
      <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="accounts-heading">
        <table className="table" aria-labelledby="accounts-heading">
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col" className="wide-only">
                Display name
              </th>
              <th scope="col">Sends through</th>
              <th scope="col" className="wide-only">
                Connected
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((account) => (
              <tr key={account.uid} data-uid={account.uid}>
                <th scope="row">{account.email}</th>
                <td className="wide-only">{account.display_name || <span className="muted">—</span>}</td>
                <td>
                  {account.has_smtp_url && account.smtp_host ? (
                    <>
                      <span className="cell-code">
                        {account.smtp_host}:{account.smtp_port}
                      </span>
                      <span className="cell-note muted"> its own SMTP server</span>
                    </>
                  ) : (
                    <span>Remit’s mail server (or its outbox)</span>
                  )}
                </td>
                <td className="wide-only">
                  <Ago at={account.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {total > items.length && (
        <p className="muted">
          The first {items.length} of {total} accounts.
        </p>
      )}
    </>
  );
}

type Sending = 'server' | 'fields' | 'url';
type Field = 'email' | 'display_name' | 'host' | 'port' | 'user' | 'password' | 'smtp_url';

const SENDING_CHOICES: { id: Sending; label: string; hint: string }[] = [
  {
    id: 'server',
    label: 'Remit’s mail server',
    hint: 'The server’s operator set it up (SMTP_URL); without one, messages are kept in its outbox.',
  },
  {
    id: 'fields',
    label: 'An SMTP server of this account',
    hint: 'Host, port, security, username and password.',
  },
  { id: 'url', label: 'An SMTP URL', hint: 'smtp://user:password@host:port or smtps://…, typed whole.' },
];

function ConnectForm({ onConnected }: { onConnected: () => Promise<void> }) {
  const { client, organization } = useSignedIn();
  const ids = useId();
  const idOf = (field: Field) => `${ids}-${field}`;
  const [email, setEmail] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [sending, setSending] = useState<Sending>('server');
  const [host, setHost] = useState('');
  const [port, setPort] = useState('');
  const [security, setSecurity] = useState<SmtpSecurity>('starttls');
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [rawUrl, setRawUrl] = useState('');
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [problem, setProblem] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [busy, setBusy] = useState(false);

  const built = sending === 'fields' ? buildSmtpUrl({ host, port, security, user, password }) : undefined;

  /** Focuses the first field with a problem, so a keyboard or screen-reader user lands on it. */
  const focusFirst = (found: Partial<Record<Field, string>>) => {
    const first = (Object.keys(found) as Field[])[0];
    if (!first) return;
    window.setTimeout(() => document.getElementById(idOf(first))?.focus(), 0);
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setNotice(undefined);
    setProblem(undefined);
    const found: Partial<Record<Field, string>> = {};
    const address = email.trim();
    if (!address) found.email = 'Enter the address mail is sent from.';
    else if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address)) found.email = 'This is not an email address.';
    let smtpUrl: string | undefined;
    if (sending === 'fields') {
      if (built?.ok) smtpUrl = built.url;
      else if (built) found[built.field] = built.message;
    } else if (sending === 'url') {
      const rawProblem = rawSmtpUrlProblem(rawUrl);
      if (rawProblem) found.smtp_url = rawProblem;
      else smtpUrl = rawUrl.trim();
    }
    setErrors(found);
    if (Object.keys(found).length > 0) {
      focusFirst(found);
      return;
    }
    setBusy(true);
    try {
      const { data } = await client.POST('/api/email/accounts', {
        body: {
          organization_uid: organization.organization_uid,
          email: address,
          display_name: displayName.trim(),
          ...(smtpUrl !== undefined ? { smtp_url: smtpUrl } : {}),
        },
      });
      setNotice(
        `Connected ${data.email}${data.smtp_host ? `, sending through ${data.smtp_host}:${data.smtp_port}` : ', sending through Remit’s mail server'}.`,
      );
      // The credentials leave the page with the form.
      setEmail('');
      setDisplayName('');
      setHost('');
      setPort('');
      setUser('');
      setPassword('');
      setRawUrl('');
      setSecurity('starttls');
      setSending('server');
      await onConnected();
    } catch (error) {
      const { fields, message } = explain(error, address, sending);
      setErrors(fields);
      setProblem(message);
      focusFirst(fields);
    } finally {
      setBusy(false);
    }
  };

  const describedBy = (field: Field, hint?: string) =>
    [hint, errors[field] ? `${idOf(field)}-error` : undefined].filter(Boolean).join(' ') || undefined;
  const fieldError = (field: Field) =>
    errors[field] ? (
      <p className="field-error" id={`${idOf(field)}-error`}>
        {errors[field]}
      </p>
    ) : null;
  const input = (
    field: Field,
    label: string,
    value: string,
    set: (value: string) => void,
    extra: {
      type?: string;
      autoComplete?: string;
      inputMode?: 'numeric';
      hint?: string;
      placeholder?: string;
    } = {},
  ) => (
    <div className="field">
      <label htmlFor={idOf(field)}>{label}</label>
      <input
        id={idOf(field)}
        type={extra.type ?? 'text'}
        value={value}
        autoComplete={extra.autoComplete ?? 'off'}
        inputMode={extra.inputMode}
        placeholder={extra.placeholder}
        spellCheck={false}
        aria-invalid={errors[field] ? true : undefined}
        aria-describedby={describedBy(field, extra.hint ? `${idOf(field)}-hint` : undefined)}
        onChange={(event) => set(event.target.value)}
      />
      {extra.hint && (
        <p className="field-hint" id={`${idOf(field)}-hint`}>
          {extra.hint}
        </p>
      )}
      {fieldError(field)}
    </div>
  );

  return (
    <section className="panel" aria-labelledby="connect-heading">
      <h2 id="connect-heading">Connect an account</h2>
      <form className="settings-form" onSubmit={(event) => void submit(event)} noValidate>
        <div className="form-row">
          {input('email', 'Email address', email, setEmail, { type: 'email', placeholder: 'ar@example.com' })}
          {input('display_name', 'Display name', displayName, setDisplayName, {
            hint: 'The sender’s name recipients see. Optional.',
          })}
        </div>
        <fieldset>
          <legend>Sends through</legend>
          {SENDING_CHOICES.map((choice) => (
            <label key={choice.id} className="choice">
              <input
                type="radio"
                name={`${ids}-sending`}
                value={choice.id}
                checked={sending === choice.id}
                onChange={() => {
                  setSending(choice.id);
                  setErrors({});
                }}
              />
              <span>
                {choice.label}
                <span className="choice-hint">{choice.hint}</span>
              </span>
            </label>
          ))}
          {sending === 'fields' && (
            <>
              <div className="form-row">
                {input('host', 'SMTP host', host, setHost, { placeholder: 'smtp.example.com' })}
                {input('port', 'Port', port, setPort, {
                  inputMode: 'numeric',
                  placeholder: String(DEFAULT_PORTS[security]),
                  hint: `Empty: ${DEFAULT_PORTS[security]}.`,
                })}
                <div className="field">
                  <label htmlFor={`${ids}-security`}>Security</label>
                  <select
                    id={`${ids}-security`}
                    value={security}
                    onChange={(event) => setSecurity(event.target.value as SmtpSecurity)}
                  >
                    <option value="starttls">STARTTLS when offered (smtp://)</option>
                    <option value="tls">TLS from the start (smtps://)</option>
                  </select>
                </div>
              </div>
              <div className="form-row">
                {input('user', 'Username', user, setUser, { autoComplete: 'off' })}
                {input('password', 'Password', password, setPassword, {
                  type: 'password',
                  autoComplete: 'new-password',
                })}
              </div>
              {built?.ok && (
                <p className="field-hint preview">
                  Sent as <code>{maskSmtpPassword(built.url)}</code> (user and password URL-encoded).
                </p>
              )}
            </>
          )}
          {sending === 'url' &&
            input('smtp_url', 'SMTP URL', rawUrl, setRawUrl, {
              type: 'password',
              autoComplete: 'off',
              hint: 'smtp://user:password@host:port (STARTTLS when offered, port 587 by default) or smtps://… (TLS, 465). Write an @ or : in the user or password as %40 or %3A.',
              placeholder: 'smtps://user:password@smtp.example.com:465',
            })}
          <p className="field-hint">
            Remit sends only to public mail servers: a host on a private or local network is refused, unless
            the server’s operator allows it.
          </p>
        </fieldset>
        <div aria-live="polite">{notice && <p className="announcement">{notice}</p>}</div>
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? 'Connecting…' : 'Connect account'}
          </button>
        </div>
      </form>
    </section>
  );
}

/** The first input of a way of sending: where a problem with the SMTP server points. */
function sendingFieldOf(sending: Sending): Field {
  return sending === 'url' ? 'smtp_url' : 'host';
}

/** The API's refusal in words, and the fields it is about. */
function explain(
  error: unknown,
  address: string,
  sending: Sending,
): { fields: Partial<Record<Field, string>>; message: string } {
  if (error instanceof RemitApiError && error.code === 'already_exists') {
    const message = `An account for ${address} already exists in this organization.`;
    return { fields: { email: message }, message };
  }
  if (error instanceof RemitApiError && error.code === 'validation_failed') {
    const byField = fieldErrorsOf(error);
    const fields: Partial<Record<Field, string>> = {};
    const parts: string[] = [];
    for (const [field, raw] of Object.entries(byField)) {
      if (field === 'smtp_url') {
        const text = `The SMTP server was refused: ${raw.replace(/^smtp_url /, '')}.`;
        fields[sendingFieldOf(sending)] = text;
        parts.push(text);
      } else if (field === 'email') {
        fields.email = 'This is not an email address Remit accepts.';
        parts.push(fields.email);
      } else if (field === 'display_name') {
        fields.display_name = 'The display name is one line of at most 255 characters.';
        parts.push(fields.display_name);
      } else parts.push(`${field}: ${raw}`);
    }
    return { fields, message: parts.join(' ') || problemOf(error) };
  }
  return { fields: {}, message: problemOf(error) };
}
