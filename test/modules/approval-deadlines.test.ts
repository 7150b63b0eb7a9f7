/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { rawQuery } from '../../src/platform/db/client.ts';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import {
  escalateDueApprovals,
  ESCALATION_NOTICE_QUEUE,
  expireDueApprovals,
  sendEscalationNotice,
} from '../../src/modules/work-tasks/approval-deadlines.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { outboxMessages } from '../helpers/people.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { until } from '../helpers/until.ts';

/**
 * The deadlines of approval policies (docs/approvals.md#expiry-and-escalation), on a clock the test
 * moves: `expireDueApprovals` and `escalateDueApprovals` take `now`. Expiry fails closed (no follow-up
 * run) and wakes a `?wait=N` waiter; escalation emails each person (read from the outbox) and posts to
 * the channel (a local Slack stand-in) once, however often the job runs, and lets those people decide.
 * Workers run, so the notice jobs send as they would in production.
 */

let t: TestApp;
let p: Principals;
let slack: FakeSlack;
let grace: { userUid: string; key: string; email: string };

const CHANNEL = 'C0ESCALATE';
const MINUTE = 60_000;
const tag = () => crypto.randomBytes(3).toString('hex');
const PAYMENT = { type: 'payment', payee: 'ACME Corp', amount_cents: 750_000 };

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel(CHANNEL, true);
  t = await createTestApp({
    workers: true,
    // Held requests are re-read only every 60 s without a notification: a woken waiter heard the expiry.
    env: { RATE_LIMIT_MAX: '100000', TASK_WAIT_RECHECK_S: '60', ...slack.env() },
  });
  p = await createPrincipals(t);
  const email = `grace-${tag()}@a.test`;
  const added = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
    organizationUid: p.orgA.uid,
    email,
    fullName: 'Grace Hopper',
    role: 'member',
  });
  grace = { userUid: added.user_uid, key: added.api_key, email };
  await until(async () => t.app.taskWaiters.isLive, 'the waiters to listen');
});
afterAll(async () => {
  await t?.close();
  await slack?.close();
});

async function ok(promise: Promise<{ status: number; raw: string; body: any }>, status = 200) {
  const res = await promise;
  expect(res.status, res.raw).toBe(status);
  return res.body.data;
}
const key = () => p.orgA.admin.key;
const agent = () =>
  ok(
    call(t.app, 'POST', '/api/agents', { key: key(), body: { name: `Payer ${tag()}`, status: 'active' } }),
    201,
  );
const policy = (body: Record<string, unknown>) =>
  ok(
    call(t.app, 'POST', '/api/approval-policies', { key: key(), body: { name: `Policy ${tag()}`, ...body } }),
    201,
  );
const raise = (agentUid: string, title = 'Pay ACME?') =>
  ok(
    call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
      key: key(),
      body: { title, reasoning: 'Invoice 42 is due', tool_args: PAYMENT, trigger: { type: 'manual' } },
    }),
    201,
  );
const decide = (taskUid: string, who: string, body: Record<string, unknown> = { action: 'approve' }) =>
  call(t.app, 'PATCH', `/api/work-tasks/${taskUid}`, { key: who, body });
const read = (taskUid: string) => ok(call(t.app, 'GET', `/api/work-tasks/${taskUid}`, { key: key() }));
const runsOf = (taskUid: string) =>
  t.db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.organizationUid, p.orgA.uid), eq(agentRuns.taskUid, taskUid)));
/** An instant `minutes` after the task's creation: the test's clock. */
const after = (task: { created_at: string }, minutes: number) =>
  new Date(Date.parse(task.created_at) + minutes * MINUTE);
/**
 * Escalates what earlier tests left due (they run in any order), so that a count of escalations after
 * this is the test's own.
 */
const escalateLeftovers = () =>
  escalateDueApprovals(t.db, t.deps.jobs, new Date(Date.now() + 2 * 365 * 24 * 60 * MINUTE));
const noticeJobs = (taskUid: string) =>
  rawQuery<{ state: string; data: any }>(
    t.db,
    `select state, data from pgboss.job where name = $1 and data->>'task_uid' = $2`,
    [ESCALATION_NOTICE_QUEUE, taskUid],
  );

describe('the sweeps run at the deadlines, not at the next whole minute', () => {
  it('raising an approval with an expiry and an escalation enqueues each sweep to start at its deadline', async () => {
    const payer = await agent();
    await policy({
      agent_uid: payer.uid,
      approver_roles: ['admin'],
      expires_after_minutes: 30,
      escalate_after_minutes: 10,
      escalate_to_user_uids: [grace.userUid],
    });
    const task = await raise(payer.uid);
    const [row] = await rawQuery<{ expires_at: Date; escalate_at: Date }>(
      t.db,
      'select expires_at, escalate_at from work_tasks where uid = $1',
      [task.uid],
    );
    const startsOf = async (queue: string) =>
      (
        await rawQuery<{ start_after: Date }>(
          t.db,
          `select start_after from pgboss.job where name = $1 and start_after > now() + interval '1 minute'`,
          [queue],
        )
      ).map((j) => new Date(j.start_after).getTime());
    expect(await startsOf('remit.approvals.expire')).toContain(new Date(row!.expires_at).getTime());
    expect(await startsOf('remit.approvals.escalate')).toContain(new Date(row!.escalate_at).getTime());
    // Settled, so the tests after it count only their own approvals.
    await escalateLeftovers();
    await expireDueApprovals(t.db, t.deps.jobs, new Date(Date.now() + 2 * 365 * 24 * 60 * MINUTE));
  });
});

describe('expiry (fail closed)', () => {
  it('the job ends an approval past its deadline: expired, canceled, no follow-up run; logged, audited, announced; a waiter wakes', async () => {
    const payer = await agent();
    await policy({
      agent_uid: payer.uid,
      approver_roles: ['admin', 'member'],
      required_approvals: 2,
      expires_after_minutes: 30,
    });
    const task = await raise(payer.uid);
    // One of the two approvals arrives; the other never does.
    await ok(decide(task.uid, p.orgA.member.key));

    const held = call(t.app, 'GET', `/api/work-tasks/${task.uid}`, { key: key(), query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');

    expect(await expireDueApprovals(t.db, t.deps.jobs, after(task, 29))).toBe(0);
    expect((await read(task.uid)).resolution).toBeNull();
    expect(await expireDueApprovals(t.db, t.deps.jobs, after(task, 31))).toBe(1);

    const woken = await held;
    expect(woken.status).toBe(200);
    expect(woken.body.data).toMatchObject({
      uid: task.uid,
      status: 'canceled',
      resolution: 'expired',
      resolved_by: null,
    });

    const expired = await read(task.uid);
    expect(expired).toMatchObject({
      status: 'canceled',
      resolution: 'expired',
      resolved_by: null,
      resolution_note: null,
    });
    expect(expired.resolved_at).not.toBeNull();
    expect(expired.change_log.at(-1)).toMatchObject({
      by_type: 'system',
      by_name: 'Remit',
      action: 'expired',
      details: { expires_at: task.expires_at, approvals: 1, required_approvals: 2 },
    });
    expect(await runsOf(task.uid)).toHaveLength(0);

    const audit = await ok(
      call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
        key: key(),
        query: { entity_uid: task.uid, action: 'task.expired' },
      }),
    );
    expect(audit.items).toHaveLength(1);
    expect(audit.items[0]).toMatchObject({
      actor_type: 'system',
      changes: {
        resolution: { before: null, after: 'expired' },
        status: { before: 'in_review', after: 'canceled' },
      },
    });
    const events = await ok(
      call(t.app, 'GET', '/api/events', {
        key: key(),
        query: { entity_uid: task.uid, type: 'work_task.approval_decided' },
      }),
    );
    expect(events.items).toHaveLength(1);
    expect(events.items[0].data).toMatchObject({ decision: 'expired', work_task: { resolution: 'expired' } });

    // Once ended, it stays ended: the job again finds nothing, a decision is 409.
    expect(await expireDueApprovals(t.db, t.deps.jobs, after(task, 90))).toBe(0);
    expectErrorBody(await decide(task.uid, grace.key), 409, 'already_resolved');
    expect(await runsOf(task.uid)).toHaveLength(0);
  });

  it('an approval decided in time is not expired; one without a policy never expires', async () => {
    const payer = await agent();
    await policy({ agent_uid: payer.uid, approver_roles: ['admin', 'member'], expires_after_minutes: 5 });
    const decided = await raise(payer.uid);
    await ok(decide(decided.uid, p.orgA.member.key));
    const unguarded = await agent();
    const open = await raise(unguarded.uid);
    expect(open.expires_at).toBeNull();
    await expireDueApprovals(t.db, t.deps.jobs, after(decided, 60 * 24 * 365 * 2));
    expect(await read(decided.uid)).toMatchObject({ resolution: 'approved' });
    expect(await read(open.uid)).toMatchObject({ resolution: null, status: 'todo' });
  });
});

describe('escalation', () => {
  it('after N minutes: emails each person once and posts to the channel once, with the console link; they may then decide', async () => {
    await escalateLeftovers();
    const payer = await agent();
    const rules = await policy({
      name: 'Payments',
      agent_uid: payer.uid,
      approver_roles: ['admin'],
      expires_after_minutes: 120,
      escalate_after_minutes: 10,
      escalate_to_user_uids: [grace.userUid],
      escalate_to_chat_channel_id: CHANNEL,
    });
    const task = await raise(payer.uid, `Pay ACME ${tag()}`);
    // Grace is a member: not an approver until the escalation names her.
    expectErrorBody(await decide(task.uid, grace.key), 403, 'not_an_approver');

    expect(await escalateDueApprovals(t.db, t.deps.jobs, after(task, 9))).toBe(0);
    expect(await escalateDueApprovals(t.db, t.deps.jobs, after(task, 11))).toBe(1);
    // The next minute's run, or a second worker: nothing more.
    expect(await escalateDueApprovals(t.db, t.deps.jobs, after(task, 12))).toBe(0);
    expect(await escalateDueApprovals(t.db, t.deps.jobs, after(task, 60))).toBe(0);

    const link = `${t.config.publicBaseUrl}/app/inbox/${task.uid}`;
    const mail = await until(async () => {
      const messages = outboxMessages(t, grace.email).filter((m) => m.includes(task.uid));
      return messages.length > 0 ? messages : undefined;
    }, 'the escalation email');
    await until(
      async () => slack.messagesIn(CHANNEL).some((m) => m.text.includes(task.uid)) || undefined,
      'the post',
    );
    await until(
      async () => (await noticeJobs(task.uid)).every((j) => j.state === 'completed') || undefined,
      'the notice jobs to finish',
    );
    expect(await noticeJobs(task.uid)).toHaveLength(2);
    expect(outboxMessages(t, grace.email).filter((m) => m.includes(task.uid))).toHaveLength(1);
    expect(mail[0]).toMatch(/^Subject: Remit: approval waiting: Pay ACME/m);
    expect(mail[0]).toContain(link);
    expect(mail[0]).toContain(`Policy "Payments": 1 approval(s) needed, 0 received so far.`);
    const posts = slack.messagesIn(CHANNEL).filter((m) => m.text.includes(task.uid));
    expect(posts).toHaveLength(1);
    expect(posts[0]!.text).toContain(link);

    const escalated = await read(task.uid);
    expect(escalated.escalated_at).not.toBeNull();
    expect(escalated.approval_policy.approver_user_uids).toEqual([grace.userUid]);
    expect(escalated.approval_policy.approver_users).toEqual([
      { user_uid: grace.userUid, user_name: 'Grace Hopper' },
    ]);
    expect(escalated.change_log.at(-1)).toMatchObject({
      by_name: 'Remit',
      action: 'escalated',
      details: {
        to_user_uids: [grace.userUid],
        chat_channel_id: CHANNEL,
        added_approver_user_uids: [grace.userUid],
      },
    });
    const audit = await ok(
      call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
        key: key(),
        query: { entity_uid: task.uid, action: 'task.escalated' },
      }),
    );
    expect(audit.items).toHaveLength(1);
    // The policy itself does not change: only this task's copy names her.
    expect(
      (await ok(call(t.app, 'GET', `/api/approval-policies/${rules.uid}`, { key: key() })))
        .approver_user_uids,
    ).toEqual([]);

    expect(await ok(decide(task.uid, grace.key))).toMatchObject({ resolution: 'approved' });
  });

  it('nothing is sent for an approval decided before its notice went out, nor to someone who left', async () => {
    await escalateLeftovers();
    const payer = await agent();
    await policy({
      agent_uid: payer.uid,
      approver_roles: ['admin'],
      escalate_after_minutes: 10,
      escalate_to_user_uids: [grace.userUid],
    });
    const task = await raise(payer.uid);
    await ok(decide(task.uid, key()));
    const deps = {
      db: t.db,
      config: t.config,
      mail: t.deps.clients.mail,
      chat: t.deps.clients.chat,
      jobs: t.deps.jobs,
    };
    const notice = { organization_uid: p.orgA.uid, task_uid: task.uid };
    expect(await sendEscalationNotice(deps, { ...notice, user_uid: grace.userUid })).toBe('skipped');
    expect(await sendEscalationNotice(deps, { ...notice, channel_id: CHANNEL })).toBe('skipped');
    // A decided approval is not escalated at all.
    expect(await escalateDueApprovals(t.db, t.deps.jobs, after(task, 11))).toBe(0);

    const pending = await raise(payer.uid);
    expect(
      await sendEscalationNotice(deps, { ...notice, task_uid: pending.uid, user_uid: p.orgB.admin.userUid }),
    ).toBe('skipped');
    expect(outboxMessages(t, p.orgB.admin.email)).toHaveLength(0);
  });
});
