import { useCallback, useState, type ReactNode } from 'react';
import type { SuccessBody } from '@remit/client';
import {
  EVENT_LABELS,
  formatCount,
  formatRunTime,
  invoicesNamed,
  isRunActive,
  readOutcome,
  runDuration,
  runFields,
  triggerTypeLabel,
  type NotificationEvent,
  type ReadOutcome,
  type RunAttributes,
  type SendEmailArgs,
} from '../agents-view.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { formatDateTime } from '../format.ts';
import { labelOf } from '../list-query.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import {
  Breadcrumb,
  RunStatus,
  useCancelRun,
  useLoaded,
  usePolling,
  useSeesTokenUsage,
} from './agent-parts.tsx';
import './agents.css';

type NotificationItem = SuccessBody<'get', '/api/agents/{agent_uid}/notifications'>['data']['items'][number];

/** The invoices a run names, looked up for their numbers (at most this many; the rest link by uid). */
const MAX_INVOICE_LOOKUPS = 25;
/** How long after a run ends its page still waits for the run's last notification (outcome or error). */
const LAST_NOTE_GRACE_MS = 10_000;

/**
 * One run (docs/console.md#agents): its activity timeline — requested, started, each thing it reported,
 * ended — what its outcome says it did (approvals raised, emails sent, invoices left alone), the error,
 * token usage for admins, and Cancel while it has not ended. Polled until it ends.
 */
export default function AgentRunPage({ agentUid, runUid }: { agentUid: string; runUid: string }) {
  const { client } = useSignedIn();
  const seesTokens = useSeesTokenUsage();
  const [notice, setNotice] = useState<string>();
  const fields = runFields(seesTokens);
  const run = useLoaded(`run:${runUid}:${fields}`, async () => {
    const { data } = await client.GET('/api/agent-runs/{run_uid}', {
      params: { path: { run_uid: runUid }, query: { 'fields[agent-runs]': fields } },
    });
    return data;
  });
  const agent = useLoaded(`agent:${agentUid}`, async () => {
    const { data } = await client.GET('/api/agents/{agent_uid}', {
      params: { path: { agent_uid: agentUid } },
    });
    return data;
  });
  const notes = useLoaded(`run-notes:${agentUid}:${runUid}`, async () => {
    const { data } = await client.GET('/api/agents/{agent_uid}/notifications', {
      params: { path: { agent_uid: agentUid }, query: { run_uid: runUid, per_page: 100 } },
    });
    return data.items;
  });
  const attributes = run.value.status === 'ready' ? run.value.data.attributes : undefined;
  const active = isRunActive(attributes?.status);
  const noteList = notes.value.status === 'ready' ? notes.value.data : [];
  const outcome = readOutcome(attributes?.outcome);
  const numbers = useInvoiceNumbers(outcome, noteList);
  // A completed or failed run reports its end just after it is marked so: wait a little for that note.
  const awaitingLastNote =
    !active &&
    (attributes?.status === 'completed' || attributes?.status === 'failed') &&
    notes.value.status === 'ready' &&
    !notes.value.data.some((n) => n.event === 'outcome' || n.event === 'error') &&
    Date.now() - Date.parse(attributes.completed_on ?? '') < LAST_NOTE_GRACE_MS;
  const { reload: reloadRun } = run;
  const { reload: reloadNotes } = notes;
  const refresh = useCallback(() => Promise.all([reloadRun(), reloadNotes()]), [reloadRun, reloadNotes]);
  usePolling(active || awaitingLastNote, refresh);
  const { cancel, busy } = useCancelRun(
    useCallback(
      (message: string) => {
        setNotice(message);
        void refresh();
      },
      [refresh],
    ),
  );
  const agentName = agent.value.status === 'ready' ? agent.value.data.name : 'Agent';
  const requested = attributes?.created_on ? formatRunTime(attributes.created_on) : undefined;
  useDocumentTitle(requested ? `Run of ${agentName}, ${requested}` : 'Run');
  const trail = [
    { label: 'Agents', to: '/app/agents' },
    { label: agentName, to: `/app/agents/${agentUid}` },
    { label: requested ? `Run of ${requested}` : 'Run' },
  ];

  if (!attributes) {
    if (run.value.status === 'loading') return <Loading label="Loading the run…" />;
    const error = run.value.status === 'error' ? run.value : undefined;
    return (
      <div className="page">
        <Breadcrumb trail={trail} />
        <h1>Run</h1>
        {error?.code === 'not_found' ? (
          <Empty title="This run does not exist, or it belongs to another organization." />
        ) : (
          <Problem
            title="The run could not be loaded"
            message={error?.message ?? ''}
            onRetry={() => void refresh()}
          />
        )}
      </div>
    );
  }
  return (
    <div className="page agents agent-run">
      <Breadcrumb trail={trail} />
      <div aria-live="polite" className="live">
        {notice && <p className="announcement">{notice}</p>}
      </div>
      <header className="panel">
        <div className="detail-head">
          <h1>Run of {agentName}</h1>
          <RunStatus run={attributes} />
        </div>
        <dl className="facts">
          <div>
            <dt>Trigger</dt>
            <dd>{triggerTypeLabel(attributes.trigger_type)}</dd>
          </div>
          <div>
            <dt>Requested</dt>
            <dd>{requested ?? '—'}</dd>
          </div>
          <div>
            <dt>Started</dt>
            <dd>{attributes.started_on ? formatRunTime(attributes.started_on) : 'Not yet'}</dd>
          </div>
          <div>
            <dt>Ended</dt>
            <dd>{attributes.completed_on ? formatRunTime(attributes.completed_on) : 'Not yet'}</dd>
          </div>
          <div>
            <dt>Duration</dt>
            <dd>{runDuration(attributes) ?? '—'}</dd>
          </div>
          <div>
            <dt>Version</dt>
            <dd>
              <code title={attributes.agent_version_uid}>
                {attributes.agent_version_uid?.slice(0, 8) ?? '—'}
              </code>
            </dd>
          </div>
          {seesTokens && attributes.token_usage && (
            <div>
              <dt>Token usage</dt>
              <dd data-testid="run-tokens">
                {formatCount(attributes.token_usage.total_tokens)} total
                <span className="cell-note muted token-parts">
                  {formatCount(attributes.token_usage.prompt_tokens)} prompt ·{' '}
                  {formatCount(attributes.token_usage.completion_tokens)} completion
                </span>
              </dd>
            </div>
          )}
        </dl>
        {attributes.trigger_type === 'approval' && attributes.task_uid && (
          <p>
            Carries out an approved action:{' '}
            <Link to={`/app/tasks/${attributes.task_uid}`}>the approval task</Link>.
          </p>
        )}
        {active && (
          <button
            type="button"
            className="button button-danger"
            disabled={busy === runUid}
            onClick={() => void cancel(runUid)}
          >
            Cancel run
          </button>
        )}
      </header>

      {attributes.error && (
        <section className="panel run-error-panel" aria-labelledby="error-heading">
          <h2 id="error-heading">Error</h2>
          <p className="instructions">{attributes.error}</p>
        </section>
      )}

      <section className="panel" aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        {notes.value.status === 'error' && (
          <p className="muted">What the run reported could not be loaded: {notes.value.message}</p>
        )}
        <Timeline run={attributes} notes={noteList} numbers={numbers} />
      </section>

      <WhatItDid run={attributes} outcome={outcome} numbers={numbers} />
    </div>
  );
}

/** Invoice uid → number, for the invoices the run names (a member may not see some: those stay unnamed). */
function useInvoiceNumbers(outcome: ReadOutcome, notes: NotificationItem[]): Map<string, string> {
  const { client } = useSignedIn();
  const known = new Map<string, string>();
  for (const skip of outcome.skipped)
    if (skip.invoiceUid && skip.invoiceNumber) known.set(skip.invoiceUid, skip.invoiceNumber);
  if (outcome.followUp?.invoiceUid && outcome.followUp.invoiceNumber)
    known.set(outcome.followUp.invoiceUid, outcome.followUp.invoiceNumber);
  const wanted = [
    ...new Set([
      ...invoicesNamed(outcome),
      ...notes.map((n) => n.invoice_uid).filter((uid): uid is string => uid !== null),
    ]),
  ]
    .filter((uid) => !known.has(uid))
    .slice(0, MAX_INVOICE_LOOKUPS)
    .sort();
  const looked = useResource(wanted.length > 0 ? `invoice-numbers:${wanted.join(',')}` : null, async () => {
    const answers = await Promise.allSettled(
      wanted.map((uid) => client.GET('/api/invoices/{uid}', { params: { path: { uid } } })),
    );
    return answers.flatMap((answer, i): [string, string][] =>
      answer.status === 'fulfilled' ? [[wanted[i]!, answer.value.data.invoice_number]] : [],
    );
  });
  if (looked.status === 'ready') for (const [uid, number] of looked.data) known.set(uid, number);
  return known;
}

function InvoiceLink({ uid, numbers }: { uid: string | undefined; numbers: Map<string, string> }) {
  if (!uid) return <>an invoice</>;
  const number = numbers.get(uid);
  return <Link to={`/app/invoices/${uid}`}>{number ? `Invoice ${number}` : 'the invoice'}</Link>;
}

const DELIVERY: Record<string, string> = {
  recorded: 'Recorded in Remit',
  pending: 'Being posted to Slack',
  sent: 'Posted to Slack',
  failed: 'Posting to Slack failed',
};

function Delivery({ note }: { note: NotificationItem }) {
  return (
    <span className="muted">
      {DELIVERY[note.delivery_status] ?? labelOf(note.delivery_status)}
      {note.channel_id && note.delivery_status !== 'recorded' && ` (${note.channel_id})`}
      {note.delivery_error && `: ${note.delivery_error}`}
    </span>
  );
}

interface Entry {
  at: string;
  key: string;
  title: string;
  tone?: 'ok' | 'bad' | undefined;
  body?: ReactNode;
}

/** Requested → started → what it reported (notifications, with their links) → ended, by time. */
function Timeline({
  run,
  notes,
  numbers,
}: {
  run: RunAttributes;
  notes: NotificationItem[];
  numbers: Map<string, string>;
}) {
  const entries: Entry[] = [];
  if (run.created_on)
    entries.push({
      at: run.created_on,
      key: 'created',
      title: `Requested${run.sandbox ? ' as a sandbox run' : ''} · ${triggerTypeLabel(run.trigger_type)}`,
      body:
        run.trigger_type === 'approval' && run.task_uid ? (
          <p>
            After <Link to={`/app/tasks/${run.task_uid}`}>an approval</Link> was decided.
          </p>
        ) : undefined,
    });
  if (run.started_on) entries.push({ at: run.started_on, key: 'started', title: 'Started' });
  // The outcome or error a run reports as it ends says what its end entry says: only its delivery is
  // added there, rather than the same sentence twice.
  const endNote = run.completed_on
    ? notes.find((n) => n.event === (run.status === 'failed' ? 'error' : 'outcome'))
    : undefined;
  for (const note of notes) {
    if (note === endNote) continue;
    entries.push({
      at: note.created_at,
      key: note.uid,
      title: EVENT_LABELS[note.event as NotificationEvent] ?? labelOf(note.event),
      tone: note.event === 'error' ? 'bad' : undefined,
      body: (
        <>
          <p className="note-text">{note.text}</p>
          <p className="note-links">
            {note.task_uid &&
              (note.event === 'approval_required' ? (
                <Link to={`/app/inbox/${note.task_uid}`}>Open the approval</Link>
              ) : (
                <Link to={`/app/tasks/${note.task_uid}`}>Open the task</Link>
              ))}
            {note.task_uid && note.invoice_uid && ' · '}
            {note.invoice_uid && <InvoiceLink uid={note.invoice_uid} numbers={numbers} />}
            {(note.task_uid || note.invoice_uid) && ' · '}
            <Delivery note={note} />
          </p>
        </>
      ),
    });
  }
  if (run.completed_on)
    entries.push({
      at: run.completed_on,
      key: 'ended',
      title: labelOf(run.status ?? 'ended'),
      tone: run.status === 'completed' ? 'ok' : run.status === 'failed' ? 'bad' : undefined,
      body: (
        <>
          {run.error ? (
            <p className="run-error">{run.error}</p>
          ) : typeof run.outcome?.summary === 'string' ? (
            <p>{run.outcome.summary}</p>
          ) : undefined}
          {endNote && (
            <p className="note-links">
              {EVENT_LABELS[endNote.event as NotificationEvent]} notification: <Delivery note={endNote} />
            </p>
          )}
        </>
      ),
    });
  // Stable: two entries of one instant keep the order above (requested before started, …).
  const ordered = entries
    .map((entry, i) => ({ entry, i }))
    .sort((a, b) => Date.parse(a.entry.at) - Date.parse(b.entry.at) || a.i - b.i)
    .map(({ entry }) => entry);
  return (
    <ol className="run-timeline">
      {ordered.map((entry) => (
        <li key={entry.key} className={entry.tone ? `tone-${entry.tone}` : undefined}>
          <div className="entry-head">
            <strong>{entry.title}</strong>{' '}
            <time className="muted" dateTime={entry.at} title={formatDateTime(entry.at)}>
              {formatRunTime(entry.at)}
            </time>
          </div>
          {entry.body}
        </li>
      ))}
      {isRunActive(run.status) && (
        <li className="tone-wait">
          <span role="status">
            <span className="spinner" aria-hidden="true" />
            {run.status === 'pending' ? 'Waiting for a worker to take it…' : 'Running…'}
          </span>
        </li>
      )}
    </ol>
  );
}

function EmailArgs({ args }: { args: SendEmailArgs }) {
  return (
    <details className="email-args">
      <summary>
        “{args.subject}” to {args.recipients.join(', ') || 'nobody'}
      </summary>
      <p className="instructions">{args.body}</p>
    </details>
  );
}

/** The outcome read for people: approvals raised, emails sent, invoices left alone; the rest as JSON. */
function WhatItDid({
  run,
  outcome,
  numbers,
}: {
  run: RunAttributes;
  outcome: ReadOutcome;
  numbers: Map<string, string>;
}) {
  if (!run.outcome) {
    return isRunActive(run.status) ? null : (
      <section className="panel" aria-labelledby="did-heading">
        <h2 id="did-heading">Outcome</h2>
        <p className="muted">
          The run recorded no outcome{run.error ? ' (it failed: see the error above)' : ''}.
        </p>
      </section>
    );
  }
  const sandbox = run.sandbox === true;
  return (
    <section className="panel" aria-labelledby="did-heading">
      <h2 id="did-heading">Outcome</h2>
      {outcome.summary && <p className="outcome-summary">{outcome.summary}</p>}
      {outcome.followUp && (
        <p>
          {outcome.followUp.taskUid ? (
            <Link to={`/app/tasks/${outcome.followUp.taskUid}`}>The approved action</Link>
          ) : (
            'The approved action'
          )}{' '}
          for <InvoiceLink uid={outcome.followUp.invoiceUid} numbers={numbers} />:{' '}
          {outcome.followUp.sent ? 'carried out.' : 'not carried out.'}
        </p>
      )}
      {outcome.approvals.length > 0 && (
        <>
          <h3>
            {sandbox ? 'Approvals it would ask for' : 'Approvals raised'} ({outcome.approvals.length})
          </h3>
          <ul className="did-list">
            {outcome.approvals.map((approval, i) => (
              <li key={approval.taskUid ?? `would-${i}`}>
                Reminder for <InvoiceLink uid={approval.invoiceUid} numbers={numbers} />
                {approval.taskUid && (
                  <>
                    {' · '}
                    <Link to={`/app/inbox/${approval.taskUid}`}>Open the approval</Link>
                  </>
                )}
                {approval.wouldAsk && <EmailArgs args={approval.wouldAsk} />}
              </li>
            ))}
          </ul>
        </>
      )}
      {outcome.sent.length > 0 && (
        <>
          <h3>
            {sandbox ? 'Emails it would send' : 'Emails sent'} ({outcome.sent.length})
          </h3>
          <ul className="did-list">
            {outcome.sent.map((email, i) => (
              <li key={email.draftUid ?? `would-${i}`}>
                Reminder for <InvoiceLink uid={email.invoiceUid} numbers={numbers} />
                {email.draftUid && (
                  <>
                    {' · '}
                    <Link to={`/app/collections/${email.draftUid}`}>Open the email</Link>
                  </>
                )}
                {email.wouldSend && <EmailArgs args={email.wouldSend} />}
              </li>
            ))}
          </ul>
        </>
      )}
      {outcome.replyTasks.length > 0 && (
        <>
          <h3>Client replies handed to a person ({outcome.replyTasks.length})</h3>
          <ul className="did-list">
            {outcome.replyTasks.map((reply, i) => (
              <li key={reply.taskUid ?? `would-${i}`}>
                <InvoiceLink uid={reply.invoiceUid} numbers={numbers} />
                {reply.taskUid ? (
                  <>
                    {' · '}
                    <Link to={`/app/tasks/${reply.taskUid}`}>Open the task</Link>
                  </>
                ) : (
                  ' (a task would be opened)'
                )}
              </li>
            ))}
          </ul>
        </>
      )}
      {outcome.skipped.length > 0 && (
        <>
          <h3>Left alone ({outcome.skipped.length})</h3>
          <ul className="did-list">
            {outcome.skipped.map((skip, i) => (
              <li key={`${skip.invoiceUid ?? ''}:${i}`}>
                {skip.invoiceUid ? (
                  <Link to={`/app/invoices/${skip.invoiceUid}`}>
                    Invoice {skip.invoiceNumber ?? numbers.get(skip.invoiceUid) ?? ''}
                  </Link>
                ) : (
                  `Invoice ${skip.invoiceNumber ?? ''}`
                )}
                : {skip.reason}
              </li>
            ))}
          </ul>
        </>
      )}
      {outcome.hasDetails && (
        <details className="outcome-json">
          <summary>Outcome details (JSON)</summary>
          {/* Focusable, so a keyboard can scroll it (axe: scrollable-region-focusable). */}
          <div className="json-box" role="region" aria-label="The run's outcome as JSON" tabIndex={0}>
            <pre>{JSON.stringify(run.outcome, null, 2)}</pre>
          </div>
        </details>
      )}
    </section>
  );
}
