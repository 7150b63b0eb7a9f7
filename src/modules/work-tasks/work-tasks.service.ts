import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { memberOrganizationUids, roleIn, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound, validationFailed, type FieldError } from '../../platform/http/errors.ts';
import { offsetOf, parseSort, type PageRequest } from '../../platform/http/pagination.ts';
import { findAgent, type AgentRow } from '../agents/agents.service.ts';
import { requestRun, runBlocker } from '../agents/agent-runs.service.ts';
import { visibleInOrganization } from '../invoices/invoice-access.ts';
import * as repo from './work-tasks.repository.ts';
import { approvalChanged } from './approval-state.service.ts';
import type {
  AssignInputT,
  ContextEntityInputT,
  CreateTaskBodyT,
  ListTasksQueryT,
  PatchTaskBodyT,
} from './work-tasks.schemas.ts';
import {
  TASK_PRIORITIES,
  TASK_STATUSES,
  type TaskPriority,
  type TaskStatus,
  type TaskType,
} from './work-tasks.tables.ts';
import { withTextSearchIndexes } from '../../platform/db/session-role.ts';
import { utcText } from '../../platform/utc-text.ts';
import { changesBetween, recordAuditEvent, recordUpdate, type AuditOrigin } from '../audit/audit.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import { queueApprovalEmails } from './approval-emails.ts';
import { isDeepStrictEqual } from 'node:util';
import { policyFor, snapshotOf } from './approval-policies.service.ts';
import { amountOf, refusalOf, toolTypeOf, type PolicySnapshot } from './approval-rules.ts';
import { APPROVAL_ESCALATION_QUEUE, APPROVAL_EXPIRY_QUEUE } from './approval-deadline-queues.ts';

type TaskRow = repo.TaskRow;

/** Who changed a task: a user (through the API) or an agent (raising an approval). */
export interface Actor {
  type: 'user' | 'agent' | 'system';
  userUid?: string;
  agentUid?: string;
  name: string;
}

export function userActor(ctx: RequestContext): Actor {
  const { user } = ctx.principal;
  return { type: 'user', userUid: user.uid, name: user.fullName || user.email };
}

export function agentActor(agent: Pick<AgentRow, 'uid' | 'name'>): Actor {
  return { type: 'agent', agentUid: agent.uid, name: agent.name };
}

/** Remit itself, acting on a policy's deadline (an approval expired or escalated). */
export const REMIT_ACTOR: Actor = Object.freeze({ type: 'system', name: 'Remit' });

/** One change-log entry by `actor`. */
export function change(
  actor: Actor,
  action: string,
  details: Record<string, unknown> | null,
): repo.NewChange {
  return {
    byType: actor.type,
    byUserUid: actor.userUid ?? null,
    byAgentUid: actor.agentUid ?? null,
    byName: actor.name,
    action,
    details,
  };
}

// ---- views ----

/** Tasks as interface 2.8 shows them, hydrated with a fixed number of queries whatever their count. */
export async function toTaskViews(db: DbOrTx, organizationUid: string, rows: TaskRow[]) {
  const taskUids = rows.map((r) => r.uid);
  const userUids = new Set<string>();
  const agentUids = new Set<string>();
  for (const r of rows) {
    for (const u of [r.assigneeUserUid, r.originUserUid, r.resolvedByUserUid]) if (u) userUids.add(u);
    for (const u of r.policy?.approver_user_uids ?? []) userUids.add(u);
    if (r.response) userUids.add(r.response.user_uid);
    for (const a of [r.assigneeAgentUid, r.originAgentUid]) if (a) agentUids.add(a);
  }
  const approvalUids = rows.filter((r) => r.type === 'hil_approval').map((r) => r.uid);
  // One after another: `db` may be a transaction, whose single connection must not be given
  // concurrent queries (node-postgres deprecates it).
  const entities = await repo.loadContextEntities(db, organizationUid, taskUids);
  const changes = await repo.loadChanges(db, organizationUid, taskUids);
  const votes = await repo.loadApprovals(db, organizationUid, approvalUids);
  for (const v of votes) userUids.add(v.userUid);
  const people = await repo.loadUsers(db, [...userUids]);
  const agentNames = await repo.loadAgentNames(db, organizationUid, [...agentUids]);
  const userBy = new Map(people.map((u) => [u.uid, u]));
  const agentBy = new Map(agentNames.map((a) => [a.uid, a.name]));
  const userName = (uid: string) => {
    const u = userBy.get(uid);
    return u ? u.fullName || u.email : '';
  };
  const avatar = (uid: string) => userBy.get(uid)?.avatarUrl ?? null;

  return rows.map((r) => {
    const view: Record<string, unknown> = {
      uid: r.uid,
      organization_uid: r.organizationUid,
      title: r.title,
      type: r.type,
      status: r.status,
      priority: r.priority,
      due_date: r.dueDate,
      description: r.description,
      created_at: r.createdAt,
      updated_at: r.updatedAt,
      assign_to:
        r.assigneeType === 'user' && r.assigneeUserUid
          ? {
              type: 'user',
              user_uid: r.assigneeUserUid,
              full_name: userName(r.assigneeUserUid),
              avatar_url: avatar(r.assigneeUserUid),
            }
          : r.assigneeType === 'agent' && r.assigneeAgentUid
            ? {
                type: 'agent',
                agent_uid: r.assigneeAgentUid,
                name: agentBy.get(r.assigneeAgentUid) ?? '',
                avatar_url: null,
              }
            : null,
      origin:
        r.originType === 'agent' && r.originAgentUid
          ? {
              type: 'agent',
              agent_uid: r.originAgentUid,
              agent_name: agentBy.get(r.originAgentUid) ?? '',
              avatar_url: null,
              trigger_type: r.originTriggerType,
            }
          : {
              type: 'user',
              user_uid: r.originUserUid,
              user_name: r.originUserUid ? userName(r.originUserUid) : '',
              avatar_url: r.originUserUid ? avatar(r.originUserUid) : null,
            },
      context_entities: entities
        .filter((e) => e.taskUid === r.uid)
        .map(({ taskUid: _taskUid, ...entity }) => entity),
      change_log: changes
        .filter((c) => c.taskUid === r.uid)
        .map((c) => ({
          at: c.at,
          by_name: c.byName,
          by_type: c.byType,
          action: c.action,
          details: c.details,
        })),
    };
    if (r.type === 'hil_approval') {
      Object.assign(view, {
        reasoning: r.reasoning ?? '',
        tool_args: r.toolArgs ?? {},
        args_revision: r.argsRevision,
        trigger: r.trigger,
        run_uid: r.runUid,
        resolution: r.resolution,
        resolved_at: r.resolvedAt,
        resolved_by: r.resolvedByUserUid
          ? {
              type: 'user',
              user_uid: r.resolvedByUserUid,
              user_name: userName(r.resolvedByUserUid),
              avatar_url: avatar(r.resolvedByUserUid),
            }
          : null,
        resolution_note: r.resolutionNote,
        // Approval policies (docs/approvals.md): the rules it was raised under, who approved so far,
        // its deadline and escalation.
        approval_policy: r.policy ? policyView(r.policy, r.initiatorUserUid, userName) : null,
        approvals: votes
          .filter((v) => v.taskUid === r.uid)
          .map((v) => ({ user_uid: v.userUid, user_name: userName(v.userUid), at: v.at })),
        expires_at: r.expiresAt,
        escalated_at: r.escalatedAt,
        // Feedback waiting for the agent's revision; a decision makes it moot.
        response:
          r.response && !r.resolution
            ? {
                feedback: r.response.feedback,
                user_uid: r.response.user_uid,
                user_name: userName(r.response.user_uid),
                at: r.response.at,
              }
            : null,
      });
    }
    return view;
  });
}

export type TaskView = Awaited<ReturnType<typeof toTaskViews>>[number];

/** What a reader needs of a task's policy: who decides and how many must agree. */
function policyView(
  policy: PolicySnapshot,
  initiatorUserUid: string | null,
  userName: (uid: string) => string,
) {
  return {
    uid: policy.uid,
    name: policy.name,
    required_approvals: policy.required_approvals,
    approver_roles: policy.approver_roles,
    approver_user_uids: policy.approver_user_uids,
    approver_users: policy.approver_user_uids.map((uid) => ({ user_uid: uid, user_name: userName(uid) })),
    forbid_initiator: policy.forbid_initiator,
    initiator_user_uid: initiatorUserUid,
  };
}

async function viewOf(db: DbOrTx, row: TaskRow): Promise<TaskView> {
  return (await toTaskViews(db, row.organizationUid, [row]))[0]!;
}

// ---- validation of references ----

type AssigneeColumns = Pick<TaskRow, 'assigneeType' | 'assigneeUserUid' | 'assigneeAgentUid'>;
const UNASSIGNED: AssigneeColumns = { assigneeType: null, assigneeUserUid: null, assigneeAgentUid: null };

/** `null` or `{}` unassigns; a user must be a member of the task's organization, an agent one of its agents. */
async function resolveAssignee(
  db: DbOrTx,
  organizationUid: string,
  input: AssignInputT | null | undefined,
): Promise<AssigneeColumns> {
  if (!input || (input.type === undefined && !input.user_uid && !input.agent_uid)) return UNASSIGNED;
  const type = input.type ?? (input.user_uid ? 'user' : 'agent');
  if (type === 'user') {
    if (!input.user_uid || input.agent_uid)
      throw validationFailed('assign_to', 'A user assignee takes user_uid (and no agent_uid)');
    if (!(await repo.isMember(db, organizationUid, input.user_uid)))
      throw validationFailed('assign_to.user_uid', 'No member of this organization has that uid');
    return { assigneeType: 'user', assigneeUserUid: input.user_uid, assigneeAgentUid: null };
  }
  if (!input.agent_uid || input.user_uid)
    throw validationFailed('assign_to', 'An agent assignee takes agent_uid (and no user_uid)');
  if (!(await repo.agentExists(db, organizationUid, input.agent_uid)))
    throw validationFailed('assign_to.agent_uid', 'No agent of this organization has that uid');
  return { assigneeType: 'agent', assigneeUserUid: null, assigneeAgentUid: input.agent_uid };
}

/** Every linked entity must exist in the task's organization (else 422); duplicates collapse. */
async function resolveContextEntities(
  db: DbOrTx,
  organizationUid: string,
  input: ContextEntityInputT[],
  /** A person's call: invoices they may not see are refused like ones that do not exist. */
  ctx?: RequestContext,
): Promise<repo.EntityRef[]> {
  const seen = new Set<string>();
  const entities = input.filter((e) => {
    const key = `${e.entity_type}:${e.entity_uid}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
  const found = await repo.existingEntityKeys(
    db,
    organizationUid,
    entities,
    ctx ? visibleInOrganization(db, ctx) : undefined,
  );
  const errors: FieldError[] = [];
  input.forEach((e, i) => {
    if (!found.has(`${e.entity_type}:${e.entity_uid}`))
      errors.push({
        field: `context_entities[${i}]`,
        message: `No ${e.entity_type} ${e.entity_uid} in this organization`,
      });
  });
  if (errors.length > 0) throw new AppError('validation_failed', errors[0]!.message, errors);
  return entities;
}

function cleanTitle(title: string): string {
  const trimmed = title.trim();
  if (trimmed.length === 0) throw validationFailed('title', 'title must have 1 to 255 characters');
  return trimmed;
}

const assigneeSummary = (a: AssigneeColumns) =>
  a.assigneeType === 'user'
    ? { type: 'user', user_uid: a.assigneeUserUid }
    : a.assigneeType === 'agent'
      ? { type: 'agent', agent_uid: a.assigneeAgentUid }
      : null;

// ---- audit events (docs/audit-log.md) ----

/** The change log and the list order follow from these; the task's fields are what changed. */
const TASK_NOISE = ['revision'];

async function recordTaskCreated(
  tx: DbOrTx,
  origin: AuditOrigin,
  task: TaskRow,
  entities: ContextEntityInputT[],
): Promise<void> {
  await recordAuditEvent(tx, origin, {
    organizationUid: task.organizationUid,
    action: 'task.created',
    entityUid: task.uid,
    changes: changesBetween(
      null,
      { ...task, contextEntities: entities.length > 0 ? entities : null },
      {
        omit: TASK_NOISE,
      },
    ),
  });
}

// ---- webhook events (docs/webhooks.md#event-types): in the transaction of the change they report ----

export const taskEntity = (task: TaskRow) => ({
  type: 'work_task',
  uid: task.uid,
  organizationUid: task.organizationUid,
});

/**
 * A new task's events, once its entities and change log are written: `work_task.created`, then
 * `work_task.assigned` when it was created with an assignee, then `work_task.approval_requested` for
 * an approval. Returns the task's view (what they carry).
 */
async function emitTaskCreated(tx: DbOrTx, jobs: Jobs, task: TaskRow): Promise<TaskView> {
  const view = await viewOf(tx, task);
  const org = { organizationUid: task.organizationUid };
  await emitEvent(tx, jobs, org, 'work_task.created', taskEntity(task), { work_task: view });
  if (task.assigneeType) {
    await emitEvent(tx, jobs, org, 'work_task.assigned', taskEntity(task), {
      work_task: view,
      previous_assign_to: null,
    });
  }
  if (task.type === 'hil_approval') {
    await emitEvent(tx, jobs, org, 'work_task.approval_requested', taskEntity(task), { work_task: view });
  }
  return view;
}

/** `work_task.assigned`: the assignee was set, changed or removed (then `assign_to` is null). */
async function emitAssigned(
  tx: DbOrTx,
  jobs: Jobs,
  task: TaskRow,
  view: TaskView,
  previous: ReturnType<typeof assigneeSummary>,
  reason?: string,
): Promise<void> {
  await emitEvent(
    tx,
    jobs,
    { organizationUid: task.organizationUid },
    'work_task.assigned',
    taskEntity(task),
    { work_task: view, previous_assign_to: previous, ...(reason ? { reason } : {}) },
  );
}

// ---- use cases ----

export async function createTask(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  body: CreateTaskBodyT,
): Promise<TaskView> {
  const title = cleanTitle(body.title);
  const org = ctx.organizationUid;
  const actor = userActor(ctx);
  return db.transaction(async (tx) => {
    const assignee = await resolveAssignee(tx, org, body.assign_to);
    const entities = await resolveContextEntities(tx, org, body.context_entities ?? [], ctx);
    const task = await repo.insertTask(tx, {
      organizationUid: org,
      type: 'task',
      title,
      description: body.description ?? '',
      status: body.status ?? 'todo',
      priority: body.priority ?? 'medium',
      dueDate: body.due_date ?? null,
      ...assignee,
      originType: 'user',
      originUserUid: actor.userUid,
    });
    await repo.replaceContextEntities(tx, org, task.uid, entities);
    await repo.insertChanges(tx, org, task.uid, [change(actor, 'created', null)]);
    await recordTaskCreated(tx, ctx, task, entities);
    return emitTaskCreated(tx, jobs, task);
  });
}

export interface RaiseApprovalInput {
  agent: AgentRow;
  title: string;
  reasoning: string;
  toolArgs: Record<string, unknown>;
  trigger: Record<string, unknown>;
  description?: string | undefined;
  priority?: TaskPriority | undefined;
  dueDate?: string | null | undefined;
  assignTo?: AssignInputT | null | undefined;
  contextEntities?: ContextEntityInputT[] | undefined;
  runUid?: string | null | undefined;
  /** Who raises it, for the audit log: the agent run, or the key of an outside runtime. */
  origin: AuditOrigin;
  /** The queue its webhook events' deliveries go to. */
  jobs: Jobs;
}

/**
 * Raises a `hil_approval` task on behalf of an agent: the one function behind
 * `POST /api/agents/{uid}/approvals` (any agent runtime) and the built-in collections agent. Runs in the
 * caller's transaction so the agent's own checks (one open approval per invoice) hold with it.
 */
export async function raiseApproval(tx: DbOrTx, input: RaiseApprovalInput): Promise<TaskRow> {
  const org = input.agent.organizationUid;
  const title = cleanTitle(input.title);
  const assignee = await resolveAssignee(tx, org, input.assignTo);
  const entities = await resolveContextEntities(tx, org, input.contextEntities ?? []);
  const triggerType = typeof input.trigger.type === 'string' ? input.trigger.type : null;
  // The policy in force now is copied onto the task: later edits of the policy do not reach it.
  const policyRow = await policyFor(tx, org, { agentUid: input.agent.uid, toolArgs: input.toolArgs });
  const policy = policyRow ? snapshotOf(policyRow) : null;
  const task = await repo.insertTask(
    tx,
    {
      organizationUid: org,
      type: 'hil_approval',
      title,
      description: input.description ?? '',
      status: 'todo',
      priority: input.priority ?? 'medium',
      dueDate: input.dueDate ?? null,
      ...assignee,
      originType: 'agent',
      originAgentUid: input.agent.uid,
      originTriggerType: triggerType,
      reasoning: input.reasoning,
      toolArgs: input.toolArgs,
      trigger: input.trigger,
      runUid: input.runUid ?? null,
      policy,
      // The person behind the request: who asked for the run (the agent run's actor), or the user of
      // the key that raised it over HTTP. The policy may bar them from approving.
      initiatorUserUid: input.origin.actor.userUid,
    },
    // Deadlines by the database's clock, as every later comparison with them is.
    {
      expiresAfterMinutes: policy?.expires_after_minutes,
      escalateAfterMinutes: policy?.escalate_after_minutes,
    },
  );
  await repo.replaceContextEntities(tx, org, task.uid, entities);
  const changes = [change(agentActor(input.agent), 'created', null)];
  if (policy) changes.push(change(REMIT_ACTOR, 'policy_applied', policyApplied(policy, task)));
  await repo.insertChanges(tx, org, task.uid, changes);
  await recordTaskCreated(tx, input.origin, task, entities);
  if (policy) {
    await recordAuditEvent(tx, input.origin, {
      organizationUid: org,
      action: 'task.policy_applied',
      entityUid: task.uid,
      changes: changesBetween(null, policyApplied(policy, task)),
    });
  }
  await emitTaskCreated(tx, input.jobs, task);
  await queueApprovalEmails(tx, input.jobs, task, input.origin);
  // Its deadlines' sweeps, due at the deadlines themselves (by the database's clock, as pg-boss reads
  // `start_after`): a worker takes them within its polling interval. The every-minute schedule stays as
  // the safety net; alone, its minute granularity and pg-boss's cron monitor left an approval up to
  // two minutes past its deadline.
  if (task.expiresAt) await input.jobs.enqueue(tx, APPROVAL_EXPIRY_QUEUE, {}, { startAfter: task.expiresAt });
  if (task.escalateAt)
    await input.jobs.enqueue(tx, APPROVAL_ESCALATION_QUEUE, {}, { startAfter: task.escalateAt });
  return task;
}

/** What the change log and the audit log say of the policy an approval was raised under. */
function policyApplied(policy: PolicySnapshot, task: TaskRow) {
  return {
    approval_policy_uid: policy.uid,
    approval_policy_name: policy.name,
    required_approvals: policy.required_approvals,
    approver_roles: policy.approver_roles,
    approver_user_uids: policy.approver_user_uids,
    forbid_initiator: policy.forbid_initiator,
    initiator_user_uid: task.initiatorUserUid,
    expires_at: task.expiresAt,
    escalate_at: task.escalateAt,
  };
}

export async function viewTask(db: DbOrTx, task: TaskRow): Promise<TaskView> {
  return viewOf(db, task);
}

/** A task of any organization the caller belongs to; anything else is 404. */
export async function getTask(db: Db, ctx: RequestContext, uid: string): Promise<TaskView> {
  const task = await repo.findTask(db, memberOrganizationUids(ctx), uid);
  if (!task) throw notFound('Work task');
  return viewOf(db, task);
}

const RESOLVE_FIELDS = ['action', 'tool_args', 'resolution_note', 'feedback', 'args_revision'] as const;
const UPDATE_FIELDS = [
  'title',
  'description',
  'assign_to',
  'priority',
  'due_date',
  'status',
  'context_entities',
] as const;

function refuseFields(body: PatchTaskBodyT, fields: readonly (keyof PatchTaskBodyT)[], why: string): void {
  const sent = fields.filter((f) => body[f] !== undefined);
  if (sent.length === 0) return;
  throw new AppError(
    'validation_failed',
    `${why}: ${sent.join(', ')}`,
    sent.map((field) => ({ field, message: why })),
  );
}

export async function patchTask(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  uid: string,
  body: PatchTaskBodyT,
): Promise<TaskView> {
  return db.transaction(async (tx) => {
    const task = await repo.findTask(tx, memberOrganizationUids(ctx), uid, { forUpdate: true });
    if (!task) throw notFound('Work task');
    if (task.type === 'hil_approval') return resolveApproval(tx, jobs, ctx, task, body);
    refuseFields(body, RESOLVE_FIELDS, 'Resolve fields apply only to hil_approval tasks');
    return updateUserTask(tx, jobs, ctx, task, body);
  });
}

async function updateUserTask(
  tx: DbOrTx,
  jobs: Jobs,
  ctx: RequestContext,
  task: TaskRow,
  body: PatchTaskBodyT,
) {
  const org = task.organizationUid;
  const actor = userActor(ctx);
  const changes: repo.NewChange[] = [];
  const values: Partial<TaskRow> = {};
  const simple = <K extends 'title' | 'description' | 'priority' | 'status' | 'dueDate'>(
    key: K,
    field: string,
    next: TaskRow[K] | undefined,
  ) => {
    if (next === undefined || next === task[key]) return;
    values[key] = next;
    changes.push(change(actor, `${field}_changed`, { from: task[key], to: next }));
  };
  if (body.title !== undefined) simple('title', 'title', cleanTitle(body.title));
  simple('description', 'description', body.description);
  simple('priority', 'priority', body.priority);
  simple('status', 'status', body.status);
  simple('dueDate', 'due_date', body.due_date);

  let reassigned: { from: ReturnType<typeof assigneeSummary> } | undefined;
  if (body.assign_to !== undefined) {
    const next = await resolveAssignee(tx, org, body.assign_to);
    const before = assigneeSummary(task);
    const after = assigneeSummary(next);
    if (JSON.stringify(before) !== JSON.stringify(after)) {
      Object.assign(values, next);
      changes.push(change(actor, after ? 'assigned' : 'unassigned', { from: before, to: after }));
      reassigned = { from: before };
    }
  }
  let entities: { before: ContextEntityInputT[]; after: ContextEntityInputT[] } | undefined;
  if (body.context_entities !== undefined) {
    const next = await resolveContextEntities(tx, org, body.context_entities, ctx);
    const before = (await repo.loadContextEntities(tx, org, [task.uid])).map((e) => ({
      entity_type: e.entity_type,
      entity_uid: e.entity_uid,
    }));
    if (JSON.stringify(before) !== JSON.stringify(next)) {
      await repo.replaceContextEntities(tx, org, task.uid, next);
      changes.push(change(actor, 'context_entities_changed', { from: before, to: next }));
      entities = { before, after: next };
    }
  }
  if (changes.length === 0) return viewOf(tx, task);
  const updated = await repo.updateTask(tx, org, task.uid, values);
  await repo.insertChanges(tx, org, task.uid, changes);
  await recordUpdate(tx, ctx, {
    organizationUid: org,
    action: 'task.updated',
    entityUid: task.uid,
    before: { ...task, ...(entities ? { contextEntities: entities.before } : {}) },
    after: { ...updated, ...(entities ? { contextEntities: entities.after } : {}) },
    options: { omit: TASK_NOISE },
  });
  const view = await viewOf(tx, updated);
  if (reassigned) await emitAssigned(tx, jobs, updated, view, reassigned.from);
  return view;
}

/**
 * What a person answered, as the agent's follow-up run receives it (`input.decision`;
 * docs/approvals.md#what-the-follow-up-run-receives): the same shape for every answer.
 */
export interface ApprovalDecision {
  action: 'approve' | 'reject' | 'respond';
  /** What the answer is about: the approved arguments (edits merged), else the arguments as they stood. */
  tool_args: Record<string, unknown>;
  /** The person changed `tool_args` with an approval. */
  edited: boolean;
  /** `resolution_note`: the reason of a rejection, a note with an approval; null with a response. */
  note: string | null;
  /** A response's feedback; null with a decision. */
  feedback: string | null;
  decided_by: { user_uid: string; name: string };
  decided_at: string;
}

/** The answer's shape, checked before anything is read or written: 422 naming the field. */
function validateAnswer(body: PatchTaskBodyT): void {
  refuseFields(
    body,
    UPDATE_FIELDS,
    'A hil_approval task takes only the resolve fields (action, tool_args, resolution_note, feedback)',
  );
  if (!body.action) throw validationFailed('action', 'action is required: approve, reject or respond');
  if (body.action !== 'respond' && body.feedback !== undefined)
    throw validationFailed(
      'feedback',
      'feedback goes with action respond; to explain a decision, send resolution_note',
    );
  if (body.action === 'reject') {
    if (body.tool_args !== undefined)
      throw validationFailed('tool_args', 'Edited tool_args apply only to an approval');
    // The reason is optional (interface 4.5); a policy may opt in to requiring one (after the checks
    // of who may decide, in resolveApproval).
  }
  if (body.action === 'respond') {
    if (body.tool_args !== undefined)
      throw validationFailed(
        'tool_args',
        'A response carries feedback, not edits: approve with edited tool_args, or say what to change in feedback',
      );
    if (body.resolution_note !== undefined)
      throw validationFailed('resolution_note', 'A response takes feedback, not resolution_note');
    if (!body.feedback?.trim())
      throw validationFailed('feedback', 'feedback is required to respond: what should the agent change?');
  }
}

async function resolveApproval(
  tx: DbOrTx,
  jobs: Jobs,
  ctx: RequestContext,
  task: TaskRow,
  body: PatchTaskBodyT,
) {
  validateAnswer(body);
  const action = body.action!;
  if (task.resolution) throw new AppError('already_resolved', await alreadyDecidedText(tx, task));
  const approve = action === 'approve';
  const org = task.organizationUid;
  // Fail closed: past its deadline (by the database's clock) nobody decides it any more, even before
  // the expiry job has ended it. Nothing is written: the job ends it.
  if (task.expiresAt && (await repo.isPastExpiry(tx, org, task.uid)))
    throw new AppError(
      'approval_expired',
      `This approval expired at ${utcText(task.expiresAt)} (its policy's deadline); nothing was done`,
    );
  const actor = userActor(ctx);
  const policy = task.policy;
  const refusal = refusalOf(
    policy,
    { userUid: actor.userUid!, role: roleIn(ctx, org) },
    action,
    task.initiatorUserUid,
  );
  if (refusal === 'not_an_approver')
    throw new AppError(
      'not_an_approver',
      `Under the policy "${policy!.name}" ${approversText(policy!)} decide this`,
    );
  if (refusal === 'initiator_cannot_approve')
    throw new AppError(
      'initiator_cannot_approve',
      `Under the policy "${policy!.name}" the person who started this cannot approve it; someone else must`,
    );
  // After who may decide and whether it may still be decided: those answers do not change by looking
  // again, and a person who may not decide it learns nothing of its arguments from a refusal.
  if (body.args_revision !== undefined && body.args_revision !== task.argsRevision)
    throw await approvalChangedError(tx, task, body.args_revision);
  if (action === 'reject' && policy?.require_rejection_reason && !body.resolution_note?.trim())
    throw validationFailed(
      'resolution_note',
      `Under the policy "${policy.name}" a rejection needs a reason (resolution_note): the agent and your team will see it`,
    );
  if (action === 'respond') return respondToApproval(tx, jobs, ctx, task, body.feedback!.trim());
  // Edits are merged over what the agent asked for, so a reviewer can change one member (the body) and
  // keep the rest (recipients, invoice).
  const toolArgs =
    approve && body.tool_args ? { ...(task.toolArgs ?? {}), ...body.tool_args } : task.toolArgs;
  const edited = approve && body.tool_args !== undefined && !isDeepStrictEqual(toolArgs, task.toolArgs);
  if (edited) await refuseEditThatChangesPolicy(tx, task, toolArgs);

  const required = policy?.required_approvals ?? 1;
  let approvals = 0;
  let discarded = 0;
  // Approvals are counted only under a policy; without one the first decision is the decision, as ever.
  if (approve && policy) {
    // An approval of other arguments is not an approval of these: the earlier ones no longer count.
    if (edited && required > 1) discarded = await repo.deleteApprovals(tx, org, task.uid);
    if (!(await repo.insertApproval(tx, org, task.uid, actor.userUid!)))
      throw new AppError(
        'already_approved',
        `You already approved this; it needs ${required} approvals from different people`,
      );
    approvals = await repo.countApprovals(tx, org, task.uid);
    if (approvals < required)
      return recordPartialApproval(tx, jobs, ctx, task, body, {
        toolArgs,
        edited,
        approvals,
        required,
        discarded,
      });
  }

  // A rejection's reason is stored less surrounding blanks; none (or only blanks) is null.
  const note = approve ? (body.resolution_note ?? null) : body.resolution_note?.trim() || null;
  const resolved = await repo.resolveTask(tx, org, task.uid, {
    status: approve ? 'done' : 'canceled',
    resolution: approve ? 'approved' : 'rejected',
    resolvedByUserUid: actor.userUid!,
    resolutionNote: note,
    toolArgs,
  });
  if (!resolved) throw new AppError('already_resolved', 'This approval was already resolved');
  // The decision: status, resolution, who and when, the note, and tool_args when they were edited.
  await recordUpdate(tx, ctx, {
    organizationUid: org,
    action: 'task.decided',
    entityUid: task.uid,
    before: task,
    after: resolved,
    options: { omit: TASK_NOISE },
  });
  await repo.insertChanges(tx, org, task.uid, [
    change(actor, 'resolved', {
      action,
      resolution: resolved.resolution,
      resolution_note: note,
      ...(approve && body.tool_args ? { edited_tool_args: Object.keys(body.tool_args) } : {}),
      ...(policy && approve ? { approvals } : {}),
      ...(policy ? { required_approvals: required } : {}),
      ...(discarded > 0 ? { discarded_approvals: discarded } : {}),
    }),
  ]);

  // The agent hears every decision: an approval to act on, a rejection to know of (and record).
  const followUp = await followUpAgent(tx, task, action);
  let warning: string | undefined;
  if (followUp?.blocker)
    warning = `${approve ? 'Approved' : 'Rejected'}, but no follow-up run was started: ${followUp.blocker}`;
  else if (followUp?.agent)
    await startFollowUp(tx, jobs, followUp.agent, task, {
      action,
      tool_args: toolArgs ?? {},
      edited,
      note,
      feedback: null,
      decided_by: { user_uid: actor.userUid!, name: actor.name },
      decided_at: resolved.resolvedAt!.toISOString(),
    });
  const view = await viewOf(tx, resolved);
  await approvalChanged(tx, jobs, { organizationUid: org, taskUid: task.uid, kind: 'decided' });
  await emitEvent(tx, jobs, ctx, 'approval.decided', taskEntity(task), {
    work_task: view,
    decision: action,
  });
  return warning ? { ...view, _warning: warning } : view;
}

/**
 * A decision sent with the revision of the arguments the person was shown, after they changed: 409
 * `approval_changed` naming who changed which arguments and when (from the change log entries that
 * moved the revision), with the arguments as they are now. Nothing is decided.
 */
async function approvalChangedError(tx: DbOrTx, task: TaskRow, shown: number): Promise<AppError> {
  const since = (await repo.loadChanges(tx, task.organizationUid, [task.uid])).filter((c) => {
    const revision = c.details?.args_revision;
    return typeof revision === 'number' && revision > shown && revision <= task.argsRevision;
  });
  const changed = [
    ...new Set(since.flatMap((c) => (c.details?.edited_tool_args as string[] | undefined) ?? [])),
  ];
  const what = since.map(
    (c) =>
      `${c.byType === 'agent' ? `the agent ${c.byName} revised` : `${c.byName} edited`} ` +
      `${((c.details?.edited_tool_args as string[] | undefined) ?? []).join(', ') || 'the arguments'} ` +
      `at ${utcText(c.at)}`,
  );
  const error = new AppError(
    'approval_changed',
    shown < task.argsRevision && what.length > 0
      ? `This approval changed after you saw it: ${what.join('; ')}. Nothing was decided; look at it again.`
      : `This approval's arguments are at revision ${task.argsRevision}, not ${shown}. Nothing was decided; look at it again.`,
  );
  error.details = { args_revision: task.argsRevision, changed, tool_args: task.toolArgs ?? {} };
  return error;
}

/**
 * Who won, for the one who lost a race (a click in Slack and one in the console at the same moment):
 * "This approval was already approved by Grace Hopper at 2026-11-26 10:03 UTC".
 */
async function alreadyDecidedText(tx: DbOrTx, task: TaskRow): Promise<string> {
  const [by] = task.resolvedByUserUid ? await repo.loadUsers(tx, [task.resolvedByUserUid]) : [];
  const who = by ? ` by ${by.fullName || by.email}` : '';
  const when = task.resolvedAt ? ` at ${utcText(task.resolvedAt)}` : '';
  return `This approval was already ${task.resolution}${who}${when}`;
}

/**
 * `action: respond`: feedback to the agent without deciding. The approval stays open; the feedback is
 * kept as its pending `response`, and the agent's follow-up run revises the request from it (status
 * `in_progress` meanwhile: the agent is working on it). Approvals counted so far stand until the
 * revision changes the arguments. When no run can start (the agent is paused), the feedback is still
 * recorded and the answer carries `_warning`.
 */
async function respondToApproval(
  tx: DbOrTx,
  jobs: Jobs,
  ctx: RequestContext,
  task: TaskRow,
  feedback: string,
): Promise<TaskView> {
  const org = task.organizationUid;
  const actor = userActor(ctx);
  const followUp = await followUpAgent(tx, task, 'respond');
  const updated = await repo.recordResponse(
    tx,
    org,
    task.uid,
    { feedback, userUid: actor.userUid! },
    followUp?.agent ? 'in_progress' : undefined,
  );
  if (!updated) throw new AppError('already_resolved', 'This approval was already resolved');
  await repo.insertChanges(tx, org, task.uid, [change(actor, 'responded', { feedback })]);
  await recordUpdate(tx, ctx, {
    organizationUid: org,
    action: 'task.responded',
    entityUid: task.uid,
    before: task,
    after: updated,
    options: { omit: TASK_NOISE },
  });
  if (followUp?.agent)
    await startFollowUp(tx, jobs, followUp.agent, task, {
      action: 'respond',
      tool_args: task.toolArgs ?? {},
      edited: false,
      note: null,
      feedback,
      decided_by: { user_uid: actor.userUid!, name: actor.name },
      decided_at: updated.response!.at,
    });
  const view = await viewOf(tx, updated);
  return followUp?.blocker
    ? { ...view, _warning: `Feedback recorded, but no follow-up run was started: ${followUp.blocker}` }
    : view;
}

/**
 * The agent that acts on an answer (locked: its run count moves), or why it cannot; null when the
 * approval names no trigger to follow up (nothing is started, nothing to warn about).
 */
async function followUpAgent(
  tx: DbOrTx,
  task: TaskRow,
  action: ApprovalDecision['action'],
): Promise<{ agent: AgentRow; blocker?: undefined } | { agent?: undefined; blocker: string } | null> {
  if (!task.trigger || !task.originAgentUid) return null;
  const agent = await findAgent(tx, [task.organizationUid], task.originAgentUid, { forUpdate: true });
  if (!agent) return { blocker: 'The agent that raised this approval no longer exists' };
  const blocker = await followUpBlocker(tx, agent, action);
  return blocker ? { blocker } : { agent };
}

/** The follow-up run of an answer, in the answer's transaction: `input` carries the structured decision. */
async function startFollowUp(
  tx: DbOrTx,
  jobs: Jobs,
  agent: AgentRow,
  task: TaskRow,
  decision: ApprovalDecision,
): Promise<void> {
  await requestRun(tx, jobs, {
    agent,
    triggerType: 'approval',
    trigger: { type: 'approval', task_uid: task.uid, original_trigger: task.trigger },
    input: { task_uid: task.uid, decision },
    taskUid: task.uid,
    requestedByUid: decision.decided_by.user_uid,
  });
}

/** `only admins`, `only Grace Hopper or admins`: who may decide under the policy, for an error message. */
function approversText(policy: PolicySnapshot): string {
  const roles = policy.approver_roles.map((r) => `${r}s`);
  const people = policy.approver_user_uids.length;
  const parts = [...roles, ...(people > 0 ? [`the ${people} person(s) it names`] : [])];
  return `only ${parts.join(' or ')} may`;
}

/**
 * An edit may not move the approval under another policy: raising a payment's amount past a
 * two-person threshold and approving it alone would be the very thing the policy prevents. Only edits
 * of what policies match on (`type`, `amount_cents`) are checked; such an edit is refused when the
 * policy it would now fall under (today's policies) is not the one it was raised under.
 */
async function refuseEditThatChangesPolicy(
  tx: DbOrTx,
  task: TaskRow,
  toolArgs: Record<string, unknown> | null,
): Promise<void> {
  if (toolTypeOf(toolArgs) === toolTypeOf(task.toolArgs) && amountOf(toolArgs) === amountOf(task.toolArgs))
    return;
  if (!task.originAgentUid) return;
  const now = await policyFor(tx, task.organizationUid, { agentUid: task.originAgentUid, toolArgs });
  if ((now?.uid ?? null) === (task.policy?.uid ?? null)) return;
  const name = (p: { name: string } | null) => (p ? `"${p.name}"` : 'no policy');
  throw validationFailed(
    'tool_args',
    `This edit moves the approval from ${name(task.policy)} to ${name(now)}; ` +
      'reject it and let the agent ask again with these arguments',
  );
}

/**
 * An approval short of the policy's count: the person's approval is recorded, the task stays
 * undecided (`in_review`) and says how many of how many. No follow-up run, no decision event.
 */
async function recordPartialApproval(
  tx: DbOrTx,
  jobs: Jobs,
  ctx: RequestContext,
  task: TaskRow,
  body: PatchTaskBodyT,
  state: {
    toolArgs: Record<string, unknown> | null;
    edited: boolean;
    approvals: number;
    required: number;
    discarded: number;
  },
): Promise<TaskView> {
  const org = task.organizationUid;
  const updated = await repo.updateTask(tx, org, task.uid, {
    status: 'in_review',
    ...(state.edited ? { toolArgs: state.toolArgs } : {}),
  });
  await repo.insertChanges(tx, org, task.uid, [
    change(userActor(ctx), 'approval_recorded', {
      summary: `approved (${state.approvals} of ${state.required})`,
      approvals: state.approvals,
      required_approvals: state.required,
      resolution_note: body.resolution_note ?? null,
      ...(state.edited
        ? { edited_tool_args: Object.keys(body.tool_args ?? {}), args_revision: updated.argsRevision }
        : {}),
      ...(state.discarded > 0 ? { discarded_approvals: state.discarded } : {}),
    }),
  ]);
  await recordUpdate(tx, ctx, {
    organizationUid: org,
    action: 'task.approval_recorded',
    entityUid: task.uid,
    before: { ...task, approvals: state.approvals - 1 + state.discarded },
    after: { ...updated, approvals: state.approvals },
    options: { omit: TASK_NOISE },
  });
  await approvalChanged(tx, jobs, { organizationUid: org, taskUid: task.uid, kind: 'vote' });
  return viewOf(tx, updated);
}

export interface ReviseApprovalInput {
  /** The agent revising: only the agent that raised an approval revises it. */
  agent: AgentRow;
  taskUid: string;
  /** The revised members, merged over the current `tool_args` as a person's edits are. */
  toolArgs: Record<string, unknown>;
  /**
   * The response this revision answers (its `at` names it); `pending`: whatever response is pending when
   * it lands (an outside runtime's revision over HTTP); null: a revision of the agent's own.
   */
  answering: { feedback: string; at: string } | 'pending' | null;
  /** One line for the change log: how it was revised ("rewrote the subject and body with the model"). */
  summary: string;
  /** A new `reasoning`, when the agent has more to say; else it stays. */
  reasoning?: string | undefined;
  /** Who revises it, for the audit log: the agent run. */
  origin: AuditOrigin;
}

export type RevisedApproval =
  | { revised: true; task: TaskRow; editedToolArgs: string[]; discardedApprovals: number }
  | { revised: false; task: TaskRow };

/**
 * The agent revises an approval still undecided, usually in answer to a person's feedback
 * (`action: respond`): new `tool_args` merged over the current ones, a `revised` change-log entry by
 * the agent naming the feedback it answered, the audit event `task.revised`. Changed arguments discard
 * the approvals counted so far (they approved other arguments), as a person's edits do, and may not move
 * the approval under another policy (422). Answering the pending response clears it and the approval is
 * pending again (`todo`, or `in_review` when approvals still count); a newer response keeps it with the
 * agent (`in_progress`). An approval decided meanwhile is left as it is (`revised: false`). Runs in the
 * caller's transaction and locks the task.
 */
export async function reviseApproval(tx: DbOrTx, input: ReviseApprovalInput): Promise<RevisedApproval> {
  const org = input.agent.organizationUid;
  const task = await repo.findTask(tx, [org], input.taskUid, { forUpdate: true });
  if (!task || task.type !== 'hil_approval' || task.originAgentUid !== input.agent.uid)
    throw notFound('Approval of this agent');
  if (task.resolution) return { revised: false, task };
  const toolArgs = { ...(task.toolArgs ?? {}), ...input.toolArgs };
  const editedToolArgs = Object.keys(input.toolArgs).filter(
    (key) => !isDeepStrictEqual(input.toolArgs[key], task.toolArgs?.[key]),
  );
  if (editedToolArgs.length > 0) await refuseEditThatChangesPolicy(tx, task, toolArgs);
  const discardedApprovals = editedToolArgs.length > 0 ? await repo.deleteApprovals(tx, org, task.uid) : 0;
  const answering = input.answering === 'pending' ? task.response : input.answering;
  const answered = !task.response || (answering !== null && task.response.at === answering.at);
  const stillCounted = editedToolArgs.length > 0 ? 0 : await repo.countApprovals(tx, org, task.uid);
  const updated = await repo.updateTask(tx, org, task.uid, {
    toolArgs,
    ...(input.reasoning !== undefined ? { reasoning: input.reasoning } : {}),
    ...(answered ? { response: null, status: stillCounted > 0 ? 'in_review' : 'todo' } : {}),
  });
  await repo.insertChanges(tx, org, task.uid, [
    change(agentActor(input.agent), 'revised', {
      summary: input.summary,
      feedback: answering?.feedback ?? null,
      edited_tool_args: editedToolArgs,
      ...(editedToolArgs.length > 0 ? { args_revision: updated.argsRevision } : {}),
      ...(discardedApprovals > 0 ? { discarded_approvals: discardedApprovals } : {}),
    }),
  ]);
  await recordUpdate(tx, input.origin, {
    organizationUid: org,
    action: 'task.revised',
    entityUid: task.uid,
    before: { ...task, approvals: stillCounted + discardedApprovals },
    after: { ...updated, approvals: stillCounted },
    options: { omit: TASK_NOISE },
  });
  return { revised: true, task: updated, editedToolArgs, discardedApprovals };
}

/**
 * Extra reasons an agent type cannot act on an answer; agents register theirs (collections: an email
 * account to send an approved reminder from).
 */
export type FollowUpCheck = (
  tx: DbOrTx,
  agent: AgentRow,
  action: ApprovalDecision['action'],
) => Promise<string | null>;
const followUpChecks = new Map<string, FollowUpCheck>();
export function registerFollowUpCheck(agentType: string, check: FollowUpCheck): void {
  followUpChecks.set(agentType, check);
}
async function followUpBlocker(
  tx: DbOrTx,
  agent: AgentRow,
  action: ApprovalDecision['action'],
): Promise<string | null> {
  return runBlocker(agent) ?? (await followUpChecks.get(agent.agentType)?.(tx, agent, action)) ?? null;
}

function commaList<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  field: string,
): T[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const items = value.split(',').map((s) => s.trim());
  for (const item of items)
    if (!(allowed as readonly string[]).includes(item))
      throw new AppError('invalid_parameter', `Unknown ${field} "${item}"; one of ${allowed.join(', ')}`, [
        { field, message: `must be a comma-separated list of ${allowed.join(', ')}` },
      ]);
  return items as T[];
}

export async function listTasks(db: Db, ctx: RequestContext, query: ListTasksQueryT, page: PageRequest) {
  const org = ctx.organizationUid;
  const q = query.q?.trim() || undefined;
  const filters = {
    statuses: commaList<TaskStatus>(query.status, TASK_STATUSES, 'status'),
    type: query.type as TaskType | undefined,
    priorities: commaList<TaskPriority>(query.priority, TASK_PRIORITIES, 'priority'),
    assigneeUserUid: query.assignee_user_uid,
    assigneeAgentUid: query.assignee_agent_uid,
    q,
  };
  const sort = parseSort<repo.TaskSortField>(query.sort, '-created_at');
  const { rows, total } = await withTextSearchIndexes(q !== undefined, () =>
    repo.listTasks(db, org, filters, sort, page.perPage, offsetOf(page)),
  );
  return { items: await toTaskViews(db, org, rows), total };
}

/** Open tasks of a type about one entity (used by agents before raising another). */
export async function findOpenTasksAbout(
  db: DbOrTx,
  organizationUid: string,
  entity: repo.EntityRef,
  type: TaskType,
): Promise<TaskRow[]> {
  return repo.findOpenTasksAbout(db, organizationUid, entity, type);
}

/**
 * A task for a person, opened by an agent (origin = the agent): the collections agent's "Client
 * replied about invoice …". Runs in the caller's transaction.
 */
export async function openTaskForAgent(
  tx: DbOrTx,
  input: {
    agent: AgentRow;
    title: string;
    description: string;
    triggerType: string;
    contextEntities: ContextEntityInputT[];
    priority?: TaskPriority;
    /** The agent run opening it, for the audit log. */
    origin: AuditOrigin;
    /** The queue its webhook events' deliveries go to. */
    jobs: Jobs;
  },
): Promise<TaskRow> {
  const org = input.agent.organizationUid;
  const entities = await resolveContextEntities(tx, org, input.contextEntities);
  const task = await repo.insertTask(tx, {
    organizationUid: org,
    type: 'task',
    title: cleanTitle(input.title.slice(0, 255)),
    description: input.description,
    status: 'todo',
    priority: input.priority ?? 'high',
    originType: 'agent',
    originAgentUid: input.agent.uid,
    originTriggerType: input.triggerType,
  });
  await repo.replaceContextEntities(tx, org, task.uid, entities);
  await repo.insertChanges(tx, org, task.uid, [change(agentActor(input.agent), 'created', null)]);
  await recordTaskCreated(tx, input.origin, task, entities);
  await emitTaskCreated(tx, input.jobs, task);
  return task;
}

/**
 * A member left the organization (docs/people.md#members-and-invitations): their open tasks there are
 * unassigned, each with an `unassigned` change-log entry by `actor` (reason `member_removed`) and a
 * `work_task.assigned` event. Runs in the caller's transaction; returns how many tasks.
 */
export async function unassignRemovedMember(
  tx: DbOrTx,
  jobs: Jobs,
  organizationUid: string,
  userUid: string,
  actor: Actor,
): Promise<number> {
  const from = assigneeSummary({ assigneeType: 'user', assigneeUserUid: userUid, assigneeAgentUid: null });
  const rows = await repo.unassignOpenTasksOf(
    tx,
    organizationUid,
    userUid,
    change(actor, 'unassigned', { from, to: null, reason: 'member_removed' }),
  );
  const views = await toTaskViews(tx, organizationUid, rows);
  for (const [i, row] of rows.entries()) {
    await emitAssigned(tx, jobs, row, views[i]!, from, 'member_removed');
  }
  return rows.length;
}

/** A task row of the organization by uid, for background actors (no caller membership to check). */
export async function findTaskInOrganization(db: DbOrTx, organizationUid: string, uid: string) {
  return repo.findTask(db, [organizationUid], uid);
}
