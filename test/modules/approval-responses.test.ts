/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, asc, eq } from 'drizzle-orm';
import { rawQuery } from '../../src/platform/db/client.ts';
import { findAgent } from '../../src/modules/agents/agents.repository.ts';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { reviseApproval } from '../../src/modules/work-tasks/work-tasks.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type OrgPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * Richer answers to an approval (issue 21, point 5; docs/approvals.md#respond-feedback-without-deciding):
 * `action: respond` sends the agent feedback without deciding, a rejection needs a reason, and every
 * answer reaches the agent's follow-up run as structured input (`input.decision`). The agents here
 * have no built-in executor (an outside runtime's): the runs are only requested (no worker), so what
 * is checked is what a run would receive. The collections agent's revision is in
 * collections-agent.test.ts.
 */

let t: TestApp;
let p: Principals;
let grace: Person;
let alan: Person;

interface Person {
  userUid: string;
  key: string;
  name: string;
}

const tag = () => crypto.randomBytes(3).toString('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const EMAIL = {
  type: 'send_email',
  subject: 'Invoice AR-7 is overdue',
  body: 'Dear client,\n\nPlease pay AR-7.\n\nAcme',
  recipients: ['ap@client.test'],
};
const TRIGGER = { type: 'manual' };
const ADMIN_NAME = 'A Admin';

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
const agent = (status = 'active') =>
  ok(
    call(t.app, 'POST', '/api/agents', {
      key: p.orgA.admin.key,
      body: { name: `Runtime ${tag()}`, status },
    }),
    201,
  );
const policy = (body: Record<string, unknown>) =>
  ok(
    call(t.app, 'POST', '/api/approval-policies', {
      key: p.orgA.admin.key,
      body: { name: `Policy ${tag()}`, ...body },
    }),
    201,
  );
const raise = (agentUid: string, key = p.orgA.admin.key, toolArgs: Record<string, unknown> = EMAIL) =>
  ok(
    call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
      key,
      body: {
        title: 'Send the reminder?',
        reasoning: 'AR-7 is overdue',
        tool_args: toolArgs,
        trigger: TRIGGER,
      },
    }),
    201,
  );
const answer = (taskUid: string, body: Record<string, unknown>, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/work-tasks/${taskUid}`, { key, body });
const read = (taskUid: string) =>
  ok(call(t.app, 'GET', `/api/work-tasks/${taskUid}`, { key: p.orgA.admin.key }));
const runsOf = (taskUid: string) =>
  t.db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.organizationUid, p.orgA.uid), eq(agentRuns.taskUid, taskUid)))
    .orderBy(asc(agentRuns.createdOn));
async function auditOf(taskUid: string) {
  const res = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
    key: p.orgA.admin.key,
    query: { entity_uid: taskUid },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data.items as any[];
}

describe('respond: feedback without deciding', () => {
  it('the approval stays open with the feedback pending; a responded entry, task.responded, and a follow-up run carrying it', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    const res = await answer(task.uid, { action: 'respond', feedback: '  Mention the payment plan.  ' });
    expect(res.status, res.raw).toBe(200);
    const now = res.body.data;
    expect(now).not.toHaveProperty('_warning');
    expect(now).toMatchObject({
      status: 'in_progress',
      resolution: null,
      resolved_at: null,
      resolved_by: null,
      resolution_note: null,
      tool_args: EMAIL,
      response: {
        feedback: 'Mention the payment plan.',
        user_uid: p.orgA.admin.userUid,
        user_name: ADMIN_NAME,
        at: expect.stringMatching(ISO),
      },
    });
    expect(now.change_log.at(-1)).toMatchObject({
      action: 'responded',
      by_type: 'user',
      by_name: ADMIN_NAME,
      details: { feedback: 'Mention the payment plan.' },
    });
    expect(await read(task.uid)).toEqual(now);

    const runs = await runsOf(task.uid);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      status: 'pending',
      triggerType: 'approval',
      trigger: { type: 'approval', task_uid: task.uid, original_trigger: TRIGGER },
      taskUid: task.uid,
      requestedByUid: p.orgA.admin.userUid,
      input: {
        task_uid: task.uid,
        decision: {
          action: 'respond',
          tool_args: EMAIL,
          edited: false,
          note: null,
          feedback: 'Mention the payment plan.',
          decided_by: { user_uid: p.orgA.admin.userUid, name: ADMIN_NAME },
          decided_at: now.response.at,
        },
      },
    });

    const responded = (await auditOf(task.uid)).find((e) => e.action === 'task.responded');
    expect(responded).toMatchObject({
      actor_user_uid: p.orgA.admin.userUid,
      entity_type: 'task',
      changes: {
        status: { before: 'todo', after: 'in_progress' },
        response: { before: null, after: expect.objectContaining({ feedback: 'Mention the payment plan.' }) },
      },
    });
  });

  it('several responses, then the decision: one run each; a second decision is 409', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    await ok(answer(task.uid, { action: 'respond', feedback: 'Shorter' }));
    const second = await ok(
      answer(task.uid, { action: 'respond', feedback: 'Friendlier' }, p.orgA.member.key),
    );
    expect(second.response).toMatchObject({ feedback: 'Friendlier', user_uid: p.orgA.member.userUid });
    const approved = await ok(answer(task.uid, { action: 'approve', resolution_note: 'Fine as it is' }));
    expect(approved).toMatchObject({ status: 'done', resolution: 'approved', response: null });
    expectErrorBody(await answer(task.uid, { action: 'approve' }), 409, 'already_resolved');
    const runs = await runsOf(task.uid);
    expect(runs.map((r) => (r.input as any).decision.action)).toEqual(['respond', 'respond', 'approve']);
    expect((runs[2]!.input as any).decision).toEqual({
      action: 'approve',
      tool_args: EMAIL,
      edited: false,
      note: 'Fine as it is',
      feedback: null,
      decided_by: { user_uid: p.orgA.admin.userUid, name: ADMIN_NAME },
      decided_at: approved.resolved_at,
    });
    expect(approved.change_log.map((c: any) => c.action)).toEqual([
      'created',
      'responded',
      'responded',
      'resolved',
    ]);
  });

  it('the shape is checked first: feedback required (not blank, at most 4000), no tool_args or resolution_note; feedback only with respond', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    const cases: [Record<string, unknown>, string][] = [
      [{ action: 'respond' }, 'feedback'],
      [{ action: 'respond', feedback: ' \n ' }, 'feedback'],
      [{ action: 'respond', feedback: '' }, 'feedback'],
      [{ action: 'respond', feedback: 'x'.repeat(4001) }, 'feedback'],
      [{ action: 'respond', feedback: 'Shorter', tool_args: { subject: 'x' } }, 'tool_args'],
      [{ action: 'respond', feedback: 'Shorter', resolution_note: 'x' }, 'resolution_note'],
      [{ action: 'approve', feedback: 'Shorter' }, 'feedback'],
      [{ action: 'reject', resolution_note: 'No', feedback: 'Shorter' }, 'feedback'],
      [{ action: 'respond', feedback: 'Shorter', title: 'x' }, 'title'],
    ];
    for (const [body, field] of cases) {
      const error = expectErrorBody(await answer(task.uid, body), 422, 'validation_failed');
      expect(
        error.errors?.map((e) => e.field.replace(/^\//, '')),
        JSON.stringify(body).slice(0, 80),
      ).toContain(field);
    }
    expect(await ok(answer(task.uid, { action: 'respond', feedback: 'x'.repeat(4000) }))).toMatchObject({
      status: 'in_progress',
    });
    // Feedback on a plain task is a resolve field like the others: 422.
    const plain = await ok(
      call(t.app, 'POST', '/api/work-tasks', { key: p.orgA.admin.key, body: { title: 'Call Globex' } }),
      201,
    );
    expectErrorBody(await answer(plain.uid, { feedback: 'x' }), 422, 'validation_failed');
    expect((await runsOf(task.uid)).length).toBe(1);
  });

  it('after the decision → 409 already_resolved; past its deadline → 409 approval_expired; nothing written', async () => {
    const runtime = await agent();
    const decided = await raise(runtime.uid);
    await ok(answer(decided.uid, { action: 'reject', resolution_note: 'Paid already' }));
    const before = await read(decided.uid);
    expectErrorBody(
      await answer(decided.uid, { action: 'respond', feedback: 'Shorter' }),
      409,
      'already_resolved',
    );
    expect(await read(decided.uid)).toEqual(before);

    const expiring = await agent();
    await policy({ agent_uid: expiring.uid, approver_roles: ['admin', 'member'], expires_after_minutes: 60 });
    const task = await raise(expiring.uid);
    await rawQuery(t.db, `update work_tasks set expires_at = now() - interval '1 second' where uid = $1`, [
      task.uid,
    ]);
    const stale = await read(task.uid);
    expectErrorBody(
      await answer(task.uid, { action: 'respond', feedback: 'Shorter' }),
      409,
      'approval_expired',
    );
    expect(await read(task.uid)).toEqual(stale);
    expect(await runsOf(task.uid)).toEqual([]);
  });

  it('under a policy: who may decide may respond (the initiator too); anyone else → 403 not_an_approver', async () => {
    const runtime = await agent();
    await policy({
      name: 'Admins only',
      agent_uid: runtime.uid,
      approver_roles: ['admin'],
      approver_user_uids: [],
      forbid_initiator: true,
    });
    // Raised by Grace's key: she is its initiator.
    const task = await raise(runtime.uid, grace.key);
    const refused = await answer(task.uid, { action: 'respond', feedback: 'Shorter' }, alan.key);
    expectErrorBody(refused, 403, 'not_an_approver');
    expect(refused.body.message).toBe('Under the policy "Admins only" only admins may decide this');
    expect(await runsOf(task.uid)).toEqual([]);
    // The initiator may not approve it, but may respond to it.
    expectErrorBody(
      await answer(task.uid, { action: 'approve' }, grace.key),
      403,
      'initiator_cannot_approve',
    );
    expect(await ok(answer(task.uid, { action: 'respond', feedback: 'Shorter' }, grace.key))).toMatchObject({
      status: 'in_progress',
      response: { user_uid: grace.userUid, user_name: 'Grace Hopper' },
    });
  });

  it('another organization’s approval is 404; no key 401; a key without work_tasks:write 403', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    const body = { action: 'respond', feedback: 'Shorter' };
    expectErrorBody(await answer(task.uid, body, p.orgB.admin.key), 404, 'not_found');
    expectErrorBody(await call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, { body }), 401);
    const readOnly = await p.keyWithScopes(['work_tasks:read']);
    expectErrorBody(await answer(task.uid, body, readOnly), 403, 'missing_scope');
    expect((await read(task.uid)).response).toBeNull();
  });

  it('a paused agent: the feedback is recorded and the answer says no run was started (_warning)', async () => {
    const runtime = await agent('paused');
    const task = await raise(runtime.uid);
    const now = await ok(answer(task.uid, { action: 'respond', feedback: 'Shorter' }));
    expect(now._warning).toBe(
      `Feedback recorded, but no follow-up run was started: Agent "${runtime.name}" is paused; no run was started (activate it to run)`,
    );
    expect(now).toMatchObject({ status: 'todo', response: { feedback: 'Shorter' } });
    expect(await runsOf(task.uid)).toEqual([]);
    const rejected = await ok(answer(task.uid, { action: 'reject', resolution_note: 'Never mind' }));
    expect(rejected._warning).toMatch(/^Rejected, but no follow-up run was started: /);
  });
});

describe('what the follow-up run receives for a decision', () => {
  it('approve with edits: the merged tool_args, edited, the note, who and when', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    const approved = await ok(
      answer(
        task.uid,
        { action: 'approve', tool_args: { subject: 'Second notice' }, resolution_note: 'Firmer' },
        grace.key,
      ),
    );
    const [run] = await runsOf(task.uid);
    expect(run!.input).toEqual({
      task_uid: task.uid,
      decision: {
        action: 'approve',
        tool_args: { ...EMAIL, subject: 'Second notice' },
        edited: true,
        note: 'Firmer',
        feedback: null,
        decided_by: { user_uid: grace.userUid, name: 'Grace Hopper' },
        decided_at: approved.resolved_at,
      },
    });
  });
});

describe('the agent revises (reviseApproval)', () => {
  const revise = (
    agentUid: string,
    taskUid: string,
    answering: { feedback: string; at: string } | null,
    toolArgs: Record<string, unknown>,
  ) =>
    t.db.transaction(async (tx) =>
      reviseApproval(tx, {
        agent: (await findAgent(tx, [p.orgA.uid], agentUid))!,
        taskUid,
        toolArgs,
        answering,
        summary: 'Rewrote the subject',
        origin: {
          actor: { type: 'agent_run', uid: crypto.randomUUID(), userUid: null },
          requestId: 'run:test',
          clientAddress: null,
        },
      }),
    );

  it('answering the feedback: new tool_args, partial approvals discarded, pending again (todo), revised entry and task.revised', async () => {
    const runtime = await agent();
    await policy({ agent_uid: runtime.uid, approver_roles: ['admin', 'member'], required_approvals: 2 });
    const task = await raise(runtime.uid);
    await ok(answer(task.uid, { action: 'approve' }, grace.key));
    const responded = await ok(
      answer(task.uid, { action: 'respond', feedback: 'Say "second notice"' }, alan.key),
    );
    // The approvals so far still count: they are discarded only when the revision changes the arguments.
    expect(responded).toMatchObject({ status: 'in_progress', approvals: [{ user_uid: grace.userUid }] });

    const result = await revise(runtime.uid, task.uid, responded.response, {
      subject: 'Second notice: AR-7',
    });
    expect(result).toMatchObject({ revised: true, editedToolArgs: ['subject'], discardedApprovals: 1 });
    const now = await read(task.uid);
    expect(now).toMatchObject({
      status: 'todo',
      resolution: null,
      response: null,
      approvals: [],
      tool_args: { ...EMAIL, subject: 'Second notice: AR-7' },
    });
    expect(now.change_log.at(-1)).toMatchObject({
      action: 'revised',
      by_type: 'agent',
      by_name: runtime.name,
      details: {
        summary: 'Rewrote the subject',
        feedback: 'Say "second notice"',
        edited_tool_args: ['subject'],
        discarded_approvals: 1,
      },
    });
    const revised = (await auditOf(task.uid)).find((e) => e.action === 'task.revised');
    expect(revised).toMatchObject({
      actor_type: 'agent_run',
      changes: {
        status: { before: 'in_progress', after: 'todo' },
        approvals: { before: 1, after: 0 },
        tool_args: { after: expect.objectContaining({ subject: 'Second notice: AR-7' }) },
      },
    });
    // Grace, whose approval was discarded, approves the new arguments; with Alan's it is decided.
    await ok(answer(task.uid, { action: 'approve' }, grace.key));
    expect(await ok(answer(task.uid, { action: 'approve' }, alan.key))).toMatchObject({
      resolution: 'approved',
    });
  });

  it('a newer response keeps it with the agent; a decided approval is left alone; an edit that moves the policy is 422', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    const first = await ok(answer(task.uid, { action: 'respond', feedback: 'Shorter' }));
    const second = await ok(answer(task.uid, { action: 'respond', feedback: 'And friendlier' }));
    await revise(runtime.uid, task.uid, first.response, { body: 'Short.' });
    expect(await read(task.uid)).toMatchObject({
      status: 'in_progress',
      response: { feedback: 'And friendlier', at: second.response.at },
      tool_args: { body: 'Short.' },
    });
    await revise(runtime.uid, task.uid, second.response, { body: 'Short, kind.' });
    expect(await read(task.uid)).toMatchObject({ status: 'todo', response: null });

    // Raising the amount past a threshold policy: the agent must ask again instead.
    const payer = await agent();
    await policy({
      agent_uid: payer.uid,
      tool_type: 'payment',
      min_amount_cents: 100_000,
      approver_roles: ['admin'],
    });
    const payment = await raise(payer.uid, p.orgA.admin.key, { type: 'payment', amount_cents: 5_000 });
    await expect(revise(payer.uid, payment.uid, null, { amount_cents: 500_000 })).rejects.toMatchObject({
      code: 'validation_failed',
    });
    expect((await read(payment.uid)).tool_args.amount_cents).toBe(5_000);

    await ok(answer(payment.uid, { action: 'reject', resolution_note: 'No' }));
    expect(await revise(payer.uid, payment.uid, null, { amount_cents: 4_000 })).toMatchObject({
      revised: false,
    });
    // Only the agent that raised it revises it.
    await expect(revise(runtime.uid, payment.uid, null, {})).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('PATCH /api/agents/{agent_uid}/approvals/{task_uid}: an outside runtime revises', () => {
  const revise = (agentUid: string, taskUid: string, body: Record<string, unknown>, key = p.orgA.admin.key) =>
    call(t.app, 'PATCH', `/api/agents/${agentUid}/approvals/${taskUid}`, { key, body });

  it('answers the pending feedback: merged tool_args, new reasoning, pending again; approval_required is recorded', async () => {
    const runtime = await agent();
    const task = await raise(runtime.uid);
    await ok(answer(task.uid, { action: 'respond', feedback: 'Say it is the second notice' }, alan.key));
    const revised = await ok(
      revise(
        runtime.uid,
        task.uid,
        {
          tool_args: { subject: 'Second notice: AR-7' },
          reasoning: 'AR-7 is overdue; second notice as asked',
          summary: 'Subject now says second notice',
        },
        p.orgA.member.key,
      ),
    );
    expect(revised).toMatchObject({
      status: 'todo',
      resolution: null,
      response: null,
      reasoning: 'AR-7 is overdue; second notice as asked',
      tool_args: { ...EMAIL, subject: 'Second notice: AR-7' },
    });
    expect(revised.change_log.at(-1)).toMatchObject({
      action: 'revised',
      by_type: 'agent',
      by_name: runtime.name,
      details: {
        summary: 'Subject now says second notice',
        feedback: 'Say it is the second notice',
        edited_tool_args: ['subject'],
      },
    });
    const revisedEvent = (await auditOf(task.uid)).find((e) => e.action === 'task.revised');
    expect(revisedEvent).toMatchObject({ actor_user_uid: p.orgA.member.userUid });
    const notes = await ok(
      call(t.app, 'GET', `/api/agents/${runtime.uid}/notifications`, { key: p.orgA.admin.key }),
    );
    expect(notes.items[0]).toMatchObject({ event: 'approval_required', task_uid: task.uid });
    expect(notes.items[0].text).toContain('revised its request');
    // Without feedback pending it revises all the same; the summary defaults.
    const again = await ok(revise(runtime.uid, task.uid, { tool_args: { body: 'Shorter.' } }));
    expect(again.change_log.at(-1).details).toMatchObject({
      summary: 'Revised tool_args',
      feedback: null,
      edited_tool_args: ['body'],
    });
  });

  it('refused: decided → 409; another agent’s approval or another organization’s → 404; bad body → 422; no key 401; no scope 403', async () => {
    const runtime = await agent();
    const other = await agent();
    const task = await raise(runtime.uid);
    const body = { tool_args: { subject: 'x' } };
    expectErrorBody(await revise(other.uid, task.uid, body), 404, 'not_found');
    expectErrorBody(await revise(runtime.uid, crypto.randomUUID(), body), 404, 'not_found');
    expectErrorBody(await revise(runtime.uid, task.uid, body, p.orgB.admin.key), 404, 'not_found');
    expectErrorBody(await revise(runtime.uid, task.uid, {}), 422, 'validation_failed');
    expectErrorBody(await revise(runtime.uid, task.uid, { ...body, title: 'x' }), 422, 'validation_failed');
    expectErrorBody(
      await call(t.app, 'PATCH', `/api/agents/${runtime.uid}/approvals/${task.uid}`, { body }),
      401,
    );
    const readOnly = await p.keyWithScopes(['work_tasks:read', 'agents:write']);
    expectErrorBody(await revise(runtime.uid, task.uid, body, readOnly), 403, 'missing_scope');
    expect((await read(task.uid)).tool_args).toEqual(EMAIL);
    await ok(answer(task.uid, { action: 'reject', resolution_note: 'No' }));
    expectErrorBody(await revise(runtime.uid, task.uid, body), 409, 'already_resolved');
  });
});
