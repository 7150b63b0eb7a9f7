import { Ago } from '../components/ago.tsx';
import { useCallback, useEffect, useId, useState, type FormEvent } from 'react';
import { codeOf, problemOf, RemitApiError } from '../api.ts';
import {
  AGENT_STATUSES,
  agentPatch,
  DEFAULT_SWITCHES,
  describeCron,
  draftOf,
  draftProblems,
  EVENT_LABELS,
  formatRunInstant,
  formatRunTime,
  isRunActive,
  NOTIFICATION_EVENTS,
  RUN_STATUSES,
  runDuration,
  runFields,
  TRIGGER_TYPES,
  triggersSummary,
  triggerText,
  triggerTypeLabel,
  type Agent,
  type AgentDraft,
  type AgentRun,
} from '../agents-view.ts';
import { FilterActions, LabelledOptions, Pager, TableBox } from '../components/list-parts.tsx';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { formatDateTime } from '../format.ts';
import { labelOf, pageOf, writeQuery } from '../list-query.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import {
  Breadcrumb,
  RunStatus,
  TokenUsage,
  useCancelRun,
  useLoaded,
  usePolling,
  useSeesTokenUsage,
} from './agent-parts.tsx';
import './agents.css';

const RUNS_PER_PAGE = 10;

interface RunFilters {
  status: string;
  page: number;
}
const RUN_DEFAULTS: RunFilters = { status: '', page: 1 };

function readRunFilters(search: URLSearchParams): RunFilters {
  const status = search.get('status') ?? '';
  return {
    status: (RUN_STATUSES as readonly string[]).includes(status) ? status : '',
    page: pageOf(search.get('page')),
  };
}

export const runPath = (agentUid: string, runUid: string) => `/app/agents/${agentUid}/runs/${runUid}`;

const TRIGGER_LABELS: Record<string, string> = {
  manual: 'Manual',
  schedule: 'Schedule',
  email_received: 'When an email arrives',
};

/**
 * One agent (docs/console.md#agents): its definition and an edit form for what PATCH takes, starting a
 * run (or a sandbox run), and its runs newest first, polled while any is pending or running.
 */
export default function AgentPage({ uid }: { uid: string }) {
  const { client } = useSignedIn();
  const { search } = useLocation();
  const filters = readRunFilters(search);
  const [editing, setEditing] = useState(false);
  const [notice, setNotice] = useState<string>();
  // Counts runs started here: the list reads itself again at once rather than at its next poll.
  const [started, setStarted] = useState(0);
  const agent = useLoaded(`agent:${uid}`, async () => {
    const { data } = await client.GET('/api/agents/{agent_uid}', { params: { path: { agent_uid: uid } } });
    return data;
  });
  const current = agent.value.status === 'ready' ? agent.value.data : undefined;
  useDocumentTitle(current ? current.name : 'Agent');

  if (!current) {
    if (agent.value.status === 'loading') return <Loading label="Loading the agent…" />;
    const error = agent.value.status === 'error' ? agent.value : undefined;
    return (
      <div className="page">
        <Breadcrumb trail={[{ label: 'Agents', to: '/app/agents' }, { label: 'Agent' }]} />
        <h1>Agent</h1>
        {error?.code === 'not_found' ? (
          <Empty title="This agent does not exist, or it belongs to another organization." />
        ) : (
          <Problem
            title="The agent could not be loaded"
            message={error?.message ?? ''}
            onRetry={() => void agent.reload()}
          />
        )}
      </div>
    );
  }

  return (
    <div className="page page-wide agents">
      <Breadcrumb trail={[{ label: 'Agents', to: '/app/agents' }, { label: current.name }]} />
      <div aria-live="polite" className="live">
        {notice && <p className="announcement">{notice}</p>}
      </div>
      <header className="panel">
        <div className="detail-head">
          <h1>{current.name}</h1>
          <span className={`status-pill agent-${current.status}`}>{labelOf(current.status)}</span>
          <span className="muted">{labelOf(current.agent_type)} agent</span>
        </div>
        {current.description && <p className="agent-description">{current.description}</p>}
        <dl className="facts">
          <div>
            <dt>Runs</dt>
            <dd>{current.runs_count}</dd>
          </div>
          <div>
            <dt>Triggers</dt>
            <dd>{triggersSummary(current.triggers)}</dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>
              <Ago at={current.created_on} />
            </dd>
          </div>
          <div>
            <dt>Updated</dt>
            <dd>
              <Ago at={current.updated_on} />
            </dd>
          </div>
        </dl>
        {!editing && (
          <button
            type="button"
            className="button"
            onClick={() => {
              setNotice(undefined);
              setEditing(true);
            }}
          >
            Edit
          </button>
        )}
      </header>
      {editing ? (
        <EditAgent
          agent={current}
          onSaved={(next) => {
            agent.set(next);
            setEditing(false);
            setNotice(`Saved “${next.name}”.`);
          }}
          onCancel={() => setEditing(false)}
        />
      ) : (
        <Definition agent={current} />
      )}
      <StartRun
        agent={current}
        onStarted={(run) => {
          setNotice(
            `${run.attributes.sandbox ? 'Sandbox run' : 'Run'} started (${labelOf(run.attributes.status ?? 'pending').toLowerCase()}); it is listed under Runs.`,
          );
          setStarted((n) => n + 1);
          void agent.reload();
          // The new run is the newest: show the first page, unfiltered, so it appears.
          if (filters.status || filters.page > 1) navigate(`/app/agents/${current.uid}`);
        }}
      />
      <Runs agent={current} filters={filters} onNotice={setNotice} started={started} />
    </div>
  );
}

function Definition({ agent }: { agent: Agent }) {
  const config = agent.notification_config;
  const switches = config?.events ?? DEFAULT_SWITCHES;
  return (
    <section className="panel definition" aria-labelledby="definition-heading">
      <h2 id="definition-heading">Definition</h2>
      <h3>Instructions</h3>
      {agent.instructions ? (
        <p className="instructions">{agent.instructions}</p>
      ) : (
        <p className="muted">No instructions.</p>
      )}
      <h3>Tools</h3>
      {agent.tools.length === 0 ? (
        <p className="muted">No tools.</p>
      ) : (
        <ul className="plain-list">
          {agent.tools.map((tool, i) => (
            <li key={`${tool.type}:${i}`}>
              <code>{tool.type}</code>{' '}
              {tool.requires_approval ? (
                <span className="approval-badge">Requires approval</span>
              ) : (
                <span className="muted">acts without asking</span>
              )}
              {tool.description && <span className="cell-note muted">{tool.description}</span>}
            </li>
          ))}
        </ul>
      )}
      <h3>Triggers</h3>
      {agent.triggers.length === 0 ? (
        <p className="muted">None: it runs only when started (below, or through the API).</p>
      ) : (
        <ul className="plain-list">
          {agent.triggers.map((trigger, i) => (
            <li key={`${trigger.type}:${i}`}>
              {triggerText(trigger)}
              {trigger.type === 'schedule' && describeCron(trigger.cron ?? '') && (
                <span className="muted">
                  {' '}
                  (<code>{trigger.cron}</code>)
                </span>
              )}
              {trigger.description && <span className="cell-note muted">{trigger.description}</span>}
            </li>
          ))}
        </ul>
      )}
      <h3>Notifications</h3>
      <p>
        {config ? (
          <>
            Posted to the Slack channel <code>{config.chat_channel_id}</code>.
          </>
        ) : (
          <span className="muted">
            No channel: events switched on are recorded in Remit (each run shows them), not posted.
          </span>
        )}
      </p>
      <ul className="switches" aria-label="Events">
        {NOTIFICATION_EVENTS.map((event) => (
          <li key={event} className={switches[event] ? 'switch-on' : 'switch-off'}>
            {EVENT_LABELS[event]}: <strong>{switches[event] ? 'on' : 'off'}</strong>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** What PATCH /api/agents/{uid} takes; only the changed fields are sent. */
function EditAgent({
  agent,
  onSaved,
  onCancel,
}: {
  agent: Agent;
  onSaved: (agent: Agent) => void;
  onCancel: () => void;
}) {
  const { client } = useSignedIn();
  const [draft, setDraft] = useState<AgentDraft>(() => draftOf(agent));
  const [busy, setBusy] = useState(false);
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<string>();
  const id = useId();
  const patch = agentPatch(agent, draft);
  const dirty = Object.keys(patch).length > 0;
  const change = (values: Partial<AgentDraft>) => setDraft((d) => ({ ...d, ...values }));
  const described = (field: string, hint?: string) => {
    const ids = [hint, problems[field] ? `${id}-${field}-error` : undefined].filter(Boolean).join(' ');
    return {
      'aria-invalid': problems[field] ? (true as const) : undefined,
      'aria-describedby': ids || undefined,
    };
  };
  const fieldError = (field: string) =>
    problems[field] && (
      <p className="field-error" id={`${id}-${field}-error`}>
        {problems[field]}
      </p>
    );

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = draftProblems(draft);
    setProblems(found);
    if (Object.keys(found).length > 0) {
      setProblem('Some fields need another look (marked below).');
      return;
    }
    if (!dirty) return;
    setBusy(true);
    setProblem(undefined);
    try {
      const { data } = await client.PATCH('/api/agents/{agent_uid}', {
        params: { path: { agent_uid: agent.uid } },
        body: patch,
      });
      onSaved(data);
    } catch (error) {
      // Slack's answer about the channel (the bot is not in it, it does not exist) belongs to that field.
      const channelError =
        error instanceof RemitApiError &&
        error.errors.find((e) => e.field === 'notification_config.chat_channel_id');
      if (channelError) {
        setProblems({ channel: `Slack cannot be used with this channel: ${channelError.message}.` });
        setProblem('The notification channel was refused; nothing was saved.');
      } else {
        setProblem(problemOf(error));
      }
      setBusy(false);
    }
  };

  const setTrigger = (i: number, value: AgentDraft['triggers'][number]) =>
    change({ triggers: draft.triggers.map((t, j) => (j === i ? value : t)) });
  const setTool = (i: number, value: AgentDraft['tools'][number]) =>
    change({ tools: draft.tools.map((t, j) => (j === i ? value : t)) });
  const hasChannel = draft.channel.trim() !== '';

  return (
    <section className="panel" aria-labelledby="edit-heading">
      <h2 id="edit-heading">Edit {agent.name}</h2>
      <form onSubmit={(event) => void submit(event)} noValidate className="agent-form">
        <div className="form-row">
          <div className="field">
            <label htmlFor="agent-name">Name</label>
            <input
              id="agent-name"
              value={draft.name}
              maxLength={128}
              onChange={(event) => change({ name: event.target.value })}
              {...described('name')}
            />
            {fieldError('name')}
          </div>
          <div className="field">
            <label htmlFor="agent-status">Status</label>
            <select
              id="agent-status"
              value={draft.status}
              onChange={(event) => change({ status: event.target.value })}
              {...described('status', `${id}-status-hint`)}
            >
              <LabelledOptions values={AGENT_STATUSES} />
            </select>
            <p className="field-hint" id={`${id}-status-hint`}>
              Only an active agent runs from its triggers, or for real when started.
            </p>
          </div>
        </div>
        <div className="field">
          <label htmlFor="agent-description">Description</label>
          <input
            id="agent-description"
            value={draft.description}
            maxLength={10_000}
            onChange={(event) => change({ description: event.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor="agent-instructions">Instructions</label>
          <textarea
            id="agent-instructions"
            rows={8}
            value={draft.instructions}
            maxLength={100_000}
            onChange={(event) => change({ instructions: event.target.value })}
            aria-describedby={`${id}-instructions-hint`}
          />
          <p className="field-hint" id={`${id}-instructions-hint`}>
            A change makes a new version; each run keeps the version it ran with.
          </p>
        </div>

        <fieldset className="editor">
          <legend>Triggers</legend>
          {draft.triggers.length === 0 && <p className="muted">None: it runs only when started.</p>}
          {draft.triggers.map((trigger, i) => {
            const words = trigger.type === 'schedule' ? describeCron(trigger.cron ?? '') : undefined;
            return (
              <div className="editor-row" key={i}>
                <div className="field">
                  <label htmlFor={`trigger-${i}-type`}>Trigger {i + 1}</label>
                  <select
                    id={`trigger-${i}-type`}
                    value={trigger.type}
                    onChange={(event) =>
                      setTrigger(i, {
                        ...trigger,
                        type: event.target.value,
                        ...(event.target.value === 'schedule' && !trigger.cron ? { cron: '0 9 * * *' } : {}),
                      })
                    }
                  >
                    {TRIGGER_TYPES.map((type) => (
                      <option key={type} value={type}>
                        {TRIGGER_LABELS[type]}
                      </option>
                    ))}
                  </select>
                </div>
                {trigger.type === 'schedule' && (
                  <div className="field">
                    <label htmlFor={`trigger-${i}-cron`}>Trigger {i + 1} cron (UTC)</label>
                    <input
                      id={`trigger-${i}-cron`}
                      className="code"
                      value={trigger.cron ?? ''}
                      maxLength={100}
                      onChange={(event) => setTrigger(i, { ...trigger, cron: event.target.value })}
                      {...described(`trigger-${i}`, `${id}-trigger-${i}-hint`)}
                    />
                    <p className="field-hint" id={`${id}-trigger-${i}-hint`}>
                      {words ? `Runs ${words}.` : 'minute hour day month weekday, in UTC: 0 9 * * 1-5'}
                    </p>
                    {fieldError(`trigger-${i}`)}
                  </div>
                )}
                <button
                  type="button"
                  className="link-button"
                  onClick={() => change({ triggers: draft.triggers.filter((_, j) => j !== i) })}
                >
                  Remove<span className="visually-hidden"> trigger {i + 1}</span>
                </button>
              </div>
            );
          })}
          <button
            type="button"
            className="button"
            onClick={() => change({ triggers: [...draft.triggers, { type: 'manual' }] })}
          >
            Add trigger
          </button>
        </fieldset>

        <fieldset className="editor">
          <legend>Tools</legend>
          {draft.tools.length === 0 && <p className="muted">No tools.</p>}
          {draft.tools.map((tool, i) => (
            <div className="editor-row" key={i}>
              <div className="field">
                <label htmlFor={`tool-${i}-type`}>Tool {i + 1}</label>
                <input
                  id={`tool-${i}-type`}
                  className="code"
                  value={tool.type}
                  maxLength={64}
                  onChange={(event) => setTool(i, { ...tool, type: event.target.value })}
                  {...described(`tool-${i}`)}
                />
                {fieldError(`tool-${i}`)}
              </div>
              <div className="field">
                <label className="checkbox" htmlFor={`tool-${i}-approval`}>
                  <input
                    id={`tool-${i}-approval`}
                    type="checkbox"
                    checked={tool.requires_approval}
                    onChange={(event) => setTool(i, { ...tool, requires_approval: event.target.checked })}
                  />
                  <span className="visually-hidden">Tool {i + 1} </span>Requires approval
                </label>
              </div>
              <button
                type="button"
                className="link-button"
                onClick={() => change({ tools: draft.tools.filter((_, j) => j !== i) })}
              >
                Remove<span className="visually-hidden"> tool {i + 1}</span>
              </button>
            </div>
          ))}
          <button
            type="button"
            className="button"
            onClick={() =>
              change({ tools: [...draft.tools, { type: 'send_email', requires_approval: true }] })
            }
          >
            Add tool
          </button>
        </fieldset>

        <fieldset className="editor">
          <legend>Notifications</legend>
          <div className="field">
            <label htmlFor="agent-channel">Slack channel ID</label>
            <input
              id="agent-channel"
              className="code"
              value={draft.channel}
              maxLength={255}
              placeholder="C0123456789"
              onChange={(event) => change({ channel: event.target.value })}
              {...described('channel', `${id}-channel-hint`)}
            />
            <p className="field-hint" id={`${id}-channel-hint`}>
              Remit&apos;s Slack bot must already be in the channel. Empty: nothing is posted; events are
              recorded in Remit with the default switches.
            </p>
            {fieldError('channel')}
          </div>
          <div className="switch-grid" role="group" aria-label="Events to post">
            {NOTIFICATION_EVENTS.map((event) => (
              <label key={event} className="checkbox" htmlFor={`event-${event}`}>
                <input
                  id={`event-${event}`}
                  type="checkbox"
                  checked={draft.events[event]}
                  disabled={!hasChannel}
                  onChange={(e) => change({ events: { ...draft.events, [event]: e.target.checked } })}
                />
                {EVENT_LABELS[event]}
              </label>
            ))}
          </div>
        </fieldset>

        <div aria-live="polite">
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
        </div>
        <div className="button-row">
          <button type="submit" className="button button-primary" disabled={busy || !dirty}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
          <button type="button" className="button" onClick={onCancel} disabled={busy}>
            Discard
          </button>
        </div>
      </form>
    </section>
  );
}

/** A run, or a sandbox run; a real run of an agent that is not active is 409, said in words. */
function StartRun({ agent, onStarted }: { agent: Agent; onStarted: (run: AgentRun) => void }) {
  const { client } = useSignedIn();
  const [sandbox, setSandbox] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const hint = useId();
  const active = agent.status === 'active';

  const start = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      const { data } = await client.POST('/api/agents/{agent_uid}/runs', {
        params: { path: { agent_uid: agent.uid } },
        body: { trigger_type: 'manual', sandbox },
      });
      onStarted(data);
    } catch (error) {
      setProblem(
        codeOf(error) === 'invalid_state'
          ? `Not started: ${agent.name} is ${agent.status}, and only an active agent runs for real. Tick Sandbox to try it out without acting, or set its status to Active with Edit.`
          : problemOf(error),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="start-heading">
      <h2 id="start-heading">Start a run</h2>
      <form onSubmit={(event) => void start(event)} className="start-run">
        <label className="checkbox" htmlFor="run-sandbox">
          <input
            id="run-sandbox"
            type="checkbox"
            checked={sandbox}
            onChange={(event) => setSandbox(event.target.checked)}
            aria-describedby={hint}
          />
          Sandbox
        </label>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Starting…' : 'Start run'}
        </button>
      </form>
      <p className="field-hint" id={hint}>
        A sandbox run reads and decides what a real run would, but sends nothing and raises no approval; it
        works in any status.
        {!active && !sandbox && ` ${agent.name} is ${agent.status}: a real run needs it active.`}
      </p>
      <div aria-live="polite">
        {problem && (
          <p className="form-problem" role="alert">
            {problem}
          </p>
        )}
      </div>
    </section>
  );
}

/** GET /api/agents/{uid}/activities, newest first; polled while a run on the page is pending or running. */
function Runs({
  agent,
  filters,
  onNotice,
  started,
}: {
  agent: Agent;
  filters: RunFilters;
  onNotice: (message: string) => void;
  started: number;
}) {
  const { client } = useSignedIn();
  const seesTokens = useSeesTokenUsage();
  const fields = runFields(seesTokens);
  const runs = useLoaded(`runs:${agent.uid}:${filters.status}:${filters.page}:${fields}`, async () => {
    const { data } = await client.GET('/api/agents/{agent_uid}/activities', {
      params: {
        path: { agent_uid: agent.uid },
        query: {
          sort: '-created_on',
          page: filters.page,
          per_page: RUNS_PER_PAGE,
          'fields[agent-runs]': fields,
          ...(filters.status ? { status: filters.status } : {}),
        },
      },
    });
    return data;
  });
  const list = runs.value;
  const anyActive = list.status === 'ready' && list.data.items.some((r) => isRunActive(r.attributes.status));
  usePolling(anyActive, runs.reload);
  const { reload } = runs;
  useEffect(() => {
    if (started > 0) void reload();
  }, [started, reload]);
  const { cancel, busy } = useCancelRun(
    useCallback(
      (message: string) => {
        onNotice(message);
        void reload();
      },
      [onNotice, reload],
    ),
  );
  const filtered = filters.status !== '';
  const base = `/app/agents/${agent.uid}`;

  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const status = String(new FormData(event.currentTarget).get('status') ?? '');
    navigate(`${base}${writeQuery({ status, page: 1 }, RUN_DEFAULTS)}`);
  };

  return (
    <section aria-labelledby="runs-heading" className="runs">
      <h2 id="runs-heading">Runs</h2>
      <form
        key={`${filters.status}`}
        className="filters"
        onSubmit={apply}
        role="search"
        aria-label="Filter runs"
      >
        <div className="field">
          <label htmlFor="runs-status">Run status</label>
          <select id="runs-status" name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            <LabelledOptions values={RUN_STATUSES} />
          </select>
        </div>
        <FilterActions filtered={filtered} clearTo={base} />
      </form>
      {list.status === 'loading' && <Loading label="Loading runs…" />}
      {list.status === 'error' && (
        <Problem
          title="The runs could not be loaded"
          message={list.message}
          onRetry={() => void runs.reload()}
        />
      )}
      {list.status === 'ready' && list.problem && <p className="muted">{list.problem}</p>}
      {list.status === 'ready' && list.data.items.length === 0 && (
        <Empty title={filtered ? 'No run has this status' : 'No runs yet'}>
          {filtered ? (
            <p>
              <Link to={base}>Clear the filter</Link>
            </p>
          ) : (
            <p>Start one above: a sandbox run tries the agent out without acting.</p>
          )}
        </Empty>
      )}
      {list.status === 'ready' && list.data.items.length > 0 && (
        <>
          <TableBox label="Runs">
            <table className="data-table runs-table">
              <thead>
                <tr>
                  <th scope="col">Requested</th>
                  <th scope="col">Status</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Started</th>
                  <th scope="col">Completed</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Outcome</th>
                  {seesTokens && (
                    <th scope="col" className="numeric">
                      Tokens
                    </th>
                  )}
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((run) => {
                  const a = run.attributes;
                  const requested = a.created_on ? formatRunTime(a.created_on) : run.id;
                  return (
                    <tr key={run.id} data-run={run.id}>
                      <td>
                        <Link to={runPath(agent.uid, run.id)}>{requested}</Link>
                      </td>
                      <td>
                        <RunStatus run={a} />
                      </td>
                      <td>{triggerTypeLabel(a.trigger_type)}</td>
                      <td>{at(a.started_on, a.created_on)}</td>
                      <td>{at(a.completed_on, a.created_on)}</td>
                      <td>{runDuration(a) ?? '—'}</td>
                      <td className="wrap run-outcome">
                        {a.error ? (
                          <span className="run-error">{a.error}</span>
                        ) : (
                          <span>{summaryOf(a.outcome)}</span>
                        )}
                      </td>
                      {seesTokens && (
                        <td className="numeric">
                          <TokenUsage usage={a.token_usage} />
                        </td>
                      )}
                      <td>
                        {isRunActive(a.status) && (
                          <button
                            type="button"
                            className="button button-small"
                            disabled={busy === run.id}
                            onClick={() => void cancel(run.id)}
                            aria-label={`Cancel the run requested ${requested}`}
                          >
                            Cancel
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableBox>
          <Pager
            meta={list.data._meta}
            noun="runs"
            hrefOf={(page) => `${base}${writeQuery({ ...filters, page }, RUN_DEFAULTS)}`}
          />
        </>
      )}
    </section>
  );
}

/** A start or end in the runs table: the time alone on the day the run was requested. */
function at(iso: string | null | undefined, requested: string | undefined) {
  if (!iso) return '—';
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      {requested ? formatRunInstant(iso, requested) : formatRunTime(iso)}
    </time>
  );
}

function summaryOf(outcome: AgentRun['attributes']['outcome']): string {
  const summary = outcome?.summary;
  return typeof summary === 'string' && summary ? summary : '—';
}
