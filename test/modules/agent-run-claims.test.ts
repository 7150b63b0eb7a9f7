/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_LEASE_LAPSES,
  releaseLapsedClaims,
  stopUnclaimedRuns,
  UNCLAIMED_RUN_DAYS,
} from '../../src/modules/agents/agent-run-claims.service.ts';
import { failAbandonedRuns } from '../../src/modules/agents/agent-runs.service.ts';
import { agentNotifications, agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { createChatClient } from '../../src/platform/chat/chat.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import {
  createAgent,
  createCollectionsAgent,
  getRun,
  ISO,
  MISSING,
  post,
} from '../helpers/agent-fixtures.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { engine } from '../helpers/test-database.ts';

/**
 * Runs of outside runtimes (docs/agents.md#runs-of-outside-runtimes): a run of an agent type without a
 * built-in executor stays pending; a runtime lists it, claims it under a lease, renews the lease, and
 * completes or fails it with its claim token. Lapsed leases are driven by calling the sweep with an
 * explicit `now`: nothing here waits for a lease to run out.
 */

let t: TestApp;
let p: Principals;
let admin: string;
let foreignRun: string;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  admin = p.orgA.admin.key;
  const foreignAgent = await createAgent(t, p.orgB.admin.key, { status: 'active', agent_type: 'research' });
  foreignRun = (await post(t, p.orgB.admin.key, `/api/agents/${foreignAgent.uid}/runs`, {}, 202)).id;
});
afterAll(async () => {
  await t?.close();
});

const deps = () => ({ db: t.db, jobs: t.deps.jobs, chat: createChatClient(t.config.chat) });

async function outsideAgent(body: Record<string, unknown> = {}, key = admin) {
  return createAgent(t, key, { status: 'active', agent_type: 'research', ...body });
}
async function pendingRun(agentUid: string, body: Record<string, unknown> = {}, key = admin) {
  return (await post(t, key, `/api/agents/${agentUid}/runs`, body, 202)).id as string;
}
const claim = (runUid: string, body: Record<string, unknown> = {}, key = admin) =>
  call(t.app, 'POST', `/api/agent-runs/${runUid}/claim`, { key, body });
const heartbeat = (runUid: string, body: Record<string, unknown>, key = admin) =>
  call(t.app, 'POST', `/api/agent-runs/${runUid}/heartbeat`, { key, body });
const complete = (runUid: string, body: Record<string, unknown>, key = admin) =>
  call(t.app, 'POST', `/api/agent-runs/${runUid}/complete`, { key, body });
const fail = (runUid: string, body: Record<string, unknown>, key = admin) =>
  call(t.app, 'POST', `/api/agent-runs/${runUid}/fail`, { key, body });

/** Claims the run (200) and answers the token and the run. */
async function claimed(runUid: string, body: Record<string, unknown> = {}, key = admin) {
  const res = await claim(runUid, body, key);
  expect(res.status, res.raw).toBe(200);
  return { token: res.body.data.claim_token as string, run: res.body.data.run };
}

async function runRow(uid: string) {
  const [row] = await t.db.select().from(agentRuns).where(eq(agentRuns.uid, uid));
  return row!;
}
const eventTypesOf = async (runUid: string) =>
  (
    await rawQuery<{ type: string }>(t.db, 'select type from events where entity_uid = $1 order by id', [
      runUid,
    ])
  ).map((e) => e.type);
const eventsOf = (runUid: string) =>
  rawQuery<{ type: string; payload: any }>(
    t.db,
    'select type, payload from events where entity_uid = $1 order by id',
    [runUid],
  );
const notesOf = (runUid: string) =>
  t.db.select().from(agentNotifications).where(eq(agentNotifications.runUid, runUid));
const afterLease = (run: { attributes: { lease_expires_at: string } }, ms = 1000) =>
  new Date(Date.parse(run.attributes.lease_expires_at) + ms);

describe('a run of an agent type without a built-in executor', () => {
  it('stays pending (started by the API, a schedule or an approval) until a runtime claims it', async () => {
    const agent = await outsideAgent();
    const run = await pendingRun(agent.uid, { input: { question: 'why?' } });
    expect((await getRun(t, admin, run)).attributes).toMatchObject({
      status: 'pending',
      input: { question: 'why?' },
      trigger: { type: 'manual' },
      claimed_by: null,
      lease_expires_at: null,
      lease_lapses: 0,
    });
  });
});

describe('GET /api/agent-runs', () => {
  it('the organization’s runs, oldest first, by status, agent, agent type and approval; paged', async () => {
    const first = await outsideAgent({ agent_type: `kind_${crypto.randomBytes(3).toString('hex')}` });
    const second = await outsideAgent({ agent_type: first.agent_type });
    const a = await pendingRun(first.uid);
    const b = await pendingRun(second.uid);
    const c = await pendingRun(first.uid);
    await claimed(c);
    const list = (query: Record<string, string | number>, key = admin) =>
      call(t.app, 'GET', '/api/agent-runs', { key, query });
    const ids = async (query: Record<string, string | number>) => {
      const res = await list(query);
      expect(res.status, res.raw).toBe(200);
      return res.body.data.items.map((i: any) => i.id);
    };
    expect(await ids({ agent_type: first.agent_type })).toEqual([a, b, c]);
    expect(await ids({ agent_type: first.agent_type, status: 'pending' })).toEqual([a, b]);
    expect(await ids({ agent_type: first.agent_type, sort: '-created_on' })).toEqual([c, b, a]);
    expect(await ids({ agent_uid: first.uid, status: 'pending,running' })).toEqual([a, c]);
    const page = await list({ agent_type: first.agent_type, per_page: 2, page: 2 });
    expect(page.body.data._meta).toEqual({ page: 2, per_page: 2, total_pages: 2, total_items: 3 });
    expect(page.body.data.items.map((i: any) => i.id)).toEqual([c]);
    const sparse = await list({ agent_uid: second.uid, 'fields[agent-runs]': 'status,input' });
    expect(sparse.body.data.items).toEqual([
      { id: b, type: 'agent-runs', attributes: { status: 'pending', input: {} } },
    ]);
    // The default page: every attribute but token_usage.
    const full = (await list({ agent_uid: second.uid })).body.data.items[0].attributes;
    expect(full).not.toHaveProperty('token_usage');
    expect(full).toMatchObject({ agent_uid: second.uid, status: 'pending', trigger: { type: 'manual' } });

    expectErrorBody(await list({ status: 'waiting' }), 400, 'invalid_parameter');
    expectErrorBody(await list({ agent_uid: 'nope' }), 400, 'invalid_parameter');
    expectErrorBody(await list({ sort: 'status' }), 400, 'invalid_parameter');
    expectErrorBody(await list({ runtime: 'x' }), 400, 'unknown_parameter');
    expectErrorBody(
      await list({ 'fields[agent-runs]': 'token_usage' }, p.orgA.member.key),
      403,
      'missing_scope',
    );
  });

  it('never another organization’s runs; naming that organization is 403', async () => {
    const res = await call(t.app, 'GET', '/api/agent-runs', { key: admin, query: { per_page: 100 } });
    expect(res.body.data.items.map((i: any) => i.id)).not.toContain(foreignRun);
    const own = await call(t.app, 'GET', '/api/agent-runs', { key: p.orgB.admin.key });
    expect(own.body.data.items.map((i: any) => i.id)).toEqual([foreignRun]);
    expectErrorBody(
      await call(t.app, 'GET', '/api/agent-runs', { key: admin, query: { organization_uid: p.orgB.uid } }),
      403,
      'not_a_member',
    );
  });
});

describe('POST /api/agent-runs/{uid}/claim', () => {
  it('pending → running under a lease: a claim token, claimed_by, lease_expires_at, agent_run.started', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid, { input: { topic: 'dso' } });
    const before = Date.now();
    const res = await claim(uid, { runtime_id: 'worker-1', lease_seconds: 120 });
    expect(res.status, res.raw).toBe(200);
    const { claim_token, run } = res.body.data;
    expect(claim_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(run).toMatchObject({
      id: uid,
      type: 'agent-runs',
      attributes: {
        status: 'running',
        claimed_by: 'worker-1',
        claimed_at: expect.stringMatching(ISO),
        started_on: expect.stringMatching(ISO),
        lease_expires_at: expect.stringMatching(ISO),
        lease_lapses: 0,
        input: { topic: 'dso' },
      },
    });
    const lease = Date.parse(run.attributes.lease_expires_at) - Date.parse(run.attributes.claimed_at);
    expect(lease).toBe(120_000);
    expect(Date.parse(run.attributes.claimed_at)).toBeGreaterThanOrEqual(before - 5000);
    // Only a hash of the token is kept.
    const row = await runRow(uid);
    expect(row.claimTokenHash).toBe(crypto.createHash('sha256').update(claim_token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(claim_token);
    expect(await eventTypesOf(uid)).toEqual(['agent_run.started']);
  });

  it('claimed_by defaults to the API key; the lease to 300 s; 422 for a lease outside 10–3600 s', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    for (const body of [
      { lease_seconds: 9 },
      { lease_seconds: 3601 },
      { lease_seconds: 60.5 },
      { runtime_id: '' },
      { runtime_id: 'x'.repeat(129) },
      { token: 'x' },
    ]) {
      expectErrorBody(await claim(uid, body), 422, 'validation_failed');
    }
    expect((await runRow(uid)).status).toBe('pending');
    const { run } = await claimed(uid);
    expect(run.attributes.claimed_by).toMatch(/^api_key:[0-9a-f-]{36}$/);
    expect(Date.parse(run.attributes.lease_expires_at) - Date.parse(run.attributes.claimed_at)).toBe(300_000);
  });

  it('a second claim is 409 run_claimed naming who holds it; a finished run 409 invalid_state', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid, { runtime_id: 'worker-a' });
    const second = expectErrorBody(await claim(uid, { runtime_id: 'worker-b' }), 409, 'run_claimed');
    expect(second.message).toContain('"worker-a"');
    expect(second.message).not.toContain(token);
    expect((await runRow(uid)).claimedBy).toBe('worker-a');
    expect((await complete(uid, { claim_token: token, outcome: { summary: 'done' } })).status).toBe(200);
    expect(expectErrorBody(await claim(uid), 409, 'invalid_state').message).toContain('completed');
  });

  it('of several claims at once exactly one wins', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => claim(uid, { runtime_id: `racer-${i}` })),
    );
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of answers.filter((a) => a.status !== 200)) expectErrorBody(lost, 409, 'run_claimed');
    expect((await runRow(uid)).claimedBy).toBe(won[0]!.body.data.run.attributes.claimed_by);
    expect(await eventTypesOf(uid)).toEqual(['agent_run.started']);
  });

  it(`two app instances claiming at once on ${engine}: one claim, one started event`, async () => {
    const other = await secondInstance(t);
    try {
      const agent = await outsideAgent();
      const runs = await Promise.all([1, 2, 3].map(() => pendingRun(agent.uid)));
      for (const uid of runs) {
        const [a, b] = await Promise.all([
          claim(uid, { runtime_id: 'a' }),
          call(other.app, 'POST', `/api/agent-runs/${uid}/claim`, { key: admin, body: { runtime_id: 'b' } }),
        ]);
        expect([a.status, b.status].sort(), `${a.raw} ${b.raw}`).toEqual([200, 409]);
        expect(await eventTypesOf(uid)).toEqual(['agent_run.started']);
      }
    } finally {
      await other.close();
    }
  });

  it('a run of an agent type with a built-in executor cannot be claimed (409)', async () => {
    const collector = await createCollectionsAgent(t, admin);
    const uid = await pendingRun(collector.uid);
    const refused = expectErrorBody(await claim(uid), 409, 'invalid_state');
    expect(refused.message).toContain('built-in executor');
    expect((await runRow(uid)).status).toBe('pending');
  });

  it('a real run of an agent that is no longer active stops (409); a sandbox run is claimed', async () => {
    const agent = await outsideAgent();
    const real = await pendingRun(agent.uid);
    const sandbox = await pendingRun(agent.uid, { sandbox: true });
    const paused = await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, {
      key: admin,
      body: { status: 'paused' },
    });
    expect(paused.status, paused.raw).toBe(200);
    expect(expectErrorBody(await claim(real), 409, 'invalid_state').message).toContain('paused');
    expect((await getRun(t, admin, real)).attributes).toMatchObject({
      status: 'stopped',
      completed_on: expect.stringMatching(ISO),
      outcome: { summary: expect.stringContaining('paused') },
    });
    const { run } = await claimed(sandbox);
    expect(run.attributes).toMatchObject({ status: 'running', sandbox: true });
  });

  it('404 for an unknown run and another organization’s; 400 for a malformed uid', async () => {
    // Other tests may have moved the foreign run on (they run in any order): it must not move here.
    const before = (await getRun(t, p.orgB.admin.key, foreignRun)).attributes;
    expectErrorBody(await claim(MISSING), 404, 'not_found');
    expectErrorBody(await claim(foreignRun), 404, 'not_found');
    expectErrorBody(await claim('nope'), 400);
    expect((await getRun(t, p.orgB.admin.key, foreignRun)).attributes).toEqual(before);
  });
});

describe('POST /api/agent-runs/{uid}/heartbeat', () => {
  it('renews the lease from now: the claim’s length, or the one asked for', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token, run } = await claimed(uid, { lease_seconds: 60 });
    const renewed = await heartbeat(uid, { claim_token: token });
    expect(renewed.status, renewed.raw).toBe(200);
    const first = Date.parse(renewed.body.data.attributes.lease_expires_at);
    expect(first).toBeGreaterThanOrEqual(Date.parse(run.attributes.lease_expires_at));
    const longer = await heartbeat(uid, { claim_token: token, lease_seconds: 3600 });
    expect(longer.status, longer.raw).toBe(200);
    expect(Date.parse(longer.body.data.attributes.lease_expires_at)).toBeGreaterThan(first + 3_000_000);
    expect((await runRow(uid)).leaseSeconds).toBe(3600);
    expectErrorBody(await heartbeat(uid, { claim_token: token, lease_seconds: 5 }), 422, 'validation_failed');
    expectErrorBody(await heartbeat(uid, {}), 422, 'validation_failed');
  });

  it('409 claim_mismatch for another token; 409 invalid_state once the run was cancelled', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid, { runtime_id: 'holder' });
    const wrong = expectErrorBody(
      await heartbeat(uid, { claim_token: 'not-the-token' }),
      409,
      'claim_mismatch',
    );
    expect(wrong.message).toContain('"holder"');
    const cancelled = await call(t.app, 'POST', `/api/agent-runs/${uid}/cancel`, { key: admin });
    expect(cancelled.status, cancelled.raw).toBe(200);
    expect(cancelled.body.data.attributes.status).toBe('cancelled');
    const stop = expectErrorBody(await heartbeat(uid, { claim_token: token }), 409, 'invalid_state');
    expect(stop.message).toContain('cancelled');
    // Completing a cancelled run is refused too; it stays cancelled.
    expectErrorBody(
      await complete(uid, { claim_token: token, outcome: { summary: 'too late' } }),
      409,
      'invalid_state',
    );
    expect((await runRow(uid)).status).toBe('cancelled');
  });

  it('the agent paused meanwhile: the real run stops at the heartbeat (409)', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid);
    await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, { key: admin, body: { status: 'paused' } });
    expect(
      expectErrorBody(await heartbeat(uid, { claim_token: token }), 409, 'invalid_state').message,
    ).toContain('paused');
    expect(await runRow(uid)).toMatchObject({ status: 'stopped', leaseExpiresAt: null });
  });
});

describe('POST /api/agent-runs/{uid}/complete and /fail', () => {
  it('complete: the outcome and token usage kept, agent_run.completed, the outcome notification', async () => {
    const agent = await outsideAgent({ name: 'Researcher' });
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid);
    const usage = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 };
    const body = { claim_token: token, outcome: { summary: 'Wrote the memo', pages: 3 }, token_usage: usage };
    const res = await complete(uid, body);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      status: 'completed',
      completed_on: expect.stringMatching(ISO),
      outcome: { summary: 'Wrote the memo', pages: 3 },
      lease_expires_at: null,
      error: null,
    });
    expect(res.body.data.attributes).not.toHaveProperty('token_usage');
    expect((await runRow(uid)).tokenUsage).toEqual(usage);
    const events = await eventsOf(uid);
    expect(events.map((e) => e.type)).toEqual(['agent_run.started', 'agent_run.completed']);
    expect(events[1]!.payload.agent_run.attributes.outcome).toEqual({ summary: 'Wrote the memo', pages: 3 });
    const notes = await notesOf(uid);
    expect(notes.map((n) => n.event)).toEqual(['outcome']);
    expect(notes[0]!.text).toBe('Researcher finished a run (trigger: manual): Wrote the memo');

    // The same request again: the run as it is, nothing sent twice.
    const again = await complete(uid, { ...body, outcome: { summary: 'something else' } });
    expect(again.status, again.raw).toBe(200);
    expect(again.body.data).toEqual(res.body.data);
    expect(await eventTypesOf(uid)).toEqual(['agent_run.started', 'agent_run.completed']);
    expect(await notesOf(uid)).toHaveLength(1);
    // Another token, or failing it now: 409.
    expect(
      expectErrorBody(await complete(uid, { ...body, claim_token: 'other' }), 409, 'invalid_state').message,
    ).toContain('completed');
    expectErrorBody(await fail(uid, { claim_token: token, error: 'x' }), 409, 'invalid_state');
  });

  it('fail: the error kept, agent_run.failed with it, the error notification; a repeat answers the run', async () => {
    const agent = await outsideAgent({ name: 'Researcher' });
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid);
    const res = await fail(uid, { claim_token: token, error: 'The source was unreachable' });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      status: 'failed',
      error: 'The source was unreachable',
      outcome: null,
      completed_on: expect.stringMatching(ISO),
    });
    const events = await eventsOf(uid);
    expect(events.map((e) => e.type)).toEqual(['agent_run.started', 'agent_run.failed']);
    expect(events[1]!.payload.error).toBe('The source was unreachable');
    expect((await notesOf(uid)).map((n) => [n.event, n.text])).toEqual([
      ['error', 'Researcher failed during a run (trigger: manual): The source was unreachable'],
    ]);
    const again = await fail(uid, { claim_token: token, error: 'The source was unreachable' });
    expect(again.status, again.raw).toBe(200);
    expect(again.body.data).toEqual(res.body.data);
    expect(await notesOf(uid)).toHaveLength(1);
    expectErrorBody(
      await complete(uid, { claim_token: token, outcome: { summary: 'x' } }),
      409,
      'invalid_state',
    );
  });

  it('another token is 409 claim_mismatch and changes nothing; the holder then completes it', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid, { runtime_id: 'holder' });
    const wrong = { claim_token: crypto.randomBytes(32).toString('base64url') };
    expect(
      expectErrorBody(await complete(uid, { ...wrong, outcome: { summary: 'x' } }), 409, 'claim_mismatch')
        .message,
    ).toContain('"holder"');
    expectErrorBody(await fail(uid, { ...wrong, error: 'x' }), 409, 'claim_mismatch');
    expect((await runRow(uid)).status).toBe('running');
    expect((await complete(uid, { claim_token: token, outcome: { summary: 'ok' } })).status).toBe(200);
  });

  it('422 for a body without the token, an outcome without a summary, or negative usage', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid);
    for (const body of [
      { outcome: { summary: 'x' } },
      { claim_token: token },
      { claim_token: token, outcome: {} },
      { claim_token: token, outcome: { summary: '' } },
      { claim_token: token, outcome: { summary: 'x' }, token_usage: { prompt_tokens: -1 } },
      { claim_token: token, outcome: { summary: 'x' }, extra: 1 },
    ]) {
      expectErrorBody(await complete(uid, body), 422, 'validation_failed');
    }
    expectErrorBody(await fail(uid, { claim_token: token }), 422, 'validation_failed');
    expect((await runRow(uid)).status).toBe('running');
  });

  it('the token is the claim, not the key: a member claims, an admin’s runtime completes with it', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const { token } = await claimed(uid, {}, p.orgA.member.key);
    const hb = await heartbeat(uid, { claim_token: token }, p.orgA.member.key);
    expect(hb.status, hb.raw).toBe(200);
    const res = await complete(uid, { claim_token: token, outcome: { summary: 'done' } }, admin);
    expect(res.status, res.raw).toBe(200);
  });
});

describe('lapsed leases', () => {
  it('a claim whose lease ran out goes back to pending (counted); the old token is refused, a new claim works', async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    const first = await claimed(uid, { runtime_id: 'slow', lease_seconds: 30 });
    // Just before the end: nothing moves.
    expect(await releaseLapsedClaims(deps(), afterLease(first.run, -1000))).toEqual({
      released: 0,
      failed: 0,
    });
    expect((await runRow(uid)).status).toBe('running');
    expect(await releaseLapsedClaims(deps(), afterLease(first.run))).toEqual({ released: 1, failed: 0 });
    expect((await getRun(t, admin, uid)).attributes).toMatchObject({
      status: 'pending',
      claimed_by: null,
      claimed_at: null,
      lease_expires_at: null,
      started_on: null,
      lease_lapses: 1,
    });
    expect(
      expectErrorBody(await heartbeat(uid, { claim_token: first.token }), 409, 'claim_mismatch').message,
    ).toContain('claim it again');
    const second = await claimed(uid, { runtime_id: 'fast' });
    expect(second.token).not.toBe(first.token);
    expectErrorBody(
      await complete(uid, { claim_token: first.token, outcome: { summary: 'late' } }),
      409,
      'claim_mismatch',
    );
    const done = await complete(uid, { claim_token: second.token, outcome: { summary: 'done' } });
    expect(done.body.data.attributes).toMatchObject({
      status: 'completed',
      claimed_by: 'fast',
      lease_lapses: 1,
    });
    expect(await eventTypesOf(uid)).toEqual([
      'agent_run.started',
      'agent_run.started',
      'agent_run.completed',
    ]);
  });

  it(`after ${MAX_LEASE_LAPSES} lapses the run fails, with agent_run.failed and the error notification`, async () => {
    const agent = await outsideAgent();
    const uid = await pendingRun(agent.uid);
    for (let lapse = 1; lapse <= MAX_LEASE_LAPSES; lapse++) {
      // The shortest lease: the other tests' claims (30 s and longer) are not due at this `now`.
      const { run } = await claimed(uid, { lease_seconds: 10 });
      const result = await releaseLapsedClaims(deps(), afterLease(run));
      expect(result).toEqual(
        lapse < MAX_LEASE_LAPSES ? { released: 1, failed: 0 } : { released: 0, failed: 1 },
      );
    }
    const run = await getRun(t, admin, uid);
    expect(run.attributes).toMatchObject({
      status: 'failed',
      lease_lapses: MAX_LEASE_LAPSES,
      lease_expires_at: null,
      completed_on: expect.stringMatching(ISO),
      error: `The outside runtime's lease lapsed ${MAX_LEASE_LAPSES} times without the run finishing`,
    });
    const types = await eventTypesOf(uid);
    expect(types.filter((type) => type === 'agent_run.started')).toHaveLength(MAX_LEASE_LAPSES);
    expect(types.at(-1)).toBe('agent_run.failed');
    expect((await notesOf(uid)).map((n) => n.event)).toEqual(['error']);
    expectErrorBody(await claim(uid), 409, 'invalid_state');
  });

  it('the hourly maintenance leaves claimed runs to their lease, and stops runs no runtime claimed in time', async () => {
    const agent = await outsideAgent();
    const working = await pendingRun(agent.uid);
    const { token } = await claimed(working, { lease_seconds: 3600 });
    // Even with a cutoff in the future, a claimed run is not the workers' to fail.
    await failAbandonedRuns(t.db, t.deps.jobs, -60);
    expect((await runRow(working)).status).toBe('running');

    const waiting = await pendingRun(agent.uid);
    const collector = await createCollectionsAgent(t, admin);
    const builtIn = await pendingRun(collector.uid);
    const soon = new Date(Date.now() + (UNCLAIMED_RUN_DAYS - 1) * 86_400_000);
    await stopUnclaimedRuns(t.db, soon);
    expect((await runRow(waiting)).status).toBe('pending');
    await stopUnclaimedRuns(t.db, new Date(Date.now() + (UNCLAIMED_RUN_DAYS + 1) * 86_400_000));
    expect((await getRun(t, admin, waiting)).attributes).toMatchObject({
      status: 'stopped',
      outcome: {
        summary: `No outside runtime claimed this run within ${UNCLAIMED_RUN_DAYS} days; it was stopped`,
      },
    });
    // Built-in runs are the workers' (their job runs them), claimed ones their runtime's.
    expect((await runRow(builtIn)).status).toBe('pending');
    expect((await runRow(working)).status).toBe('running');
    expect((await complete(working, { claim_token: token, outcome: { summary: 'ok' } })).status).toBe(200);
  });
});

describe('the follow-up run of an approval', () => {
  it('approving starts a pending run an outside runtime finds by task_uid, claims and completes', async () => {
    const agent = await outsideAgent({ name: 'Refunder' });
    const raised = await post(t, admin, `/api/agents/${agent.uid}/approvals`, {
      title: 'Refund order 7?',
      reasoning: 'Damaged',
      tool_args: { type: 'refund', amount_cents: 500 },
      trigger: { type: 'manual' },
    });
    const decided = await call(t.app, 'PATCH', `/api/work-tasks/${raised.uid}`, {
      key: p.orgA.member.key,
      body: { action: 'approve' },
    });
    expect(decided.status, decided.raw).toBe(200);
    expect(decided.body.data).not.toHaveProperty('_warning');
    const found = await call(t.app, 'GET', '/api/agent-runs', {
      key: admin,
      query: { task_uid: raised.uid },
    });
    expect(found.body.data.items).toHaveLength(1);
    const followUp = found.body.data.items[0];
    expect(followUp.attributes).toMatchObject({
      status: 'pending',
      trigger_type: 'approval',
      task_uid: raised.uid,
      trigger: { type: 'approval', task_uid: raised.uid },
    });
    expect(followUp.attributes.input.task_uid).toBe(raised.uid);
    const { token } = await claimed(followUp.id, { runtime_id: 'refunds' });
    const done = await complete(followUp.id, { claim_token: token, outcome: { summary: 'Refunded $5.00' } });
    expect(done.status, done.raw).toBe(200);
    const notes = await notesOf(followUp.id);
    expect(notes.map((n) => [n.event, n.taskUid])).toEqual([['outcome', raised.uid]]);
    expect(notes[0]!.text).toBe('Refunder finished a run (trigger: approval): Refunded $5.00');
  });
});

// ---- the checks every route passes ----

const env = () => ({ t, p });
let aRun: string;
beforeAll(async () => {
  aRun = await pendingRun((await outsideAgent({ name: 'Routes' })).uid);
});
commonRouteChecks(
  'GET /api/agent-runs',
  {
    method: 'GET',
    url: () => '/api/agent-runs',
    scope: 'agents:read',
    foreignOrganizationUrl: () => `/api/agent-runs?organization_uid=${p.orgB.uid}`,
  },
  env,
);
for (const [action, body] of [
  ['claim', () => ({})],
  ['heartbeat', () => ({ claim_token: 'x' })],
  ['complete', () => ({ claim_token: 'x', outcome: { summary: 'x' } })],
  ['fail', () => ({ claim_token: 'x', error: 'x' })],
] as const) {
  commonRouteChecks(
    `POST /api/agent-runs/{uid}/${action}`,
    {
      method: 'POST',
      url: () => `/api/agent-runs/${aRun}/${action}`,
      body,
      scope: 'agents:write',
      foreignUrl: () => `/api/agent-runs/${foreignRun}/${action}`,
    },
    env,
  );
}
