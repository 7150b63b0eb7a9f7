import { useCallback, useEffect, useId, useState, type FormEvent } from 'react';
import type { components } from '@remit/client';
import { problemOf, RemitApiError } from '../../api.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../../components/states.tsx';
import { Link } from '../../router.tsx';
import { useSignedIn } from '../../session.tsx';
import {
  fieldErrorsOf,
  isAdmin,
  useOrganizationSettings,
  type Loaded,
  type OrganizationSettings,
} from './organization-data.ts';
import '../../tables.css';
import './organization-settings.css';

type Agent = components['schemas']['Agent'];

const AGENTS_PAGE = 100;

/**
 * `/app/settings/slack`: the organization's default Slack channel (docs/agents.md#the-organizations-default-channel),
 * where agents without a channel of their own post, and the agents that have one.
 */
export default function SlackSection() {
  useDocumentTitle('Slack · Settings');
  const { organization } = useSignedIn();
  const admin = isAdmin(organization.role);
  const { state, reload, update } = useOrganizationSettings();
  return (
    <section aria-labelledby="slack-heading">
      <h1 id="slack-heading">Slack</h1>
      <p className="muted">
        Agents tell people what they do in a Slack channel: approvals they need, reminders sent, runs that
        ended or failed. An agent with a channel of its own posts there; every other agent posts to the
        organization’s default channel.
      </p>
      {state.status === 'loading' && <Loading label="Loading the Slack settings…" />}
      {state.status === 'error' && (
        <Problem
          title="The Slack settings could not be loaded"
          message={state.message}
          onRetry={() => void reload()}
        />
      )}
      {state.status === 'ready' && (
        <>
          {!state.data.slack_configured && (
            <div className="form-notice" role="note">
              <p>
                <strong>Slack is not connected on this server</strong>: set <code>SLACK_BOT_TOKEN</code> (see
                docs/configuration.md). Until then, notifications are kept in Remit and not posted, and a
                channel is saved without Slack checking that the bot can post there.
              </p>
            </div>
          )}
          <DefaultChannel settings={state.data} admin={admin} update={update} />
        </>
      )}
      <AgentChannels />
    </section>
  );
}

function DefaultChannel({
  settings,
  admin,
  update,
}: {
  settings: OrganizationSettings;
  admin: boolean;
  update: (changes: { slack_channel_id: string | null }) => Promise<OrganizationSettings>;
}) {
  const id = useId();
  const [channel, setChannel] = useState(settings.slack_channel_id ?? '');
  const [busy, setBusy] = useState<'save' | 'clear'>();
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const typed = channel.trim();
  const saved = settings.slack_channel_id;

  const send = async (value: string | null) => {
    setBusy(value === null ? 'clear' : 'save');
    setError(undefined);
    setNotice(undefined);
    try {
      const result = await update({ slack_channel_id: value });
      setChannel(result.slack_channel_id ?? '');
      if (result.slack_channel_id === null) {
        setNotice(
          'Cleared: agents without a channel of their own now post nowhere (their notifications are only kept in Remit).',
        );
      } else if (result.slack_configured) {
        setNotice(`Saved: agents without a channel of their own post to ${result.slack_channel_id}.`);
      } else {
        setNotice(
          `Saved ${result.slack_channel_id} without a check: Slack is not connected on this server, so nothing is posted yet.`,
        );
      }
    } catch (caught) {
      setError(explain(caught));
      window.setTimeout(() => document.getElementById(`${id}-channel`)?.focus(), 0);
    } finally {
      setBusy(undefined);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!typed) {
      setError('Enter a channel ID, such as C0123ABCD, or clear the channel.');
      return;
    }
    void send(typed);
  };

  return (
    <section className="panel" aria-labelledby="default-channel-heading">
      <h2 id="default-channel-heading">Default channel</h2>
      {admin ? (
        <form className="settings-form" onSubmit={submit} noValidate>
          <div className="field">
            <label htmlFor={`${id}-channel`}>Channel ID</label>
            <p className="field-hint" id={`${id}-hint`}>
              In Slack: the channel’s name → About, at the bottom (it looks like C0123ABCD). Invite Remit’s
              bot to the channel first (<code>/invite @bot-name</code>)
              {settings.slack_configured
                ? ': Remit asks Slack whether the bot can post there before saving.'
                : '.'}
            </p>
            <input
              id={`${id}-channel`}
              className="channel-input"
              value={channel}
              maxLength={255}
              spellCheck={false}
              autoComplete="off"
              placeholder="C0123ABCD"
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? `${id}-hint ${id}-error` : `${id}-hint`}
              onChange={(event) => setChannel(event.target.value)}
            />
            {error && (
              <p className="field-error" id={`${id}-error`} role="alert">
                {error}
              </p>
            )}
          </div>
          <div aria-live="polite">{notice && <p className="announcement">{notice}</p>}</div>
          <div className="form-actions">
            <button
              type="submit"
              className="button button-primary"
              disabled={busy !== undefined || typed === (saved ?? '')}
            >
              {busy === 'save' ? 'Saving…' : 'Save'}
            </button>
            <button
              type="button"
              className="button"
              disabled={busy !== undefined || saved === null}
              onClick={() => void send(null)}
            >
              {busy === 'clear' ? 'Clearing…' : 'Clear'}
            </button>
          </div>
        </form>
      ) : (
        <>
          <p>
            {saved ? (
              <>
                Agents without a channel of their own post to <code>{saved}</code>.
              </>
            ) : (
              'No default channel: agents without a channel of their own post nowhere.'
            )}
          </p>
          <p className="form-notice">Only admins change the default channel.</p>
        </>
      )}
    </section>
  );
}

/** The refusal in words: Slack's reason (422), or that Slack could not be asked (502, 504). */
function explain(error: unknown): string {
  if (error instanceof RemitApiError) {
    const field = fieldErrorsOf(error).slack_channel_id;
    if (error.code === 'validation_failed' && field) {
      if (field.startsWith('Cannot post there: '))
        return `Slack says the bot cannot post there: ${field.slice(19)}.`;
      return 'A channel ID has 1 to 255 characters, such as C0123ABCD.';
    }
    if (error.code === 'bad_gateway' || error.code === 'gateway_timeout') {
      return `Slack could not be asked whether the bot can post there, so nothing was saved. Try again in a moment. (${error.message})`;
    }
  }
  return problemOf(error);
}

/** Agents that post to a channel of their own, from `GET /api/agents`. */
function AgentChannels() {
  const { client, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const [state, setState] = useState<Loaded<{ items: Agent[]; total: number }>>({ status: 'loading' });
  const load = useCallback(async () => {
    setState({ status: 'loading' });
    try {
      const { data } = await client.GET('/api/agents', {
        params: { query: { organization_uid: organizationUid, per_page: AGENTS_PAGE } },
      });
      setState({ status: 'ready', data: { items: data.items, total: data._meta.total_items } });
    } catch (error) {
      setState({ status: 'error', message: problemOf(error), code: undefined });
    }
  }, [client, organizationUid]);
  useEffect(() => {
    void load();
  }, [load]);

  let body;
  if (state.status === 'loading') body = <Loading label="Loading the agents…" />;
  else if (state.status === 'error')
    body = (
      <Problem title="The agents could not be loaded" message={state.message} onRetry={() => void load()} />
    );
  else {
    const own = state.data.items.filter((agent) => agent.notification_config);
    const others = state.data.items.length - own.length;
    body = (
      <>
        {own.length === 0 ? (
          <Empty title="No agent has a channel of its own">
            <p>
              {state.data.items.length === 0
                ? 'There are no agents yet.'
                : 'Every agent posts to the default channel.'}
            </p>
          </Empty>
        ) : (
          <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="agent-channels-heading">
            <table className="table" aria-labelledby="agent-channels-heading">
              <thead>
                <tr>
                  <th scope="col">Agent</th>
                  <th scope="col">Channel</th>
                  <th scope="col" className="wide-only">
                    Status
                  </th>
                </tr>
              </thead>
              <tbody>
                {own.map((agent) => (
                  <tr key={agent.uid} data-uid={agent.uid}>
                    <th scope="row">
                      <Link to={`/app/agents/${agent.uid}`}>{agent.name}</Link>
                    </th>
                    <td className="cell-code">{agent.notification_config!.chat_channel_id}</td>
                    <td className="wide-only">
                      {agent.status.charAt(0).toUpperCase() + agent.status.slice(1)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {own.length > 0 && others > 0 && (
          <p className="muted">
            {others} other {others === 1 ? 'agent posts' : 'agents post'} to the default channel.
          </p>
        )}
        {state.data.total > state.data.items.length && (
          <p className="muted">
            Of the newest {state.data.items.length} of {state.data.total} agents.
          </p>
        )}
      </>
    );
  }
  return (
    <section aria-labelledby="agent-channels-heading">
      <h2 id="agent-channels-heading">Agents with a channel of their own</h2>
      <p className="muted">Their own channel wins over the default; it is changed on the agent’s page.</p>
      {body}
    </section>
  );
}
