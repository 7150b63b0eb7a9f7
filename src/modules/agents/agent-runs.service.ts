import type { DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import * as runsRepo from './agent-runs.repository.ts';
import type { AgentRow } from './agents.repository.ts';

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
    // A run is not safely repeatable (it may have sent email): no automatic retry; a crash leaves it
    // `running` and the sweep marks it `failed`.
    { retryLimit: 0 },
  );
  return (await runsRepo.updateRun(tx, run.organizationUid, run.uid, { workflowId: jobId }))!;
}
