import type { RemitClient } from './client.ts';
import { RemitApiError } from './errors.ts';
import type { components } from './schema.ts';

/** A run as the API answers it: `{id, type: "agent-runs", attributes}`. */
export type AgentRun = components['schemas']['AgentRun'];

/** What a run did, kept as its `outcome`: a summary for people, and any details. */
export interface RunOutcome {
  summary: string;
  [key: string]: unknown;
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ClaimOptions {
  /** Who claims it, shown to others as the run's `claimed_by`. Default: the API key. */
  runtimeId?: string;
  /** How long the claim holds without a heartbeat, 10–3600 s. Default 300. */
  leaseSeconds?: number;
  signal?: AbortSignal;
}

/** A run this runtime holds: renew its lease while working, then complete or fail it. */
export interface ClaimedRun {
  /** The run as claimed: `attributes.input`, `trigger`, `task_uid`, `sandbox`, `lease_expires_at`… */
  readonly run: AgentRun;
  /** The claim: heartbeat, complete and fail send it. Keep it to finish the run after a restart. */
  readonly claimToken: string;
  /** A new lease from now (default: the claim's length); answers the run. */
  heartbeat(leaseSeconds?: number): Promise<AgentRun>;
  /** running → completed. Sending it again (a retry) answers the run as it is. */
  complete(outcome: RunOutcome, tokenUsage?: TokenUsage): Promise<AgentRun>;
  /** running → failed. Sending it again answers the run as it is. */
  fail(error: string, tokenUsage?: TokenUsage): Promise<AgentRun>;
}

/** Another runtime holds the run, or it is no longer pending: the codes a claim is refused with. */
const isTaken = (error: unknown) =>
  error instanceof RemitApiError && (error.code === 'run_claimed' || error.code === 'invalid_state');

/** The run is no longer this runtime's: cancelled, stopped, or its lease lapsed and someone else took it. */
export class RunLostError extends Error {
  constructor(
    readonly runUid: string,
    readonly error: RemitApiError,
  ) {
    super(`Run ${runUid} is no longer held by this runtime: ${error.message}`);
    this.name = 'RunLostError';
  }
}

/** A claim handle for a run already claimed (its token kept, e.g. across a restart). */
export function claimedRun(
  client: RemitClient,
  run: AgentRun,
  claimToken: string,
  signal?: AbortSignal,
): ClaimedRun {
  const path = { run_uid: run.id };
  return {
    run,
    claimToken,
    heartbeat: async (leaseSeconds) =>
      (
        await client.POST('/api/agent-runs/{run_uid}/heartbeat', {
          params: { path },
          body: {
            claim_token: claimToken,
            ...(leaseSeconds === undefined ? {} : { lease_seconds: leaseSeconds }),
          },
          signal,
        })
      ).data,
    complete: async (outcome, tokenUsage) =>
      (
        await client.POST('/api/agent-runs/{run_uid}/complete', {
          params: { path },
          body: { claim_token: claimToken, outcome, ...(tokenUsage ? { token_usage: tokenUsage } : {}) },
          signal,
        })
      ).data,
    fail: async (error, tokenUsage) =>
      (
        await client.POST('/api/agent-runs/{run_uid}/fail', {
          params: { path },
          body: { claim_token: claimToken, error, ...(tokenUsage ? { token_usage: tokenUsage } : {}) },
          signal,
        })
      ).data,
  };
}

/**
 * Claims one pending run (`POST /api/agent-runs/{uid}/claim`): it is `running` under this runtime's
 * lease until completed, failed or the lease lapses. Throws the API's 409 when another runtime holds it
 * (`run_claimed`) or it cannot be claimed (`invalid_state`: ended, or of a built-in agent type).
 */
export async function claimRun(
  client: RemitClient,
  runUid: string,
  options: ClaimOptions = {},
): Promise<ClaimedRun> {
  const body = await client.POST('/api/agent-runs/{run_uid}/claim', {
    params: { path: { run_uid: runUid } },
    body: {
      ...(options.runtimeId === undefined ? {} : { runtime_id: options.runtimeId }),
      ...(options.leaseSeconds === undefined ? {} : { lease_seconds: options.leaseSeconds }),
    },
    signal: options.signal,
  });
  return claimedRun(client, body.data.run, body.data.claim_token, options.signal);
}

export interface RunFilter {
  /** The runs of one agent. */
  agent_uid?: string;
  /** The runs of every agent of this type (the agents this runtime executes). */
  agent_type?: string;
}

/**
 * Claims the oldest pending run matching `filter`, or answers null when there is none. A run another
 * runtime takes first is skipped for the next one.
 */
export async function claimNextRun(
  client: RemitClient,
  filter: RunFilter,
  options: ClaimOptions = {},
): Promise<ClaimedRun | null> {
  for await (const run of client.paginate('/api/agent-runs', {
    params: { query: { ...filter, status: 'pending', per_page: 25 } },
    signal: options.signal,
  })) {
    try {
      return await claimRun(client, run.id, options);
    } catch (error) {
      if (!isTaken(error)) throw error;
    }
  }
  return null;
}

/**
 * The follow-up run an approval started (`trigger_type` `approval`, `task_uid` the task), in whatever
 * status it is, or null when there is none: the approval was not approved, or no run could start (the
 * approval's answer carried `_warning`). A task has at most one.
 */
export async function findFollowUpRun(
  client: RemitClient,
  taskUid: string,
  options: { signal?: AbortSignal } = {},
): Promise<AgentRun | null> {
  const found = await client.GET('/api/agent-runs', {
    params: { query: { task_uid: taskUid } },
    signal: options.signal,
  });
  return found.data.items[0] ?? null;
}

/**
 * Claims the follow-up run an approval started, to act inside it once `requireApproval()` answered
 * `approved`. Null when there is none to claim: no run (see `findFollowUpRun`), or it is not pending
 * any more (another runtime took it, or it ended).
 */
export async function claimFollowUpRun(
  client: RemitClient,
  taskUid: string,
  options: ClaimOptions = {},
): Promise<ClaimedRun | null> {
  const run = await findFollowUpRun(client, taskUid, options.signal ? { signal: options.signal } : {});
  if (run?.attributes.status !== 'pending') return null;
  try {
    return await claimRun(client, run.id, options);
  } catch (error) {
    if (isTaken(error)) return null;
    throw error;
  }
}

/** What a handler gets beside the run. */
export interface RunContext {
  /** Aborted when the run is lost (cancelled, stopped, or the lease lapsed): stop working on it. */
  signal: AbortSignal;
  /** Adds a model call's tokens to what the run reports at its end. */
  addUsage(usage: Partial<TokenUsage>): void;
  /** Renews the lease now (also done every `heartbeatMs` on its own); throws `RunLostError` when lost. */
  heartbeat(): Promise<void>;
}

export type RunHandler = (run: AgentRun, context: RunContext) => Promise<RunOutcome>;

export interface WorkOptions {
  /** Between automatic heartbeats. Default: a third of the claim's lease. */
  heartbeatMs?: number;
}

const leaseMsOf = (run: AgentRun) => {
  const { claimed_at, lease_expires_at } = run.attributes;
  const ms = claimed_at && lease_expires_at ? Date.parse(lease_expires_at) - Date.parse(claimed_at) : NaN;
  return Number.isFinite(ms) && ms > 0 ? ms : 300_000;
};

/**
 * Runs `handler` on a claimed run, renewing its lease meanwhile, and finishes the run with the result:
 * the outcome it answers completes it; an error it throws fails it (with the error's message) and is
 * thrown again. When the run is lost meanwhile (cancelled, the agent paused, the lease lapsed) the
 * handler's signal aborts and `RunLostError` is thrown; the run is left as it is.
 */
export async function workOnRun(
  claimed: ClaimedRun,
  handler: RunHandler,
  options: WorkOptions = {},
): Promise<AgentRun> {
  const lost = new AbortController();
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const heartbeat = async () => {
    if (lost.signal.aborted) throw lost.signal.reason as RunLostError;
    try {
      await claimed.heartbeat();
    } catch (error) {
      // 409: the run is not ours any more. Anything else (a network error) is tried again next time.
      if (error instanceof RemitApiError && error.status === 409) {
        const reason = new RunLostError(claimed.run.id, error);
        lost.abort(reason);
        throw reason;
      }
      throw error;
    }
  };
  const timer = setInterval(
    () => void heartbeat().catch(() => undefined),
    options.heartbeatMs ?? leaseMsOf(claimed.run) / 3,
  );
  const reported = () => (usage.total_tokens > 0 ? usage : undefined);
  try {
    let outcome: RunOutcome;
    try {
      outcome = await handler(claimed.run, {
        signal: lost.signal,
        heartbeat,
        addUsage: (u) => {
          usage.prompt_tokens += u.prompt_tokens ?? 0;
          usage.completion_tokens += u.completion_tokens ?? 0;
          usage.total_tokens += u.total_tokens ?? 0;
        },
      });
    } catch (error) {
      if (lost.signal.aborted) throw lost.signal.reason as RunLostError;
      const message = error instanceof Error ? error.message : String(error);
      await claimed.fail(message.slice(0, 2000) || 'The handler failed', reported()).catch(() => undefined);
      throw error;
    }
    if (lost.signal.aborted) throw lost.signal.reason as RunLostError;
    try {
      return await claimed.complete(outcome, reported());
    } catch (error) {
      if (error instanceof RemitApiError && error.status === 409)
        throw new RunLostError(claimed.run.id, error);
      throw error;
    }
  } finally {
    clearInterval(timer);
  }
}

export interface RunOutsideAgentOptions extends ClaimOptions, WorkOptions {
  /** Which runs to take: one agent's, or every agent's of a type. */
  filter: RunFilter;
  handler: RunHandler;
  /** Wait between looks when nothing is pending. Default 5 s. */
  pollMs?: number;
  /** Called with each run's failure or loss (the loop goes on). */
  onError?: (error: unknown, run: AgentRun) => void;
  /** How to wait between looks (tests pass one that returns at once). Default: a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const timerSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/**
 * An outside runtime's loop: claims the pending runs matching `filter`, oldest first, one at a time,
 * and works on each with `handler` (see `workOnRun`), until `signal` aborts.
 *
 * ```ts
 * const stop = new AbortController();
 * await runOutsideAgent(remit, {
 *   filter: { agent_type: 'research' }, runtimeId: 'research-1', signal: stop.signal,
 *   handler: async (run, { addUsage }) => ({ summary: await research(run.attributes.input) }),
 * });
 * ```
 */
export async function runOutsideAgent(client: RemitClient, options: RunOutsideAgentOptions): Promise<void> {
  const { filter, handler, pollMs = 5000, onError, sleep = timerSleep, signal, ...claim } = options;
  while (!signal?.aborted) {
    const claimed = await claimNextRun(client, filter, { ...claim, ...(signal ? { signal } : {}) });
    if (!claimed) {
      await sleep(pollMs, signal);
      continue;
    }
    try {
      await workOnRun(claimed, handler, options);
    } catch (error) {
      onError?.(error, claimed.run);
    }
  }
}
