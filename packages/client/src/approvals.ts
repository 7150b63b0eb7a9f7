import type { RemitClient } from './client.ts';
import { RemitApiError } from './errors.ts';
import type { components } from './schema.ts';

type WorkTask = components['schemas']['WorkTask'];
type RaiseBody = components['schemas']['RaiseAgentApprovalBody'];
/** An agent's revision of its approval: `tool_args` merged over the current ones, optional reasoning and summary. */
export type ApprovalRevision = components['schemas']['ReviseAgentApprovalBody'];

/**
 * A person answered the approval with feedback instead of deciding (`action: respond`): it is still
 * pending, and they expect the agent to revise the request (docs/approvals.md#respond-feedback-without-deciding).
 */
export interface ApprovalFeedback {
  feedback: string;
  respondedBy: { user_uid: string; user_name: string };
  respondedAt: string;
  /** The approval as it stands: still pending, with the arguments the feedback is about. */
  task: WorkTask;
}

/** The longest hold the server grants one `GET /api/work-tasks/{uid}?wait=N` (seconds). */
const MAX_WAIT_S = 60;

export interface RequireApprovalOptions extends RaiseBody {
  /** The agent the approval is raised for (`POST /api/agents/{agent_uid}/approvals`). */
  agent_uid: string;
  /**
   * Sent as the raise's `Idempotency-Key`. Pass one derived from what the agent is about to do (e.g.
   * `refund-${orderId}`) so that a process restarted mid-wait raises nothing new and waits for the same
   * task. Default: a random key (each call raises a task of its own).
   */
  idempotencyKey?: string;
  /** Stop waiting after this many milliseconds with `ApprovalTimeoutError` (the task stays pending). */
  timeoutMs?: number;
  /** Aborting stops the wait (the task stays pending). */
  signal?: AbortSignal;
  /** Called once the task exists, before waiting (e.g. to log where a person can decide). */
  onRaised?: (task: WorkTask) => void;
  /** The clock for `timeoutMs`, in epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /**
   * Called when a person responds with feedback instead of deciding. Return a revision (`{tool_args,
   * reasoning?, summary?}`) and the client revises the approval with it
   * (`PATCH /api/agents/{agent_uid}/approvals/{task_uid}`), which asks its reviewers again; return
   * nothing to leave it as it is. Either way the wait goes on until the decision. Without it, feedback
   * is not surfaced (a person can still decide; `task.response` shows what they wrote).
   */
  onFeedback?: (
    feedback: ApprovalFeedback,
  ) => ApprovalRevision | undefined | void | Promise<ApprovalRevision | undefined | void>;
}

export interface ApprovalDecision {
  /**
   * True only for an approval: any other resolution (rejected, expired under its policy's deadline, or
   * one this version does not know) is false.
   */
  approved: boolean;
  /** The task's `resolution` as the server answered it. */
  resolution: string;
  /**
   * What to act with when approved: the agent's `tool_args` with the person's edits merged in. Use these,
   * not the ones you proposed.
   */
  toolArgs: Record<string, unknown>;
  /** The person's note (the reason of a rejection). */
  note: string | null;
  decidedBy: { user_uid?: string; user_name?: string } | null;
  decidedAt: string | null;
  task: WorkTask;
}

/** The wait ended before anyone decided; the approval is still pending and nothing may be done yet. */
export class ApprovalTimeoutError extends Error {
  constructor(readonly task: WorkTask) {
    super(`No decision on approval ${task.uid} in time; it is still pending`);
    this.name = 'ApprovalTimeoutError';
  }
}

const decided = (task: WorkTask) => typeof task.resolution === 'string' && task.resolution.length > 0;

function decisionOf(task: WorkTask): ApprovalDecision {
  const resolution = task.resolution as string;
  return {
    approved: resolution === 'approved',
    resolution,
    toolArgs: (task.tool_args ?? {}) as Record<string, unknown>,
    note: task.resolution_note ?? null,
    decidedBy: (task.resolved_by as ApprovalDecision['decidedBy']) ?? null,
    decidedAt: task.resolved_at ?? null,
    task,
  };
}

/**
 * Waits for a person to decide an approval: long-polls `GET /api/work-tasks/{uid}?wait=60`, which the
 * server answers the moment the task is decided (docs/work-tasks.md#waiting-for-a-decision).
 */
export async function waitForDecision(
  client: RemitClient,
  taskUid: string,
  options: Pick<RequireApprovalOptions, 'timeoutMs' | 'signal' | 'now' | 'onFeedback'> = {},
): Promise<ApprovalDecision> {
  const now = options.now ?? Date.now;
  const deadline = options.timeoutMs === undefined ? Infinity : now() + options.timeoutMs;
  // The server's wait answers a response that arrives while it holds, not one already pending: with
  // onFeedback, the first read does not wait, so feedback given before this call is handed over too.
  let first = options.onFeedback !== undefined;
  let handled: string | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const left = deadline - now();
    const wait = first ? 0 : Math.max(0, Math.min(MAX_WAIT_S, Math.ceil(left / 1000)));
    first = false;
    const body = await client.GET('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: taskUid }, query: { wait } },
      signal: options.signal,
    });
    const task = body.data;
    if (decided(task)) return decisionOf(task);
    const response = task.response;
    if (options.onFeedback && response && response.at !== handled) {
      handled = response.at;
      await revise(client, task, await options.onFeedback(feedbackOf(response, task)), options.signal);
    }
    if (now() >= deadline) throw new ApprovalTimeoutError(task);
  }
}

function feedbackOf(response: NonNullable<WorkTask['response']>, task: WorkTask): ApprovalFeedback {
  return {
    feedback: response.feedback,
    respondedBy: { user_uid: response.user_uid, user_name: response.user_name },
    respondedAt: response.at,
    task,
  };
}

/** The agent's revision, when `onFeedback` gave one; a decision that came first wins (the next read has it). */
async function revise(
  client: RemitClient,
  task: WorkTask,
  revision: ApprovalRevision | undefined | void,
  signal: AbortSignal | undefined,
): Promise<void> {
  const agentUid = task.origin.agent_uid;
  if (!revision || !agentUid) return;
  try {
    await client.PATCH('/api/agents/{agent_uid}/approvals/{task_uid}', {
      params: { path: { agent_uid: agentUid, task_uid: task.uid } },
      body: revision,
      signal,
    });
  } catch (error) {
    if (!(error instanceof RemitApiError && error.code === 'already_resolved')) throw error;
  }
}

/**
 * Asks a person before an agent acts, and answers their decision: raises a `hil_approval` for the agent
 * (`POST /api/agents/{agent_uid}/approvals`), then waits for it to be decided. Fails closed: act only when
 * `approved` is true, and with `toolArgs` (the person may have edited them).
 *
 * ```ts
 * const decision = await requireApproval(remit, {
 *   agent_uid, title: 'Refund order 1042?', reasoning: 'Damaged on arrival',
 *   tool_args: { type: 'refund', order: '1042', amount_cents: 3900 }, trigger: { type: 'manual' },
 *   idempotencyKey: 'refund-1042',
 * });
 * if (decision.approved) await refund(decision.toolArgs);
 * ```
 */
export async function requireApproval(
  client: RemitClient,
  options: RequireApprovalOptions,
): Promise<ApprovalDecision> {
  const {
    agent_uid,
    idempotencyKey,
    timeoutMs,
    signal,
    onRaised,
    onFeedback,
    now = Date.now,
    ...body
  } = options;
  const started = now();
  const raised = await client.POST('/api/agents/{agent_uid}/approvals', {
    params: { path: { agent_uid } },
    body,
    headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
    signal,
  });
  const task = raised.data;
  onRaised?.(task);
  if (decided(task)) return decisionOf(task);
  return waitForDecision(client, task.uid, {
    signal,
    now,
    ...(onFeedback ? { onFeedback } : {}),
    ...(timeoutMs === undefined ? {} : { timeoutMs: Math.max(0, timeoutMs - (now() - started)) }),
  });
}
