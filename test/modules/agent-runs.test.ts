import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import {
  AGENT_RUN_QUEUE,
  executeRun,
  registerExecutor,
  RunFailure,
} from '../../src/modules/agents/agent-runs.service.ts';
import { agentNotifications, agentRuns, agents } from '../../src/modules/agents/agents.tables.ts';
import { addUserToOrganization, initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import {
  createAgent,
  createCollectionsAgent,
  deferred,
  getRun,
  ISO,
  MISSING,
  post,
  receivables,
  runAgent,
  runEnvOf,
  tag,
  until,
  UUID,
  waitForRun,
} from '../helpers/agent-fixtures.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeLlm } from '../helpers/fake-llm.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * Agent runs (interface 2.4, 3.3, 4.3; CONTRACT §3, §4): starting a run (202, pending), the executor's
 * moves (running → completed | failed | stopped), cancelling (pending or running → cancelled), token
 * usage from the model, and the activity list with every query parameter of interface 4.3.
 */

let t: TestApp;
let p: Principals;
let llm: FakeLlm;
let admin: string;
/** An agent and a run of orgB: orgA's callers must never see or touch them. */
let foreignAgent: string;
let foreignRun: string;

// ---- executors registered by this file (agent types of its own) ----

/** `test_gate`: enters, waits for the test to open its gate, then passes a checkpoint. */
const gates = new Map<
  string,
  {
    entered: ReturnType<typeof deferred>;
    release: ReturnType<typeof deferred>;
    passed: boolean;
    exited: boolean;
  }
>();
function gateOf(runUid: string) {
  let gate = gates.get(runUid);
  if (!gate) {
    gate = { entered: deferred(), release: deferred(), passed: false, exited: false };
    gates.set(runUid, gate);
  }
  return gate;
}
registerExecutor('test_gate', async (_env, step) => {
  const gate = gateOf(step.run.uid);
  try {
    gate.entered.resolve();
    await gate.release.promise;
    await step.checkpoint();
    gate.passed = true;
    return { summary: 'passed the gate' };
  } finally {
    gate.exited = true;
  }
});
registerExecutor('test_ok', async (_env, step) => {
  step.addUsage({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
  await step.checkpoint();
  step.addUsage({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
  return { summary: `did the work for ${step.agent.name}`, items: 2 };
});
registerExecutor('test_fail', async (_env, step) => {
  step.addUsage({ prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 });
  throw new RunFailure('the ledger would not balance', null, null);
});

beforeAll(async () => {
  llm = await new FakeLlm().start();
  t = await createTestApp({
    workers: true,
    env: { RATE_LIMIT_MAX: '100000', LLM_BASE_URL: llm.baseUrl, LLM_MODEL: 'x' },
  });
  p = await createPrincipals(t);
  admin = p.orgA.admin.key;
  foreignAgent = (await createAgent(t, p.orgB.admin.key, { name: 'Foreign', status: 'active' })).uid;
  foreignRun = (await post(t, p.orgB.admin.key, `/api/agents/${foreignAgent}/runs`, {}, 202)).id;
});
afterAll(async () => {
  for (const gate of gates.values()) gate.release.resolve();
  await t?.close();
  await llm?.close();
});

const start = (agentUid: string, body: unknown = {}, key = admin) =>
  call(t.app, 'POST', `/api/agents/${agentUid}/runs`, { key, body });
const cancel = (runUid: string, key = admin) =>
  call(t.app, 'POST', `/api/agent-runs/${runUid}/cancel`, { key });

async function runRow(uid: string) {
  const [row] = await t.db.select().from(agentRuns).where(eq(agentRuns.uid, uid));
  return row!;
}
async function notificationsOf(agentUid: string) {
  return t.db.select().from(agentNotifications).where(eq(agentNotifications.agentUid, agentUid));
}

describe('POST /api/agents/{uid}/runs', () => {
  it('202 with a pending run carrying every attribute of interface 2.4', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' });
    const res = await start(agent.uid);
    expect(res.status, res.raw).toBe(202);
    expect(res.body).toMatchObject({ status: 'success', status_code: 202, message: expect.any(String) });
    const [row] = await t.db.select().from(agents).where(eq(agents.uid, agent.uid));
    expect(res.body.data).toEqual({
      id: expect.stringMatching(UUID),
      type: 'agent-runs',
      attributes: {
        agent_uid: agent.uid,
        agent_version_uid: row!.currentVersionUid,
        scratchpad_uid: expect.stringMatching(UUID),
        workflow_id: expect.stringMatching(UUID),
        approach: 'default',
        status: 'pending',
        sandbox: false,
        trigger_type: 'manual',
        started_on: null,
        completed_on: null,
        created_on: expect.stringMatching(ISO),
        task_uid: null,
        error: null,
        outcome: null,
        input: {},
        trigger: { type: 'manual', requested_by: p.orgA.admin.userUid },
        claimed_by: null,
        claimed_at: null,
        lease_expires_at: null,
        lease_lapses: 0,
      },
    });
    expect(res.body.data.attributes).not.toHaveProperty('token_usage');
    // workflow_id is the job that executes the run.
    const job = await t.deps.jobs.getJob(AGENT_RUN_QUEUE, res.body.data.attributes.workflow_id);
    expect(job?.data).toEqual({ run_uid: res.body.data.id, organization_uid: p.orgA.uid });
    // The agent counts it.
    const after = await call(t.app, 'GET', `/api/agents/${agent.uid}`, { key: admin });
    expect(after.body.data.runs_count).toBe(1);
    await waitForRun(t, admin, res.body.data.id);
  });

  it('takes trigger_type, sandbox and input; 422 for anything else', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' });
    const res = await start(agent.uid, { trigger_type: 'schedule', sandbox: true, input: { a: 1 } });
    expect(res.status, res.raw).toBe(202);
    expect(res.body.data.attributes).toMatchObject({ trigger_type: 'schedule', sandbox: true });
    expect((await runRow(res.body.data.id)).input).toEqual({ a: 1 });
    for (const body of [
      { trigger_type: 'approval' },
      { trigger_type: 'whenever' },
      { sandbox: 'yes' },
      { input: 'x' },
      { extra: true },
    ]) {
      const bad = await start(agent.uid, body);
      expect(expectErrorBody(bad, 422, 'validation_failed').errors?.length).toBeGreaterThan(0);
    }
    await waitForRun(t, admin, res.body.data.id);
  });

  it('stamps the version the agent has when the run is requested', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' });
    const first = await runAgent(t, admin, agent.uid);
    const patched = await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, {
      key: admin,
      body: { instructions: 'New instructions' },
    });
    expect(patched.status, patched.raw).toBe(200);
    const second = await runAgent(t, admin, agent.uid);
    expect(second.attributes.agent_version_uid).not.toBe(first.attributes.agent_version_uid);
    const [row] = await t.db.select().from(agents).where(eq(agents.uid, agent.uid));
    expect(second.attributes.agent_version_uid).toBe(row!.currentVersionUid);
  });

  it('409 for a draft or paused agent; a sandbox run of either is allowed', async () => {
    for (const status of ['draft', 'paused']) {
      const agent = await createAgent(t, admin, { status, agent_type: 'test_ok' });
      const refused = await start(agent.uid);
      expect(expectErrorBody(refused, 409, 'invalid_state').message).toContain(status);
      expect(await t.db.select().from(agentRuns).where(eq(agentRuns.agentUid, agent.uid))).toHaveLength(0);
      const sandbox = await start(agent.uid, { sandbox: true });
      expect(sandbox.status, sandbox.raw).toBe(202);
      expect(sandbox.body.data.attributes).toMatchObject({ sandbox: true, status: 'pending' });
      // The sandbox run is not stopped for the agent's status: it runs to its end.
      const done = await waitForRun(t, admin, sandbox.body.data.id);
      expect(done.attributes.status).toBe('completed');
    }
  });

  it("404 for an unknown agent and another organization's; 400 for a malformed uid", async () => {
    expectErrorBody(await start(MISSING), 404, 'not_found');
    expectErrorBody(await start(foreignAgent), 404, 'not_found');
    expectErrorBody(await start('not-a-uuid'), 400);
  });
});

describe('executing a run', () => {
  it('pending → running → completed, with the outcome, both timestamps and the token usage', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' });
    const run = await runAgent(t, admin, agent.uid);
    expect(run.attributes).toMatchObject({
      status: 'completed',
      started_on: expect.stringMatching(ISO),
      completed_on: expect.stringMatching(ISO),
      error: null,
      outcome: { summary: `did the work for ${agent.name}`, items: 2 },
    });
    const { started_on, completed_on, created_on } = run.attributes;
    expect(Date.parse(started_on)).toBeGreaterThanOrEqual(Date.parse(created_on));
    expect(Date.parse(completed_on)).toBeGreaterThanOrEqual(Date.parse(started_on));
    expect((await runRow(run.id)).tokenUsage).toEqual({
      prompt_tokens: 11,
      completion_tokens: 7,
      total_tokens: 18,
    });
    const notes = await notificationsOf(agent.uid);
    expect(notes.map((n) => n.event)).toEqual(['outcome']);
    expect(notes[0]!.text).toContain(agent.name);
    expect(notes[0]!.runUid).toBe(run.id);
  });

  it('an agent type without a built-in executor: the job leaves the run pending for an outside runtime', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'custom' });
    const run = await post(t, admin, `/api/agents/${agent.uid}/runs`, { input: { a: 1 } }, 202);
    const row = await runRow(run.id);
    // The job ran (or runs now, directly): it leaves the run as it is, to be claimed (agent-run-claims.test.ts).
    expect(await executeRun(runEnvOf(t), { run_uid: run.id, organization_uid: p.orgA.uid })).toBe('outside');
    await until(
      async () => (await t.deps.jobs.getJob(AGENT_RUN_QUEUE, row.workflowId!))?.state === 'completed',
      'the run job to finish',
    );
    expect((await getRun(t, admin, run.id)).attributes).toMatchObject({
      status: 'pending',
      started_on: null,
      completed_on: null,
      outcome: null,
      input: { a: 1 },
    });
  });

  it('an executor that throws → failed with the error, and an error notification', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_fail' });
    const run = await runAgent(t, admin, agent.uid);
    expect(run.attributes).toMatchObject({
      status: 'failed',
      error: 'the ledger would not balance',
      completed_on: expect.stringMatching(ISO),
      outcome: null,
    });
    expect((await runRow(run.id)).tokenUsage.total_tokens).toBe(7);
    const notes = await notificationsOf(agent.uid);
    expect(notes.map((n) => n.event)).toEqual(['error']);
    expect(notes[0]!.text).toContain('the ledger would not balance');
    expect(notes[0]!.text).toContain(agent.name);
  });

  it('token_usage sums the prompt, completion and total tokens of every model call', async () => {
    llm.behaviour = { kind: 'succeed', usage: { prompt_tokens: 100, completion_tokens: 30 } };
    const calls = llm.requests.length;
    const r = await receivables(t, admin);
    const client = await r.client();
    await r.invoice(client.uid, { dueInDays: -20 });
    await r.invoice(client.uid, { dueInDays: -10 });
    const agent = await createCollectionsAgent(t, admin);
    const run = await runAgent(t, admin, agent.uid);
    expect(run.attributes.status, JSON.stringify(run.attributes)).toBe('completed');
    expect(llm.requests.length - calls).toBe(2);
    const list = await call(
      t.app,
      'GET',
      `/api/agents/${agent.uid}/activities?fields[agent-runs]=token_usage,status`,
      { key: admin },
    );
    expect(list.status, list.raw).toBe(200);
    expect(list.body.data.items[0].attributes).toEqual({
      status: 'completed',
      token_usage: { prompt_tokens: 200, completion_tokens: 60, total_tokens: 260 },
    });
    llm.behaviour = { kind: 'succeed' };
  });
});

describe('cancelling, pausing and the checkpoints between steps', () => {
  it('pending → cancelled (the job does nothing); running → cancelled at the next checkpoint', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_gate' });
    const running = (await post(t, admin, `/api/agents/${agent.uid}/runs`, {}, 202)).id as string;
    await until(async () => gates.has(running), 'the executor to start');
    await gateOf(running).entered.promise;
    // The one run worker is held by `running`, so this one stays pending.
    const pending = (await post(t, admin, `/api/agents/${agent.uid}/runs`, {}, 202)).id as string;
    expect((await getRun(t, admin, running)).attributes.status).toBe('running');
    expect((await getRun(t, admin, pending)).attributes.status).toBe('pending');

    const cancelledPending = await cancel(pending);
    expect(cancelledPending.status, cancelledPending.raw).toBe(200);
    expect(cancelledPending.body.data.attributes).toMatchObject({
      status: 'cancelled',
      started_on: null,
      completed_on: expect.stringMatching(ISO),
    });
    const cancelledRunning = await cancel(running);
    expect(cancelledRunning.status, cancelledRunning.raw).toBe(200);
    expect(cancelledRunning.body.data.attributes.status).toBe('cancelled');

    // The executor goes on to its next checkpoint, which ends it; it never gets past.
    gateOf(running).release.resolve();
    await until(async () => gateOf(running).exited, 'the executor to stop');
    expect(gateOf(running).passed).toBe(false);
    // The pending run's job was cancelled; run anyway, it does nothing.
    const pendingRow = await runRow(pending);
    const job = await t.deps.jobs.getJob(AGENT_RUN_QUEUE, pendingRow.workflowId!);
    expect(job?.state).toBe('cancelled');
    expect(await executeRun(runEnvOf(t), { run_uid: pending, organization_uid: p.orgA.uid })).toBe('skipped');
    expect(gates.has(pending)).toBe(false);
    for (const uid of [running, pending]) {
      const row = await runRow(uid);
      expect(row.status).toBe('cancelled');
      expect(row.outcome).toBeNull();
    }
    expect((await runRow(pending)).startedOn).toBeNull();
    // Nothing to report: a cancelled run sends no outcome.
    expect(await notificationsOf(agent.uid)).toHaveLength(0);
  });

  it('409 when the run has already ended', async () => {
    const ok = await runAgent(
      t,
      admin,
      (await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' })).uid,
    );
    const failed = await runAgent(
      t,
      admin,
      (await createAgent(t, admin, { status: 'active', agent_type: 'test_fail' })).uid,
    );
    for (const run of [ok, failed]) {
      expect(expectErrorBody(await cancel(run.id), 409, 'invalid_state').message).toContain(
        run.attributes.status,
      );
      expect((await getRun(t, admin, run.id)).attributes.status).toBe(run.attributes.status);
    }
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_gate' });
    const run = (await post(t, admin, `/api/agents/${agent.uid}/runs`, {}, 202)).id as string;
    expect((await cancel(run)).status).toBe(200);
    expectErrorBody(await cancel(run), 409, 'invalid_state');
    gateOf(run).release.resolve();
    await waitForRun(t, admin, run);
  });

  it("404 for an unknown run and another organization's", async () => {
    expectErrorBody(await cancel(MISSING), 404, 'not_found');
    expectErrorBody(await cancel(foreignRun), 404, 'not_found');
    expect((await getRun(t, p.orgB.admin.key, foreignRun)).attributes.status).not.toBe('cancelled');
  });

  it('an agent paused while its run waits or works → stopped at the next checkpoint', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_gate' });
    const first = (await post(t, admin, `/api/agents/${agent.uid}/runs`, {}, 202)).id as string;
    await until(async () => gates.has(first), 'the executor to start');
    await gateOf(first).entered.promise;
    const waiting = (await post(t, admin, `/api/agents/${agent.uid}/runs`, {}, 202)).id as string;
    const paused = await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, {
      key: admin,
      body: { status: 'paused' },
    });
    expect(paused.status, paused.raw).toBe(200);
    gateOf(first).release.resolve();
    const stopped = await waitForRun(t, admin, first);
    expect(stopped.attributes).toMatchObject({ status: 'stopped', completed_on: expect.stringMatching(ISO) });
    expect(stopped.attributes.outcome.summary).toContain('paused');
    expect(gateOf(first).passed).toBe(false);
    // The run that waited starts, sees the agent paused before its first step, and stops.
    const second = await waitForRun(t, admin, waiting);
    expect(second.attributes.status).toBe('stopped');
    expect(gates.has(waiting)).toBe(false);
  });
});

describe('GET /api/agent-runs/{uid}', () => {
  it('the run, without token_usage; 404 for an unknown or foreign run; 400 for a bad uid', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' });
    const run = await runAgent(t, admin, agent.uid);
    expect(run).toMatchObject({ id: expect.stringMatching(UUID), type: 'agent-runs' });
    expect(run.attributes).not.toHaveProperty('token_usage');
    expectErrorBody(await call(t.app, 'GET', `/api/agent-runs/${MISSING}`, { key: admin }), 404);
    expectErrorBody(await call(t.app, 'GET', `/api/agent-runs/${foreignRun}`, { key: admin }), 404);
    expectErrorBody(await call(t.app, 'GET', '/api/agent-runs/nope', { key: admin }), 400);
  });
});

describe('GET /api/agent-runs/{uid}?fields[agent-runs]=', () => {
  it('only the attributes asked for; token_usage to admins (and keys) holding agents:token_usage, else 403', async () => {
    const agent = await createAgent(t, admin, { status: 'active', agent_type: 'test_ok' });
    const run = await runAgent(t, admin, agent.uid);
    const get = (query: string, key = admin, uid = run.id) =>
      call(t.app, 'GET', `/api/agent-runs/${uid}?${query}`, { key });
    const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

    const res = await get('fields[agent-runs]=status,token_usage');
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({
      id: run.id,
      type: 'agent-runs',
      attributes: { status: 'completed', token_usage: usage },
    });
    const sparse = await get('fields%5Bagent-runs%5D=trigger_type');
    expect(sparse.body.data.attributes).toEqual({ trigger_type: 'manual' });
    // An empty list is every attribute but token_usage, as with no parameter.
    const all = await get('fields[agent-runs]=');
    expect(Object.keys(all.body.data.attributes).sort()).toEqual(Object.keys(run.attributes).sort());

    const unknown = expectErrorBody(await get('fields[agent-runs]=status,secret'), 400, 'invalid_parameter');
    expect(unknown.errors?.[0]?.field).toBe('fields[agent-runs]');
    expectErrorBody(await get('fields[agent-runs]=status&fields=x'), 400, 'unknown_parameter');

    // Members never see token usage, whatever their key says; admins' keys need the scope.
    const query = 'fields[agent-runs]=token_usage';
    expectErrorBody(await get(query, p.orgA.member.key), 403, 'missing_scope');
    expect((await get('fields[agent-runs]=status', p.orgA.member.key)).status).toBe(200);
    const memberScoped = await p.keyWithScopes(['agents:read', 'agents:token_usage'], 'member');
    expectErrorBody(await get(query, memberScoped), 403, 'missing_scope');
    expectErrorBody(await get(query, await p.keyWithScopes(['agents:read'])), 403, 'missing_scope');
    const withUsage = await get(query, await p.keyWithScopes(['agents:read', 'agents:token_usage']));
    expect(withUsage.body.data.attributes).toEqual({ token_usage: usage });

    // Another organization's run is 404 before any field is looked at.
    expectErrorBody(await get(query, admin, foreignRun), 404, 'not_found');
    expectErrorBody(await get(query, p.orgB.admin.key, MISSING), 404, 'not_found');
  });
});

// ---- activities ----

describe('GET /api/agents/{uid}/activities', () => {
  /** Runs with fixed times (2025-01-0N, hours:minutes UTC), written straight into agent_runs. */
  let ledger: string;
  const ids: Record<string, string> = {};
  const at = (day: number, hm: string) => new Date(`2025-01-0${day}T${hm}:00Z`);
  const fixtures = [
    {
      key: 'r1',
      status: 'completed',
      trigger: 'manual',
      created: at(1, '10:00'),
      started: at(1, '10:01'),
      completed: at(1, '10:05'),
    },
    {
      key: 'r2',
      status: 'failed',
      trigger: 'schedule',
      created: at(2, '10:00'),
      started: at(2, '10:01'),
      completed: at(2, '10:02'),
    },
    {
      key: 'r3',
      status: 'running',
      trigger: 'email_received',
      created: at(3, '10:00'),
      started: at(3, '10:01'),
      completed: null,
    },
    {
      key: 'r4',
      status: 'pending',
      trigger: 'manual',
      created: at(4, '10:00'),
      started: null,
      completed: null,
    },
    {
      key: 'r5',
      status: 'cancelled',
      trigger: 'schedule',
      created: at(5, '10:00'),
      started: null,
      completed: at(5, '10:03'),
    },
    {
      key: 'r6',
      status: 'stopped',
      trigger: 'approval',
      created: at(6, '10:00'),
      started: at(6, '10:01'),
      completed: at(6, '10:02'),
    },
    {
      key: 'r7',
      status: 'completed',
      trigger: 'manual',
      created: at(7, '10:00'),
      started: at(7, '10:01'),
      completed: at(7, '10:30'),
    },
  ] as const;

  async function insertRuns(agentUid: string, rows: readonly (typeof fixtures)[number][]) {
    const [agent] = await t.db.select().from(agents).where(eq(agents.uid, agentUid));
    const inserted = await t.db
      .insert(agentRuns)
      .values(
        rows.map((f) => ({
          organizationUid: agent!.organizationUid,
          agentUid,
          agentVersionUid: agent!.currentVersionUid!,
          status: f.status,
          triggerType: f.trigger,
          trigger: { type: f.trigger },
          createdOn: f.created,
          startedOn: f.started,
          completedOn: f.completed,
          workflowId: `wf-${f.key}`,
          tokenUsage:
            f.key === 'r7'
              ? { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 }
              : { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        })),
      )
      .returning({ uid: agentRuns.uid, workflowId: agentRuns.workflowId });
    return inserted;
  }

  beforeAll(async () => {
    ledger = (await createAgent(t, admin, { name: 'Ledger', status: 'paused' })).uid;
    for (const row of await insertRuns(ledger, fixtures)) ids[row.workflowId!.slice(3)] = row.uid;
  });

  const list = (query: string, key = admin, agentUid = ledger) =>
    call(t.app, 'GET', `/api/agents/${agentUid}/activities${query ? `?${query}` : ''}`, { key });
  /** The fixture keys of the listed runs, in order. */
  async function keysOf(query: string): Promise<string[]> {
    const res = await list(query);
    expect(res.status, `${query}: ${res.raw}`).toBe(200);
    const byUid = Object.fromEntries(Object.entries(ids).map(([k, v]) => [v, k]));
    return res.body.data.items.map((i: { id: string }) => byUid[i.id]);
  }

  it('items {id, type: "agent-runs", attributes} in data.items with data._meta; -started_on by default', async () => {
    const res = await list('');
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 10, total_pages: 1, total_items: 7 });
    expect(res.body.data).not.toHaveProperty('groups');
    const r7 = res.body.data.items[0];
    expect(r7).toEqual({
      id: ids.r7,
      type: 'agent-runs',
      attributes: {
        agent_uid: ledger,
        agent_version_uid: expect.stringMatching(UUID),
        scratchpad_uid: expect.stringMatching(UUID),
        workflow_id: 'wf-r7',
        approach: 'default',
        status: 'completed',
        sandbox: false,
        trigger_type: 'manual',
        started_on: '2025-01-07T10:01:00.000Z',
        completed_on: '2025-01-07T10:30:00.000Z',
        created_on: '2025-01-07T10:00:00.000Z',
        task_uid: null,
        error: null,
        outcome: null,
        input: {},
        trigger: { type: 'manual' },
        claimed_by: null,
        claimed_at: null,
        lease_expires_at: null,
        lease_lapses: 0,
      },
    });
    // Runs not started yet come last.
    expect(await keysOf('')).toEqual(['r7', 'r6', 'r3', 'r2', 'r1', 'r5', 'r4']);
  });

  it('status: one or a comma list; 400 for an unknown status', async () => {
    expect(await keysOf('status=completed')).toEqual(['r7', 'r1']);
    expect(await keysOf('status=completed,failed')).toEqual(['r7', 'r2', 'r1']);
    expect(await keysOf('status=pending,%20running')).toEqual(['r3', 'r4']);
    expect(await keysOf('status=cancelled,stopped')).toEqual(['r6', 'r5']);
    for (const bad of ['done', 'completed,done', 'COMPLETED']) {
      const res = expectErrorBody(await list(`status=${bad}`), 400, 'invalid_parameter');
      expect(res.errors?.[0]?.field).toBe('status');
    }
  });

  it('started_on, completed_on and created_on ranges, inclusive at both ends', async () => {
    expect(await keysOf('started_on_from=2025-01-02T10:01:00Z&started_on_to=2025-01-06T10:01:00Z')).toEqual([
      'r6',
      'r3',
      'r2',
    ]);
    // The same instant written with an offset.
    expect(await keysOf('started_on_from=2025-01-06T11:01:00%2B01:00')).toEqual(['r7', 'r6']);
    expect(await keysOf('started_on_to=2025-01-01T10:01:00Z')).toEqual(['r1']);
    expect(
      await keysOf('completed_on_from=2025-01-02T10:02:00Z&completed_on_to=2025-01-06T10:02:00Z'),
    ).toEqual(['r6', 'r2', 'r5']);
    expect(await keysOf('created_on_from=2025-01-03T10:00:00Z&created_on_to=2025-01-04T10:00:00Z')).toEqual([
      'r3',
      'r4',
    ]);
    // An upper bound without a timezone is read as UTC.
    expect(await keysOf('created_on_to=2025-01-01T10:00:00')).toEqual(['r1']);
    // Ranges combine with the other filters.
    expect(await keysOf('created_on_from=2025-01-01T00:00:00Z&status=completed')).toEqual(['r7', 'r1']);
  });

  it('400 for a _from bound without a timezone, and for anything that is not a date-time', async () => {
    for (const query of [
      'started_on_from=2025-01-02T10:01:00',
      'completed_on_from=2025-01-02T10:01:00',
      'created_on_from=2025-01-02T10:01:00',
      'started_on_from=2025-01-02',
      'started_on_from=yesterday',
      'started_on_to=soon',
      'completed_on_to=2025-13-01T00:00:00Z',
    ]) {
      expectErrorBody(await list(query), 400);
    }
  });

  it('has_started and has_completed', async () => {
    expect(await keysOf('has_started=true')).toEqual(['r7', 'r6', 'r3', 'r2', 'r1']);
    expect(await keysOf('has_started=false')).toEqual(['r5', 'r4']);
    // Completed: the run has ended (completed_on is set); not completed: pending or still running.
    expect(await keysOf('has_completed=true')).toEqual(['r7', 'r6', 'r2', 'r1', 'r5']);
    expect(await keysOf('has_completed=false')).toEqual(['r3', 'r4']);
    expect(await keysOf('has_started=true&has_completed=false')).toEqual(['r3']);
    expectErrorBody(await list('has_started=perhaps'), 400);
    expectErrorBody(await list('has_completed=2'), 400);
  });

  it('group_by=trigger: ordered by trigger type, then the sort; data.groups counts each type', async () => {
    const res = await list('group_by=trigger');
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.groups).toEqual([
      { trigger_type: 'approval', count: 1 },
      { trigger_type: 'email_received', count: 1 },
      { trigger_type: 'manual', count: 3 },
      { trigger_type: 'schedule', count: 2 },
    ]);
    expect(await keysOf('group_by=trigger')).toEqual(['r6', 'r3', 'r7', 'r1', 'r4', 'r2', 'r5']);
    expect(await keysOf('group_by=trigger&sort=%2Bcreated_on')).toEqual([
      'r6',
      'r3',
      'r1',
      'r4',
      'r7',
      'r2',
      'r5',
    ]);
    // Groups count the whole filtered list, not one page of it.
    const page = await list('group_by=trigger&status=completed,failed&per_page=1');
    expect(page.body.data.items).toHaveLength(1);
    expect(page.body.data.groups).toEqual([
      { trigger_type: 'manual', count: 2 },
      { trigger_type: 'schedule', count: 1 },
    ]);
    // none is the default: no groups.
    const none = await list('group_by=none');
    expect(none.status).toBe(200);
    expect(none.body.data).not.toHaveProperty('groups');
    expectErrorBody(await list('group_by=status'), 400);
  });

  it('sort: + (sent as %2B) ascending or - descending on started_on, completed_on, created_on, status', async () => {
    const cases: Record<string, string[]> = {
      '%2Bstarted_on': ['r1', 'r2', 'r3', 'r6', 'r7', 'r4', 'r5'],
      '-started_on': ['r7', 'r6', 'r3', 'r2', 'r1', 'r5', 'r4'],
      '%2Bcompleted_on': ['r1', 'r2', 'r5', 'r6', 'r7', 'r3', 'r4'],
      '-completed_on': ['r7', 'r6', 'r5', 'r2', 'r1', 'r4', 'r3'],
      '%2Bcreated_on': ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'],
      '-created_on': ['r7', 'r6', 'r5', 'r4', 'r3', 'r2', 'r1'],
      '%2Bstatus': ['r5', 'r1', 'r7', 'r2', 'r4', 'r3', 'r6'],
      '-status': ['r6', 'r3', 'r4', 'r2', 'r7', 'r1', 'r5'],
    };
    for (const [sort, expected] of Object.entries(cases))
      expect(await keysOf(`sort=${sort}`), sort).toEqual(expected);
    // A literal "+" decodes to a space in a query string; it still means ascending, as does no prefix.
    expect(await keysOf('sort=+created_on')).toEqual(cases['%2Bcreated_on']);
    expect(await keysOf('sort=created_on')).toEqual(cases['%2Bcreated_on']);
    for (const bad of ['uid', '-agent_uid', '*status', 'started_on,status', '--status']) {
      expectErrorBody(await list(`sort=${bad}`), 400);
    }
  });

  it('paging: per_page defaults to 10; page and per_page move through the list', async () => {
    const busy = (await createAgent(t, admin, { name: 'Busy', status: 'paused' })).uid;
    const many = Array.from({ length: 12 }, (_, i) => ({
      ...fixtures[0],
      key: `p${i}`,
      created: new Date(Date.UTC(2025, 1, 1 + i)),
      started: new Date(Date.UTC(2025, 1, 1 + i, 1)),
      completed: new Date(Date.UTC(2025, 1, 1 + i, 2)),
    })) as unknown as (typeof fixtures)[number][];
    await insertRuns(busy, many);
    const first = await list('', admin, busy);
    expect(first.body.data.items).toHaveLength(10);
    expect(first.body.data._meta).toEqual({ page: 1, per_page: 10, total_pages: 2, total_items: 12 });
    const second = await list('page=2', admin, busy);
    expect(second.body.data.items).toHaveLength(2);
    expect(second.body.data._meta).toEqual({ page: 2, per_page: 10, total_pages: 2, total_items: 12 });
    const seen = new Set(
      [...first.body.data.items, ...second.body.data.items].map((i: { id: string }) => i.id),
    );
    expect(seen.size).toBe(12);
    const small = await list('per_page=5&page=3', admin, busy);
    expect(small.body.data.items).toHaveLength(2);
    expect(small.body.data._meta).toEqual({ page: 3, per_page: 5, total_pages: 3, total_items: 12 });
    expect((await list('page=9', admin, busy)).body.data.items).toEqual([]);
    for (const bad of ['per_page=0', 'per_page=101', 'page=0', 'page=x'])
      expectErrorBody(await list(bad, admin, busy), 400);
  });

  it('fields[agent-runs]: only the attributes asked for; 400 for an unknown one', async () => {
    for (const param of ['fields[agent-runs]', 'fields%5Bagent-runs%5D']) {
      const res = await list(`${param}=status,trigger_type&status=failed`);
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.items).toEqual([
        { id: ids.r2, type: 'agent-runs', attributes: { status: 'failed', trigger_type: 'schedule' } },
      ]);
    }
    const res = expectErrorBody(await list('fields[agent-runs]=status,secret'), 400, 'invalid_parameter');
    expect(res.errors?.[0]?.field).toBe('fields[agent-runs]');
  });

  it('token_usage only when asked for by fields and held: agents:token_usage (admins only)', async () => {
    const query = 'fields[agent-runs]=token_usage,status&status=completed';
    const res = await list(query);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.items.map((i: { attributes: unknown }) => i.attributes)).toEqual([
      { token_usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 }, status: 'completed' },
      { token_usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, status: 'completed' },
    ]);
    // Not asked for: absent, whoever calls.
    for (const item of (await list('')).body.data.items)
      expect(item.attributes).not.toHaveProperty('token_usage');

    // A member (role) and a key without the scope: 403; the list itself is theirs to read.
    expectErrorBody(await list(query, p.orgA.member.key), 403, 'missing_scope');
    expect((await list('', p.orgA.member.key)).status).toBe(200);
    const readOnly = await p.keyWithScopes(['agents:read']);
    expectErrorBody(await list(query, readOnly), 403, 'missing_scope');
    expect((await list('', readOnly)).status).toBe(200);
    const withUsage = await p.keyWithScopes(['agents:read', 'agents:token_usage']);
    expect((await list(query, withUsage)).status).toBe(200);
    // A member's key cannot hold more than the member's role.
    const memberScoped = await p.keyWithScopes(['agents:read', 'agents:token_usage'], 'member');
    expectErrorBody(await list(query, memberScoped), 403, 'missing_scope');
  });

  it("the permission is the caller's in the agent's organization, not in their default one", async () => {
    // Org C: orgA's admin is only a member there; orgA's member is an admin there.
    const c = await initOrganization(t.db, t.config.apiKeyPepper, {
      organizationName: `Org C ${tag()}`,
      email: `owner-${tag()}@c.test`,
    });
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: c.organization_uid,
      email: p.orgA.admin.email,
      role: 'member',
    });
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: c.organization_uid,
      email: p.orgA.member.email,
      role: 'admin',
    });
    const agentC = await createAgent(t, c.api_key, { name: 'C agent', status: 'paused' });
    const query = 'fields[agent-runs]=token_usage';
    expectErrorBody(await list(query, admin, agentC.uid), 403, 'missing_scope');
    const asAdminOfC = await list(query, p.orgA.member.key, agentC.uid);
    expect(asAdminOfC.status, asAdminOfC.raw).toBe(200);
  });

  it("404 for an unknown agent and another organization's; 400 for a malformed uid", async () => {
    expectErrorBody(await list('', admin, MISSING), 404, 'not_found');
    expectErrorBody(await list('', admin, foreignAgent), 404, 'not_found');
    expectErrorBody(await list('', admin, 'nope'), 400);
    // orgB sees its own agent's runs, never orgA's.
    const own = await list('', p.orgB.admin.key, foreignAgent);
    expect(own.body.data.items.map((i: { id: string }) => i.id)).toEqual([foreignRun]);
  });
});

// ---- the checks every route passes ----

const env = () => ({ t, p });
let anAgent: string;
let aRun: string;
beforeAll(async () => {
  anAgent = (await createAgent(t, admin, { name: 'Routes', status: 'active', agent_type: 'test_ok' })).uid;
  aRun = (await runAgent(t, admin, anAgent)).id;
});
commonRouteChecks(
  'POST /api/agents/{uid}/runs',
  {
    method: 'POST',
    url: () => `/api/agents/${anAgent}/runs`,
    body: () => ({ sandbox: true }),
    scope: 'agents:write',
    foreignUrl: () => `/api/agents/${foreignAgent}/runs`,
  },
  env,
);
commonRouteChecks(
  'GET /api/agents/{uid}/activities',
  {
    method: 'GET',
    url: () => `/api/agents/${anAgent}/activities`,
    scope: 'agents:read',
    foreignUrl: () => `/api/agents/${foreignAgent}/activities`,
  },
  env,
);
commonRouteChecks(
  'GET /api/agent-runs/{uid}',
  {
    method: 'GET',
    url: () => `/api/agent-runs/${aRun}`,
    scope: 'agents:read',
    foreignUrl: () => `/api/agent-runs/${foreignRun}`,
  },
  env,
);
commonRouteChecks(
  'POST /api/agent-runs/{uid}/cancel',
  {
    method: 'POST',
    url: () => `/api/agent-runs/${aRun}/cancel`,
    scope: 'agents:write',
    foreignUrl: () => `/api/agent-runs/${foreignRun}/cancel`,
  },
  env,
);
