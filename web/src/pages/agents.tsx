import { Ago } from '../components/ago.tsx';
import { useId, useState, type FormEvent } from 'react';
import { problemOf } from '../api.ts';
import { AGENT_STATUSES, AGENT_TYPES, triggersSummary } from '../agents-view.ts';
import { FilterActions, LabelledOptions, ListStates, Pager, TableBox } from '../components/list-parts.tsx';
import { useDocumentTitle } from '../components/states.tsx';
import { labelOf, pageOf, writeQuery } from '../list-query.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import './agents.css';

const PER_PAGE = 25;

interface AgentFilters {
  status: string;
  page: number;
}
const DEFAULTS: AgentFilters = { status: '', page: 1 };

function readFilters(search: URLSearchParams): AgentFilters {
  const status = search.get('status') ?? '';
  return {
    status: (AGENT_STATUSES as readonly string[]).includes(status) ? status : '',
    page: pageOf(search.get('page')),
  };
}

/** The organization's agents (GET /api/agents): status filter and pages in the address bar; New agent. */
export default function AgentsPage() {
  const { client, organization } = useSignedIn();
  const { search } = useLocation();
  const filters = readFilters(search);
  const query = writeQuery(filters, DEFAULTS);
  const [attempt, setAttempt] = useState(0);
  const [creating, setCreating] = useState(false);
  useDocumentTitle('Agents');
  const list = useResource(`agents:${organization.organization_uid}${query}:${attempt}`, async () => {
    const { data } = await client.GET('/api/agents', {
      params: {
        query: {
          organization_uid: organization.organization_uid,
          per_page: PER_PAGE,
          page: filters.page,
          ...(filters.status ? { status: filters.status as 'draft' } : {}),
        },
      },
    });
    return data;
  });
  const filtered = filters.status !== '';

  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const status = String(new FormData(event.currentTarget).get('status') ?? '');
    navigate(`/app/agents${writeQuery({ status, page: 1 }, DEFAULTS)}`);
  };

  return (
    <div className="page page-wide agents">
      <div className="page-head">
        <h1>Agents</h1>
        {!creating && (
          <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
            New agent
          </button>
        )}
      </div>
      <p className="muted">
        Automated workers of {organization.organization_name}: what each is told, what starts it, and every
        run it made.
      </p>
      {creating && <NewAgent onClose={() => setCreating(false)} />}
      <form key={query} className="filters" onSubmit={apply} role="search" aria-label="Filter agents">
        <div className="field">
          <label htmlFor="agents-status">Status</label>
          <select id="agents-status" name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            <LabelledOptions values={AGENT_STATUSES} />
          </select>
        </div>
        <FilterActions filtered={filtered} clearTo="/app/agents" />
      </form>
      <ListStates
        list={list}
        noun="agents"
        emptyTitle={filtered ? 'No agent has this status' : 'No agents yet'}
        filtered={filtered}
        clearTo="/app/agents"
        onRetry={() => setAttempt((n) => n + 1)}
      />
      {list.status === 'ready' && list.data.items.length === 0 && !filtered && (
        <p className="muted centered">
          <strong>New agent</strong> creates one; the built-in <em>collections</em> agent chases overdue
          invoices.
        </p>
      )}
      {list.status === 'ready' && list.data.items.length > 0 && (
        <>
          <TableBox label="Agents">
            <table className="data-table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="numeric">
                    Runs
                  </th>
                  <th scope="col">Triggers</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((agent) => (
                  <tr key={agent.uid}>
                    <td>
                      <Link to={`/app/agents/${agent.uid}`}>{agent.name}</Link>
                    </td>
                    <td>{labelOf(agent.agent_type)}</td>
                    <td>
                      <span className={`status-pill agent-${agent.status}`}>{labelOf(agent.status)}</span>
                    </td>
                    <td className="numeric">{agent.runs_count}</td>
                    <td className="wrap">{triggersSummary(agent.triggers)}</td>
                    <td>
                      <Ago at={agent.updated_on} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableBox>
          <Pager
            meta={list.data._meta}
            noun="agents"
            hrefOf={(page) => `/app/agents${writeQuery({ ...filters, page }, DEFAULTS)}`}
          />
        </>
      )}
    </div>
  );
}

/**
 * Name, type, description and instructions → POST /api/agents (a draft), then the agent's page, where
 * triggers, tools and notifications are set. Any member may create agents (docs/authentication.md).
 */
function NewAgent({ onClose }: { onClose: () => void }) {
  const { client, organization } = useSignedIn();
  const [name, setName] = useState('');
  const [agentType, setAgentType] = useState<string>('custom');
  const [description, setDescription] = useState('');
  const [instructions, setInstructions] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const nameError = useId();
  const typeHint = useId();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim()) {
      setProblem('An agent needs a name.');
      return;
    }
    setBusy(true);
    setProblem(undefined);
    try {
      const { data } = await client.POST('/api/agents', {
        body: {
          organization_uid: organization.organization_uid,
          name: name.trim(),
          agent_type: agentType,
          description,
          instructions,
        },
      });
      navigate(`/app/agents/${data.uid}`);
    } catch (error) {
      setProblem(problemOf(error));
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="new-agent-heading">
      <h2 id="new-agent-heading">New agent</h2>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <div className="form-row">
          <div className="field">
            <label htmlFor="new-agent-name">Name</label>
            <input
              id="new-agent-name"
              value={name}
              maxLength={128}
              autoFocus
              onChange={(event) => setName(event.target.value)}
              aria-invalid={problem && !name.trim() ? true : undefined}
              aria-describedby={problem && !name.trim() ? nameError : undefined}
            />
          </div>
          <div className="field">
            <label htmlFor="new-agent-type">Type</label>
            <select
              id="new-agent-type"
              value={agentType}
              onChange={(event) => setAgentType(event.target.value)}
              aria-describedby={typeHint}
            >
              <LabelledOptions values={AGENT_TYPES} />
            </select>
          </div>
        </div>
        <p id={typeHint} className="field-hint">
          {agentType === 'collections'
            ? 'The built-in collections agent: it sweeps overdue invoices and asks for approval before each reminder.'
            : 'A custom agent is run by an outside runtime through the API; Remit keeps its definition and runs.'}
        </p>
        <div className="field">
          <label htmlFor="new-agent-description">Description</label>
          <input
            id="new-agent-description"
            value={description}
            maxLength={10_000}
            onChange={(event) => setDescription(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="new-agent-instructions">Instructions</label>
          <textarea
            id="new-agent-instructions"
            rows={5}
            value={instructions}
            maxLength={100_000}
            onChange={(event) => setInstructions(event.target.value)}
          />
        </div>
        <div aria-live="polite">
          {problem && (
            <p className="form-problem" role="alert" id={nameError}>
              {problem}
            </p>
          )}
        </div>
        <p className="field-hint">It starts as a draft: activate it on its page once it is set up.</p>
        <div className="button-row">
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create agent'}
          </button>
          <button type="button" className="button" onClick={onClose} disabled={busy}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}
