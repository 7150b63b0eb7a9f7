import { Ago } from './ago.tsx';
import { useId, useImperativeHandle, useRef, useState, type Ref } from 'react';
import { useApprovals, type Departure } from '../approvals.tsx';
import { codeOf, problemOf, type WorkTask } from '../api.ts';
import { decisionRights, stillNeededText } from '../approval-policy.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { TOOL_MEMBER, type Args } from '../tool-args.ts';
import { ApprovalContext, Deciders } from './approval-context.tsx';
import { ArgsDiff, ArgsEditor, ArgsView, useArgsEditor } from './args.tsx';
import './approval-policy.css';

/** What the inbox's keyboard shortcuts ask of the approval on screen. */
export interface DetailHandle {
  approve(): void;
  edit(): void;
  focusReason(): void;
  focusFeedback(): void;
}

export interface Decided {
  task: WorkTask;
  how: Departure['how'];
}

const EMPTY: Args = {};

export function toolOf(task: WorkTask): string {
  const tool = task.tool_args?.[TOOL_MEMBER];
  return typeof tool === 'string' && tool !== '' ? tool : 'an action';
}

/** `Approved by Ada Lovelace`, or `approved by Ada Lovelace` inside a sentence; `Expired` unanswered. */
export function decisionText(task: WorkTask, inSentence = false): string {
  if (task.resolution === 'expired')
    return `${inSentence ? 'expired' : 'Expired'}: nobody decided in time, so the action will not happen`;
  const who = task.resolved_by?.user_name || 'someone';
  const verb = task.resolution === 'rejected' ? 'rejected' : 'approved';
  return `${inSentence ? verb : verb[0]!.toUpperCase() + verb.slice(1)} by ${who}`;
}

/**
 * One approval: what the agent wants to do and why, the context, and the decision. A pending approval
 * can be approved as proposed, edited then approved, rejected with a reason, or answered with feedback
 * (respond: the agent revises it and asks again, nothing is decided); one that has been decided (here,
 * elsewhere, or first by someone else) says by whom.
 */
export function ApprovalDetail({
  task: given,
  departure,
  onDecided,
  ref,
}: {
  task: WorkTask;
  departure: Departure | undefined;
  onDecided(decided: Decided): void;
  ref?: Ref<DetailHandle>;
}) {
  const { client, user, memberships } = useSignedIn();
  const { settle, refresh } = useApprovals();
  // The answer to an approval that did not complete its policy's count, until the list catches up.
  const [recorded, setRecorded] = useState<WorkTask>();
  const task = recorded && Date.parse(recorded.updated_at) >= Date.parse(given.updated_at) ? recorded : given;
  const [notice, setNotice] = useState<string>();
  // Said after a response, while the agent has not answered it yet.
  const [sent, setSent] = useState<string>();
  const [mode, setMode] = useState<'view' | 'edit'>('view');
  const proposed = task.tool_args ?? EMPTY;
  const editor = useArgsEditor(proposed);
  const [reason, setReason] = useState('');
  const [reasonError, setReasonError] = useState<string>();
  const [feedback, setFeedback] = useState('');
  const [feedbackError, setFeedbackError] = useState<string>();
  const [busy, setBusy] = useState<'approve' | 'reject' | 'respond' | null>(null);
  const [problem, setProblem] = useState<string>();
  const reasonInput = useRef<HTMLTextAreaElement>(null);
  const feedbackInput = useRef<HTMLTextAreaElement>(null);
  const firstEditorInput = useRef<HTMLDivElement>(null);
  const whyNot = useRef<HTMLParagraphElement>(null);
  const titleId = useId();
  const reasonId = `${titleId}-reason`;
  const feedbackId = `${titleId}-feedback`;

  const resolved = Boolean(task.resolution);
  const changeCount = Object.keys(editor.changes).length;
  const role = memberships.find((m) => m.organization_uid === task.organization_uid)?.role;
  const rights = decisionRights(task, { userUid: user.uid, role });
  const whyNotId = `${titleId}-why-not`;

  const origin =
    task.origin.type === 'agent' ? task.origin.agent_name || 'An agent' : task.origin.user_name || 'Someone';

  const decide = async (action: 'approve' | 'reject' | 'respond', toolArgs?: Args) => {
    if (busy || resolved) return;
    setBusy(action);
    setProblem(undefined);
    const note = reason.trim();
    try {
      const { data } = await client.PATCH('/api/work-tasks/{task_uid}', {
        params: { path: { task_uid: task.uid } },
        // Bound to the arguments shown here: a revision since is refused (409 approval_changed).
        body:
          action === 'respond'
            ? { action, feedback: feedback.trim(), args_revision: task.args_revision }
            : {
                action,
                args_revision: task.args_revision,
                ...(toolArgs ? { tool_args: toolArgs } : {}),
                ...(note ? { resolution_note: note } : {}),
              },
      });
      if (action === 'respond') {
        // Nothing decided: the approval stays here, with the agent until it has revised it.
        setRecorded(data);
        setFeedback('');
        setSent(
          data._warning ??
            `Feedback sent. ${origin} will revise the request and ask again; you can still approve or reject it meanwhile.`,
        );
        void refresh();
        return;
      }
      if (!data.resolution) {
        // Counted, not decided: the policy needs more people.
        setRecorded(data);
        setNotice(stillNeededText(data));
        setMode('view');
        void refresh();
        return;
      }
      settle(data, 'mine');
      onDecided({ task: data, how: 'mine' });
    } catch (error) {
      const code = codeOf(error);
      if (code === 'approval_expired') {
        setProblem(problemOf(error));
        void refresh();
      } else if (code === 'approval_changed') {
        // Changed while it was read: show it as it is now (edits start again from it), and say what changed.
        try {
          const { data } = await client.GET('/api/work-tasks/{task_uid}', {
            params: { path: { task_uid: task.uid } },
          });
          setRecorded(data);
          setMode('view');
          void refresh();
        } finally {
          setProblem(problemOf(error));
        }
      } else if (code === 'already_resolved') {
        // Someone (another person, another tab) decided first: say who, never an error page.
        try {
          const { data } = await client.GET('/api/work-tasks/{task_uid}', {
            params: { path: { task_uid: task.uid } },
          });
          settle(data, 'conflict');
          onDecided({ task: data, how: 'conflict' });
        } catch (readError) {
          setProblem(problemOf(readError));
        }
      } else if (code === 'not_found') {
        settle(task, 'gone');
        onDecided({ task, how: 'gone' });
      } else {
        setProblem(problemOf(error));
      }
    } finally {
      setBusy(null);
    }
  };

  const approve = () => {
    if (rights.approve) {
      // Already said beside the buttons: take the person there (the a shortcut, Approve is disabled).
      whyNot.current?.focus();
      return;
    }
    if (mode === 'edit') {
      if (!editor.edited || changeCount === 0) {
        setProblem(
          editor.edited
            ? 'Nothing is edited yet: change a value, or approve as proposed.'
            : 'Fix the marked values first.',
        );
        return;
      }
      void decide('approve', editor.changes);
    } else {
      void decide('approve');
    }
  };
  const reject = () => {
    if (rights.reject) {
      whyNot.current?.focus();
      return;
    }
    if (!reason.trim()) {
      setReasonError('Give a reason: the agent and the people following it will see why.');
      reasonInput.current?.focus();
      reasonInput.current?.scrollIntoView({ block: 'center' });
      return;
    }
    void decide('reject');
  };
  const respond = () => {
    if (rights.reject) {
      whyNot.current?.focus();
      return;
    }
    if (!feedback.trim()) {
      setFeedbackError('Write what the agent should change: it revises the request from it.');
      feedbackInput.current?.focus();
      feedbackInput.current?.scrollIntoView({ block: 'center' });
      return;
    }
    void decide('respond');
  };
  const startEditing = () => {
    setMode('edit');
    setProblem(undefined);
    // After the editor renders.
    window.requestAnimationFrame(() =>
      firstEditorInput.current
        ?.querySelector<HTMLElement>('input:not([type=checkbox]), textarea, input')
        ?.focus(),
    );
  };

  useImperativeHandle(ref, () => ({
    approve: () => !resolved && approve(),
    edit: () => {
      if (resolved) return;
      if (rights.approve) whyNot.current?.focus();
      else startEditing();
    },
    focusReason: () => {
      if (resolved) return;
      if (rights.reject) {
        whyNot.current?.focus();
        return;
      }
      reasonInput.current?.focus();
      reasonInput.current?.scrollIntoView({ block: 'center' });
    },
    focusFeedback: () => {
      if (resolved) return;
      if (rights.reject) {
        whyNot.current?.focus();
        return;
      }
      feedbackInput.current?.focus();
      feedbackInput.current?.scrollIntoView({ block: 'center' });
    },
  }));

  return (
    <article className="detail" aria-labelledby={titleId}>
      <Link to="/app/inbox" className="back-link">
        ← All approvals
      </Link>
      <header className="detail-header">
        <p className="eyebrow">
          <strong>{origin}</strong> asks to run <code>{toolOf(task)}</code>
        </p>
        <h2 id={titleId}>{task.title}</h2>
        <p className="meta">
          <span className={`priority priority-${task.priority}`}>{task.priority} priority</span> · raised{' '}
          <Ago at={task.created_at} />
          {typeof task.trigger?.type === 'string' && <> · after {task.trigger.type.replace(/_/g, ' ')}</>}
        </p>
      </header>

      {resolved && <Outcome task={task} departure={departure} />}

      {!resolved && task.response && (
        <div className="outcome outcome-responded" role="status">
          <p>
            <strong>Waiting for {origin}’s revision.</strong> {task.response.user_name || 'Someone'} responded{' '}
            <Ago at={task.response.at} />: “{task.response.feedback}”
          </p>
        </div>
      )}

      {task.reasoning && (
        <section className="panel" aria-labelledby={`${titleId}-why`}>
          <h3 id={`${titleId}-why`}>Why</h3>
          <p className="reasoning">{task.reasoning}</p>
        </section>
      )}

      <section className="panel" aria-labelledby={`${titleId}-action`}>
        <h3 id={`${titleId}-action`}>{resolved ? 'Action as decided' : 'Proposed action'}</h3>
        {mode === 'edit' && !resolved ? (
          <div ref={firstEditorInput}>
            <ArgsEditor editor={editor} idPrefix={`${titleId}-arg`} />
            <h4>Changes</h4>
            <ArgsDiff proposed={proposed} changes={editor.changes} />
          </div>
        ) : (
          <ArgsView args={proposed} />
        )}
      </section>

      <ApprovalContext task={task} />
      {!resolved && <Deciders task={task} />}

      {!resolved && (
        <section className="panel decision" aria-labelledby={`${titleId}-decision`}>
          <h3 id={`${titleId}-decision`}>Decision</h3>
          <div className="field reject-field">
            <label htmlFor={reasonId}>Reason</label>
            <p className="field-hint" id={`${reasonId}-hint`}>
              Needed to reject; sent as a note when you approve.
            </p>
            <textarea
              id={reasonId}
              ref={reasonInput}
              rows={2}
              aria-keyshortcuts="r"
              aria-invalid={reasonError ? true : undefined}
              aria-describedby={`${reasonId}-hint${reasonError ? ` ${reasonId}-error` : ''}`}
              value={reason}
              onChange={(e) => {
                setReason(e.target.value);
                setReasonError(undefined);
              }}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) {
                  e.preventDefault();
                  reject();
                } else if (e.key === 'Escape') {
                  e.currentTarget.blur();
                }
              }}
            />
            {reasonError && (
              <p className="field-error" id={`${reasonId}-error`}>
                {reasonError}
              </p>
            )}
          </div>
          <div className="field respond-field">
            <label htmlFor={feedbackId}>Feedback to the agent</label>
            <p className="field-hint" id={`${feedbackId}-hint`}>
              Respond without deciding: {origin} revises the request from it and asks again.
            </p>
            <textarea
              id={feedbackId}
              ref={feedbackInput}
              rows={2}
              maxLength={4000}
              aria-invalid={feedbackError ? true : undefined}
              aria-describedby={`${feedbackId}-hint${feedbackError ? ` ${feedbackId}-error` : ''}`}
              value={feedback}
              onChange={(e) => {
                setFeedback(e.target.value);
                setFeedbackError(undefined);
              }}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) {
                  e.preventDefault();
                  respond();
                } else if (e.key === 'Escape') {
                  e.currentTarget.blur();
                }
              }}
            />
            {feedbackError && (
              <p className="field-error" id={`${feedbackId}-error`}>
                {feedbackError}
              </p>
            )}
          </div>
          {(rights.approve || rights.reject) && (
            <p className="decision-note" id={whyNotId} ref={whyNot} tabIndex={-1}>
              {rights.approve ?? rights.reject}
            </p>
          )}
          {notice && (
            <p className="decision-status" role="status">
              {notice}
            </p>
          )}
          {sent && task.response && (
            <p className="decision-status" role="status">
              {sent}
            </p>
          )}
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
        </section>
      )}

      {!resolved && (
        // The actions stay in view (at the bottom of a tall screen) while the context scrolls under them.
        <div className="action-bar" role="group" aria-label="Decide">
          {mode === 'edit' ? (
            <>
              <button
                type="button"
                className="button button-primary"
                disabled={busy !== null || rights.approve !== null}
                aria-describedby={rights.approve ? whyNotId : undefined}
                onClick={approve}
              >
                {busy === 'approve'
                  ? 'Approving…'
                  : `Approve with edits${changeCount ? ` (${changeCount})` : ''}`}
              </button>
              <button
                type="button"
                className="button"
                disabled={busy !== null}
                onClick={() => {
                  setMode('view');
                  setProblem(undefined);
                }}
              >
                Discard edits
              </button>
            </>
          ) : (
            <>
              <button
                type="button"
                className="button button-primary"
                disabled={busy !== null || rights.approve !== null}
                aria-describedby={rights.approve ? whyNotId : undefined}
                aria-keyshortcuts="a"
                onClick={approve}
              >
                {busy === 'approve' ? 'Approving…' : 'Approve'}
              </button>
              <button
                type="button"
                className="button"
                disabled={busy !== null || rights.approve !== null}
                aria-describedby={rights.approve ? whyNotId : undefined}
                aria-keyshortcuts="e"
                onClick={startEditing}
              >
                Edit and approve
              </button>
            </>
          )}
          <button
            type="button"
            className="button"
            disabled={busy !== null || rights.reject !== null}
            aria-describedby={rights.reject ? whyNotId : undefined}
            aria-keyshortcuts="f"
            onClick={respond}
          >
            {busy === 'respond' ? 'Sending…' : 'Respond'}
          </button>
          <button
            type="button"
            className="button button-danger"
            disabled={busy !== null || rights.reject !== null}
            aria-describedby={rights.reject ? whyNotId : undefined}
            onClick={reject}
          >
            {busy === 'reject' ? 'Rejecting…' : 'Reject'}
          </button>
        </div>
      )}
    </article>
  );
}

function Outcome({ task, departure }: { task: WorkTask; departure: Departure | undefined }) {
  const at = task.resolved_at;
  return (
    <div
      className={`outcome outcome-${task.resolution === 'approved' ? 'approved' : 'rejected'}`}
      role="status"
    >
      {departure?.how === 'conflict' && (
        <p>
          <strong>Your decision was not recorded:</strong> this approval had already been decided.
        </p>
      )}
      <p>
        <strong>{decisionText(task)}</strong>
        {at && (
          <>
            {' '}
            <Ago at={at} />
          </>
        )}
        {task.resolution_note && <> — “{task.resolution_note}”</>}
      </p>
    </div>
  );
}
