import type { Db } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { runWithRole } from '../../platform/db/session-role.ts';
import { requirePermission, type CallOrigin, type RequestContext } from '../../platform/http/context.ts';
import { AppError } from '../../platform/http/errors.ts';
import { utcText } from '../../platform/utc-text.ts';
import type { SecretKey } from '../../platform/secrets/secret-box.ts';
import { addressBucket, assertNotThrottled, recordFailure } from '../people/sign-in-throttle.ts';
import { approverContext } from './approval-emails.ts';
import { invoiceFactsFor } from './approval-emails.service.ts';
import * as repo from './approval-emails.repository.ts';
import { findTask } from './work-tasks.repository.ts';
import { approvalLinkKeys, readApprovalLink, type ApprovalLinkClaims } from './approval-links.ts';
import { toolName } from './approval-email-text.ts';
import { findTaskInOrganization, patchTask, viewTask, type TaskView } from './work-tasks.service.ts';
import type { DecideByLinkBodyT } from './approval-links.schemas.ts';

export interface ApprovalLinkDeps {
  db: Db;
  jobs: Jobs;
  /** The configured secret keys (SecretBox.keys): a link signed under any of them is genuine. */
  secretKeys: readonly SecretKey[];
}

/** Who is asking: the client's address (the throttle counts failures per address) and the request. */
export interface LinkCaller extends CallOrigin {
  ip: string;
}

// ---- the token ----

function readToken(deps: ApprovalLinkDeps, token: string): ApprovalLinkClaims {
  const read = readApprovalLink(token, approvalLinkKeys(deps.secretKeys));
  if (read.ok) return read.claims;
  if (read.reason === 'expired') {
    throw new AppError(
      'token_expired',
      'This approval link has expired. Open the approval in the Remit inbox to decide it.',
    );
  }
  throw new AppError(
    'invalid_token',
    'This approval link is not valid: it is incomplete or was altered. Open the approval from the email again, or in the Remit inbox.',
  );
}

/**
 * A link's work: throttled per client address like the sign-in links (a run of invalid tokens from one
 * address blocks it for growing delays), and done as the link's person, inside the link's organization
 * alone (the database role sees that organization's rows and no other: docs/security.md).
 */
async function asLinkHolder<T>(
  deps: ApprovalLinkDeps,
  token: string,
  caller: LinkCaller,
  work: (claims: ApprovalLinkClaims, ctx: RequestContext, approverName: string) => Promise<T>,
): Promise<T> {
  await assertNotThrottled(deps.db, [addressBucket(caller.ip)]);
  let claims: ApprovalLinkClaims;
  try {
    claims = readToken(deps, token);
  } catch (error) {
    if ((error as AppError).code === 'invalid_token')
      await recordFailure(deps.db, [addressBucket(caller.ip)]);
    throw error;
  }
  const role = { role: { kind: 'tenant' as const, organizationUids: [claims.organization_uid] } };
  return runWithRole(role, async () => {
    const found = await approverContext(
      deps.db,
      { organizationUid: claims.organization_uid, userUid: claims.user_uid, jti: claims.jti },
      caller,
    );
    if (!found) {
      throw new AppError(
        'forbidden',
        'This approval link belongs to someone who is no longer a member of the organization',
      );
    }
    return work(claims, found.ctx, found.approver.fullName || found.approver.email);
  });
}

// ---- what the confirmation page shows ----

export interface ApprovalLinkView {
  task: {
    uid: string;
    organization_uid: string;
    organization_name: string;
    title: string;
    status: string;
    priority: string;
    created_at: Date;
    agent: { uid: string; name: string } | null;
    tool: string;
    tool_args: Record<string, unknown>;
    args_revision: number;
    reasoning: string;
    trigger_type: string | null;
    resolution: string | null;
    resolved_at: Date | null;
    resolved_by: { user_uid: string; user_name: string } | null;
    resolution_note: string | null;
  };
  invoices: Awaited<ReturnType<typeof invoiceFactsFor>>;
  link: {
    user: { uid: string; full_name: string; email: string };
    expires_at: Date;
    used_at: Date | null;
    used_action: 'approve' | 'reject' | null;
  };
  warning: string | null;
}

async function taskOf(db: Db, claims: ApprovalLinkClaims) {
  const task = await findTaskInOrganization(db, claims.organization_uid, claims.task_uid);
  if (!task || task.type !== 'hil_approval') {
    throw new AppError('not_found', 'The approval this link is about no longer exists');
  }
  return task;
}

async function linkView(
  db: Db,
  ctx: RequestContext,
  claims: ApprovalLinkClaims,
  view: TaskView,
  warning: string | null,
): Promise<ApprovalLinkView> {
  const use = await repo.findLinkUse(db, claims.organization_uid, claims.jti);
  const origin = view.origin as { type: string; agent_uid?: string; agent_name?: string };
  const resolvedBy = view.resolved_by as { user_uid: string; user_name: string } | null;
  const toolArgs = (view.tool_args ?? {}) as Record<string, unknown>;
  const { user } = ctx.principal;
  return {
    task: {
      uid: view.uid as string,
      organization_uid: view.organization_uid as string,
      organization_name: ctx.principal.memberships[0]!.organizationName,
      title: view.title as string,
      status: view.status as string,
      priority: view.priority as string,
      created_at: view.created_at as Date,
      agent:
        origin.type === 'agent' && origin.agent_uid
          ? { uid: origin.agent_uid, name: origin.agent_name ?? '' }
          : null,
      tool: toolName(toolArgs),
      tool_args: toolArgs,
      args_revision: view.args_revision as number,
      reasoning: (view.reasoning as string | undefined) ?? '',
      trigger_type: typeof view.trigger === 'object' && view.trigger ? triggerType(view.trigger) : null,
      resolution: (view.resolution as string | null) ?? null,
      resolved_at: (view.resolved_at as Date | null) ?? null,
      resolved_by: resolvedBy ? { user_uid: resolvedBy.user_uid, user_name: resolvedBy.user_name } : null,
      resolution_note: (view.resolution_note as string | null) ?? null,
    },
    invoices: await invoiceFactsFor(db, ctx, view),
    link: {
      user: { uid: user.uid, full_name: user.fullName, email: user.email },
      expires_at: new Date(claims.exp * 1000),
      used_at: use?.usedAt ?? null,
      used_action: use?.action ?? null,
    },
    warning,
  };
}

const triggerType = (trigger: object) => {
  const type = (trigger as { type?: unknown }).type;
  return typeof type === 'string' ? type : null;
};

/**
 * `POST /api/approval-links/lookup`: what the confirmation page shows — the request, its context as
 * far as the link's person may see it, whether it is decided (and by whom), whether this link was
 * used. Reading never decides anything: a mail scanner that opens the page changes nothing.
 */
export async function lookUpApprovalLink(
  deps: ApprovalLinkDeps,
  token: string,
  caller: LinkCaller,
): Promise<ApprovalLinkView> {
  return asLinkHolder(deps, token, caller, async (claims, ctx) => {
    const task = await taskOf(deps.db, claims);
    return linkView(deps.db, ctx, claims, await viewTask(deps.db, task), null);
  });
}

function decidedText(view: TaskView): string {
  const by = (view.resolved_by as { user_name?: string } | null)?.user_name || 'someone';
  const at = view.resolved_at ? ` at ${utcText(view.resolved_at as Date)}` : '';
  return `${view.resolution === 'rejected' ? 'rejected' : 'approved'} by ${by}${at}`;
}

/**
 * `POST /api/approval-links/decide`: the decision, taken as the link's person through the same use case
 * as `PATCH /api/work-tasks/{uid}` (`patchTask`), so every rule the API applies applies here too. The
 * link's `jti` is recorded in the decision's own transaction: the link decides once, and a decision
 * that fails (already decided by someone else) leaves the link unused. Refused: a used link
 * (`token_used`), an approval already decided (`already_resolved`, naming who decided), a rejection
 * without a reason under a policy that requires one.
 */
export async function decideByApprovalLink(
  deps: ApprovalLinkDeps,
  body: DecideByLinkBodyT,
  caller: LinkCaller,
): Promise<ApprovalLinkView> {
  // The reason is optional, as in the API; a policy that requires one refuses a bare rejection (422).
  const note = body.resolution_note?.trim() || undefined;
  return asLinkHolder(deps, body.token, caller, async (claims, ctx, approverName) => {
    requirePermission(ctx, 'work_tasks:write');
    const { db } = deps;
    let warning: string | null = null;
    try {
      await db.transaction(async (tx) => {
        // The task's row lock first, as the API's decision takes it: the use's row refers to the task
        // (a key-share lock), and taking that before the update lock let two links deadlock.
        await findTask(tx, [claims.organization_uid], claims.task_uid, { forUpdate: true });
        const used = await repo.insertLinkUse(tx, {
          organizationUid: claims.organization_uid,
          jti: claims.jti,
          taskUid: claims.task_uid,
          userUid: claims.user_uid,
          action: body.action,
        });
        if (!used) throw new AppError('token_used', 'This approval link was already used');
        // The task service's own transaction becomes a savepoint of this one: the link's use and the
        // decision commit together.
        const decided = await patchTask(tx as unknown as Db, deps.jobs, ctx, claims.task_uid, {
          action: body.action,
          ...(note ? { resolution_note: note } : {}),
          ...(body.args_revision !== undefined ? { args_revision: body.args_revision } : {}),
        });
        warning = typeof decided._warning === 'string' ? decided._warning : null;
      });
    } catch (error) {
      const code = (error as AppError).code;
      if (code === 'token_used' || code === 'already_resolved') {
        const view = await viewTask(db, await taskOf(db, claims));
        const use = await repo.findLinkUse(db, claims.organization_uid, claims.jti);
        if (code === 'token_used' && use) {
          throw new AppError(
            'token_used',
            `This approval link was already used: ${approverName} chose to ${use.action} it at ${utcText(use.usedAt)}`,
          );
        }
        if (view.resolution) {
          throw new AppError('already_resolved', `This approval was already ${decidedText(view)}`);
        }
      }
      if (code === 'not_found') {
        throw new AppError('not_found', 'The approval this link is about no longer exists');
      }
      throw error;
    }
    return linkView(db, ctx, claims, await viewTask(db, await taskOf(db, claims)), warning);
  });
}
