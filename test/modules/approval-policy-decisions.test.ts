/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { rawQuery } from '../../src/platform/db/client.ts';
import { findAgent } from '../../src/modules/agents/agents.repository.ts';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { raiseApproval } from '../../src/modules/work-tasks/work-tasks.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type OrgPrincipals, type Principals } from '../helpers/principals.ts';
import { engine } from '../helpers/test-database.ts';

/**
 * What an approval policy does to the approvals it governs (docs/approvals.md): which policy applies
 * (the most specific), its rules copied onto the task, who may decide (roles, people, not the
 * initiator), several distinct approvals, edits that start the count again or would change the policy,
 * a decision after the deadline, and races. Every test raises approvals of its own agent, so the
 * policies of one test govern nothing of another's.
 */

let t: TestApp;
let p: Principals;
/** Two more people of orgA: Grace (admin) and Alan (member), with keys. */
let grace: Person;
let alan: Person;

interface Person {
  userUid: string;
  key: string;
  name: string;
}

const tag = () => crypto.randomBytes(3).toString('hex');
const PAYMENT = { type: 'payment', payee: 'ACME Corp', amount_cents: 750_000, currency: 'USD' };

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  grace = await person(p.orgA, 'Grace Hopper', 'admin');
  alan = await person(p.orgA, 'Alan Turing', 'member');
});
afterAll(async () => t?.close());

async function person(org: OrgPrincipals, name: string, role: 'admin' | 'member'): Promise<Person> {
  const added = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
    organizationUid: org.uid,
    email: `${name.split(' ')[0]!.toLowerCase()}-${tag()}@a.test`,
    fullName: name,
    role,
  });
  return { userUid: added.user_uid, key: added.api_key, name };
}

async function ok(promise: Promise<{ status: number; raw: string; body: any }>, status = 200) {
  const res = await promise;
  expect(res.status, res.raw).toBe(status);
  return res.body.data;
}
const agent = (key = p.orgA.admin.key) =>
  ok(call(t.app, 'POST', '/api/agents', { key, body: { name: `Payer ${tag()}`, status: 'active' } }), 201);
const policy = (body: Record<string, unknown>, key = p.orgA.admin.key) =>
  ok(call(t.app, 'POST', '/api/approval-policies', { key, body: { name: `Policy ${tag()}`, ...body } }), 201);
const raise = (agentUid: string, toolArgs: Record<string, unknown> = PAYMENT, key = p.orgA.admin.key) =>
  ok(
    call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
      key,
      body: {
        title: 'Pay ACME?',
        reasoning: 'Invoice 42 is due',
        tool_args: toolArgs,
        trigger: { type: 'manual' },
      },
    }),
    201,
  );
const decide = (taskUid: string, key: string, body: Record<string, unknown> = { action: 'approve' }) =>
  call(t.app, 'PATCH', `/api/work-tasks/${taskUid}`, { key, body });
const read = (taskUid: string) =>
  ok(call(t.app, 'GET', `/api/work-tasks/${taskUid}`, { key: p.orgA.admin.key }));
const runsOf = (taskUid: string) =>
  t.db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.organizationUid, p.orgA.uid), eq(agentRuns.taskUid, taskUid)));

describe('which policy applies when an approval is raised', () => {
  it('none: today’s rules exactly (any member decides, once, no deadline)', async () => {
    const payer = await agent();
    // Policies of another agent, another tool, another organization govern nothing here.
    await policy({ agent_uid: (await agent()).uid, approver_roles: ['admin'] });
    await policy({ tool_type: `other-${tag()}`, approver_roles: ['admin'] });
    await policy({ approver_roles: ['admin'] }, p.orgB.admin.key);
    const task = await raise(payer.uid);
    expect(task).toMatchObject({
      approval_policy: null,
      approvals: [],
      expires_at: null,
      escalated_at: null,
    });
    expect(task.change_log.map((c: any) => c.action)).toEqual(['created']);
    const decided = await ok(decide(task.uid, p.orgA.member.key));
    expect(decided).toMatchObject({ status: 'done', resolution: 'approved' });
    // Approvals are counted only under a policy: the decision names who took it.
    expect(decided.approvals).toEqual([]);
    expect(decided.resolved_by).toMatchObject({ user_uid: p.orgA.member.userUid });
    expect(decided.change_log.at(-1).details).toEqual({
      action: 'approve',
      resolution: 'approved',
      resolution_note: null,
    });
  });

  it('the most specific wins: agent and tool, then agent, then tool, then organization-wide; then the highest minimum reached, then the newest', async () => {
    // An organization of its own: an organization-wide policy here would govern every other test.
    const q = await createPrincipals(t);
    const key = q.orgA.admin.key;
    const payer = await agent(key);
    const other = await agent(key);
    const tool = `pay-${tag()}`;
    const orgWide = await policy({ approver_roles: ['admin'] }, key);
    const forTool = await policy({ tool_type: tool, approver_roles: ['admin'] }, key);
    const forToolOver1k = await policy(
      { tool_type: tool, min_amount_cents: 100_000, approver_roles: ['admin'] },
      key,
    );
    const forAgent = await policy({ agent_uid: payer.uid, approver_roles: ['admin'] }, key);
    const forBoth = await policy({ agent_uid: payer.uid, tool_type: tool, approver_roles: ['admin'] }, key);
    const newerForBoth = await policy(
      { agent_uid: payer.uid, tool_type: tool, approver_roles: ['member'] },
      key,
    );
    const applied = async (agentUid: string, toolArgs: Record<string, unknown>) =>
      (await raise(agentUid, toolArgs, key)).approval_policy?.uid;

    expect(await applied(payer.uid, { type: tool, amount_cents: 5 })).toBe(newerForBoth.uid);
    expect(await applied(payer.uid, { type: 'send_email' })).toBe(forAgent.uid);
    expect(await applied(other.uid, { type: tool, amount_cents: 200_000 })).toBe(forToolOver1k.uid);
    expect(await applied(other.uid, { type: tool, amount_cents: 99_999 })).toBe(forTool.uid);
    // No numeric amount: the minimum is not reached.
    expect(await applied(other.uid, { type: tool, amount_cents: '200000' })).toBe(forTool.uid);
    expect(await applied(other.uid, { type: 'send_email' })).toBe(orgWide.uid);
    expect(forBoth.uid).not.toBe(newerForBoth.uid);
  });

  it('its rules are copied onto the task: logged and audited; editing or deleting the policy changes nothing pending', async () => {
    const payer = await agent();
    const rules = await policy({
      name: 'Large payments',
      agent_uid: payer.uid,
      approver_roles: ['admin'],
      required_approvals: 2,
      forbid_initiator: true,
      expires_after_minutes: 60,
    });
    const before = Date.now();
    const task = await raise(payer.uid);
    expect(task.approval_policy).toEqual({
      uid: rules.uid,
      name: 'Large payments',
      required_approvals: 2,
      approver_roles: ['admin'],
      approver_user_uids: [],
      approver_users: [],
      forbid_initiator: true,
      initiator_user_uid: p.orgA.admin.userUid,
    });
    // An hour from the database's now (a minute of slack either way for the clocks).
    const expires = Date.parse(task.expires_at);
    expect(expires).toBeGreaterThan(before + 59 * 60_000);
    expect(expires).toBeLessThan(Date.now() + 61 * 60_000);
    expect(task.change_log.map((c: any) => [c.action, c.by_type, c.by_name])).toEqual([
      ['created', 'agent', payer.name],
      ['policy_applied', 'system', 'Remit'],
    ]);
    expect(task.change_log[1].details).toMatchObject({
      approval_policy_uid: rules.uid,
      approval_policy_name: 'Large payments',
      required_approvals: 2,
      forbid_initiator: true,
      initiator_user_uid: p.orgA.admin.userUid,
      expires_at: task.expires_at,
    });
    const audit = await ok(
      call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
        key: p.orgA.admin.key,
        query: { entity_uid: task.uid, action: 'task.policy_applied' },
      }),
    );
    expect(audit.items).toHaveLength(1);
    expect(audit.items[0].changes).toMatchObject({
      approval_policy_uid: { before: null, after: rules.uid },
      required_approvals: { before: null, after: 2 },
    });

    // The policy now lets members decide alone; then it is deleted. The task keeps what it was raised under.
    await ok(
      call(t.app, 'PATCH', `/api/approval-policies/${rules.uid}`, {
        key: p.orgA.admin.key,
        body: { approver_roles: ['member'], required_approvals: 1, forbid_initiator: false },
      }),
    );
    await ok(call(t.app, 'DELETE', `/api/approval-policies/${rules.uid}`, { key: p.orgA.admin.key }));
    expect((await read(task.uid)).approval_policy).toEqual(task.approval_policy);
    expectErrorBody(await decide(task.uid, p.orgA.member.key), 403, 'not_an_approver');
    expectErrorBody(await decide(task.uid, p.orgA.admin.key), 403, 'initiator_cannot_approve');
    expect((await ok(decide(task.uid, grace.key))).resolution).toBeNull();
  });

  it('the initiator is the person behind the request: the key’s user over HTTP, who asked for the run for our own agents', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], forbid_initiator: true });
    const overHttp = await raise(payer.uid, PAYMENT, alan.key);
    expect(overHttp.approval_policy.initiator_user_uid).toBe(alan.userUid);
    const row = (await findAgent(t.db, [p.orgA.uid], payer.uid))!;
    const task = await t.db.transaction((tx) =>
      raiseApproval(tx, {
        agent: row,
        title: 'Pay ACME?',
        reasoning: 'Due',
        toolArgs: PAYMENT,
        trigger: { type: 'manual' },
        origin: {
          actor: { type: 'agent_run', uid: crypto.randomUUID(), userUid: grace.userUid },
          requestId: 'run:test',
          clientAddress: null,
        },
        jobs: t.deps.jobs,
      }),
    );
    expect((await read(task.uid)).approval_policy.initiator_user_uid).toBe(grace.userUid);
    expectErrorBody(await decide(task.uid, grace.key), 403, 'initiator_cannot_approve');
  });
});

describe('who may decide', () => {
  it('by role: members are refused (approve and reject alike) when only admins decide; nothing changes', async () => {
    const payer = await agent();
    await policy({ name: 'Only admins', agent_uid: payer.uid, approver_roles: ['admin'] });
    const task = await raise(payer.uid);
    for (const action of ['approve', 'reject']) {
      const res = await decide(task.uid, alan.key, { action, resolution_note: 'no' });
      expectErrorBody(res, 403, 'not_an_approver');
      expect(res.body.message).toBe('Under the policy "Only admins" only admins may decide this');
    }
    const unchanged = await read(task.uid);
    expect(unchanged).toMatchObject({ status: 'todo', resolution: null, approvals: [] });
    expect(unchanged.change_log).toHaveLength(task.change_log.length);
    expect(await ok(decide(task.uid, grace.key))).toMatchObject({ status: 'done', resolution: 'approved' });
  });

  it('by name: a named member decides, an admin not named does not', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_user_uids: [alan.userUid] });
    const task = await raise(payer.uid);
    expect(task.approval_policy.approver_users).toEqual([
      { user_uid: alan.userUid, user_name: 'Alan Turing' },
    ]);
    expectErrorBody(await decide(task.uid, grace.key), 403, 'not_an_approver');
    expect(
      await ok(decide(task.uid, alan.key, { action: 'reject', resolution_note: 'Wrong payee' })),
    ).toMatchObject({
      status: 'canceled',
      resolution: 'rejected',
    });
  });

  it('the initiator may not approve (403 initiator_cannot_approve) but may reject; anyone else approves', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], forbid_initiator: true });
    const task = await raise(payer.uid, PAYMENT, alan.key);
    const refused = await decide(task.uid, alan.key);
    expectErrorBody(refused, 403, 'initiator_cannot_approve');
    expect((await read(task.uid)).approvals).toEqual([]);
    expect(await ok(decide(task.uid, grace.key))).toMatchObject({ resolution: 'approved' });

    const withdrawn = await raise(payer.uid, PAYMENT, alan.key);
    expect(
      await ok(decide(withdrawn.uid, alan.key, { action: 'reject', resolution_note: 'Mine, wrong' })),
    ).toMatchObject({ resolution: 'rejected' });
  });
});

describe('a reason to reject (optional unless the policy opts in)', () => {
  it('require_rejection_reason: a bare or blank rejection is 422 naming resolution_note (after who-may-decide), one with a reason decides; without it a bare rejection decides', async () => {
    const payer = await agent();
    const strict = await policy({
      name: 'Reasons please',
      agent_uid: payer.uid,
      approver_roles: ['admin'],
      require_rejection_reason: true,
    });
    expect(strict.require_rejection_reason).toBe(true);
    const task = await raise(payer.uid);
    // Who may decide comes first: a member is refused as ever, not told about the reason.
    expectErrorBody(await decide(task.uid, alan.key, { action: 'reject' }), 403, 'not_an_approver');
    for (const body of [{ action: 'reject' }, { action: 'reject', resolution_note: '  ' }]) {
      const res = await decide(task.uid, grace.key, body);
      expectErrorBody(res, 422, 'validation_failed');
      expect(res.body.errors.map((e: any) => e.field)).toEqual(['resolution_note']);
      expect(res.body.message).toContain('"Reasons please"');
    }
    expect(await read(task.uid)).toMatchObject({ status: 'todo', resolution: null });
    expect(
      await ok(decide(task.uid, grace.key, { action: 'reject', resolution_note: 'Wrong payee' })),
    ).toMatchObject({ resolution: 'rejected', resolution_note: 'Wrong payee' });

    // Turned off: the policy's next approval is rejected without a word.
    await ok(
      call(t.app, 'PATCH', `/api/approval-policies/${strict.uid}`, {
        key: p.orgA.admin.key,
        body: { require_rejection_reason: false },
      }),
    );
    const relaxed = await raise(payer.uid);
    expect(await ok(decide(relaxed.uid, grace.key, { action: 'reject' }))).toMatchObject({
      resolution: 'rejected',
      resolution_note: null,
    });
  });

  it('a policy without the opt-in (the default) takes a bare rejection', async () => {
    const payer = await agent();
    const plain = await policy({ agent_uid: payer.uid, approver_roles: ['admin'] });
    expect(plain.require_rejection_reason).toBe(false);
    const task = await raise(payer.uid);
    expect(await ok(decide(task.uid, grace.key, { action: 'reject' }))).toMatchObject({
      resolution: 'rejected',
      resolution_note: null,
    });
  });
});

describe('several approvals (the two-person rule)', () => {
  it('each approve counts once per person; the task stays undecided (in_review) until the count, then is decided as today', async () => {
    const payer = await agent();
    await policy({
      name: 'Two people',
      agent_uid: payer.uid,
      approver_roles: ['admin', 'member'],
      required_approvals: 2,
    });
    const task = await raise(payer.uid);

    const first = await ok(
      decide(task.uid, grace.key, { action: 'approve', resolution_note: 'Looks right' }),
    );
    expect(first).toMatchObject({ status: 'in_review', resolution: null, resolved_by: null });
    expect(first.approvals).toEqual([
      { user_uid: grace.userUid, user_name: 'Grace Hopper', at: expect.any(String) },
    ]);
    expect(first.change_log.at(-1)).toMatchObject({
      by_name: 'Grace Hopper',
      action: 'approval_recorded',
      details: {
        summary: 'approved (1 of 2)',
        approvals: 1,
        required_approvals: 2,
        resolution_note: 'Looks right',
      },
    });
    expect(await runsOf(task.uid)).toHaveLength(0);
    const decidedEvents = await ok(
      call(t.app, 'GET', '/api/events', {
        key: p.orgA.admin.key,
        query: { entity_uid: task.uid, type: 'work_task.approval_decided' },
      }),
    );
    expect(decidedEvents.items).toHaveLength(0);

    // The same person again: 409, still one approval.
    const again = await decide(task.uid, grace.key);
    expectErrorBody(again, 409, 'already_approved');
    expect(again.body.message).toBe('You already approved this; it needs 2 approvals from different people');
    expect((await read(task.uid)).approvals).toHaveLength(1);

    const second = await ok(decide(task.uid, alan.key));
    expect(second).toMatchObject({
      status: 'done',
      resolution: 'approved',
      resolved_by: { user_uid: alan.userUid },
    });
    expect(second.approvals.map((a: any) => a.user_name)).toEqual(['Grace Hopper', 'Alan Turing']);
    expect(second.change_log.at(-1)).toMatchObject({
      action: 'resolved',
      details: { action: 'approve', resolution: 'approved', approvals: 2, required_approvals: 2 },
    });
    expect(await runsOf(task.uid)).toHaveLength(1);
    const events = await ok(
      call(t.app, 'GET', '/api/events', {
        key: p.orgA.admin.key,
        query: { entity_uid: task.uid, type: 'work_task.approval_decided' },
      }),
    );
    expect(events.items.map((e: any) => e.data.decision)).toEqual(['approve']);
    expectErrorBody(await decide(task.uid, p.orgA.member.key), 409, 'already_resolved');
  });

  it('a rejection by an eligible person decides at once, whatever the approvals so far', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], required_approvals: 3 });
    const task = await raise(payer.uid);
    await ok(decide(task.uid, grace.key));
    const rejected = await ok(decide(task.uid, alan.key, { action: 'reject', resolution_note: 'Duplicate' }));
    expect(rejected).toMatchObject({
      status: 'canceled',
      resolution: 'rejected',
      resolution_note: 'Duplicate',
    });
    expect(rejected.change_log.at(-1).details).toMatchObject({
      resolution: 'rejected',
      required_approvals: 3,
    });
    // One follow-up run, telling the agent of the rejection.
    const runs = await runsOf(task.uid);
    expect(runs.map((r) => (r.input as any).decision.action)).toEqual(['reject']);
  });

  it('an approval with edits replaces the arguments and starts the count again: the editor’s approval is the first', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], required_approvals: 2 });
    const task = await raise(payer.uid);
    await ok(decide(task.uid, grace.key));
    const edited = await ok(
      decide(task.uid, alan.key, { action: 'approve', tool_args: { payee: 'ACME Corporation' } }),
    );
    expect(edited).toMatchObject({ status: 'in_review', resolution: null });
    expect(edited.tool_args).toEqual({ ...PAYMENT, payee: 'ACME Corporation' });
    expect(edited.approvals.map((a: any) => a.user_name)).toEqual(['Alan Turing']);
    expect(edited.change_log.at(-1).details).toMatchObject({
      summary: 'approved (1 of 2)',
      edited_tool_args: ['payee'],
      discarded_approvals: 1,
    });
    // Grace approved the old arguments: her approval of the new ones counts again.
    const done = await ok(decide(task.uid, grace.key));
    expect(done).toMatchObject({
      resolution: 'approved',
      tool_args: { ...PAYMENT, payee: 'ACME Corporation' },
    });
    expect(done.approvals.map((a: any) => a.user_name)).toEqual(['Alan Turing', 'Grace Hopper']);

    // Edits that change nothing are no edit: the approvals so far stand.
    const other = await raise(payer.uid);
    await ok(decide(other.uid, grace.key));
    const same = await ok(
      decide(other.uid, alan.key, { action: 'approve', tool_args: { payee: PAYMENT.payee } }),
    );
    expect(same).toMatchObject({ resolution: 'approved' });
  });

  it('an edit may not move the approval under another policy (raising the amount past a threshold): 422, nothing changes', async () => {
    const payer = await agent();
    await policy({
      name: 'Over $5,000',
      agent_uid: payer.uid,
      tool_type: 'payment',
      min_amount_cents: 500_000,
      approver_roles: ['admin', 'member'],
      required_approvals: 2,
    });
    const small = await raise(payer.uid, { ...PAYMENT, amount_cents: 10_000 });
    expect(small.approval_policy).toBeNull();
    const res = await decide(small.uid, alan.key, {
      action: 'approve',
      tool_args: { amount_cents: 900_000 },
    });
    expectErrorBody(res, 422, 'validation_failed');
    expect(res.body.errors[0].field).toBe('tool_args');
    expect(res.body.message).toContain('from no policy to "Over $5,000"');
    expect(await read(small.uid)).toMatchObject({ resolution: null, tool_args: { amount_cents: 10_000 } });
    // Within the same policy an amount may change.
    expect(
      await ok(decide(small.uid, alan.key, { action: 'approve', tool_args: { amount_cents: 12_000 } })),
    ).toMatchObject({ resolution: 'approved', tool_args: { amount_cents: 12_000 } });

    const large = await raise(payer.uid);
    expectErrorBody(
      await decide(large.uid, grace.key, { action: 'approve', tool_args: { amount_cents: 100 } }),
      422,
      'validation_failed',
    );
    expect((await read(large.uid)).approvals).toEqual([]);
  });
});

describe('past the deadline, before the expiry job', () => {
  it('a decision is refused as expired (409 approval_expired) by the database’s clock; nothing is written', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], expires_after_minutes: 30 });
    const task = await raise(payer.uid);
    // The deadline is moved into the past in the database: the database's clock is the one compared.
    await rawQuery(t.db, `update work_tasks set expires_at = now() - interval '1 second' where uid = $1`, [
      task.uid,
    ]);
    for (const body of [{ action: 'approve' }, { action: 'reject', resolution_note: 'late' }]) {
      const res = await decide(task.uid, alan.key, body);
      expectErrorBody(res, 409, 'approval_expired');
      expect(res.body.message).toMatch(/^This approval expired at .+; nothing was done$/);
    }
    const after = await read(task.uid);
    expect(after).toMatchObject({ status: 'todo', resolution: null, approvals: [] });
    expect(after.change_log).toHaveLength(task.change_log.length);
    expect(await runsOf(task.uid)).toHaveLength(0);
  });
});

describe('races (they have teeth on PostgreSQL, where requests run in parallel)', () => {
  it(`two people approving at once: both count, exactly one completes it, one run (${engine})`, async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], required_approvals: 2 });
    for (let round = 0; round < 3; round += 1) {
      const task = await raise(payer.uid);
      const results = await Promise.all([decide(task.uid, grace.key), decide(task.uid, alan.key)]);
      expect(results.map((r) => r.status)).toEqual([200, 200]);
      const outcomes = results.map((r) => r.body.data.resolution).sort();
      expect(outcomes).toEqual(['approved', null]);
      const stored = await read(task.uid);
      expect(stored.approvals).toHaveLength(2);
      expect(stored.change_log.filter((c: any) => c.action === 'resolved')).toHaveLength(1);
      expect(stored.change_log.filter((c: any) => c.action === 'approval_recorded')).toHaveLength(1);
      expect(await runsOf(task.uid)).toHaveLength(1);
    }
  });

  it('the last approval and a rejection at once: one wins, the other is 409; one run carries the decision that won', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], required_approvals: 2 });
    for (let round = 0; round < 3; round += 1) {
      const task = await raise(payer.uid);
      await ok(decide(task.uid, p.orgA.member.key));
      const results = await Promise.all([
        decide(task.uid, grace.key),
        decide(task.uid, alan.key, { action: 'reject', resolution_note: 'No' }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expectErrorBody(
        results.find((r) => r.status === 409)!,
        409,
        'already_resolved',
      );
      const stored = await read(task.uid);
      expect(['approved', 'rejected']).toContain(stored.resolution);
      // One run, carrying the decision that won (a rejection's tells the agent).
      expect((await runsOf(task.uid)).map((r) => (r.input as any).decision.action)).toEqual([
        stored.resolution === 'approved' ? 'approve' : 'reject',
      ]);
    }
  });

  it('the same person twice at once: one approval, the other 409 already_approved', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], required_approvals: 2 });
    const task = await raise(payer.uid);
    const results = await Promise.all([decide(task.uid, grace.key), decide(task.uid, grace.key)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expectErrorBody(
      results.find((r) => r.status === 409)!,
      409,
      'already_approved',
    );
    expect((await read(task.uid)).approvals).toHaveLength(1);
  });
});
