import { Ago } from '../components/ago.tsx';
import { useRef, useState, type FormEvent } from 'react';
import './collections.css';
import './invoice.css';
import { problemOf, type Invoice } from '../api.ts';
import { InvoiceEmails } from '../components/invoice-emails.tsx';
import { TableBox } from '../components/list-parts.tsx';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { formatAgo, formatDate, formatDateTime, formatMoney } from '../format.ts';
import { isDestructive, moveLabel, reasonLabel } from '../invoice-status.ts';
import { labelOf } from '../list-query.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';

const bytes = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1024 * 1024
      ? `${(n / 1024).toFixed(1)} KB`
      : `${(n / 1024 / 1024).toFixed(1)} MB`;

/**
 * One invoice: its header, its status (with the moves the lifecycle allows and the history), line
 * items, payments, comments (with a form to add one), attachments and its state at the billing partner.
 */
export default function InvoicePage({ uid }: { uid: string }) {
  const { client, organization } = useSignedIn();
  // Bumped after a comment is added (and by "Try again"): the key changes, so the invoice is read anew.
  const [version, setVersion] = useState(0);
  const query = { organization_uid: organization.organization_uid };
  const invoice = useResource(
    `invoice:${uid}:${version}`,
    async () => (await client.GET('/api/invoices/{uid}', { params: { path: { uid }, query } })).data,
  );
  // While it is read again (after a comment), the page keeps showing what it had.
  const last = useRef<Invoice>(undefined);
  if (invoice.status === 'ready') last.current = invoice.data;
  const shown =
    invoice.status === 'ready' ? invoice.data : last.current?.uid === uid ? last.current : undefined;
  useDocumentTitle(shown ? `Invoice ${shown.invoice_number}` : 'Invoice');

  if (invoice.status === 'loading' && !shown) return <Loading label="Loading the invoice…" />;
  if (invoice.status === 'error' || !shown) {
    const error = invoice.status === 'error' ? invoice : undefined;
    return (
      <div className="page">
        <BackLink />
        <h1>Invoice</h1>
        {error?.code === 'not_found' ? (
          <Empty title="This invoice does not exist, or you may not see it.">
            <p>Members see the invoices they are assigned to or responsible for.</p>
          </Empty>
        ) : (
          <Problem
            title="The invoice could not be loaded"
            message={error?.message ?? ''}
            onRetry={() => setVersion((v) => v + 1)}
          />
        )}
      </div>
    );
  }
  const data = shown;
  return (
    <div className="page">
      <BackLink kind={data.invoice_type === 'ACCOUNTS_PAYABLE' ? 'payable' : 'receivable'} />
      <Header invoice={data} />
      <Status invoice={data} onMoved={() => setVersion((v) => v + 1)} />
      <LineItems invoice={data} />
      <Payments invoice={data} version={version} />
      <Comments invoice={data} onAdded={() => setVersion((v) => v + 1)} />
      <Attachments invoice={data} />
      <InvoiceEmails invoiceUid={data.uid} />
      <Sync invoice={data} />
    </div>
  );
}

function BackLink({ kind = 'receivable' }: { kind?: 'receivable' | 'payable' }) {
  return (
    <Link to={`/app/invoices/${kind}`} className="back-link">
      ← {kind === 'receivable' ? 'Receivable' : 'Payable'} invoices
    </Link>
  );
}

function Header({ invoice }: { invoice: Invoice }) {
  const money = (cents: number) => formatMoney(cents, invoice.currency);
  const receivable = invoice.invoice_type === 'ACCOUNTS_RECEIVABLE';
  const counterparty = receivable ? invoice.parties.client : invoice.parties.service_provider;
  return (
    <header className="panel">
      <div className="detail-head">
        <h1>Invoice {invoice.invoice_number}</h1>
        <span className={`status-pill status-${invoice.status}`}>{labelOf(invoice.status)}</span>
        <span className="muted">{receivable ? 'Receivable' : 'Payable'}</span>
      </div>
      <dl className="facts">
        <div>
          <dt>Amount due</dt>
          <dd className="amount">{money(invoice.amount_remaining_cents)}</dd>
        </div>
        <div>
          <dt>Total</dt>
          <dd>{money(invoice.total_cents)}</dd>
        </div>
        <div>
          <dt>Paid</dt>
          <dd>{money(invoice.amount_paid_cents)}</dd>
        </div>
        <div>
          <dt>Days overdue</dt>
          <dd className={invoice.overdue_days > 0 ? 'overdue' : undefined}>
            {invoice.overdue_days > 0 ? invoice.overdue_days : 'Not overdue'}
          </dd>
        </div>
        <div>
          <dt>Issued</dt>
          <dd>{invoice.issue_date ? formatDate(invoice.issue_date) : '—'}</dd>
        </div>
        <div>
          <dt>Due</dt>
          <dd>{invoice.due_date ? formatDate(invoice.due_date) : '—'}</dd>
        </div>
        {invoice.paid_date && (
          <div>
            <dt>Paid on</dt>
            <dd>{formatDate(invoice.paid_date)}</dd>
          </div>
        )}
      </dl>
      <dl className="facts">
        <div>
          <dt>{receivable ? 'Client' : 'Vendor'}</dt>
          <dd>{counterparty?.name ?? (invoice.vendor_name || '—')}</dd>
        </div>
        {counterparty?.billing_contact && (
          <div>
            <dt>Billing contact</dt>
            <dd>
              {counterparty.billing_contact.name}{' '}
              <a href={`mailto:${counterparty.billing_contact.email}`}>
                {counterparty.billing_contact.email}
              </a>
            </dd>
          </div>
        )}
        {receivable && invoice.parties.service_provider && (
          <div>
            <dt>From</dt>
            <dd>{invoice.parties.service_provider.name}</dd>
          </div>
        )}
      </dl>
    </header>
  );
}

/**
 * The invoice's status: a button per move the API allows now (`allowed_next_statuses` of the status
 * history, so the lifecycle is the service's alone), an optional note kept with the move, a question
 * before void or reject, the API's refusal in its own words (a lifecycle 409, an approval limit's 403),
 * and the history, oldest first. After a move the invoice is read again, and with its new revision the
 * history.
 */
function Status({ invoice, onMoved }: { invoice: Invoice; onMoved: () => void }) {
  const { client, organization } = useSignedIn();
  const [attempt, setAttempt] = useState(0);
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const [done, setDone] = useState<string>();
  const [asking, setAsking] = useState<string>();
  const dialog = useRef<HTMLDialogElement>(null);
  const asker = useRef<HTMLButtonElement | null>(null);
  const query = { organization_uid: organization.organization_uid };
  const history = useResource(
    `status-history:${invoice.uid}:${invoice.revision}:${invoice.status}:${attempt}`,
    async () =>
      (
        await client.GET('/api/invoices/{uid}/status-history', {
          params: { path: { uid: invoice.uid }, query: { ...query, per_page: 100 } },
        })
      ).data,
  );
  const kind = invoice.invoice_type;
  const label = (to: string) => moveLabel(kind, invoice.status, to);

  const move = async (to: string) => {
    dialog.current?.close();
    setBusy(to);
    setProblem(undefined);
    setDone(undefined);
    try {
      const trimmed = note.trim();
      await client.PUT('/api/invoices/{uid}', {
        params: { path: { uid: invoice.uid }, query },
        body: { status: to, ...(trimmed ? { status_note: trimmed } : {}) },
      });
      setNote('');
      setDone(`Status changed to ${labelOf(to)}.`);
      onMoved();
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(undefined);
    }
  };
  const ask = (to: string, button: HTMLButtonElement) => {
    asker.current = button;
    setAsking(to);
    dialog.current?.showModal();
  };

  const allowed = history.status === 'ready' ? history.data.allowed_next_statuses : [];
  // One primary button: approval where it is offered, else the lifecycle's first move.
  const forward = allowed.includes('approved') ? 'approved' : allowed.find((to) => !isDestructive(to));
  return (
    <section className="panel status-panel" aria-labelledby="status-heading">
      <h2 id="status-heading">Status</h2>
      <p className="status-now">
        Now <span className={`status-pill status-${invoice.status}`}>{labelOf(invoice.status)}</span>
      </p>
      {history.status === 'loading' && <Loading label="Loading the status history…" />}
      {history.status === 'error' && (
        <Problem
          title="The status history could not be loaded"
          message={history.message}
          onRetry={() => setAttempt((n) => n + 1)}
        />
      )}
      {history.status === 'ready' && allowed.length === 0 && (
        <p className="muted">No further status change is possible: {labelOf(invoice.status)} is final.</p>
      )}
      {history.status === 'ready' && allowed.length > 0 && (
        <div className="status-move">
          <div className="field">
            <label htmlFor="status-note">Note (optional)</label>
            <textarea
              id="status-note"
              rows={2}
              value={note}
              maxLength={2000}
              onChange={(event) => setNote(event.target.value)}
              aria-describedby="status-note-hint"
            />
            <p className="field-hint" id="status-note-hint">
              Kept in the status history with the change.
            </p>
          </div>
          <div className="action-row" role="group" aria-label="Change the status">
            {allowed.map((to) => (
              <button
                key={to}
                type="button"
                className={`button${isDestructive(to) ? ' button-danger' : to === forward ? ' button-primary' : ''}`}
                disabled={busy !== undefined}
                onClick={(event) => (isDestructive(to) ? ask(to, event.currentTarget) : void move(to))}
              >
                {busy === to ? `${label(to)}…` : label(to)}
              </button>
            ))}
          </div>
        </div>
      )}
      <div aria-live="polite">
        {done && !problem && (
          <p className="form-notice" role="status">
            {done}
          </p>
        )}
      </div>
      {problem && (
        <div className="form-problem status-problem" role="alert">
          <strong>The status was not changed.</strong> {problem}
        </div>
      )}
      {history.status === 'ready' && history.data.items.length > 0 && (
        <>
          <h3 id="status-history-heading">History</h3>
          <ol className="timeline status-history" aria-labelledby="status-history-heading">
            {history.data.items.map((change) => (
              <li key={change.uid}>
                <strong>{change.actor.name ?? (change.actor.type === 'system' ? 'Remit' : 'Someone')}</strong>{' '}
                <time
                  className="muted"
                  dateTime={change.changed_at}
                  title={formatDateTime(change.changed_at)}
                >
                  {formatDateTime(change.changed_at)}
                </time>
                <p className="comment-text">
                  {change.from_status ? `${labelOf(change.from_status)} → ` : ''}
                  {labelOf(change.to_status)}
                  <span className="muted"> · {reasonLabel(change.reason)}</span>
                </p>
                {change.note && <p className="comment-text status-note">“{change.note}”</p>}
              </li>
            ))}
          </ol>
        </>
      )}
      <dialog
        ref={dialog}
        className="confirm-dialog"
        aria-labelledby="status-confirm-title"
        aria-describedby="status-confirm-text"
        onClose={() => {
          setAsking(undefined);
          asker.current?.focus();
        }}
      >
        <h2 id="status-confirm-title">
          {asking === 'rejected' ? 'Reject this invoice?' : 'Void this invoice?'}
        </h2>
        <p id="status-confirm-text">
          {asking === 'rejected'
            ? 'It will not be paid unless someone takes it back into review.'
            : 'A void invoice is final: it cannot be paid or changed to another status.'}
        </p>
        <div className="action-row">
          {/* The safe choice first, so it has the focus when the dialog opens. */}
          <button type="button" className="button" onClick={() => dialog.current?.close()}>
            Keep it {labelOf(invoice.status).toLowerCase()}
          </button>
          <button type="button" className="button button-danger" onClick={() => asking && void move(asking)}>
            {asking === 'rejected' ? 'Yes, reject it' : 'Yes, void it'}
          </button>
        </div>
      </dialog>
    </section>
  );
}

function LineItems({ invoice }: { invoice: Invoice }) {
  const money = (cents: number) => formatMoney(cents, invoice.currency);
  return (
    <section className="panel" aria-labelledby="lines-heading">
      <h2 id="lines-heading">Line items</h2>
      {invoice.line_items.length === 0 ? (
        <p className="muted">No line items.</p>
      ) : (
        <TableBox label="Line items">
          <table className="data-table">
            <thead>
              <tr>
                <th scope="col">Item</th>
                <th scope="col">SKU</th>
                <th scope="col" className="numeric">
                  Quantity
                </th>
                <th scope="col" className="numeric">
                  Unit price
                </th>
                <th scope="col" className="numeric">
                  Total
                </th>
              </tr>
            </thead>
            <tbody>
              {invoice.line_items.map((line) => (
                <tr key={line.uid}>
                  <td className="wrap">
                    {line.context_name}
                    {line.context_type === 'DISCOUNT' && <span className="muted"> (discount)</span>}
                  </td>
                  <td>{line.sku}</td>
                  <td className="numeric">{line.quantity}</td>
                  <td className="numeric">{money(line.unit_price)}</td>
                  <td className="numeric">{money(line.line_total)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
      <dl className="facts">
        <div>
          <dt>Subtotal</dt>
          <dd>{money(invoice.subtotal_cents)}</dd>
        </div>
        <div>
          <dt>Discount</dt>
          <dd>{money(invoice.discount_cents)}</dd>
        </div>
        <div>
          <dt>Tax</dt>
          <dd>{money(invoice.tax_cents)}</dd>
        </div>
        {invoice.pre_payment_credit_notes_cents > 0 && (
          <div>
            <dt>Credit notes</dt>
            <dd>{money(invoice.pre_payment_credit_notes_cents)}</dd>
          </div>
        )}
        <div>
          <dt>Total</dt>
          <dd>{money(invoice.total_cents)}</dd>
        </div>
      </dl>
    </section>
  );
}

function Payments({ invoice, version }: { invoice: Invoice; version: number }) {
  const { client, organization } = useSignedIn();
  const [attempt, setAttempt] = useState(0);
  const payments = useResource(
    `payments:${invoice.uid}:${invoice.revision}:${version}:${attempt}`,
    async () =>
      (
        await client.GET('/api/invoices/{uid}/payments', {
          params: { path: { uid: invoice.uid }, query: { organization_uid: organization.organization_uid } },
        })
      ).data.items,
  );
  return (
    <section className="panel" aria-labelledby="payments-heading">
      <h2 id="payments-heading">Payments</h2>
      {payments.status === 'loading' && <Loading label="Loading payments…" />}
      {payments.status === 'error' && (
        <Problem
          title="The payments could not be loaded"
          message={payments.message}
          onRetry={() => setAttempt((n) => n + 1)}
        />
      )}
      {payments.status === 'ready' && payments.data.length === 0 && <p className="muted">No payments yet.</p>}
      {payments.status === 'ready' && payments.data.length > 0 && (
        <ul className="timeline">
          {payments.data.map((payment) => (
            <li key={payment.uid}>
              <strong>{formatMoney(payment.amount_cents, payment.currency)}</strong> paid{' '}
              <time dateTime={payment.paid_at}>{formatDateTime(payment.paid_at)}</time>
              {payment.recorded_by && (
                <span className="muted"> · recorded by {payment.recorded_by.full_name}</span>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Comments({ invoice, onAdded }: { invoice: Invoice; onAdded: () => void }) {
  const { client, organization } = useSignedIn();
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const comments = invoice.comments ?? [];
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!text.trim()) {
      setProblem('Write a comment first.');
      return;
    }
    setBusy(true);
    setProblem(undefined);
    try {
      await client.POST('/api/invoices/{uid}/comments', {
        params: { path: { uid: invoice.uid }, query: { organization_uid: organization.organization_uid } },
        body: { text: text.trim() },
      });
      setText('');
      onAdded();
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="panel" aria-labelledby="comments-heading">
      <h2 id="comments-heading">Comments</h2>
      {comments.length === 0 ? (
        <p className="muted">No comments yet.</p>
      ) : (
        <ul className="timeline">
          {comments.map((comment) => (
            <li key={comment.uid}>
              <strong>{comment.actor.fullname || comment.actor.email}</strong>{' '}
              <time
                className="muted"
                dateTime={comment.created_at}
                title={formatDateTime(comment.created_at)}
              >
                {formatAgo(comment.created_at)}
              </time>
              {comment.resolved_at && <span className="muted"> · resolved</span>}
              <p className="comment-text">{comment.text}</p>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={(event) => void submit(event)} noValidate>
        <div className="field">
          <label htmlFor="comment-text">Add a comment</label>
          <textarea
            id="comment-text"
            rows={3}
            value={text}
            maxLength={10_000}
            onChange={(event) => setText(event.target.value)}
            aria-invalid={problem ? true : undefined}
            aria-describedby={problem ? 'comment-problem' : undefined}
          />
          {problem && (
            <p id="comment-problem" className="field-error" role="alert">
              {problem}
            </p>
          )}
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Adding…' : 'Add comment'}
        </button>
      </form>
    </section>
  );
}

function Attachments({ invoice }: { invoice: Invoice }) {
  const { client, organization } = useSignedIn();
  const [attempt, setAttempt] = useState(0);
  const attachments = useResource(`attachments:${invoice.uid}:${attempt}`, async () => {
    const { data } = await client.GET('/api/invoices/{uid}/attachments', {
      params: {
        path: { uid: invoice.uid },
        query: { per_page: 100, organization_uid: organization.organization_uid },
      },
    });
    return data;
  });
  return (
    <section className="panel" aria-labelledby="attachments-heading">
      <h2 id="attachments-heading">Attachments</h2>
      {attachments.status === 'loading' && <Loading label="Loading attachments…" />}
      {attachments.status === 'error' && (
        <Problem
          title="The attachments could not be loaded"
          message={attachments.message}
          onRetry={() => setAttempt((n) => n + 1)}
        />
      )}
      {attachments.status === 'ready' && attachments.data.items.length === 0 && (
        <p className="muted">No attachments.</p>
      )}
      {attachments.status === 'ready' && attachments.data.items.length > 0 && (
        <ul className="timeline">
          {attachments.data.items.map((file) => (
            <li key={file.uid}>
              {/* A signed address valid for a few minutes; it is asked for again with the page. */}
              <a href={file.presigned_url} download={file.filename} rel="noreferrer">
                Download {file.filename}
              </a>{' '}
              <span className="muted">
                {bytes(file.file_size)} · {formatDateTime(file.created_on)}
                {file.description && ` · ${file.description}`}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * The billing partner's record of the invoice (docs/billing.md): what it calls it, when it last accepted
 * an update, and which revision of the invoice that was.
 */
function Sync({ invoice }: { invoice: Invoice }) {
  return (
    <section className="panel" aria-labelledby="sync-heading">
      <h2 id="sync-heading">Billing integration</h2>
      {invoice.integrations.length === 0 ? (
        <p className="muted">Not synced with a billing partner.</p>
      ) : (
        <ul className="timeline">
          {invoice.integrations.map((link) => {
            const meta = link.integration_metadata;
            const synced = typeof meta.last_synced_at === 'string' ? meta.last_synced_at : link.updated_at;
            const revision = typeof meta.revision === 'number' ? meta.revision : undefined;
            return (
              <li key={link.uid}>
                <strong>{link.integration_name}</strong>
                {typeof meta.endpoint_host === 'string' && (
                  <span className="muted"> ({meta.endpoint_host})</span>
                )}
                {link.integration_uid ? ` · reference ${link.integration_uid}` : ''}
                <p className="comment-text">
                  {revision === undefined ? 'Last accepted ' : `Revision ${revision} accepted `}
                  <Ago at={synced} />
                  {typeof meta.last_status === 'number' && (
                    <span className="muted"> (HTTP {meta.last_status})</span>
                  )}
                </p>
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}
