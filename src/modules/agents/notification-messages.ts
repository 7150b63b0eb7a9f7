import { SLACK_ACTIONS, type ChatMessage } from '../../platform/chat/chat.ts';
import type { DbOrTx } from '../../platform/db/client.ts';
import { utcText } from '../../platform/utc-text.ts';
import { approvalState, type ApprovalState } from '../work-tasks/approval-state.service.ts';
import type { NotificationRow } from './notifications.repository.ts';

/** The metadata a posted notification carries: how a retry finds what a crashed attempt posted. */
export const NOTIFICATION_METADATA_TYPE = 'remit_notification';

/** What an approval button carries back: the organization and the task (checked again on use). */
export interface ApprovalButtonValue {
  organization_uid: string;
  task_uid: string;
  /** The digest of the arguments the message showed: a click approves those, or nothing. */
  args_digest: string;
  /** Their revision: a click decides with it, so a change since is refused and named (who, what, when). */
  args_revision: number;
}

export interface RenderedNotice {
  message: ChatMessage;
  /**
   * What the message showed of its approval (decision, votes): a post that finds it changed by the
   * time it is recorded updates the message at once, rather than leave stale buttons.
   */
  stateKey: string;
}

/** Slack caps a section's text at 3,000 characters; the full text stays in `text` and the API. */
const SECTION_LIMIT = 3000;

function plain(text: string) {
  return {
    type: 'plain_text',
    text: text.length > SECTION_LIMIT ? `${text.slice(0, SECTION_LIMIT - 1)}…` : text,
  };
}

/**
 * The console page a notice is about (never an API address): the approval in the inbox, else the run,
 * else the invoice, else the agent.
 */
export function consoleLinkOf(base: string, row: NotificationRow, taskIsApproval: boolean): string {
  if (row.taskUid) return `${base}/app/${taskIsApproval ? 'inbox' : 'tasks'}/${row.taskUid}`;
  if (row.runUid) return `${base}/app/agents/${row.agentUid}/runs/${row.runUid}`;
  if (row.invoiceUid) return `${base}/app/invoices/${row.invoiceUid}`;
  return `${base}/app/agents/${row.agentUid}`;
}

function stateKeyOf(state: ApprovalState | null): string {
  return state ? `${state.resolution ?? 'open'}:${state.approvals}:${state.argsDigest}` : '';
}

/**
 * What approving will do, as people read it: an email's recipients, subject and the start of its body;
 * any other tool's arguments as `name: value` lines. Shown so a decision in Slack is not made blind.
 */
export function argsText(toolArgs: Record<string, unknown>): string {
  const line = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
  if (toolArgs.type === 'send_email') {
    const to = Array.isArray(toolArgs.recipients) ? toolArgs.recipients.map(line).join(', ') : '';
    const body = typeof toolArgs.body === 'string' ? toolArgs.body : '';
    return [
      `Email to ${to || '(no recipients)'}`,
      `Subject: ${line(toolArgs.subject ?? '')}`,
      '',
      body.length > 1200 ? `${body.slice(0, 1199)}…` : body,
    ].join('\n');
  }
  return Object.entries(toolArgs)
    .map(([key, value]) => `${key}: ${line(value)}`)
    .join('\n');
}

/** One line on what became of an approval, or how far it got. */
export function approvalStatusLine(state: ApprovalState): string | null {
  const who = state.decidedBy ? ` by ${state.decidedBy.name}` : '';
  const when = state.decidedAt ? ` at ${utcText(state.decidedAt)}` : '';
  switch (state.resolution) {
    case 'approved':
      return `✅ Approved${who}${when}${state.note ? `: ${state.note}` : ''}`;
    case 'rejected':
      return `❌ Rejected${who}${when}${state.note ? `: ${state.note}` : ''}`;
    case 'expired':
      return `⌛ Expired${when}: nobody decided in time, so the action did not happen`;
    default: {
      const parts: string[] = [];
      if (state.policyName)
        parts.push(
          `Policy "${state.policyName}": ${state.approvals} of ${state.requiredApprovals} approval(s)`,
        );
      if (state.expiresAt) parts.push(`expires ${utcText(state.expiresAt)}`);
      return parts.length > 0 ? parts.join(' · ') : null;
    }
  }
}

/**
 * The Slack message for a notification, as its approval stands now: the text, a status line, and
 * buttons — Approve and Reject while an approval is open and Slack can send the clicks back (a signing
 * secret is configured), and always "Open in Remit", the console page of the object.
 */
export async function renderNotice(
  db: DbOrTx,
  row: NotificationRow,
  options: { publicBaseUrl: string; interactive: boolean },
): Promise<RenderedNotice> {
  const state =
    row.taskUid && row.event === 'approval_required'
      ? await approvalState(db, row.organizationUid, row.taskUid)
      : null;
  const link = consoleLinkOf(options.publicBaseUrl, row, state !== null || row.event === 'approval_required');
  const blocks: object[] = [{ type: 'section', block_id: 'remit_text', text: plain(row.text) }];
  if (state?.toolArgs)
    blocks.push({ type: 'section', block_id: 'remit_args', text: plain(argsText(state.toolArgs)) });
  const status = state ? approvalStatusLine(state) : null;
  if (status) blocks.push({ type: 'context', block_id: 'remit_status', elements: [plain(status)] });
  const buttons: object[] = [];
  if (state && state.resolution === null && options.interactive) {
    const value = JSON.stringify({
      organization_uid: row.organizationUid,
      task_uid: state.uid,
      args_digest: state.argsDigest,
      args_revision: state.argsRevision,
    } satisfies ApprovalButtonValue);
    buttons.push(
      { type: 'button', action_id: SLACK_ACTIONS.approve, style: 'primary', text: plain('Approve'), value },
      { type: 'button', action_id: SLACK_ACTIONS.reject, style: 'danger', text: plain('Reject'), value },
    );
  }
  buttons.push({ type: 'button', action_id: SLACK_ACTIONS.open, text: plain('Open in Remit'), url: link });
  blocks.push({ type: 'actions', block_id: 'remit_actions', elements: buttons });
  return {
    message: {
      text: status ? `${row.text}\n${status}` : row.text,
      blocks,
      metadata: { event_type: NOTIFICATION_METADATA_TYPE, event_payload: { notification_uid: row.uid } },
    },
    stateKey: stateKeyOf(state),
  };
}

/** The approval's state key now (compared with the one a post rendered). */
export async function currentStateKey(db: DbOrTx, row: NotificationRow): Promise<string> {
  if (!row.taskUid || row.event !== 'approval_required') return '';
  return stateKeyOf(await approvalState(db, row.organizationUid, row.taskUid));
}
