import { Ago } from '../components/ago.tsx';
import { useEffect, useRef, useState, type RefObject } from 'react';
import { useApprovals, type Departure } from '../approvals.tsx';
import { codeOf, problemOf, type WorkTask } from '../api.ts';
import {
  ApprovalDetail,
  decisionText,
  toolOf,
  type Decided,
  type DetailHandle,
} from '../components/approval-detail.tsx';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { Link, navigate } from '../router.tsx';
import { useSignedIn } from '../session.tsx';

const pathOf = (uid: string) => `/app/inbox/${uid}`;

/** A keystroke meant for a field (or with a modifier: the browser's own shortcuts) is not a command. */
function isTyping(event: KeyboardEvent): boolean {
  if (event.metaKey || event.ctrlKey || event.altKey) return true;
  const target = event.target as HTMLElement | null;
  return Boolean(target?.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]'));
}

/**
 * The approval inbox: pending approvals newest first beside the one selected (one column on a phone),
 * kept current by the poll in ApprovalsProvider. Keyboard: j/k move, a approves, e edits, r rejects,
 * f writes feedback (respond).
 */
export function InboxPage({ uid }: { uid: string | undefined }) {
  const approvals = useApprovals();
  const { items, status, total, departures } = approvals;
  useDocumentTitle(status === 'ready' && total > 0 ? `Approvals (${total})` : 'Approvals');
  const detail = useRef<DetailHandle>(null);
  const list = useRef<HTMLOListElement>(null);
  const [announcement, setAnnouncement] = useState<string>();

  const index = uid ? items.findIndex((t) => t.uid === uid) : -1;
  const departure = uid ? departures.find((d) => d.task.uid === uid) : undefined;

  const focusItem = (taskUid: string) =>
    window.requestAnimationFrame(() =>
      list.current?.querySelector<HTMLElement>(`[data-uid="${taskUid}"]`)?.focus({ preventScroll: false }),
    );

  const move = (step: number) => {
    if (items.length === 0) return;
    const from = index >= 0 ? index : step > 0 ? -1 : items.length;
    const next = items[Math.min(items.length - 1, Math.max(0, from + step))]!;
    navigate(pathOf(next.uid), { replace: true });
    focusItem(next.uid);
  };

  // Keyboard shortcuts; the latest closure is read through a ref so the listener is added once.
  const keys = useRef<(event: KeyboardEvent) => void>(() => undefined);
  keys.current = (event) => {
    if (event.defaultPrevented || isTyping(event)) return;
    const handled = (() => {
      switch (event.key) {
        case 'j':
          move(1);
          return true;
        case 'k':
          move(-1);
          return true;
        case 'a':
          detail.current?.approve();
          return true;
        case 'e':
          detail.current?.edit();
          return true;
        case 'r':
          detail.current?.focusReason();
          return true;
        case 'f':
          detail.current?.focusFeedback();
          return true;
        default:
          return false;
      }
    })();
    if (handled) event.preventDefault();
  };
  useEffect(() => {
    const listener = (event: KeyboardEvent) => keys.current(event);
    document.addEventListener('keydown', listener);
    return () => document.removeEventListener('keydown', listener);
  }, []);

  const decided = ({ task, how }: Decided) => {
    const title = `“${task.title}”`;
    if (how === 'mine') {
      // The next approval takes its place, as in an email inbox.
      const rest = items.filter((t) => t.uid !== task.uid);
      const next = rest[Math.min(index, rest.length - 1)];
      const verb = task.resolution === 'rejected' ? 'Rejected' : 'Approved';
      setAnnouncement(
        `${verb} ${title}.${task._warning ? ` ${task._warning}` : ''}${next ? '' : ' No approvals left.'}`,
      );
      if (next) {
        navigate(pathOf(next.uid), { replace: true });
        focusItem(next.uid);
      } else {
        navigate('/app/inbox', { replace: true });
      }
    } else if (how === 'conflict') {
      setAnnouncement(`${title} was already decided: ${decisionText(task, true)}.`);
    } else {
      setAnnouncement(`${title} no longer exists.`);
    }
  };

  const selected: WorkTask | undefined = index >= 0 ? items[index] : departure?.task;
  const elsewhere = departures.filter((d) => d.how === 'elsewhere' || d.how === 'gone');

  return (
    <div className={`inbox${uid ? ' has-selection' : ''}`}>
      <section className="inbox-list" aria-labelledby="inbox-heading">
        <div className="inbox-list-head">
          <h1 id="inbox-heading">Approvals</h1>
          <p className="muted">{status === 'ready' ? `${total} waiting` : ''}</p>
        </div>
        <div aria-live="polite" className="live">
          {announcement && <p className="announcement">{announcement}</p>}
          {approvals.problem && status === 'ready' && (
            <p className="form-problem">Could not refresh: {approvals.problem} Trying again shortly.</p>
          )}
          {elsewhere.length > 0 && <Departures departures={elsewhere} onDismiss={approvals.dismiss} />}
        </div>
        {status === 'loading' && <Loading label="Loading approvals…" />}
        {status === 'error' && (
          <Problem
            title="The approvals could not be loaded"
            message={approvals.problem ?? ''}
            onRetry={() => void approvals.refresh()}
          />
        )}
        {status === 'ready' && items.length === 0 && (
          <Empty title="No approvals waiting">
            <p>When an agent asks before it acts, the question shows up here.</p>
          </Empty>
        )}
        {items.length > 0 && (
          <ol className="items" ref={list}>
            {items.map((task) => (
              <li key={task.uid}>
                <Link
                  to={pathOf(task.uid)}
                  className="item"
                  data-uid={task.uid}
                  aria-current={task.uid === uid ? 'true' : undefined}
                >
                  <span className="item-title">{task.title}</span>
                  <span className="item-meta">
                    {task.origin.agent_name ?? task.origin.user_name} · {toolOf(task)} ·{' '}
                    <Ago at={task.created_at} />
                    {task.response && <span className="revising"> · revising</span>}
                    {(task.priority === 'urgent' || task.priority === 'high') && (
                      <span className={`priority priority-${task.priority}`}> · {task.priority}</span>
                    )}
                  </span>
                </Link>
              </li>
            ))}
          </ol>
        )}
        {total > items.length && (
          <p className="muted">
            Showing the newest {items.length} of {total}.
          </p>
        )}
        <p className="shortcuts" aria-hidden="true">
          <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve · <kbd>e</kbd> edit · <kbd>r</kbd> reject ·{' '}
          <kbd>f</kbd> feedback
        </p>
      </section>
      <section className="inbox-detail" aria-label="Selected approval">
        {uid && selected && (
          <ApprovalDetail
            key={selected.uid}
            ref={detail}
            task={selected}
            departure={departure}
            onDecided={decided}
          />
        )}
        {uid && !selected && <TaskByUid uid={uid} onDecided={decided} detail={detail} />}
        {!uid && status === 'ready' && (
          <Empty title={items.length > 0 ? 'Select an approval' : 'Nothing to decide right now'}>
            <p>
              {items.length > 0 ? 'Press j to open the newest one.' : 'New questions appear on their own.'}
            </p>
          </Empty>
        )}
      </section>
    </div>
  );
}

/** An address naming an approval that is not in the list: another organization's, old, or not loaded yet. */
function TaskByUid({
  uid,
  onDecided,
  detail,
}: {
  uid: string;
  onDecided(decided: Decided): void;
  detail: RefObject<DetailHandle | null>;
}) {
  const { client } = useSignedIn();
  const { status } = useApprovals();
  const [state, setState] = useState<{ uid: string; task?: WorkTask; problem?: string }>({ uid });
  useEffect(() => {
    // After the list's first answer: a link to an approval the list is about to show needs no request.
    if (status === 'loading') return;
    let current = true;
    client.GET('/api/work-tasks/{task_uid}', { params: { path: { task_uid: uid } } }).then(
      ({ data }) => current && setState({ uid, task: data }),
      (error: unknown) =>
        current &&
        setState({
          uid,
          problem:
            codeOf(error) === 'not_found'
              ? 'There is no such approval in your organizations.'
              : problemOf(error),
        }),
    );
    return () => {
      current = false;
    };
  }, [client, uid, status]);
  if (state.uid !== uid || (!state.task && !state.problem)) return <Loading label="Loading the approval…" />;
  if (state.problem) return <Problem title="Approval not found" message={state.problem} />;
  const task = state.task!;
  if (task.type !== 'hil_approval')
    return <Problem title="Not an approval" message="This task asks no decision." />;
  return (
    <ApprovalDetail key={task.uid} ref={detail} task={task} departure={undefined} onDecided={onDecided} />
  );
}

function Departures({ departures, onDismiss }: { departures: Departure[]; onDismiss(uid: string): void }) {
  return (
    <ul className="departures" aria-label="Decided elsewhere">
      {departures.map(({ task, how }) => (
        <li key={task.uid}>
          <span>
            <Link to={pathOf(task.uid)}>“{task.title}”</Link>{' '}
            {how === 'gone' ? 'was deleted' : `— ${decisionText(task, true)}`}
            {task.resolved_at && (
              <>
                {' '}
                <Ago at={task.resolved_at} />
              </>
            )}
          </span>
          <button type="button" className="link-button" onClick={() => onDismiss(task.uid)}>
            Dismiss<span className="visually-hidden"> “{task.title}”</span>
          </button>
        </li>
      ))}
    </ul>
  );
}
