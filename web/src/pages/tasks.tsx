import { Ago } from '../components/ago.tsx';
import { useState, type FormEvent } from 'react';
import type { WorkTask } from '../api.ts';
import {
  FilterActions,
  LabelledOptions,
  ListStates,
  Pager,
  SortHeader,
  TableBox,
} from '../components/list-parts.tsx';
import { useDocumentTitle } from '../components/states.tsx';
import { formatDate } from '../format.ts';
import {
  labelOf,
  nextTaskSort,
  readTaskFilters,
  TASK_DEFAULTS,
  TASK_PRIORITIES,
  TASK_STATUSES,
  TASK_TYPES,
  taskListQuery,
  writeQuery,
  type TaskFilters,
  type TaskSort,
} from '../list-query.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';

const PER_PAGE = 25;

/** Who a task is assigned to, in a few words. */
export function assigneeOf(task: WorkTask): string {
  if (!task.assign_to) return 'Unassigned';
  if (task.assign_to.type === 'agent') return `Agent: ${task.assign_to.name ?? 'an agent'}`;
  return task.assign_to.full_name || 'a person';
}

/** The members an admin may pick from; a member, who may not list them, picks "Me" or anyone. */
export function useAssignees() {
  const { client, organization, user } = useSignedIn();
  const isAdmin = organization.role === 'admin';
  const members = useResource(
    isAdmin ? `members:${organization.organization_uid}` : null,
    async () =>
      (
        await client.GET('/api/organization/{organization_uid}/members', {
          params: { path: { organization_uid: organization.organization_uid }, query: { per_page: 100 } },
        })
      ).data,
  );
  if (members.status === 'ready') {
    return members.data.items.map((m) => ({
      uid: m.user_uid,
      name: m.user_uid === user.uid ? `${m.full_name || m.email} (me)` : m.full_name || m.email,
    }));
  }
  return [{ uid: user.uid, name: `${user.full_name || user.email} (me)` }];
}

/** Work tasks: the list route's filters, sorting and pages, kept in the address bar. */
export default function TasksPage() {
  const { client, organization } = useSignedIn();
  const { search } = useLocation();
  const filters = readTaskFilters(search);
  const query = writeQuery(filters, TASK_DEFAULTS);
  const [attempt, setAttempt] = useState(0);
  useDocumentTitle('Tasks');
  const assignees = useAssignees();
  const go = (next: TaskFilters) => navigate(`/app/tasks${writeQuery(next, TASK_DEFAULTS)}`);
  const list = useResource(`tasks:${organization.organization_uid}${query}:${attempt}`, async () => {
    const { data } = await client.GET('/api/work-tasks', {
      params: {
        query: {
          ...(taskListQuery(filters, PER_PAGE) as { type?: 'task' | 'hil_approval' }),
          organization_uid: organization.organization_uid,
        },
      },
    });
    return data;
  });

  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const value = (name: string) => String(form.get(name) ?? '').trim();
    go({
      ...filters,
      status: value('status'),
      priority: value('priority'),
      type: value('type'),
      assignee: value('assignee'),
      q: value('q'),
      page: 1,
    });
  };
  const filtered = writeQuery({ ...filters, sort: TASK_DEFAULTS.sort, page: 1 }, TASK_DEFAULTS) !== '';
  const descending = filters.sort.startsWith('-');
  const sortField = filters.sort.replace(/^-/, '');
  const sortHeader = (column: TaskSort, label: string) => (
    <SortHeader
      label={label}
      active={sortField === column}
      descending={descending}
      onSort={() => go(nextTaskSort(filters, column))}
    />
  );

  return (
    <div className="page page-wide">
      <h1>Tasks</h1>
      <form key={query} className="filters" onSubmit={apply} role="search" aria-label="Filter tasks">
        <div className="field">
          <label htmlFor="t-q">Search</label>
          <input
            id="t-q"
            name="q"
            type="search"
            defaultValue={filters.q}
            placeholder="Title or description"
            maxLength={200}
          />
        </div>
        <div className="field">
          <label htmlFor="t-status">Status</label>
          <select id="t-status" name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            <LabelledOptions values={TASK_STATUSES} />
          </select>
        </div>
        <div className="field">
          <label htmlFor="t-priority">Priority</label>
          <select id="t-priority" name="priority" defaultValue={filters.priority}>
            <option value="">Any</option>
            <LabelledOptions values={TASK_PRIORITIES} />
          </select>
        </div>
        <div className="field">
          <label htmlFor="t-type">Type</label>
          <select id="t-type" name="type" defaultValue={filters.type}>
            <option value="">Any</option>
            <LabelledOptions values={TASK_TYPES} />
          </select>
        </div>
        <div className="field">
          <label htmlFor="t-assignee">Assignee</label>
          <select id="t-assignee" name="assignee" defaultValue={filters.assignee}>
            <option value="">Anyone</option>
            {assignees.map((a) => (
              <option key={a.uid} value={a.uid}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <FilterActions filtered={filtered} clearTo="/app/tasks" />
      </form>

      <ListStates
        list={list}
        noun="tasks"
        emptyTitle={filtered ? 'No task matches these filters' : 'No tasks yet'}
        filtered={filtered}
        clearTo="/app/tasks"
        onRetry={() => setAttempt((n) => n + 1)}
      />
      {list.status === 'ready' && list.data.items.length > 0 && (
        <>
          <TableBox label="Tasks">
            <table className="data-table">
              <thead>
                <tr>
                  <th scope="col">Title</th>
                  <th scope="col">Type</th>
                  {sortHeader('status', 'Status')}
                  {sortHeader('priority', 'Priority')}
                  <th scope="col">Assignee</th>
                  {sortHeader('due_date', 'Due')}
                  {sortHeader('created_at', 'Created')}
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((task) => (
                  <tr key={task.uid}>
                    <td>
                      <Link to={`/app/tasks/${task.uid}`}>{task.title}</Link>
                    </td>
                    <td>{labelOf(task.type)}</td>
                    <td>
                      <span className={`status-pill status-${task.status}`}>{labelOf(task.status)}</span>
                    </td>
                    <td className={`priority-${task.priority}`}>{labelOf(task.priority)}</td>
                    <td>{assigneeOf(task)}</td>
                    <td>{task.due_date ? formatDate(task.due_date) : '—'}</td>
                    <td>
                      <Ago at={task.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableBox>
          <Pager
            meta={list.data._meta}
            noun="tasks"
            hrefOf={(page) => `/app/tasks${writeQuery({ ...filters, page }, TASK_DEFAULTS)}`}
          />
        </>
      )}
    </div>
  );
}
