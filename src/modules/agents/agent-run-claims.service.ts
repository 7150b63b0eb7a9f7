/**
 * Runs of outside runtimes (docs/agents.md#runs-of-outside-runtimes): a run of an agent type with no
 * built-in executor stays `pending`; a runtime finds it (`GET /api/agent-runs`), claims it (pending →
 * running under a lease), renews the lease while it works, and completes or fails it with its claim
 * token. A lease that lapses puts the run back to `pending` for another claim; too many lapses fail it.
 */
import crypto from 'node:crypto';
import type { ChatClient } from '../../platform/chat/chat.ts';
import type { Db } from '../../platform/db/client.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { offsetOf, pageRequest, parseSort } from '../../platform/http/pagination.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import * as runsRepo from './agent-runs.repository.ts';
import type {
  ClaimRunBodyT,
  CompleteRunBodyT,
  FailRunBodyT,
  HeartbeatBodyT,
  ListRunsQueryT,
} from './agent-runs.schemas.ts';
import {
  builtInAgentTypes,
  emitRunEvent,
  hasBuiltInExecutor,
  notifyFailure,
  notifyOutcome,
  parseStatuses,
  sparseFields,
  toRunItem,
  type RunItem,
  type RunRow,
} from './agent-runs.service.ts';
import { findAgent, type AgentRow } from './agents.repository.ts';

/** A claim's lease when the claim names none (seconds). */
export const DEFAULT_LEASE_SECONDS = 300;
/** After this many lapsed leases a run is failed instead of offered again. */
export const MAX_LEASE_LAPSES = 5;
/** A run no runtime claimed for this long is stopped by the hourly maintenance. */
export const UNCLAIMED_RUN_DAYS = 7;

interface ClaimDeps {
  db: Db;
  jobs: Jobs;
  chat: ChatClient;
}

/**
 * Only a hash is kept: the token fences a runtime whose lease lapsed off a run another one now holds.
 * It is not a credential (anyone with agents:write in the organization may cancel the run anyway).
 */
const hashToken = (token: string) => crypto.createHash('sha256').update(token).digest('hex');

const FINISHED = new Set(['completed', 'failed', 'cancelled', 'stopped']);

async function findRunOf(db: Db, ctx: RequestContext, runUid: string): Promise<RunRow> {
  const run = await runsRepo.findRun(db, memberOrganizationUids(ctx), runUid);
  if (!run) throw notFound('Agent run');
  return run;
}

async function agentOf(db: Db, run: RunRow): Promise<AgentRow> {
  const agent = await findAgent(db, [run.organizationUid], run.agentUid);
  if (!agent) throw notFound('Agent run');
  return agent;
}

/** `runtime_id`, else the credential: `api_key:<uid>` or `user:<uid>`. */
function claimerOf(ctx: RequestContext, runtimeId: string | undefined): string {
  if (runtimeId !== undefined) return runtimeId;
  const { credential, user } = ctx.principal;
  return credential.kind === 'api_key' ? `api_key:${credential.uid}` : `user:${user.uid}`;
}

const holder = (run: RunRow) =>
  `${run.claimedBy ? `claimed by "${run.claimedBy}"` : 'claimed'}${
    run.leaseExpiresAt ? ` until ${run.leaseExpiresAt.toISOString()}` : ''
  }`;

/** Why a run cannot be claimed now. */
function claimRefusal(run: RunRow): AppError {
  if (run.status === 'running')
    return new AppError('run_claimed', `The run is already running, ${holder(run)}`);
  return new AppError('invalid_state', `The run is already ${run.status}; only a pending run can be claimed`);
}

/** Why a heartbeat, complete or fail with this token does nothing to the run. */
function tokenRefusal(run: RunRow, tokenHash: string): AppError {
  if (run.status === 'cancelled')
    return new AppError('invalid_state', 'The run was cancelled; stop working on it');
  if (FINISHED.has(run.status)) return new AppError('invalid_state', `The run has already ${run.status}`);
  if (run.status === 'running' && run.claimTokenHash !== tokenHash)
    return new AppError('claim_mismatch', `This token is not the run's claim: it is ${holder(run)}`);
  return new AppError(
    'claim_mismatch',
    `This token holds no claim on the run: it is ${run.status} (a lapsed lease puts a run back to pending); claim it again`,
  );
}

const stoppedSummary = (agent: AgentRow) =>
  `Agent "${agent.name}" is ${agent.status}; the run was stopped (a real run needs an active agent)`;

// ---- finding work ----

/** `GET /api/agent-runs`: the organization's runs, oldest first unless asked otherwise. */
export async function listRuns(db: Db, ctx: RequestContext, query: ListRunsQueryT) {
  const statuses = parseStatuses(query.status);
  const fields = sparseFields(ctx, query['fields[agent-runs]']);
  const sort = parseSort<'created_on'>(query.sort, 'created_on');
  const page = pageRequest(query, 25);
  const { rows, total } = await runsRepo.listRuns(
    db,
    ctx.organizationUid,
    { statuses, agentUid: query.agent_uid, agentType: query.agent_type, taskUid: query.task_uid },
    sort.descending,
    page.perPage,
    offsetOf(page),
  );
  return { items: rows.map((r) => toRunItem(r, fields)), total, page };
}

// ---- claiming ----

/**
 * pending → running under a new claim with a lease. Only runs of agent types without a built-in
 * executor; a real run of an agent that is not active stops, as a built-in run does at its first step.
 */
export async function claimRun(
  deps: Pick<ClaimDeps, 'db' | 'jobs'>,
  ctx: RequestContext,
  runUid: string,
  body: ClaimRunBodyT,
): Promise<{ claim_token: string; run: RunItem }> {
  const run = await findRunOf(deps.db, ctx, runUid);
  const agent = await agentOf(deps.db, run);
  if (hasBuiltInExecutor(agent.agentType))
    throw new AppError(
      'invalid_state',
      `Agent type "${agent.agentType}" has a built-in executor: Remit's workers run it, it cannot be claimed`,
    );
  if (run.status !== 'pending') throw claimRefusal(run);
  if (!run.sandbox && agent.status !== 'active') {
    const stopped = await runsRepo.moveRun(deps.db, run.organizationUid, run.uid, ['pending'], 'stopped', {
      completedOn: new Date(),
      outcome: { summary: stoppedSummary(agent) },
    });
    if (stopped) throw new AppError('invalid_state', stoppedSummary(agent));
  }
  const token = crypto.randomBytes(32).toString('base64url');
  const claimed = await deps.db.transaction(async (tx) => {
    const moved = await runsRepo.claimRun(tx, run.organizationUid, run.uid, {
      tokenHash: hashToken(token),
      claimedBy: claimerOf(ctx, body.runtime_id),
      leaseSeconds: body.lease_seconds ?? DEFAULT_LEASE_SECONDS,
    });
    if (moved) await emitRunEvent(tx, deps.jobs, moved);
    return moved;
  });
  if (!claimed) throw claimRefusal((await runsRepo.findRun(deps.db, [run.organizationUid], run.uid))!);
  return { claim_token: token, run: toRunItem(claimed) };
}

/**
 * A new lease from now for the claim holding the run. A real run whose agent is no longer active
 * stops here (409), as a built-in run stops at its next step.
 */
export async function renewClaim(
  deps: Pick<ClaimDeps, 'db'>,
  ctx: RequestContext,
  runUid: string,
  body: HeartbeatBodyT,
): Promise<RunItem> {
  const run = await findRunOf(deps.db, ctx, runUid);
  const tokenHash = hashToken(body.claim_token);
  if (run.status === 'running' && run.claimTokenHash === tokenHash) {
    const agent = await agentOf(deps.db, run);
    if (!run.sandbox && agent.status !== 'active') {
      const stopped = await runsRepo.finishClaimedRun(
        deps.db,
        run.organizationUid,
        run.uid,
        tokenHash,
        'stopped',
        { outcome: { summary: stoppedSummary(agent) } },
      );
      if (stopped) throw new AppError('invalid_state', `${stoppedSummary(agent)}; stop working on it`);
    } else {
      const renewed = await runsRepo.renewLease(
        deps.db,
        run.organizationUid,
        run.uid,
        tokenHash,
        body.lease_seconds ?? run.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
      );
      if (renewed) return toRunItem(renewed);
    }
  }
  throw tokenRefusal((await runsRepo.findRun(deps.db, [run.organizationUid], run.uid))!, tokenHash);
}

/**
 * running → `to` under the caller's claim, with its event in the same transaction and its notification
 * after. The same request again (same token, the run already ended this way) answers the run as it is.
 */
async function finishRun(
  deps: ClaimDeps,
  ctx: RequestContext,
  runUid: string,
  token: string,
  to: 'completed' | 'failed',
  values: Parameters<typeof runsRepo.finishClaimedRun>[5],
): Promise<{ run: RunRow; finishedNow: boolean }> {
  const run = await findRunOf(deps.db, ctx, runUid);
  const tokenHash = hashToken(token);
  const repeated = (row: RunRow) => row.status === to && row.claimTokenHash === tokenHash;
  if (repeated(run)) return { run, finishedNow: false };
  const finished = await deps.db.transaction(async (tx) => {
    const moved = await runsRepo.finishClaimedRun(tx, run.organizationUid, run.uid, tokenHash, to, values);
    if (moved) await emitRunEvent(tx, deps.jobs, moved);
    return moved;
  });
  if (finished) return { run: finished, finishedNow: true };
  const now = (await runsRepo.findRun(deps.db, [run.organizationUid], run.uid))!;
  if (repeated(now)) return { run: now, finishedNow: false };
  throw tokenRefusal(now, tokenHash);
}

/** running → completed with the runtime's outcome (and token usage); the `outcome` notification. */
export async function completeClaimedRun(
  deps: ClaimDeps,
  ctx: RequestContext,
  runUid: string,
  body: CompleteRunBodyT,
): Promise<RunItem> {
  const { run, finishedNow } = await finishRun(deps, ctx, runUid, body.claim_token, 'completed', {
    outcome: body.outcome,
    ...(body.token_usage ? { tokenUsage: body.token_usage } : {}),
  });
  if (finishedNow) await notifyOutcome(deps, await agentOf(deps.db, run), run, body.outcome);
  return toRunItem(run);
}

/** running → failed with the runtime's error (and token usage); the `error` notification. */
export async function failClaimedRun(
  deps: ClaimDeps,
  ctx: RequestContext,
  runUid: string,
  body: FailRunBodyT,
): Promise<RunItem> {
  const { run, finishedNow } = await finishRun(deps, ctx, runUid, body.claim_token, 'failed', {
    error: body.error,
    ...(body.token_usage ? { tokenUsage: body.token_usage } : {}),
  });
  if (finishedNow) await notifyFailure(deps, await agentOf(deps.db, run), run, body.error);
  return toRunItem(run);
}

// ---- maintenance ----

/**
 * The minute's sweep: claims whose lease ended at or before `now` (default: the database's clock) go
 * back to `pending`, claimable again; a run whose lease lapsed MAX_LEASE_LAPSES times is failed instead,
 * with its `agent_run.failed` and `error` notification, as a built-in run's failure.
 */
export async function releaseLapsedClaims(
  deps: ClaimDeps,
  now?: Date,
): Promise<{ released: number; failed: number }> {
  const { released, failed } = await deps.db.transaction(async (tx) => {
    const moved = await runsRepo.releaseLapsedClaims(tx, now, MAX_LEASE_LAPSES);
    for (const run of moved.failed) await emitRunEvent(tx, deps.jobs, run);
    return moved;
  });
  for (const run of failed) {
    const agent = await findAgent(deps.db, [run.organizationUid], run.agentUid);
    if (agent) await notifyFailure(deps, agent, run, run.error ?? 'The lease lapsed');
  }
  return { released: released.length, failed: failed.length };
}

/**
 * The hourly maintenance: runs no runtime claimed within UNCLAIMED_RUN_DAYS are stopped, so an approved
 * action does not wait to be carried out long after it was approved.
 */
export async function stopUnclaimedRuns(db: Db, now = new Date()): Promise<number> {
  const stopped = await runsRepo.stopUnclaimedRuns(
    db,
    builtInAgentTypes(),
    new Date(now.getTime() - UNCLAIMED_RUN_DAYS * 86_400_000),
    `No outside runtime claimed this run within ${UNCLAIMED_RUN_DAYS} days; it was stopped`,
  );
  return stopped.length;
}
