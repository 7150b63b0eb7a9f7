import { SLACK_ACTIONS, type ChatClient } from '../../platform/chat/chat.ts';
import type { Db } from '../../platform/db/client.ts';
import { asService, runWithRole } from '../../platform/db/session-role.ts';
import type { CallOrigin, RequestContext } from '../../platform/http/context.ts';
import { AppError } from '../../platform/http/errors.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { approvalState } from '../work-tasks/approval-state.service.ts';
import { approverContextByEmail } from '../work-tasks/approval-emails.ts';
import { patchTask } from '../work-tasks/work-tasks.service.ts';
import * as repo from './slack.repository.ts';
import { signatureHash, SIGNATURE_WINDOW_SECONDS, verifySlackSignature } from './slack-signature.ts';

const { approve: APPROVE_ACTION, reject: REJECT_ACTION, rejectModal: REJECT_MODAL } = SLACK_ACTIONS;
const REASON_BLOCK = 'reason';
const REASON_INPUT = 'reason';

export interface SlackDeps {
  db: Db;
  jobs: Jobs;
  chat: ChatClient;
  signingSecret: string | undefined;
}

export interface SignedRequest {
  rawBody: string;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** What Slack is answered: nothing (200, empty) or a modal's `response_action`. */
export type SlackReply = null | { response_action: 'errors'; errors: Record<string, string> };

interface Target {
  organization_uid: string;
  task_uid: string;
  /** The digest of the arguments the message showed (absent on messages posted before it existed). */
  args_digest?: string;
  /** Their revision (absent on messages posted before it existed): the decision is bound to it. */
  args_revision?: number;
}

interface InteractionPayload {
  type?: unknown;
  user?: { id?: unknown };
  channel?: { id?: unknown };
  container?: { channel_id?: unknown };
  trigger_id?: unknown;
  actions?: { action_id?: unknown; value?: unknown }[];
  view?: {
    callback_id?: unknown;
    private_metadata?: unknown;
    state?: { values?: Record<string, Record<string, { value?: unknown }>> };
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function badPayload(why: string): AppError {
  return new AppError('bad_request', `Not a Slack interaction payload: ${why}`);
}

function targetOf(value: unknown): Target {
  let parsed: unknown;
  try {
    parsed = typeof value === 'string' ? JSON.parse(value) : null;
  } catch {
    parsed = null;
  }
  const t = parsed as Partial<Target> | null;
  if (!t || typeof t.organization_uid !== 'string' || typeof t.task_uid !== 'string')
    throw badPayload('the action names no approval');
  if (!UUID.test(t.organization_uid) || !UUID.test(t.task_uid)) throw badPayload('the approval is not a uid');
  const digest =
    typeof t.args_digest === 'string' && /^[0-9a-f]{16}$/.test(t.args_digest) ? t.args_digest : undefined;
  const revision =
    Number.isSafeInteger(t.args_revision) && t.args_revision! >= 1 && t.args_revision! <= 2_147_483_647
      ? t.args_revision
      : undefined;
  return {
    organization_uid: t.organization_uid,
    task_uid: t.task_uid,
    ...(digest ? { args_digest: digest } : {}),
    ...(revision ? { args_revision: revision } : {}),
  };
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 255 ? value : undefined;
}

/**
 * Only what Slack signed is read: a signature made with the app's signing secret over the raw body, a
 * timestamp within five minutes, and a request not seen before (its signature's hash is recorded; a
 * second delivery of the same bytes is a replay). Then the payload.
 */
async function verified(
  deps: SlackDeps,
  request: SignedRequest,
  nowSeconds: number,
): Promise<InteractionPayload> {
  if (!deps.signingSecret || deps.chat.kind !== 'slack')
    throw new AppError('not_found', 'Slack interactivity is not configured here (SLACK_SIGNING_SECRET)');
  const check = verifySlackSignature(
    deps.signingSecret,
    { timestamp: request.timestamp, signature: request.signature },
    request.rawBody,
    nowSeconds,
  );
  if (!check.ok) throw new AppError('invalid_signature', check.reason);
  // The replay table is the service's own (no organization is known yet).
  const fresh = await asService(() => repo.recordRequest(deps.db, signatureHash(request.signature!)));
  if (!fresh) throw new AppError('invalid_signature', 'This signed Slack request was received before');
  const payload = new URLSearchParams(request.rawBody).get('payload');
  if (payload === null) throw badPayload('no payload field');
  try {
    const parsed: unknown = JSON.parse(payload);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw badPayload('not an object');
    return parsed as InteractionPayload;
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw badPayload('the payload is not JSON');
  }
}

/**
 * The Remit person behind a Slack user, in the approval's organization: matched by the email address
 * Slack has confirmed for them (`users.info`, `is_email_confirmed`) against the organization's members.
 * A throw is an answer for that person (shown to them alone in Slack), never a 5xx to Slack.
 */
async function personFor(
  deps: SlackDeps,
  slackUserId: string,
  organizationUid: string,
  origin: CallOrigin,
): Promise<{ ctx: RequestContext; name: string }> {
  const user = await deps.chat.lookupUser(slackUserId).catch(() => {
    throw new SlackRefusal('Remit could not ask Slack who you are just now; try again in a moment.');
  });
  if (!user || user.deleted) throw new SlackRefusal('Slack does not know this account.');
  if (!user.email)
    throw new SlackRefusal(
      'Remit matches you by your email address, and Slack did not share yours (the app needs the users:read.email scope).',
    );
  if (!user.emailConfirmed)
    throw new SlackRefusal(
      `Your Slack email address (${user.email}) is not confirmed, so Remit cannot tell it is yours. Decide in Remit instead.`,
    );
  const found = await approverContextByEmail(
    deps.db,
    { organizationUid, email: user.email, slackUserId },
    origin,
  );
  if (!found)
    throw new SlackRefusal(
      `No member of this Remit organization has the email address ${user.email}; decide in Remit, or ask an admin to invite you.`,
    );
  return { ctx: found.ctx, name: found.approver.fullName || found.approver.email };
}

/** A refusal to show the person who clicked (ephemeral), not an error of the request. */
class SlackRefusal extends Error {}

function inOrganization<T>(organizationUid: string, fn: () => Promise<T>): Promise<T> {
  return runWithRole({ role: { kind: 'tenant', organizationUids: [organizationUid] } }, fn);
}

/** The decision, as the API makes it: the same policy checks, the same race rules (one wins). */
async function decide(
  deps: SlackDeps,
  ctx: RequestContext,
  target: Target,
  body: { action: 'approve' | 'reject'; resolution_note?: string },
): Promise<string> {
  // The decision is bound to the arguments the message showed: by their revision (the refusal names who
  // changed what, and when), or on a message older than revisions by their digest, checked under the
  // task's lock in the decision's transaction so a change cannot slip in between.
  const view = await deps.db.transaction(async (tx) => {
    if (target.args_revision === undefined) {
      const now = await approvalState(tx, target.organization_uid, target.task_uid, { forUpdate: true });
      if (now && now.resolution === null && target.args_digest && now.argsDigest !== target.args_digest)
        throw new SlackRefusal(
          'This request changed after that message was posted; nothing was decided. Look at the newest message, or decide in Remit.',
        );
    }
    return patchTask(tx as unknown as Db, deps.jobs, ctx, target.task_uid, {
      ...body,
      ...(target.args_revision !== undefined ? { args_revision: target.args_revision } : {}),
    });
  });
  if (view.resolution === null && body.action === 'approve') {
    const state = await approvalState(deps.db, target.organization_uid, target.task_uid);
    return `Your approval is recorded (${state?.approvals ?? '?'} of ${state?.requiredApprovals ?? '?'} needed).`;
  }
  const warning = (view as { _warning?: string })._warning;
  return warning ?? '';
}

function refusalText(error: unknown): string {
  if (error instanceof SlackRefusal) return error.message;
  if (error instanceof AppError) {
    if (error.code === 'not_found') return 'This approval no longer exists in Remit.';
    if (error.code === 'approval_changed')
      return `${error.message} The newest message shows it as it is now.`;
    return error.message;
  }
  throw error;
}

/**
 * `POST /api/slack/interactions`: a click on Approve decides at once; a click on Reject opens a modal
 * asking for the reason, and its submission decides. Every refusal (not an approver, decided by
 * someone else first, expired, an unknown person) is told to the person who clicked, alone.
 */
export async function handleInteraction(
  deps: SlackDeps,
  request: SignedRequest,
  origin: CallOrigin,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<SlackReply> {
  const payload = await verified(deps, request, nowSeconds);
  const slackUserId = str(payload.user?.id);
  if (!slackUserId) throw badPayload('no user');
  if (payload.type === 'block_actions') {
    const action = payload.actions?.[0];
    const actionId = action?.action_id;
    if (actionId !== APPROVE_ACTION && actionId !== REJECT_ACTION) return null; // "Open in Remit", a link
    const target = targetOf(action?.value);
    const channelId = str(payload.channel?.id) ?? str(payload.container?.channel_id);
    const tell = async (text: string) => {
      if (text && channelId)
        await deps.chat.postEphemeral(channelId, slackUserId, text).catch(() => undefined);
    };
    if (actionId === REJECT_ACTION) {
      const triggerId = str(payload.trigger_id);
      if (!triggerId) throw badPayload('no trigger_id');
      // The modal must open within three seconds of the click: only what is cheap comes first.
      const state = await inOrganization(target.organization_uid, () =>
        approvalState(deps.db, target.organization_uid, target.task_uid),
      );
      if (!state) return (await tell('This approval no longer exists in Remit.'), null);
      if (state.resolution) {
        const who = state.decidedBy ? ` by ${state.decidedBy.name}` : '';
        await tell(`This approval was already ${state.resolution}${who}.`);
        return null;
      }
      await deps.chat.openView(triggerId, rejectModal(target, state.title, channelId)).catch(async () => {
        await tell('Slack did not open the form; reject it in Remit instead.');
      });
      return null;
    }
    try {
      const said = await inOrganization(target.organization_uid, async () => {
        const person = await personFor(deps, slackUserId, target.organization_uid, origin);
        return decide(deps, person.ctx, target, { action: 'approve' });
      });
      await tell(said);
    } catch (error) {
      await tell(refusalText(error));
    }
    return null;
  }
  if (payload.type === 'view_submission' && payload.view?.callback_id === REJECT_MODAL) {
    const target = targetOf(payload.view.private_metadata);
    const reason = payload.view.state?.values?.[REASON_BLOCK]?.[REASON_INPUT]?.value;
    const note = typeof reason === 'string' ? reason.trim() : '';
    if (note.length === 0) return modalError('A rejection needs a reason.');
    if (note.length > 4000) return modalError('Keep the reason under 4,000 characters.');
    try {
      await inOrganization(target.organization_uid, async () => {
        const person = await personFor(deps, slackUserId, target.organization_uid, origin);
        return decide(deps, person.ctx, target, { action: 'reject', resolution_note: note });
      });
      return null;
    } catch (error) {
      return modalError(refusalText(error));
    }
  }
  // Other interactions (a modal closed, a shortcut) concern nothing of ours.
  return null;
}

function modalError(text: string): SlackReply {
  return { response_action: 'errors', errors: { [REASON_BLOCK]: text.slice(0, 1900) } };
}

function rejectModal(target: Target, title: string, channelId: string | undefined): object {
  const clipped = title.length > 2900 ? `${title.slice(0, 2899)}…` : title;
  return {
    type: 'modal',
    callback_id: REJECT_MODAL,
    private_metadata: JSON.stringify({ ...target, ...(channelId ? { channel_id: channelId } : {}) }),
    title: { type: 'plain_text', text: 'Reject approval' },
    submit: { type: 'plain_text', text: 'Reject' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      { type: 'section', text: { type: 'plain_text', text: clipped } },
      {
        type: 'input',
        block_id: REASON_BLOCK,
        label: { type: 'plain_text', text: 'Why? (the agent and the audit log keep it)' },
        element: {
          type: 'plain_text_input',
          action_id: REASON_INPUT,
          multiline: true,
          min_length: 1,
          max_length: 4000,
        },
      },
    ],
  };
}

/** Forgets signed requests past the window (hourly): a replay that old is refused by its timestamp. */
export async function pruneSeenRequests(db: Db, now: Date = new Date()): Promise<number> {
  return asService(() =>
    repo.pruneRequests(db, new Date(now.getTime() - 2 * SIGNATURE_WINDOW_SECONDS * 1000)),
  );
}
