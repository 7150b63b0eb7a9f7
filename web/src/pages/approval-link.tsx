import { useCallback, useEffect, useId, useRef, useState, type RefObject } from 'react';
import type { SuccessBody } from '@remit/client';
import { codeOf, problemOf, publicClient } from '../api.ts';
import { FormProblem } from '../components/auth-layout.tsx';
import { ArgsView } from '../components/args.tsx';
import { Loading, useDocumentTitle } from '../components/states.tsx';
import { formatDate, formatDateTime, formatMoney } from '../format.ts';
import { dropQueryParameter, Link, useLocation } from '../router.tsx';
import './approval-link.css';

type ApprovalLink = SuccessBody<'post', '/api/approval-links/lookup'>['data'];
type Action = 'approve' | 'reject';

/** What the page says when the link itself cannot be used (the codes of docs/approval-emails.md). */
const LINK_PROBLEMS: Record<string, string> = {
  invalid_token:
    'This approval link is not valid: it is incomplete or was changed. Open it from the email again, or decide in the Remit inbox.',
  token_expired: 'This approval link has expired. Sign in to decide the approval in the Remit inbox.',
  forbidden:
    'This approval link was sent to someone who is no longer a member of the organization, so it decides nothing.',
  not_found: 'The approval this link is about no longer exists.',
};

/** How the page came to show a decided approval. */
type Outcome = 'mine' | 'conflict' | undefined;

/**
 * The page an approval email links to: `/approval?token=…` (redirected into /app). Opening it only
 * reads (POST /api/approval-links/lookup): a mail scanner that follows the link decides nothing. The
 * person reads the request and its context and decides with a button; a rejection needs a reason. A
 * link already used, expired, or about an approval someone else decided says so, and who decided.
 */
export default function ApprovalLinkPage() {
  const { search } = useLocation();
  const [token] = useState(() => search.get('token') ?? '');
  useEffect(() => dropQueryParameter('token'), []);
  const [link, setLink] = useState<ApprovalLink>();
  const [linkProblem, setLinkProblem] = useState<string | undefined>(
    token ? undefined : 'This page needs the link from the approval email.',
  );
  const [loadProblem, setLoadProblem] = useState<string>();
  const [outcome, setOutcome] = useState<Outcome>();

  const lookUp = useCallback(async () => {
    setLoadProblem(undefined);
    try {
      const { data } = await publicClient.POST('/api/approval-links/lookup', { body: { token } });
      setLink(data);
      return data;
    } catch (error) {
      const code = codeOf(error);
      if (code && code in LINK_PROBLEMS) setLinkProblem(LINK_PROBLEMS[code]);
      else setLoadProblem(problemOf(error));
      return undefined;
    }
  }, [token]);

  useEffect(() => {
    if (token) void lookUp();
  }, [token, lookUp]);

  const title = link ? link.task.title : 'Approval';
  useDocumentTitle(link && !link.task.resolution ? `Decide: ${title}` : title);

  let body;
  if (linkProblem) {
    body = (
      <>
        <h1>Approval link</h1>
        <FormProblem message={linkProblem} />
        <p className="auth-links">
          <Link to="/app/inbox">Open the Remit inbox</Link>
        </p>
      </>
    );
  } else if (loadProblem) {
    body = (
      <>
        <h1>Approval link</h1>
        <div className="state state-problem" role="alert">
          <p className="state-title">The approval could not be loaded</p>
          <p>{loadProblem}</p>
          <button type="button" className="button" onClick={() => void lookUp()}>
            Try again
          </button>
        </div>
      </>
    );
  } else if (!link) {
    body = (
      <>
        <h1>Approval</h1>
        <Loading label="Reading the approval…" />
      </>
    );
  } else {
    body = (
      <Request
        link={link}
        token={token}
        outcome={outcome}
        onDecided={(next, how) => {
          setLink(next);
          setOutcome(how);
        }}
        onLinkProblem={(code) => setLinkProblem(LINK_PROBLEMS[code])}
        lookUp={lookUp}
      />
    );
  }
  return (
    <main className="auth" id="main">
      <div className="auth-card approval-link-card">
        <p className="auth-brand" aria-hidden="true">
          Remit
        </p>
        {body}
      </div>
    </main>
  );
}

function Request({
  link,
  token,
  outcome,
  onDecided,
  onLinkProblem,
  lookUp,
}: {
  link: ApprovalLink;
  token: string;
  outcome: Outcome;
  onDecided(link: ApprovalLink, how: Outcome): void;
  onLinkProblem(code: string): void;
  lookUp(): Promise<ApprovalLink | undefined>;
}) {
  const { task } = link;
  const id = useId();
  const [reason, setReason] = useState('');
  const [reasonError, setReasonError] = useState<string>();
  const [busy, setBusy] = useState<Action | null>(null);
  const [problem, setProblem] = useState<string>();
  const reasonInput = useRef<HTMLTextAreaElement>(null);
  const outcomeRef = useRef<HTMLDivElement>(null);
  const decided = Boolean(task.resolution);
  const open = !decided && !link.link.used_at;

  useEffect(() => {
    if (outcome) outcomeRef.current?.focus();
  }, [outcome]);

  const decide = async (action: Action) => {
    const note = reason.trim();
    if (action === 'reject' && !note) {
      setReasonError('Give a reason to reject: the agent and your team will see it.');
      reasonInput.current?.focus();
      return;
    }
    setBusy(action);
    setProblem(undefined);
    try {
      const { data } = await publicClient.POST('/api/approval-links/decide', {
        // Decides what this page shows: a revision since is refused (409 approval_changed).
        body: {
          token,
          action,
          args_revision: task.args_revision,
          ...(note ? { resolution_note: note } : {}),
        },
      });
      onDecided(data, 'mine');
    } catch (error) {
      const code = codeOf(error) ?? '';
      if (code === 'approval_changed') {
        // The request changed while it was read: show it as it is now, and say who changed what.
        await lookUp();
        setProblem(problemOf(error));
      } else if (code === 'already_resolved' || code === 'token_used') {
        // Someone decided first (or this link already did): show who, never an error page.
        const now = await lookUp();
        if (now) onDecided(now, 'conflict');
      } else if (code in LINK_PROBLEMS) {
        onLinkProblem(code);
      } else {
        setProblem(problemOf(error));
      }
    } finally {
      setBusy(null);
    }
  };

  const agent = task.agent?.name || 'An agent';
  return (
    <article aria-labelledby={`${id}-title`}>
      <p className="eyebrow">
        <strong>{agent}</strong> asks to run <code>{task.tool}</code> in {task.organization_name}
      </p>
      <h1 id={`${id}-title`}>{task.title}</h1>
      <p className="meta">
        <span className={`priority priority-${task.priority}`}>{task.priority} priority</span> · raised{' '}
        <time dateTime={task.created_at}>{formatDateTime(task.created_at)}</time>
        {task.trigger_type && <> · after {task.trigger_type.replace(/_/g, ' ')}</>}
      </p>
      <p className="approval-link-for">
        This link is for <strong>{link.link.user.full_name || link.link.user.email}</strong> (
        {link.link.user.email}): a decision here is recorded as theirs.
        {open && <> It works once, until {formatDateTime(link.link.expires_at)}.</>}
      </p>

      {(decided || link.link.used_at) && <Decided link={link} outcome={outcome} outcomeRef={outcomeRef} />}

      {task.reasoning && (
        <section className="panel" aria-labelledby={`${id}-why`}>
          <h2 id={`${id}-why`}>Why</h2>
          <p className="reasoning">{task.reasoning}</p>
        </section>
      )}

      <section className="panel" aria-labelledby={`${id}-action`}>
        <h2 id={`${id}-action`}>{decided ? 'Action as decided' : 'Proposed action'}</h2>
        <ArgsView args={task.tool_args} />
      </section>

      {link.invoices.length > 0 && (
        <section className="panel" aria-labelledby={`${id}-context`}>
          <h2 id={`${id}-context`}>Context</h2>
          {link.invoices.map((invoice) => (
            <div className="invoice-card" key={invoice.uid}>
              <p className="invoice-number">
                Invoice <strong>{invoice.invoice_number}</strong>
                <span className="status-pill">{invoice.status}</span>
              </p>
              {invoice.counterparty_name && (
                <p className="invoice-party">
                  {invoice.invoice_type === 'ACCOUNTS_PAYABLE' ? 'Vendor' : 'Client'}:{' '}
                  <strong>{invoice.counterparty_name}</strong>
                </p>
              )}
              <dl className="facts">
                <div>
                  <dt>Amount due</dt>
                  <dd className="amount">{formatMoney(invoice.amount_remaining_cents, invoice.currency)}</dd>
                </div>
                <div>
                  <dt>Total</dt>
                  <dd>{formatMoney(invoice.total_cents, invoice.currency)}</dd>
                </div>
                <div>
                  <dt>Due</dt>
                  <dd>{invoice.due_date ? formatDate(invoice.due_date) : 'no due date'}</dd>
                </div>
                <div>
                  <dt>Overdue</dt>
                  <dd className={invoice.overdue_days > 0 ? 'overdue' : undefined}>
                    {invoice.overdue_days > 0
                      ? `${invoice.overdue_days} ${invoice.overdue_days === 1 ? 'day' : 'days'}`
                      : 'not overdue'}
                  </dd>
                </div>
              </dl>
            </div>
          ))}
        </section>
      )}

      {open && (
        <section className="panel decision" aria-labelledby={`${id}-decision`}>
          <h2 id={`${id}-decision`}>Your decision</h2>
          <div className="field">
            <label htmlFor={`${id}-reason`}>Reason</label>
            <p className="field-hint" id={`${id}-reason-hint`}>
              Needed to reject; sent as a note when you approve.
            </p>
            <textarea
              id={`${id}-reason`}
              ref={reasonInput}
              rows={3}
              maxLength={2000}
              aria-invalid={reasonError ? true : undefined}
              aria-describedby={`${id}-reason-hint${reasonError ? ` ${id}-reason-error` : ''}`}
              value={reason}
              onChange={(e) => {
                setReason(e.target.value);
                setReasonError(undefined);
              }}
            />
            {reasonError && (
              <p className="field-error" id={`${id}-reason-error`}>
                {reasonError}
              </p>
            )}
          </div>
          <FormProblem message={problem} />
          <div className="approval-link-actions" role="group" aria-label="Decide">
            <button
              type="button"
              className="button button-primary"
              disabled={busy !== null}
              onClick={() => void decide('approve')}
            >
              {busy === 'approve' ? 'Approving…' : 'Approve'}
            </button>
            <button
              type="button"
              className="button button-danger"
              disabled={busy !== null}
              onClick={() => void decide('reject')}
            >
              {busy === 'reject' ? 'Rejecting…' : 'Reject'}
            </button>
          </div>
        </section>
      )}

      <p className="auth-links">
        <Link to={`/app/inbox/${task.uid}`}>Open it in the Remit inbox</Link>
      </p>
    </article>
  );
}

function Decided({
  link,
  outcome,
  outcomeRef,
}: {
  link: ApprovalLink;
  outcome: Outcome;
  outcomeRef: RefObject<HTMLDivElement | null>;
}) {
  const { task } = link;
  const verb = task.resolution === 'rejected' ? 'Rejected' : 'Approved';
  const who = task.resolved_by?.user_name || 'someone';
  const mine = outcome === 'mine';
  return (
    <div
      className={`outcome outcome-${task.resolution === 'rejected' ? 'rejected' : 'approved'}`}
      role="status"
      tabIndex={-1}
      ref={outcomeRef}
    >
      {outcome === 'conflict' && (
        <p>
          <strong>Your decision was not recorded:</strong> this approval had already been decided.
        </p>
      )}
      {!mine && link.link.used_at && (
        <p>
          This link was already used
          {link.link.used_action ? ` (to ${link.link.used_action})` : ''} on{' '}
          {formatDateTime(link.link.used_at)}.
        </p>
      )}
      {task.resolution && (
        <p>
          <strong>{mine ? `You ${verb.toLowerCase()} this` : `${verb} by ${who}`}</strong>
          {task.resolved_at && <> on {formatDateTime(task.resolved_at)}</>}
          {task.resolution_note && <> — “{task.resolution_note}”</>}
        </p>
      )}
      {mine && task.resolution === 'approved' && (
        <p>{link.warning ?? `${task.agent?.name || 'The agent'} can now go ahead.`}</p>
      )}
      {mine && task.resolution === 'rejected' && (
        <p>{task.agent?.name || 'The agent'} will not do it, and is told why.</p>
      )}
    </div>
  );
}
