/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * A decision bound to what the person saw (docs/approvals.md#decide-what-you-saw): `args_revision`
 * moves only when `tool_args` change, and a decision sent with an older one decides nothing (409
 * `approval_changed`, naming who changed what and when). Without it a decision keeps its meaning.
 */

let t: TestApp;
let p: Principals;
let grace: { userUid: string; key: string };
let alan: { userUid: string; key: string };

const tag = () => crypto.randomBytes(3).toString('hex');
const PAYMENT = { type: 'send_payment', payee: 'ACME Corp', amount_cents: 1500 };
const UTC_TEXT = '\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC';

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  grace = await person('Grace Hopper', 'admin');
  alan = await person('Alan Turing', 'admin');
});
afterAll(async () => t?.close());

async function person(name: string, role: 'admin' | 'member') {
  const added = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
    organizationUid: p.orgA.uid,
    email: `${name.split(' ')[0]!.toLowerCase()}-${tag()}@a.test`,
    fullName: name,
    role,
  });
  return { userUid: added.user_uid, key: added.api_key };
}

async function ok(promise: Promise<{ status: number; raw: string; body: any }>, status = 200) {
  const res = await promise;
  expect(res.status, res.raw).toBe(status);
  return res.body.data;
}
const agent = () =>
  ok(
    call(t.app, 'POST', '/api/agents', {
      key: p.orgA.admin.key,
      body: { name: `Payer ${tag()}`, status: 'active' },
    }),
    201,
  );
const raise = (agentUid: string) =>
  ok(
    call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
      key: p.orgA.admin.key,
      body: { title: 'Pay ACME?', reasoning: 'Due today', tool_args: PAYMENT, trigger: { type: 'manual' } },
    }),
    201,
  );
const revise = (agentUid: string, taskUid: string, toolArgs: Record<string, unknown>) =>
  ok(
    call(t.app, 'PATCH', `/api/agents/${agentUid}/approvals/${taskUid}`, {
      key: p.orgA.admin.key,
      body: { tool_args: toolArgs, summary: 'Pay the late fee too' },
    }),
  );
const policy = (name: string, body: Record<string, unknown>) =>
  ok(
    call(t.app, 'POST', '/api/approval-policies', {
      key: p.orgA.admin.key,
      body: { name: `${name} ${tag()}`, ...body },
    }),
    201,
  );
const answer = (taskUid: string, body: Record<string, unknown>, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/work-tasks/${taskUid}`, { key, body });
const read = (taskUid: string) =>
  ok(call(t.app, 'GET', `/api/work-tasks/${taskUid}`, { key: p.orgA.admin.key }));

describe('args_revision', () => {
  it('starts at 1 and moves only when the arguments change (an identical revision leaves it)', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    expect(task.args_revision).toBe(1);
    await revise(payer.uid, task.uid, { amount_cents: 1500 });
    expect((await read(task.uid)).args_revision).toBe(1);
    await revise(payer.uid, task.uid, { amount_cents: 15_000 });
    expect((await read(task.uid)).args_revision).toBe(2);
    // A response is not a change of the arguments.
    await ok(answer(task.uid, { action: 'respond', feedback: 'Check the fee', args_revision: 2 }));
    expect((await read(task.uid)).args_revision).toBe(2);
    const listed = await ok(
      call(t.app, 'GET', '/api/work-tasks', { key: p.orgA.admin.key, query: { type: 'hil_approval' } }),
    );
    expect(listed.items.find((i: any) => i.uid === task.uid).args_revision).toBe(2);
  });

  it('an approval of the version shown after the agent revised it: 409 approval_changed naming the agent, the argument and the time; nothing decided; the new revision decides', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const shown = task.args_revision;
    await revise(payer.uid, task.uid, { amount_cents: 15_000 });

    for (const body of [
      { action: 'approve', args_revision: shown },
      { action: 'reject', args_revision: shown },
      { action: 'respond', feedback: 'Why so much?', args_revision: shown },
    ]) {
      const res = await answer(task.uid, body);
      expectErrorBody(res, 409, 'approval_changed');
      expect(res.body.message).toMatch(
        new RegExp(
          `^This approval changed after you saw it: the agent ${payer.name} revised amount_cents at ${UTC_TEXT}\\. ` +
            'Nothing was decided; look at it again\\.$',
        ),
      );
      expect(res.body.details).toEqual({
        args_revision: 2,
        changed: ['amount_cents'],
        tool_args: { ...PAYMENT, amount_cents: 15_000 },
      });
    }
    const after = await read(task.uid);
    expect(after).toMatchObject({ resolution: null, response: null, status: 'todo' });
    expect(after.change_log.map((c: any) => c.action)).not.toContain('resolved');

    const decided = await ok(answer(task.uid, { action: 'approve', args_revision: 2 }));
    expect(decided).toMatchObject({ resolution: 'approved', tool_args: { amount_cents: 15_000 } });
  });

  it('without args_revision a decision applies to the arguments as they are (documented meaning kept)', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    await revise(payer.uid, task.uid, { amount_cents: 15_000 });
    const decided = await ok(answer(task.uid, { action: 'approve' }));
    expect(decided).toMatchObject({ resolution: 'approved', tool_args: { amount_cents: 15_000 } });
  });

  it('another approver’s edit under a two-person rule: the next approver’s old revision is refused, naming the person', async () => {
    const payer = await agent();
    await policy('Two people', { agent_uid: payer.uid, approver_roles: ['admin'], required_approvals: 2 });
    const task = await raise(payer.uid);
    expect(task.args_revision).toBe(1);
    const counted = await ok(
      answer(task.uid, { action: 'approve', tool_args: { amount_cents: 1400 }, args_revision: 1 }, grace.key),
    );
    expect(counted).toMatchObject({ resolution: null, args_revision: 2 });

    const stale = await answer(task.uid, { action: 'approve', args_revision: 1 }, alan.key);
    expectErrorBody(stale, 409, 'approval_changed');
    expect(stale.body.message).toMatch(
      new RegExp(
        `^This approval changed after you saw it: Grace Hopper edited amount_cents at ${UTC_TEXT}\\.`,
      ),
    );
    expect(stale.body.message).not.toContain('agent');
    expect((await read(task.uid)).approvals.map((a: any) => a.user_uid)).toEqual([grace.userUid]);

    const decided = await ok(answer(task.uid, { action: 'approve', args_revision: 2 }, alan.key));
    expect(decided).toMatchObject({ resolution: 'approved', tool_args: { amount_cents: 1400 } });
  });

  it('who may decide and the deadline are answered before a stale revision (a non-approver learns nothing of the arguments)', async () => {
    const payer = await agent();
    const member = await person('Ada Lovelace', 'member');
    await policy('Admins only', {
      agent_uid: payer.uid,
      approver_roles: ['admin'],
      expires_after_minutes: 30,
    });
    const task = await raise(payer.uid);
    await revise(payer.uid, task.uid, { amount_cents: 99_000 });
    const refused = await answer(task.uid, { action: 'approve', args_revision: 1 }, member.key);
    expectErrorBody(refused, 403, 'not_an_approver');
    expect(refused.raw).not.toContain('99000');

    await rawQuery(t.db, `update work_tasks set expires_at = now() - interval '1 second' where uid = $1`, [
      task.uid,
    ]);
    expectErrorBody(await answer(task.uid, { action: 'approve', args_revision: 1 }), 409, 'approval_expired');
  });

  it('a revision the approval never had is refused the same way; a decided approval answers already_resolved first', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const ahead = await answer(task.uid, { action: 'approve', args_revision: 7 });
    expectErrorBody(ahead, 409, 'approval_changed');
    expect(ahead.body.message).toBe(
      "This approval's arguments are at revision 1, not 7. Nothing was decided; look at it again.",
    );
    expect(ahead.body.details).toMatchObject({ args_revision: 1, changed: [] });

    await ok(answer(task.uid, { action: 'reject' }));
    expectErrorBody(await answer(task.uid, { action: 'approve', args_revision: 7 }), 409, 'already_resolved');
  });

  it('bad revisions are 422 naming the field; a person task refuses it as a resolve field', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    for (const args_revision of [0, -1, 1.5, '1', 2 ** 31]) {
      const res = await answer(task.uid, { action: 'approve', args_revision });
      expectErrorBody(res, 422, 'validation_failed');
      expect(res.body.errors[0].field).toBe('args_revision');
    }
    const todo = await ok(
      call(t.app, 'POST', '/api/work-tasks', {
        key: p.orgA.admin.key,
        body: { title: 'Call ACME' },
      }),
      201,
    );
    const res = await answer(todo.uid, { args_revision: 1 });
    expectErrorBody(res, 422, 'validation_failed');
    expect(res.body.errors[0].field).toBe('args_revision');
    expect(todo.args_revision).toBeUndefined();
  });
});
