import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { call } from '../../../test/helpers/http.ts';
import { createPrincipals, type Principals } from '../../../test/helpers/principals.ts';
import { until } from '../../../test/helpers/until.ts';
import {
  claimFollowUpRun,
  claimNextRun,
  claimRun,
  createRemitClient,
  findFollowUpRun,
  RemitApiError,
  requireApproval,
  runOutsideAgent,
  RunLostError,
  workOnRun,
  type AgentRun,
  type RemitClient,
} from '../src/index.ts';

/**
 * An outside runtime's helpers against a live Remit over real HTTP (docs/client.md#running-an-outside-agent):
 * claiming pending runs of agent types without a built-in executor, working on them with heartbeats,
 * completing or failing them, and the follow-up run of an approval. The app runs no workers: nothing
 * but these helpers touches the runs.
 */

let t: TestApp;
let p: Principals;
let remit: RemitClient;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000', TASK_WAIT_RECHECK_S: '60' } });
  p = await createPrincipals(t);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  remit = createRemitClient({ baseUrl, apiKey: p.orgA.admin.key });
});
afterAll(async () => {
  await t?.close();
});

/** An active agent of a type of its own (so a runtime's filter sees only its runs), with `runs` pending. */
async function agentWithRuns(runs: number, body: Record<string, unknown> = {}) {
  const agentType = `research_${crypto.randomBytes(3).toString('hex')}`;
  const agent = (
    await remit.POST('/api/agents', {
      body: { name: `Researcher ${agentType}`, agent_type: agentType, status: 'active', ...body },
    })
  ).data;
  const uids: string[] = [];
  for (let i = 0; i < runs; i++) {
    const run = await remit.POST('/api/agents/{agent_uid}/runs', {
      params: { path: { agent_uid: agent.uid } },
      body: { trigger_type: 'manual', sandbox: false, input: { n: i } },
    });
    uids.push(run.data.id);
  }
  return { agent, agentType, uids };
}

const runOf = async (uid: string, fields?: string) =>
  (
    await remit.GET('/api/agent-runs/{run_uid}', {
      params: { path: { run_uid: uid }, query: fields ? { 'fields[agent-runs]': fields } : {} },
    })
  ).data;

describe('claimRun and the claim handle', () => {
  it('claims a pending run, renews its lease, completes it; completing again answers the run', async () => {
    const { uids } = await agentWithRuns(1);
    const claimed = await claimRun(remit, uids[0]!, { runtimeId: 'client-test', leaseSeconds: 60 });
    expect(claimed.run.attributes).toMatchObject({
      status: 'running',
      claimed_by: 'client-test',
      input: { n: 0 },
    });
    expect(claimed.claimToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const renewed = await claimed.heartbeat(120);
    expect(Date.parse(renewed.attributes.lease_expires_at!)).toBeGreaterThan(
      Date.parse(claimed.run.attributes.lease_expires_at!),
    );
    const done = await claimed.complete({ summary: 'Read 3 papers', papers: 3 });
    expect(done.attributes).toMatchObject({
      status: 'completed',
      outcome: { summary: 'Read 3 papers', papers: 3 },
    });
    expect(await claimed.complete({ summary: 'Read 3 papers', papers: 3 })).toEqual(done);
    // A second claim of an ended run is the API's 409, thrown as RemitApiError.
    const again = await claimRun(remit, uids[0]!).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(RemitApiError);
    expect(again).toMatchObject({ status: 409, code: 'invalid_state' });
  });

  it('another organization’s run is the API’s 404', async () => {
    const { uids } = await agentWithRuns(1);
    const foreign = createRemitClient({ baseUrl, apiKey: p.orgB.admin.key });
    await expect(claimRun(foreign, uids[0]!)).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });
});

describe('claimNextRun', () => {
  it('the oldest pending run of the type; a run another runtime holds is skipped; null when none is left', async () => {
    const { agentType, uids } = await agentWithRuns(3);
    const other = await claimRun(remit, uids[0]!, { runtimeId: 'someone-else' });
    const next = await claimNextRun(remit, { agent_type: agentType }, { runtimeId: 'me' });
    expect(next?.run.id).toBe(uids[1]);
    const last = await claimNextRun(remit, { agent_type: agentType });
    expect(last?.run.id).toBe(uids[2]);
    expect(await claimNextRun(remit, { agent_type: agentType })).toBeNull();
    for (const claimed of [other, next!, last!]) await claimed.complete({ summary: 'done' });
  });
});

describe('workOnRun', () => {
  it('completes the run with the handler’s outcome and the token usage it reported', async () => {
    const { uids } = await agentWithRuns(1);
    const claimed = await claimRun(remit, uids[0]!);
    const run = await workOnRun(claimed, async (r, { addUsage, heartbeat }) => {
      addUsage({ prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 });
      await heartbeat();
      addUsage({ prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 });
      return { summary: `Answered question ${String(r.attributes.input?.n)}` };
    });
    expect(run.attributes).toMatchObject({
      status: 'completed',
      outcome: { summary: 'Answered question 0' },
    });
    expect((await runOf(uids[0]!, 'token_usage')).attributes.token_usage).toEqual({
      prompt_tokens: 44,
      completion_tokens: 11,
      total_tokens: 55,
    });
  });

  it('a handler that throws fails the run with its message, and the error is thrown on', async () => {
    const { uids } = await agentWithRuns(1);
    const claimed = await claimRun(remit, uids[0]!);
    const thrown = await workOnRun(claimed, async () => {
      throw new Error('The archive was offline');
    }).catch((e: unknown) => e);
    expect((thrown as Error).message).toBe('The archive was offline');
    expect((await runOf(uids[0]!)).attributes).toMatchObject({
      status: 'failed',
      error: 'The archive was offline',
    });
  });

  it('a run cancelled meanwhile: the heartbeat aborts the handler’s signal, RunLostError, the run stays cancelled', async () => {
    const { uids } = await agentWithRuns(1);
    const claimed = await claimRun(remit, uids[0]!);
    let aborted = false;
    const thrown = await workOnRun(claimed, async (run, { signal, heartbeat }) => {
      await remit.POST('/api/agent-runs/{run_uid}/cancel', { params: { path: { run_uid: run.id } } });
      await heartbeat().catch(() => undefined);
      aborted = signal.aborted;
      return { summary: 'finished anyway' };
    }).catch((e: unknown) => e);
    expect(aborted).toBe(true);
    expect(thrown).toBeInstanceOf(RunLostError);
    expect((thrown as RunLostError).error).toMatchObject({ status: 409, code: 'invalid_state' });
    expect((await runOf(uids[0]!)).attributes).toMatchObject({ status: 'cancelled', outcome: null });
  });
});

describe('runOutsideAgent', () => {
  it('claims and works the pending runs of its filter one by one, until its signal aborts', async () => {
    const { agentType, uids } = await agentWithRuns(2);
    const stop = new AbortController();
    const seen: AgentRun[] = [];
    let polls = 0;
    await runOutsideAgent(remit, {
      filter: { agent_type: agentType },
      runtimeId: 'loop-1',
      signal: stop.signal,
      handler: async (run) => {
        seen.push(run);
        return { summary: `did ${String(run.attributes.input?.n)}` };
      },
      // Nothing left: the test stops the loop instead of waiting.
      sleep: async () => {
        polls++;
        stop.abort();
      },
    });
    expect(polls).toBe(1);
    expect(seen.map((r) => r.id)).toEqual(uids);
    for (const [i, uid] of uids.entries()) {
      expect((await runOf(uid)).attributes).toMatchObject({
        status: 'completed',
        claimed_by: 'loop-1',
        outcome: { summary: `did ${i}` },
      });
    }
  });
});

describe('the follow-up run of an approval', () => {
  it('after requireApproval answers approved, the runtime claims the follow-up run, acts in it and completes it', async () => {
    const { agent } = await agentWithRuns(0, { name: 'Refunder' });
    let raised = '';
    const deciding = requireApproval(remit, {
      agent_uid: agent.uid,
      title: 'Refund order 77?',
      reasoning: 'Arrived broken',
      tool_args: { type: 'refund', order: '77', amount_cents: 1200 },
      trigger: { type: 'manual' },
      onRaised: (task) => (raised = task.uid),
    });
    await until(async () => raised !== '' && t.app.taskWaiters.size > 0, 'the client to wait');
    const decided = await call(t.app, 'PATCH', `/api/work-tasks/${raised}`, {
      key: p.orgA.member.key,
      body: { action: 'approve', tool_args: { amount_cents: 1000 } },
    });
    expect(decided.status, decided.raw).toBe(200);
    const decision = await deciding;
    expect(decision.approved).toBe(true);

    const followUp = await claimFollowUpRun(remit, decision.task.uid, { runtimeId: 'refunds' });
    expect(followUp?.run.attributes).toMatchObject({
      status: 'running',
      trigger_type: 'approval',
      task_uid: raised,
      claimed_by: 'refunds',
    });
    const done = await workOnRun(followUp!, async () => ({
      summary: `Refunded ${String(decision.toolArgs.amount_cents)} cents`,
    }));
    expect(done.attributes).toMatchObject({
      status: 'completed',
      outcome: { summary: 'Refunded 1000 cents' },
    });
    // Nothing left to claim for that task; the run is found as it is.
    expect(await claimFollowUpRun(remit, raised)).toBeNull();
    expect((await findFollowUpRun(remit, raised))?.attributes.status).toBe('completed');
  });

  it("a rejected approval's follow-up run tells the runtime so: the decision is its input", async () => {
    const { agent } = await agentWithRuns(0);
    const raised = await remit.POST('/api/agents/{agent_uid}/approvals', {
      params: { path: { agent_uid: agent.uid } },
      body: { title: 'Refund?', reasoning: 'x', tool_args: { type: 'refund' }, trigger: { type: 'manual' } },
    });
    const rejected = await call(t.app, 'PATCH', `/api/work-tasks/${raised.data.uid}`, {
      key: p.orgA.member.key,
      body: { action: 'reject', resolution_note: 'Not this customer' },
    });
    expect(rejected.status, rejected.raw).toBe(200);
    const run = await findFollowUpRun(remit, raised.data.uid);
    expect((run?.attributes.input as { decision?: unknown } | undefined)?.decision).toMatchObject({
      action: 'reject',
      note: 'Not this customer',
    });
    const claimed = await claimFollowUpRun(remit, raised.data.uid);
    expect(claimed?.run.attributes.status).toBe('running');
  });
});
