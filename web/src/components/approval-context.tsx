import { Ago } from './ago.tsx';
import type { Message, RemitClient, WorkTask } from '../api.ts';
import { approversText, countText, formatDeadline, isPastDeadline } from '../approval-policy.ts';
import { formatDate, formatDateTime, formatMoney } from '../format.ts';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The invoices an approval is about: its context entities, and the invoice its action names. */
export function invoiceUidsOf(task: WorkTask): string[] {
  const uids = task.context_entities.filter((e) => e.entity_type === 'invoice').map((e) => e.entity_uid);
  const named = task.tool_args?.invoice_uid;
  if (typeof named === 'string' && UUID.test(named)) uids.push(named);
  return [...new Set(uids)];
}

/** What the decision is about: the invoices (amounts, days overdue, the client) and the latest emails. */
export function ApprovalContext({ task }: { task: WorkTask }) {
  const invoiceUids = invoiceUidsOf(task);
  const parties = task.context_entities.filter((e) => e.entity_type === 'party');
  if (invoiceUids.length === 0 && parties.length === 0) {
    return (
      <section className="panel" aria-labelledby="context-heading">
        <h3 id="context-heading">Context</h3>
        <p className="muted">The agent linked no invoice or party to this approval.</p>
      </section>
    );
  }
  return (
    <section className="panel" aria-labelledby="context-heading">
      <h3 id="context-heading">Context</h3>
      {invoiceUids.map((uid) => (
        <InvoiceCard key={uid} uid={uid} />
      ))}
      {parties.map((party) => (
        <p key={party.entity_uid}>
          Party: <strong>{party.name || 'unnamed'}</strong>
        </p>
      ))}
    </section>
  );
}

function InvoiceCard({ uid }: { uid: string }) {
  const { client } = useSignedIn();
  const invoice = useResource(
    `invoice:${uid}`,
    async () => (await client.GET('/api/invoices/{uid}', { params: { path: { uid } } })).data,
  );
  if (invoice.status === 'loading') return <p className="muted">Loading the invoice…</p>;
  if (invoice.status === 'error') {
    return (
      <p className="muted">
        {invoice.code === 'not_found'
          ? 'An invoice this approval names is not visible to you (or was deleted).'
          : `The invoice could not be loaded: ${invoice.message}`}
      </p>
    );
  }
  const data = invoice.data;
  const counterparty =
    data.invoice_type === 'ACCOUNTS_RECEIVABLE' ? data.parties.client : data.parties.service_provider;
  return (
    <div className="invoice-card">
      <div className="invoice-head">
        <p className="invoice-number">
          Invoice <strong>{data.invoice_number}</strong>
          <span className="status-pill">{data.status}</span>
        </p>
        <p className="invoice-party">
          {data.invoice_type === 'ACCOUNTS_RECEIVABLE' ? 'Client' : 'Vendor'}:{' '}
          <strong>{counterparty?.name ?? 'none'}</strong>
          {counterparty?.billing_contact?.email && (
            <span className="muted"> · {counterparty.billing_contact.email}</span>
          )}
        </p>
      </div>
      <dl className="facts">
        <div>
          <dt>Amount due</dt>
          <dd className="amount">{formatMoney(data.amount_remaining_cents, data.currency)}</dd>
        </div>
        <div>
          <dt>Total</dt>
          <dd>{formatMoney(data.total_cents, data.currency)}</dd>
        </div>
        <div>
          <dt>Due</dt>
          <dd>{data.due_date ? formatDate(data.due_date) : 'no due date'}</dd>
        </div>
        <div>
          <dt>Overdue</dt>
          <dd className={data.overdue_days > 0 ? 'overdue' : undefined}>
            {data.overdue_days > 0
              ? `${data.overdue_days} ${data.overdue_days === 1 ? 'day' : 'days'}`
              : 'not overdue'}
          </dd>
        </div>
      </dl>
      {counterparty && <LastEmails partyUid={counterparty.uid} />}
    </div>
  );
}

async function lastMessages(client: RemitClient, partyUid: string): Promise<Message[]> {
  const { data } = await client.GET('/api/conversations', {
    params: { query: { party_uid: partyUid, per_page: 1 } },
  });
  const latest = data.items[0];
  if (!latest) return [];
  const conversation = await client.GET('/api/conversations/{conversation_uid}', {
    params: { path: { conversation_uid: latest.uid } },
  });
  return (conversation.data.messages ?? []).slice(-3).reverse();
}

function LastEmails({ partyUid }: { partyUid: string }) {
  const { client } = useSignedIn();
  const messages = useResource(`emails:${partyUid}`, () => lastMessages(client, partyUid));
  if (messages.status === 'loading') return <p className="muted">Loading the latest emails…</p>;
  if (messages.status === 'error')
    return <p className="muted">The latest emails could not be loaded: {messages.message}</p>;
  if (messages.data.length === 0) return <p className="muted">No emails with this party yet.</p>;
  return (
    <details className="emails">
      <summary>Latest emails ({messages.data.length})</summary>
      <ol>
        {messages.data.map((message) => (
          <li key={message.uid}>
            <p className="email-meta">
              {message.direction === 'inbound'
                ? `From ${message.from_email}`
                : `Sent to ${message.to.join(', ')}`}{' '}
              · <time dateTime={message.created_at}>{formatDateTime(message.created_at)}</time>
            </p>
            <p className="email-subject">{message.subject}</p>
            <p className="email-body">{message.body_text.slice(0, 400)}</p>
          </li>
        ))}
      </ol>
    </details>
  );
}

/**
 * Who may decide. Without an approval policy, the API's rule (docs/authentication.md, the role matrix):
 * any member of the organization, admin or member, and the first decision counts; admins, who may list
 * the members, see their names. Under a policy (docs/approvals.md), its rule as the approval was raised:
 * who, how many and who so far, whether the initiator is barred, the deadline and any escalation.
 */
export function Deciders({ task }: { task: WorkTask }) {
  const { client, organization, user } = useSignedIn();
  const isAdmin = organization.role === 'admin';
  const policy = task.approval_policy;
  const members = useResource(
    isAdmin && !policy ? `members:${organization.organization_uid}` : null,
    async () =>
      (
        await client.GET('/api/organization/{organization_uid}/members', {
          params: { path: { organization_uid: organization.organization_uid }, query: { per_page: 100 } },
        })
      ).data,
  );
  const assignee = task.assign_to
    ? task.assign_to.type === 'user'
      ? task.assign_to.full_name
      : `the agent ${task.assign_to.name ?? ''}`
    : undefined;
  if (policy) {
    const count = countText(task);
    return (
      <section className="panel" aria-labelledby="deciders-heading">
        <h3 id="deciders-heading">Who can decide</h3>
        <p>
          Policy <strong>{policy.name}</strong>: {approversText(policy)}
          {policy.required_approvals > 1 ? `, ${policy.required_approvals} different people` : ''}.
          {assignee ? ` It is assigned to ${assignee}.` : ''}
        </p>
        <ul className="policy-rules">
          {count && <li>{count}</li>}
          {policy.forbid_initiator && (
            <li>
              {policy.initiator_user_uid === user.uid
                ? 'You started this run: someone else must approve it.'
                : 'The person who started this run cannot approve it.'}
            </li>
          )}
          {task.expires_at && (
            <li>
              {isPastDeadline(task) ? 'Expired' : 'Expires'}{' '}
              <time dateTime={task.expires_at} title={formatDateTime(task.expires_at)}>
                {formatDeadline(task.expires_at)}
              </time>{' '}
              ({formatDateTime(task.expires_at)}); then the action will not happen.
            </li>
          )}
          {task.escalated_at && (
            <li>
              Escalated <Ago at={task.escalated_at} />.
            </li>
          )}
        </ul>
      </section>
    );
  }
  return (
    <section className="panel" aria-labelledby="deciders-heading">
      <h3 id="deciders-heading">Who can decide</h3>
      <p>
        Any member of {organization.organization_name} can approve or reject this, admins and members alike;
        the first decision counts.{assignee ? ` It is assigned to ${assignee}.` : ''}
      </p>
      {isAdmin && members.status === 'ready' && (
        <p className="muted">
          {members.data.items.map((m) => `${m.full_name || m.email} (${m.role})`).join(', ')}
          {members.data._meta.total_items > members.data.items.length &&
            ` and ${members.data._meta.total_items - members.data.items.length} more`}
        </p>
      )}
    </section>
  );
}
