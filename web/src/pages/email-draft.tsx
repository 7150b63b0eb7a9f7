import { Ago } from '../components/ago.tsx';
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { codeOf, problemOf } from '../api.ts';
import {
  addressesText,
  allowedActions,
  emailsChanged,
  emailsGeneration,
  fromLocalInput,
  isInFlight,
  parseAddresses,
  previewDocument,
  statusLabel,
  TAB_LABELS,
  tabOf,
  timeZoneName,
  toLocalInput,
  tomorrowAt,
  type CollectionTab,
} from '../collections.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { formatDateTime } from '../format.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import { AboutCell, EmailStatusPill, type EmailDraft } from '../components/email-parts.tsx';

/** While the worker is on it (a send asked for, or under way) the email is read again this often. */
export const SEND_POLL_MS = 2_000;

/** What happened last, said once in the page's live region (and kept on screen). */
interface Notice {
  text: string;
  tone: 'ok' | 'problem' | 'info';
}

/**
 * One email: who it goes to, its state, the email itself in a sandboxed frame and its text version;
 * for a draft or a failed email, edit, schedule, unschedule, send now and cancel.
 */
export default function EmailDraftPage({ uid }: { uid: string }) {
  const { client, organization } = useSignedIn();
  const [attempt, setAttempt] = useState(0);
  // What the last save, cancel or poll answered: shown at once, newer than the first read.
  const [latest, setLatest] = useState<EmailDraft>();
  const [notice, setNotice] = useState<Notice>();
  const [editing, setEditing] = useState(false);
  const [tick, setTick] = useState(0);
  const stateRef = useRef<HTMLDivElement>(null);
  const query = { organization_uid: organization.organization_uid };
  // The draft routes answer the bare record (no envelope).
  const read = () => client.GET('/api/email/drafts/{uid}', { params: { path: { uid }, query } });
  const loaded = useResource(`email:${uid}:${attempt}:${emailsGeneration()}`, read);
  const current = latest?.uid === uid ? latest : loaded.status === 'ready' ? loaded.data : undefined;
  useDocumentTitle(current ? current.subject || 'Email' : 'Email');

  /** A change this page made (or saw): shown at once; the lists are read again next time. */
  const show = (email: EmailDraft, next?: Notice) => {
    emailsChanged();
    setLatest(email);
    if (next) setNotice(next);
  };

  // Polls while the worker is on it; waits for a planned time that comes while the page is open.
  const status = current?.status;
  const planned = current?.planned_send_at ?? null;
  useEffect(() => {
    if (!status) return;
    const now = Date.now();
    let delay: number | undefined;
    if (isInFlight({ status, planned_send_at: planned }, now)) delay = SEND_POLL_MS;
    else if (status === 'draft' && planned) {
      const wait = Date.parse(planned) - now + 500;
      if (wait < 86_400_000) delay = wait;
    }
    if (delay === undefined) return;
    let live = true;
    const timer = window.setTimeout(() => {
      read().then(
        (email) => {
          if (!live) return;
          if (email.status !== status) {
            show(email, outcomeNotice(email));
          } else {
            setLatest(email);
          }
          setTick((n) => n + 1);
        },
        // A failed read is asked again at the next interval (the page keeps what it shows).
        () => live && setTick((n) => n + 1),
      );
    }, delay);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
    // `read` is a new function each render; the email's state and `tick` say when to poll.
  }, [uid, status, planned, tick]);

  if (!current && loaded.status === 'loading') return <Loading label="Loading the email…" />;
  if (!current) {
    const error = loaded.status === 'error' ? loaded : undefined;
    return (
      <div className="page">
        <BackLink tab="drafts" />
        <h1>Email</h1>
        {error?.code === 'not_found' ? (
          <Empty title="This email does not exist, or it belongs to another organization." />
        ) : (
          <Problem
            title="The email could not be loaded"
            message={error?.message ?? ''}
            onRetry={() => setAttempt((n) => n + 1)}
          />
        )}
      </div>
    );
  }

  const inFlight = isInFlight(current);
  const actions = allowedActions(current);
  /** A refused change: the 409 of a race says so in words, and the email as it now is shows. */
  const refused = async (error: unknown) => {
    if (codeOf(error) === 'invalid_state' || codeOf(error) === 'not_found') {
      try {
        const now = await read();
        show(now, {
          text: `Not done: ${problemOf(error)}. The email is now ${statusLabel(now).toLowerCase()}.`,
          tone: 'problem',
        });
        setEditing(false);
        return;
      } catch {
        // Fall through to the error itself.
      }
    }
    setNotice({ text: problemOf(error), tone: 'problem' });
  };
  const focusState = () => window.setTimeout(() => stateRef.current?.focus(), 0);

  return (
    <div className="page">
      <BackLink tab={tabOf(current)} />
      <Header email={current} />
      <div ref={stateRef} tabIndex={-1} className="send-state" aria-live="polite" aria-atomic="true">
        {inFlight && (
          <p className="announcement">
            <span className="spinner" aria-hidden="true" /> Sending… this page shows the outcome as soon as
            the worker has it.
          </p>
        )}
        {notice && !(inFlight && notice.tone === 'info') && (
          <p
            className={`announcement notice-${notice.tone}`}
            role={notice.tone === 'problem' ? 'alert' : undefined}
          >
            {notice.text}
          </p>
        )}
      </div>
      {editing && actions.edit && !inFlight ? (
        <EditForm
          key={`${current.uid}:${current.updated_at}`}
          email={current}
          onSaved={(email) => {
            setEditing(false);
            show(email, {
              text:
                current.status === 'failed'
                  ? 'Saved. It is a draft again: send it now or schedule it.'
                  : 'Saved.',
              tone: 'ok',
            });
            focusState();
          }}
          onRefused={refused}
          onDiscard={() => setEditing(false)}
        />
      ) : (
        <>
          {actions.edit && !inFlight && (
            <Actions
              email={current}
              onEdit={() => setEditing(true)}
              onChanged={(email, next) => {
                show(email, next);
                focusState();
              }}
              onRefused={refused}
            />
          )}
          <Preview email={current} />
        </>
      )}
    </div>
  );
}

/** The sentence a send's outcome is announced with. */
function outcomeNotice(email: EmailDraft): Notice | undefined {
  if (email.status === 'sent') {
    return { text: email.sent_at ? `Sent ${formatDateTime(email.sent_at)}.` : 'Sent.', tone: 'ok' };
  }
  if (email.status === 'failed')
    return { text: `Sending failed: ${email.error ?? 'no reason given'}`, tone: 'problem' };
  if (email.status === 'canceled') return { text: 'The email was canceled.', tone: 'info' };
  return undefined;
}

function BackLink({ tab }: { tab: CollectionTab }) {
  return (
    <Link to={`/app/collections/${tab}`} className="back-link">
      ← {TAB_LABELS[tab]}
    </Link>
  );
}

function Header({ email }: { email: EmailDraft }) {
  const line = (label: string, value: ReactNode) => (
    <div>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
  const time = (iso: string) => <time dateTime={iso}>{formatDateTime(iso)}</time>;
  return (
    <header className="panel">
      <div className="detail-head">
        <h1>{email.subject || '(no subject)'}</h1>
        <EmailStatusPill email={email} />
      </div>
      <dl className="facts email-facts">
        {line('From', email.from_email)}
        {line('To', email.to.length ? addressesText(email.to) : '—')}
        {email.cc.length > 0 && line('Cc', addressesText(email.cc))}
        {email.bcc.length > 0 && line('Bcc', addressesText(email.bcc))}
        {line('About', <AboutCell email={email} />)}
      </dl>
      <dl className="facts">
        {email.status === 'draft' &&
          line('Scheduled for', email.planned_send_at ? time(email.planned_send_at) : 'Not scheduled')}
        {email.sent_at && line('Sent', time(email.sent_at))}
        {line('Created', <Ago at={email.created_at} />)}
        {line('Last change', <Ago at={email.updated_at} />)}
      </dl>
      {email.error && (
        <div className={email.status === 'failed' ? 'email-error-box' : 'email-warning-box'}>
          <strong>{email.status === 'failed' ? 'Sending failed: ' : 'Note: '}</strong>
          {email.error}
          {email.status === 'failed' && (
            <p className="muted">
              Send it now or schedule it to try again; saving an edit makes it a draft again.
            </p>
          )}
        </div>
      )}
      <p className="muted time-zone-note">Times are in your time zone, {timeZoneName()}.</p>
    </header>
  );
}

/** Edit, schedule, unschedule, send now, cancel: only what the email's status allows. */
function Actions({
  email,
  onEdit,
  onChanged,
  onRefused,
}: {
  email: EmailDraft;
  onEdit: () => void;
  onChanged: (email: EmailDraft, notice: Notice) => void;
  onRefused: (error: unknown) => Promise<void>;
}) {
  const { client, organization } = useSignedIn();
  const actions = allowedActions(email);
  const future = email.planned_send_at && Date.parse(email.planned_send_at) > Date.now();
  const [sendAt, setSendAt] = useState(
    email.status === 'draft' && future ? toLocalInput(email.planned_send_at!) : tomorrowAt(9),
  );
  const [timeProblem, setTimeProblem] = useState<string>();
  const [busy, setBusy] = useState<string>();
  const confirm = useRef<HTMLDialogElement>(null);
  const cancelButton = useRef<HTMLButtonElement>(null);

  const save = async (what: string, plannedSendAt: string | null, notice: Notice) => {
    setBusy(what);
    try {
      const email2 = await client.POST('/api/email/drafts', {
        body: {
          uid: email.uid,
          organization_uid: organization.organization_uid,
          planned_send_at: plannedSendAt,
        },
      });
      onChanged(email2, notice);
    } catch (error) {
      await onRefused(error);
    } finally {
      setBusy(undefined);
    }
  };
  const schedule = (event: FormEvent) => {
    event.preventDefault();
    const at = fromLocalInput(sendAt);
    if (!at) {
      setTimeProblem('Enter a date and a time.');
      return;
    }
    if (Date.parse(at) <= Date.now()) {
      setTimeProblem('That time has passed. Use Send now to send it at once.');
      return;
    }
    setTimeProblem(undefined);
    void save('schedule', at, { text: `Scheduled for ${formatDateTime(at)}.`, tone: 'ok' });
  };
  const cancel = async () => {
    confirm.current?.close();
    setBusy('cancel');
    try {
      const canceled = await client.DELETE('/api/email/drafts/{uid}', {
        params: { path: { uid: email.uid }, query: { organization_uid: organization.organization_uid } },
      });
      onChanged(canceled, { text: 'Canceled. The email will not be sent.', tone: 'ok' });
    } catch (error) {
      await onRefused(error);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <section className="panel email-actions" aria-labelledby="actions-heading">
      <h2 id="actions-heading">Send</h2>
      <div className="action-row">
        <button
          type="button"
          className="button button-primary"
          disabled={busy !== undefined}
          onClick={() => void save('send', new Date().toISOString(), { text: 'Sending…', tone: 'info' })}
        >
          {busy === 'send' ? 'Sending…' : email.status === 'failed' ? 'Send now (try again)' : 'Send now'}
        </button>
        {actions.edit && (
          <button type="button" className="button" onClick={onEdit} disabled={busy !== undefined}>
            Edit
          </button>
        )}
        <button
          ref={cancelButton}
          type="button"
          className="button button-danger"
          disabled={busy !== undefined}
          onClick={() => confirm.current?.showModal()}
        >
          Cancel email
        </button>
      </div>
      <form className="schedule-form" onSubmit={schedule} noValidate>
        <div className="field">
          <label htmlFor="send-at">Send at</label>
          <input
            id="send-at"
            type="datetime-local"
            value={sendAt}
            onChange={(event) => setSendAt(event.target.value)}
            aria-describedby="send-at-hint"
            aria-invalid={timeProblem ? true : undefined}
            required
          />
          <p className="field-hint" id="send-at-hint">
            Your time zone, {timeZoneName()}.
          </p>
        </div>
        <button type="submit" className="button" disabled={busy !== undefined}>
          {actions.unschedule ? 'Reschedule' : 'Schedule'}
        </button>
        {actions.unschedule && (
          <button
            type="button"
            className="button"
            disabled={busy !== undefined}
            onClick={() =>
              void save('unschedule', null, {
                text: 'Unscheduled. It stays a draft until you send or schedule it.',
                tone: 'ok',
              })
            }
          >
            Unschedule
          </button>
        )}
      </form>
      <div aria-live="polite">
        {timeProblem && (
          <p className="form-problem" role="alert">
            {timeProblem}
          </p>
        )}
      </div>
      <dialog
        ref={confirm}
        className="confirm-dialog"
        aria-labelledby="cancel-title"
        aria-describedby="cancel-text"
        onClose={() => cancelButton.current?.focus()}
      >
        <h2 id="cancel-title">Cancel this email?</h2>
        <p id="cancel-text">
          It will not be sent, and its attachments are removed. A canceled email cannot be sent again.
        </p>
        <div className="action-row">
          {/* The safe choice first, so it has the focus when the dialog opens. */}
          <button type="button" className="button" onClick={() => confirm.current?.close()}>
            Keep the email
          </button>
          <button type="button" className="button button-danger" onClick={() => void cancel()}>
            Yes, cancel it
          </button>
        </div>
      </dialog>
    </section>
  );
}

/** The email as mail programs show it, in a sandboxed frame; and its text version. */
function Preview({ email }: { email: EmailDraft }) {
  const hasHtml = email.body_html.trim() !== '';
  return (
    <>
      <section className="panel" aria-labelledby="preview-heading">
        <h2 id="preview-heading">{hasHtml ? 'The email' : 'The email (text only)'}</h2>
        <p className="muted">
          {hasHtml
            ? 'Its HTML version, as saved. Nothing in it runs, loads or opens here: scripts, forms, outside images and links are switched off.'
            : 'It has no HTML version: mail programs show its text.'}
        </p>
        <iframe
          className="email-preview"
          title={`The email: ${email.subject || '(no subject)'}`}
          sandbox=""
          referrerPolicy="no-referrer"
          srcDoc={previewDocument(email)}
        />
      </section>
      {hasHtml && (
        <section className="panel" aria-labelledby="text-heading">
          <h2 id="text-heading">Text version</h2>
          {email.body_text ? (
            <pre className="email-text">{email.body_text}</pre>
          ) : (
            <p className="muted">No text version.</p>
          )}
        </section>
      )}
    </>
  );
}

type Field = 'to' | 'cc' | 'bcc' | 'subject';

/** To, cc, bcc, subject, the text and the HTML; only what changed is sent. */
function EditForm({
  email,
  onSaved,
  onRefused,
  onDiscard,
}: {
  email: EmailDraft;
  onSaved: (email: EmailDraft) => void;
  onRefused: (error: unknown) => Promise<void>;
  onDiscard: () => void;
}) {
  const { client, organization } = useSignedIn();
  const [to, setTo] = useState(addressesText(email.to));
  const [cc, setCc] = useState(addressesText(email.cc));
  const [bcc, setBcc] = useState(addressesText(email.bcc));
  const [subject, setSubject] = useState(email.subject);
  const [text, setText] = useState(email.body_text);
  const [html, setHtml] = useState(email.body_html);
  const [problems, setProblems] = useState<Partial<Record<Field, string>>>({});
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLTextAreaElement>(null);
  useEffect(() => first.current?.focus(), []);

  const parsed = { to: parseAddresses(to), cc: parseAddresses(cc), bcc: parseAddresses(bcc) };
  const same = (a: readonly string[], b: readonly string[]) => a.join('\n') === b.join('\n');
  const changes: {
    to?: string[];
    cc?: string[];
    bcc?: string[];
    subject?: string;
    body_text?: string;
    body_html?: string;
  } = {};
  if (!same(parsed.to.addresses, email.to)) changes.to = parsed.to.addresses;
  if (!same(parsed.cc.addresses, email.cc)) changes.cc = parsed.cc.addresses;
  if (!same(parsed.bcc.addresses, email.bcc)) changes.bcc = parsed.bcc.addresses;
  if (subject.trim() !== email.subject) changes.subject = subject.trim();
  if (text !== email.body_text) changes.body_text = text;
  if (html !== email.body_html) changes.body_html = html;
  const dirty = Object.keys(changes).length > 0;
  const staleHtml = text !== email.body_text && html === email.body_html && html.trim() !== '';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found: Partial<Record<Field, string>> = {};
    for (const field of ['to', 'cc', 'bcc'] as const) {
      if (parsed[field].problem) found[field] = parsed[field].problem;
    }
    if (/[\r\n]/.test(subject)) found.subject = 'A subject is one line.';
    setProblems(found);
    if (Object.keys(found).length > 0 || !dirty) return;
    setBusy(true);
    try {
      const saved = await client.POST('/api/email/drafts', {
        body: {
          uid: email.uid,
          organization_uid: organization.organization_uid,
          ...changes,
          // Saving a failed email makes it a draft again; without this its past time would send it at once.
          ...(email.status === 'failed' ? { planned_send_at: null } : {}),
        },
      });
      onSaved(saved);
    } catch (error) {
      await onRefused(error);
    } finally {
      setBusy(false);
    }
  };

  const addresses = (field: 'to' | 'cc' | 'bcc', label: string, value: string, set: (v: string) => void) => (
    <div className="field">
      <label htmlFor={`email-${field}`}>{label}</label>
      <textarea
        ref={field === 'to' ? first : undefined}
        id={`email-${field}`}
        rows={2}
        value={value}
        onChange={(event) => set(event.target.value)}
        aria-invalid={problems[field] ? true : undefined}
        aria-describedby={problems[field] ? `email-${field}-problem` : 'addresses-hint'}
      />
      {problems[field] && (
        <p className="field-error" id={`email-${field}-problem`}>
          {problems[field]}
        </p>
      )}
    </div>
  );

  return (
    <section className="panel" aria-labelledby="edit-heading">
      <h2 id="edit-heading">Edit the email</h2>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <p className="field-hint" id="addresses-hint">
          Separate addresses with commas or new lines.
        </p>
        <div className="form-row">
          {addresses('to', 'To', to, setTo)}
          {addresses('cc', 'Cc', cc, setCc)}
          {addresses('bcc', 'Bcc', bcc, setBcc)}
        </div>
        <div className="field">
          <label htmlFor="email-subject">Subject</label>
          <input
            id="email-subject"
            value={subject}
            maxLength={998}
            onChange={(event) => setSubject(event.target.value)}
            aria-invalid={problems.subject ? true : undefined}
          />
        </div>
        <div className="field">
          <label htmlFor="email-text">Text version</label>
          <textarea
            id="email-text"
            rows={10}
            value={text}
            onChange={(event) => setText(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="email-html">HTML version</label>
          <textarea
            id="email-html"
            className="code"
            rows={8}
            value={html}
            onChange={(event) => setHtml(event.target.value)}
            aria-describedby="email-html-hint"
          />
          <p className="field-hint" id="email-html-hint">
            Sent as written, beside the text. Empty: the email is sent as text only.
          </p>
          {html !== '' && (
            <button type="button" className="link-button" onClick={() => setHtml('')}>
              Clear the HTML (send text only)
            </button>
          )}
        </div>
        <div aria-live="polite">
          {staleHtml && (
            <p className="form-notice">
              You changed the text but not the HTML: mail programs that show HTML will show the old wording.
              Change the HTML too, or clear it to send the text only.
            </p>
          )}
        </div>
        <div className="action-row">
          <button type="submit" className="button button-primary" disabled={busy || !dirty}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
          <button type="button" className="button" onClick={onDiscard} disabled={busy}>
            Discard changes
          </button>
        </div>
      </form>
    </section>
  );
}
