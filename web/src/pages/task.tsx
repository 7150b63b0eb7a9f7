import { Ago } from '../components/ago.tsx';
import { useState, type FormEvent } from 'react';
import { problemOf, type WorkTask } from '../api.ts';
import { decisionText } from '../components/approval-detail.tsx';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { formatAgo, formatDate, formatDateTime } from '../format.ts';
import { LabelledOptions } from '../components/list-parts.tsx';
import { labelOf, TASK_PRIORITIES, TASK_STATUSES } from '../list-query.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import { assigneeOf, useAssignees } from './tasks.tsx';

const PENDING = ['todo', 'in_progress', 'in_review'];

/** One work task: what it is, its context, its change log; a `task` can be edited here. */
export default function TaskPage({ uid }: { uid: string }) {
  const { client, organization } = useSignedIn();
  const [version, setVersion] = useState(0);
  const [saved, setSaved] = useState<WorkTask>();
  const [notice, setNotice] = useState<string>();
  const task = useResource(`task:${uid}:${version}`, async () => {
    const { data } = await client.GET('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: uid }, query: { organization_uid: organization.organization_uid } },
    });
    return data;
  });
  // What the PATCH answered is shown at once; the next read replaces it.
  const current = saved?.uid === uid ? saved : task.status === 'ready' ? task.data : undefined;
  useDocumentTitle(current ? current.title : 'Task');

  if (!current && task.status === 'loading') return <Loading label="Loading the task…" />;
  if (!current) {
    const error = task.status === 'error' ? task : undefined;
    return (
      <div className="page">
        <BackLink />
        <h1>Task</h1>
        {error?.code === 'not_found' ? (
          <Empty title="This task does not exist, or it belongs to another organization." />
        ) : (
          <Problem
            title="The task could not be loaded"
            message={error?.message ?? ''}
            onRetry={() => setVersion((v) => v + 1)}
          />
        )}
      </div>
    );
  }
  return (
    <div className="page">
      <BackLink />
      <div aria-live="polite" className="live">
        {notice && <p className="announcement">{notice}</p>}
      </div>
      <header className="panel">
        <div className="detail-head">
          <h1>{current.title}</h1>
          <span className={`status-pill status-${current.status}`}>{labelOf(current.status)}</span>
          <span className="muted">{labelOf(current.type)}</span>
        </div>
        <dl className="facts">
          <div>
            <dt>Priority</dt>
            <dd className={`priority-${current.priority}`}>{labelOf(current.priority)}</dd>
          </div>
          <div>
            <dt>Assignee</dt>
            <dd>{assigneeOf(current)}</dd>
          </div>
          <div>
            <dt>Due</dt>
            <dd>{current.due_date ? formatDate(current.due_date) : '—'}</dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>
              <Ago at={current.created_at} /> by{' '}
              {current.origin.type === 'agent' ? current.origin.agent_name : current.origin.user_name}
            </dd>
          </div>
        </dl>
        {current.description && <p className="comment-text">{current.description}</p>}
        {current.type === 'hil_approval' &&
          (PENDING.includes(current.status) ? (
            <p>
              <Link to={`/app/inbox/${current.uid}`} className="button button-primary">
                Decide in the approvals inbox
              </Link>
            </p>
          ) : (
            <p className="muted">{decisionText(current, false)}</p>
          ))}
      </header>
      {current.type === 'task' && (
        <EditTask
          key={`${current.uid}:${current.updated_at}`}
          task={current}
          onSaved={(task) => {
            setNotice(`Saved “${task.title}”.`);
            setSaved(task);
            setVersion((v) => v + 1);
          }}
        />
      )}
      <Context task={current} />
      <ChangeLog task={current} />
    </div>
  );
}

function BackLink() {
  return (
    <Link to="/app/tasks" className="back-link">
      ← All tasks
    </Link>
  );
}

/** Title, status, priority and assignee; only what changed is sent. */
function EditTask({ task, onSaved }: { task: WorkTask; onSaved: (task: WorkTask) => void }) {
  const { client, organization } = useSignedIn();
  const assignees = useAssignees();
  const assignedUser = task.assign_to?.type === 'user' ? (task.assign_to.user_uid ?? '') : '';
  const [title, setTitle] = useState(task.title);
  const [status, setStatus] = useState<string>(task.status);
  const [priority, setPriority] = useState<string>(task.priority);
  const [assignee, setAssignee] = useState(assignedUser);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();

  const changes: Record<string, unknown> = {};
  if (title.trim() !== task.title) changes.title = title.trim();
  if (status !== task.status) changes.status = status;
  if (priority !== task.priority) changes.priority = priority;
  if (assignee !== assignedUser) changes.assign_to = assignee ? { type: 'user', user_uid: assignee } : null;
  const dirty = Object.keys(changes).length > 0;
  // The task's own assignee stays selectable even when it is not in the list this person may read.
  const options =
    assignedUser && !assignees.some((a) => a.uid === assignedUser)
      ? [...assignees, { uid: assignedUser, name: assigneeOf(task) }]
      : assignees;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!title.trim()) {
      setProblem('A task needs a title.');
      return;
    }
    if (!dirty) return;
    setBusy(true);
    setProblem(undefined);
    try {
      const { data } = await client.PATCH('/api/work-tasks/{task_uid}', {
        params: { path: { task_uid: task.uid }, query: { organization_uid: organization.organization_uid } },
        body: changes,
      });
      onSaved(data);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="panel" aria-labelledby="edit-heading">
      <h2 id="edit-heading">Edit</h2>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <div className="field">
          <label htmlFor="task-title">Title</label>
          <input
            id="task-title"
            value={title}
            maxLength={500}
            onChange={(event) => setTitle(event.target.value)}
            aria-invalid={problem && !title.trim() ? true : undefined}
          />
        </div>
        <div className="form-row">
          <div className="field">
            <label htmlFor="task-status">Status</label>
            <select id="task-status" value={status} onChange={(event) => setStatus(event.target.value)}>
              <LabelledOptions values={TASK_STATUSES} />
            </select>
          </div>
          <div className="field">
            <label htmlFor="task-priority">Priority</label>
            <select id="task-priority" value={priority} onChange={(event) => setPriority(event.target.value)}>
              <LabelledOptions values={TASK_PRIORITIES} />
            </select>
          </div>
          <div className="field">
            <label htmlFor="task-assignee">Assignee</label>
            <select id="task-assignee" value={assignee} onChange={(event) => setAssignee(event.target.value)}>
              <option value="">Unassigned</option>
              {options.map((a) => (
                <option key={a.uid} value={a.uid}>
                  {a.name}
                </option>
              ))}
            </select>
          </div>
        </div>
        <div aria-live="polite">
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
        </div>
        <button type="submit" className="button button-primary" disabled={busy || !dirty}>
          {busy ? 'Saving…' : 'Save changes'}
        </button>
      </form>
    </section>
  );
}

function Context({ task }: { task: WorkTask }) {
  if (task.context_entities.length === 0) return null;
  return (
    <section className="panel" aria-labelledby="context-heading">
      <h2 id="context-heading">Linked</h2>
      <ul className="timeline">
        {task.context_entities.map((entity) => (
          <li key={`${entity.entity_type}:${entity.entity_uid}`}>
            {entity.entity_type === 'invoice' ? (
              <Link to={`/app/invoices/${entity.entity_uid}`}>
                Invoice {entity.invoice_number ?? entity.entity_uid}
              </Link>
            ) : (
              <span>
                {labelOf(entity.entity_type)}: {entity.name ?? entity.counterparty_name ?? entity.entity_uid}
              </span>
            )}
            {entity.entity_type === 'invoice' && entity.counterparty_name && (
              <span className="muted"> · {entity.counterparty_name}</span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** `status_changed` → `changed the status`; `assigned`, `created`, `resolved` as they are. */
export function actionText(action: string): string {
  const field = /^(.+)_changed$/.exec(action);
  if (field) return `changed the ${labelOf(field[1]!).toLowerCase()}`;
  return labelOf(action).toLowerCase();
}

/** A change's details as a short line: `{from: 'todo', to: 'done'}` → `Todo → Done`. */
export function detailsText(
  details: Record<string, unknown> | null,
  names: Map<string, string> = new Map(),
): string {
  if (!details) return '';
  const show = showWith(names);
  const { from, to, ...rest } = details;
  const parts = 'from' in details || 'to' in details ? [`${show(from)} → ${show(to)}`] : [];
  for (const [key, value] of Object.entries(rest)) {
    if (value !== null && value !== undefined && value !== '') parts.push(`${labelOf(key)}: ${show(value)}`);
  }
  return parts.join(' · ');
}

const showWith = (names: Map<string, string>) => {
  const show = (value: unknown): string => {
    if (value === null || value === undefined || value === '') return '—';
    // Enum values (`in_progress`) read as words; free text (a title) as written.
    if (typeof value === 'string') return /^[a-z]+(_[a-z]+)*$/.test(value) ? labelOf(value) : value;
    if (Array.isArray(value)) return value.length === 0 ? '—' : value.map(show).join(', ');
    if (typeof value === 'object' && value && 'user_uid' in value)
      return names.get(String(value.user_uid)) ?? 'a person';
    if (typeof value === 'object' && value && 'agent_uid' in value) return 'an agent';
    if (typeof value === 'object' && value && 'full_name' in value) return String(value.full_name);
    if (typeof value === 'object' && value && 'name' in value) return String(value.name);
    if (typeof value === 'object' && value && 'entity_type' in value)
      return labelOf(String(value.entity_type));
    return JSON.stringify(value);
  };
  return show;
};

function ChangeLog({ task }: { task: WorkTask }) {
  const names = new Map(useAssignees().map((a) => [a.uid, a.name.replace(/ \(me\)$/, '')]));
  return (
    <section className="panel" aria-labelledby="log-heading">
      <h2 id="log-heading">Change log</h2>
      {task.change_log.length === 0 ? (
        <p className="muted">No changes yet.</p>
      ) : (
        <ol className="timeline">
          {[...task.change_log].reverse().map((entry, i) => (
            <li key={`${entry.at}:${i}`}>
              <strong>{entry.by_name || labelOf(entry.by_type)}</strong> {actionText(entry.action)}{' '}
              <time className="muted" dateTime={entry.at} title={formatDateTime(entry.at)}>
                {formatAgo(entry.at)}
              </time>
              {entry.details && <p className="comment-text muted">{detailsText(entry.details, names)}</p>}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
