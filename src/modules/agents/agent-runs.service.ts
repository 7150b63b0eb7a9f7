import type { Config } from '../../config.ts';
import type { ChatClient } from '../../platform/chat/chat.ts';
import type { Db, DbOrTx, Tx } from '../../platform/db/client.ts';
import {
  can,
  inOrganization,
  memberOrganizationUids,
  type RequestContext,
} from '../../platform/http/context.ts';
import { AppError, badParameter, notFound } from '../../platform/http/errors.ts';
import { offsetOf, pageRequest, parseSort } from '../../platform/http/pagination.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import type { TextGenerator, TokenUsage as GeneratorUsage } from '../../platform/llm/text-generator.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import type { Mailers } from '../email/email-sending.ts';
import * as runsRepo from './agent-runs.repository.ts';
import {
  RUN_ATTRIBUTES,
  type ActivitiesQueryT,
  type RunAttribute,
  type StartRunBodyT,
} from './agent-runs.schemas.ts';
import { findAgent, type AgentRow } from './agents.repository.ts';
import { getAgentRow } from './agents.service.ts';
import { RUN_STATUSES, type RunStatus, type TokenUsage } from './agents.tables.ts';
import { notify, type NotifyDeps } from './notifications.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import { parseInstantRange } from '../../platform/http/date-range.ts';

export const AGENT_RUN_QUEUE = 'remit.agent.run';
export interface AgentRunJobData {
  run_uid: string;
  organization_uid: string;
}
export type RunRow = runsRepo.RunRow;

export interface RunRequest {
  agent: AgentRow;
  triggerType: string;
  trigger?: Record<string, unknown>;
  input?: Record<string, unknown>;
  sandbox?: boolean;
  /** The approval whose resolution asks for this run. */
  taskUid?: string | null;
  requestedByUid?: string | null;
}

/**
 * Why the agent cannot start a run now, or null when it can (CONTRACT §3: only active agents start
 * runs). Callers that must not fail (an approval) report the reason instead of throwing.
 */
export function runBlocker(agent: AgentRow): string | null {
  if (agent.status !== 'active')
    return `Agent "${agent.name}" is ${agent.status}; no run was started (activate it to run)`;
  return null;
}

/**
 * Writes a `pending` run and enqueues the job that executes it, in the caller's transaction: a run row
 * exists exactly when its job does. Every door (HTTP, approvals, inbound email, schedules) comes here.
 */
export async function requestRun(tx: DbOrTx, jobs: Jobs, request: RunRequest): Promise<RunRow> {
  const { agent } = request;
  const run = await runsRepo.insertRun(tx, {
    organizationUid: agent.organizationUid,
    agentUid: agent.uid,
    agentVersionUid: agent.currentVersionUid!,
    status: 'pending',
    sandbox: request.sandbox ?? false,
    triggerType: request.triggerType,
    trigger: request.trigger ?? { type: request.triggerType },
    input: request.input ?? {},
    taskUid: request.taskUid ?? null,
    requestedByUid: request.requestedByUid ?? null,
  });
  const jobId = await jobs.enqueue<AgentRunJobData>(
    tx,
    AGENT_RUN_QUEUE,
    { run_uid: run.uid, organization_uid: run.organizationUid },
    // A run is not safely repeatable (it may have sent email): no automatic retry; a worker that dies
    // leaves it `running` and the maintenance job marks it `failed`.
    { retryLimit: 0 },
  );
  return (await runsRepo.updateRun(tx, run.organizationUid, run.uid, { workflowId: jobId }))!;
}

// ---- reading ----

/** Interface 2.4. `token_usage` only when asked for by sparse fields (and allowed: see listActivities). */
export function toRunItem(row: RunRow, fields: readonly RunAttribute[] = DEFAULT_FIELDS) {
  const all: Record<RunAttribute, unknown> = {
    agent_uid: row.agentUid,
    agent_version_uid: row.agentVersionUid,
    scratchpad_uid: row.scratchpadUid,
    workflow_id: row.workflowId,
    approach: row.approach,
    status: row.status,
    sandbox: row.sandbox,
    trigger_type: row.triggerType,
    started_on: row.startedOn,
    completed_on: row.completedOn,
    created_on: row.createdOn,
    token_usage: row.tokenUsage,
    task_uid: row.taskUid,
    error: row.error,
    outcome: row.outcome,
    input: row.input,
    trigger: row.trigger,
    claimed_by: row.claimedBy,
    claimed_at: row.claimedAt,
    lease_expires_at: row.leaseExpiresAt,
    lease_lapses: row.leaseLapses,
  };
  const attributes: Partial<Record<RunAttribute, unknown>> = {};
  for (const field of fields) attributes[field] = all[field];
  return { id: row.uid, type: 'agent-runs' as const, attributes };
}
const DEFAULT_FIELDS = RUN_ATTRIBUTES.filter((f) => f !== 'token_usage');
export type RunItem = ReturnType<typeof toRunItem>;

export function sparseFields(ctx: RequestContext, value: string | undefined): readonly RunAttribute[] {
  if (value === undefined || value.trim() === '') return DEFAULT_FIELDS;
  const fields = value.split(',').map((f) => f.trim());
  for (const f of fields)
    if (!(RUN_ATTRIBUTES as readonly string[]).includes(f))
      throw badParameter('fields[agent-runs]', `Unknown agent-runs field "${f}"`);
  if (fields.includes('token_usage') && !can(ctx, 'agents:token_usage'))
    throw new AppError('missing_scope', 'token_usage needs the agents:token_usage permission');
  return fields as RunAttribute[];
}

/** `x_from`/`x_to` as inclusive bounds (the shared range parser: a `_to` without a zone is UTC). */
function bounds(query: ActivitiesQueryT, name: 'started_on' | 'completed_on' | 'created_on') {
  const range = parseInstantRange(query[`${name}_from`], query[`${name}_to`], `${name}_from`);
  return { from: range.from, to: range.until };
}

/** `status=a,b`: the run statuses named, or undefined for none; 400 for an unknown one. */
export function parseStatuses(value: string | undefined): RunStatus[] | undefined {
  const statuses = value
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of statuses ?? [])
    if (!(RUN_STATUSES as readonly string[]).includes(s))
      throw badParameter('status', `Unknown run status "${s}"; one of ${RUN_STATUSES.join(', ')}`);
  return statuses as RunStatus[] | undefined;
}

export async function listActivities(db: Db, ctx: RequestContext, agentUid: string, query: ActivitiesQueryT) {
  const agent = await getAgentRow(db, ctx, agentUid);
  const statuses = parseStatuses(query.status);
  // The permission is the caller's in the agent's organization (not the call's default one).
  const fields = sparseFields(inOrganization(ctx, agent.organizationUid), query['fields[agent-runs]']);
  const sort = parseSort<runsRepo.RunSortField>(query.sort, '-started_on');
  const page = pageRequest(query, 10);
  const started = bounds(query, 'started_on');
  const completed = bounds(query, 'completed_on');
  const created = bounds(query, 'created_on');
  const { rows, total, groups } = await runsRepo.listActivities(
    db,
    agent.organizationUid,
    agent.uid,
    {
      statuses,
      startedFrom: started.from,
      startedTo: started.to,
      completedFrom: completed.from,
      completedTo: completed.to,
      createdFrom: created.from,
      createdTo: created.to,
      hasStarted: query.has_started,
      hasCompleted: query.has_completed,
    },
    {
      ...sort,
      groupByTrigger: query.group_by === 'trigger',
    },
    page.perPage,
    offsetOf(page),
  );
  return { items: rows.map((r) => toRunItem(r, fields)), total, page, groups };
}

/** One run; `fields` as for activities (token_usage only when asked for and held in the run's organization). */
export async function getRun(
  db: Db,
  ctx: RequestContext,
  runUid: string,
  fields?: string | undefined,
): Promise<RunItem> {
  const run = await runsRepo.findRun(db, memberOrganizationUids(ctx), runUid);
  if (!run) throw notFound('Agent run');
  return toRunItem(run, sparseFields(inOrganization(ctx, run.organizationUid), fields));
}

// ---- webhook events (docs/webhooks.md#event-types) ----

const RUN_EVENTS = {
  running: 'agent_run.started',
  completed: 'agent_run.completed',
  failed: 'agent_run.failed',
} as const;

/** The event a run's new status calls for (started, completed, failed; none for the others). */
export async function emitRunEvent(tx: DbOrTx, jobs: Jobs, run: RunRow): Promise<void> {
  const type = RUN_EVENTS[run.status as keyof typeof RUN_EVENTS];
  if (!type) return;
  await emitEvent(
    tx,
    jobs,
    { organizationUid: run.organizationUid },
    type,
    { type: 'agent_run', uid: run.uid },
    { agent_run: toRunItem(run), ...(run.status === 'failed' ? { error: run.error } : {}) },
  );
}

/**
 * `moveRun` and the event of the run's new status in one transaction: the run is seen to start, end or
 * fail exactly when it does. Undefined (and no event) when the run was no longer in `from`.
 */
async function moveRunAndEmit(
  env: Pick<RunEnv, 'db' | 'jobs'>,
  organizationUid: string,
  uid: string,
  from: RunStatus[],
  to: RunStatus,
  values: Parameters<typeof runsRepo.moveRun>[5] = {},
  /** More work of the same transaction once the run moved (its notification), so both or neither hold. */
  andThen?: (tx: Tx, moved: RunRow) => Promise<unknown>,
): Promise<RunRow | undefined> {
  return env.db.transaction(async (tx) => {
    const moved = await runsRepo.moveRun(tx, organizationUid, uid, from, to, values);
    if (moved) await emitRunEvent(tx, env.jobs, moved);
    if (moved && andThen) await andThen(tx, moved);
    return moved;
  });
}

// ---- starting and cancelling ----

/**
 * `POST /api/agents/{uid}/runs`. A sandbox run may try out an agent in any status; a real one needs an
 * active agent (CONTRACT §3).
 */
export async function startRun(
  deps: { db: Db; jobs: Jobs },
  ctx: RequestContext,
  agentUid: string,
  body: StartRunBodyT,
): Promise<RunItem> {
  const current = await getAgentRow(deps.db, ctx, agentUid);
  return deps.db.transaction(async (tx) => {
    const agent = (await findAgent(tx, [current.organizationUid], agentUid, { forUpdate: true }))!;
    const blocker = body.sandbox ? null : runBlocker(agent);
    if (blocker) throw new AppError('invalid_state', `${blocker}; a sandbox run is allowed`);
    const triggerType = body.trigger_type ?? 'manual';
    const run = await requestRun(tx, deps.jobs, {
      agent,
      triggerType,
      trigger: { type: triggerType, requested_by: ctx.principal.user.uid },
      input: body.input ?? {},
      sandbox: body.sandbox ?? false,
      requestedByUid: ctx.principal.user.uid,
    });
    return toRunItem(run);
  });
}

/** Pending or running → cancelled; a finished run → 409. A running executor stops at its next step. */
export async function cancelRun(deps: { db: Db; jobs: Jobs }, ctx: RequestContext, runUid: string) {
  const run = await runsRepo.findRun(deps.db, memberOrganizationUids(ctx), runUid);
  if (!run) throw notFound('Agent run');
  const cancelled = await runsRepo.moveRun(
    deps.db,
    run.organizationUid,
    run.uid,
    ['pending', 'running'],
    'cancelled',
    {
      cancelRequested: true,
      completedOn: new Date(),
    },
  );
  if (!cancelled) throw new AppError('invalid_state', `The run is already ${run.status}`);
  if (run.status === 'pending' && run.workflowId) {
    // Tidying only: a job that starts anyway finds the run cancelled and does nothing.
    await deps.jobs.cancel(AGENT_RUN_QUEUE, run.workflowId).catch(() => undefined);
  }
  return toRunItem(cancelled);
}

// ---- executing ----

/** What an executor may use: the same services and outside-service adapters as the API. */
export interface RunEnv {
  db: Db;
  jobs: Jobs;
  storage: ObjectStorage;
  config: Config;
  chat: ChatClient;
  generator: TextGenerator;
  mailers: Mailers;
}

export class RunInterrupted extends Error {
  constructor(
    readonly status: 'cancelled' | 'stopped',
    message: string,
  ) {
    super(message);
    this.name = 'RunInterrupted';
  }
}

/** One run in progress, as its executor sees it. */
export interface RunStep {
  run: RunRow;
  agent: AgentRow;
  /** Between steps: throws RunInterrupted when the run was cancelled or its agent paused meanwhile. */
  checkpoint(): Promise<void>;
  /** Adds a model call's tokens to the run's `token_usage`. */
  addUsage(usage: GeneratorUsage | null | undefined): void;
}

/** An executor's failure that names what it was about (kept on the `error` notification). */
export class RunFailure extends Error {
  constructor(
    message: string,
    readonly invoiceUid: string | null = null,
    readonly taskUid: string | null = null,
  ) {
    super(message);
    this.name = 'RunFailure';
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uidOf = (value: unknown): string | null =>
  typeof value === 'string' && UUID.test(value) ? value : null;

/** What a run produced: kept on the run (`outcome`) and summarized in the `outcome` notification. */
export interface RunOutcome {
  summary: string;
  [key: string]: unknown;
}

export type AgentExecutor = (env: RunEnv, step: RunStep) => Promise<RunOutcome>;
const executors = new Map<string, AgentExecutor>();

/** Agent types with a built-in executor (collections); other types are run by outside runtimes. */
export function registerExecutor(agentType: string, executor: AgentExecutor): void {
  executors.set(agentType, executor);
}

/** Whether Remit's workers execute this agent type's runs (else an outside runtime claims them). */
export function hasBuiltInExecutor(agentType: string): boolean {
  return executors.has(agentType);
}

/** The agent types Remit's workers execute. */
export function builtInAgentTypes(): string[] {
  return [...executors.keys()];
}

/** The `outcome` notification of a completed run: the same for built-in executors and outside runtimes. */
export function notifyOutcome(deps: NotifyDeps, agent: AgentRow, run: RunRow, outcome: RunOutcome) {
  return notify(deps, {
    agent,
    event: 'outcome',
    text: `${agent.name} finished a run (trigger: ${run.triggerType}): ${outcome.summary}`,
    runUid: run.uid,
    taskUid: run.taskUid ?? uidOf(outcome.task_uid),
    invoiceUid: uidOf(outcome.invoice_uid),
    sandbox: run.sandbox,
  });
}

/** The `error` notification of a failed run, naming the task and invoice it was about when known. */
export function notifyFailure(
  deps: NotifyDeps,
  agent: AgentRow,
  run: RunRow,
  message: string,
  about: { taskUid?: string | null; invoiceUid?: string | null } = {},
) {
  return notify(deps, {
    agent,
    event: 'error',
    text: `${agent.name} failed during a run (trigger: ${run.triggerType}): ${message}`,
    runUid: run.uid,
    taskUid: run.taskUid ?? about.taskUid ?? null,
    invoiceUid: about.invoiceUid ?? null,
    sandbox: run.sandbox,
  });
}

/** `outside`: the agent type has no built-in executor; the run stays pending for a runtime to claim. */
export type ExecuteResult = 'completed' | 'failed' | 'cancelled' | 'stopped' | 'skipped' | 'outside';

/** The job: pending → running → completed | failed | stopped (or cancelled from outside). */
export async function executeRun(env: RunEnv, data: AgentRunJobData): Promise<ExecuteResult> {
  const org = data.organization_uid;
  const pending = await runsRepo.findRun(env.db, [org], data.run_uid);
  if (!pending || pending.status !== 'pending') return 'skipped';
  const agent = await findAgent(env.db, [org], pending.agentUid);
  if (!agent) return 'skipped';
  const executor = executors.get(agent.agentType);
  // Left as it is: an outside runtime claims it through the API (docs/agents.md#runs-of-outside-runtimes).
  if (!executor) return 'outside';
  const run = await moveRunAndEmit(env, org, pending.uid, ['pending'], 'running', {
    startedOn: new Date(),
  });
  if (!run) return 'skipped';

  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const step: RunStep = {
    run,
    agent,
    checkpoint: async () => {
      const now = await runsRepo.findRun(env.db, [org], run.uid);
      if (!now || now.status === 'cancelled') throw new RunInterrupted('cancelled', 'The run was cancelled');
      // A sandbox run may try out an agent in any status; a real one stops once its agent is not active.
      const latest = await findAgent(env.db, [org], agent.uid);
      if (!run.sandbox && latest && latest.status !== 'active')
        throw new RunInterrupted('stopped', `Agent "${agent.name}" was ${latest.status} during the run`);
    },
    addUsage: (u) => {
      if (!u) return;
      usage.prompt_tokens += u.prompt_tokens;
      usage.completion_tokens += u.completion_tokens;
      usage.total_tokens += u.total_tokens;
    },
  };
  const notifyDeps = { db: env.db, chat: env.chat, jobs: env.jobs };
  try {
    // The agent may have been paused, or the run cancelled, while the job waited in the queue.
    await step.checkpoint();
    const outcome = await executor(env, step);
    // The outcome notice commits with the completion: a crash between them cannot lose it.
    const done = await moveRunAndEmit(
      env,
      org,
      run.uid,
      ['running'],
      'completed',
      { completedOn: new Date(), outcome, tokenUsage: usage },
      (tx) => notifyOutcome({ ...notifyDeps, db: tx }, agent, run, outcome),
    );
    if (!done) return 'cancelled';
    return 'completed';
  } catch (error) {
    if (error instanceof RunInterrupted) {
      if (error.status === 'cancelled') {
        await runsRepo.updateRun(env.db, org, run.uid, { tokenUsage: usage });
        return 'cancelled';
      }
      await runsRepo.moveRun(env.db, org, run.uid, ['running'], 'stopped', {
        completedOn: new Date(),
        tokenUsage: usage,
        outcome: { summary: error.message },
      });
      return 'stopped';
    }
    const message = error instanceof Error ? error.message : String(error);
    const about = error instanceof RunFailure ? error : undefined;
    await moveRunAndEmit(
      env,
      org,
      run.uid,
      ['running'],
      'failed',
      { completedOn: new Date(), error: message, tokenUsage: usage },
      (tx) => notifyFailure({ ...notifyDeps, db: tx }, agent, run, message, about ?? {}),
    );
    return 'failed';
  }
}

/** Runs a dead worker left `running`: failed, each with its `agent_run.failed`, in one transaction. */
export async function failAbandonedRuns(db: Db, jobs: Jobs, olderThanMinutes = 60): Promise<number> {
  return db.transaction(async (tx) => {
    const failed = await runsRepo.failAbandonedRuns(tx, new Date(Date.now() - olderThanMinutes * 60_000));
    for (const run of failed) await emitRunEvent(tx, jobs, run);
    return failed.length;
  });
}
