/* eslint-disable @typescript-eslint/no-explicit-any -- API answers and Slack payloads are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { agentNotifications } from '../../src/modules/agents/agents.tables.ts';
import {
  deliverNotification,
  sweepStrandedDeliveries,
} from '../../src/modules/agents/notification-delivery.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { expireDueApprovals } from '../../src/modules/work-tasks/approval-deadlines.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeSlack, findButton, type SlackMessage } from '../helpers/fake-slack.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { until } from '../helpers/until.ts';
import { outboxMessages } from '../helpers/people.ts';

/**
 * Approvals in Slack (issue 21, points 1 and 2; docs/slack.md): every post a durable job after commit,
 * retried at Slack's Retry-After or with backoff, found again rather than posted twice after a crash;
 * messages that link to the console and carry Approve and Reject; the signed interactivity endpoint
 * (HMAC v0, five-minute window, replays refused); the Slack user matched by confirmed email; the
 * same policy as the API; the message updated in place; a race with the console has one winner.
 */

let t: TestApp;
let p: Principals;
let slack: FakeSlack;
let grace: { userUid: string; key: string; email: string };

const CHANNEL = 'C0APPROVE';
const tag = () => crypto.randomBytes(3).toString('hex');
const PAYMENT = { type: 'payment', payee: 'ACME Corp', amount_cents: 750_000 };
/** Slack users: the org A admin (confirmed email), Grace (a member), one unconfirmed, one stranger. */
const ADMIN = 'U0ADMIN';
const GRACE = 'U0GRACE';
const UNCONFIRMED = 'U0UNCONF';
const STRANGER = 'U0STRANGER';

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel(CHANNEL, true);
  t = await createTestApp({
    workers: true,
    env: {
      RATE_LIMIT_MAX: '100000',
      PUBLIC_BASE_URL: 'https://remit.example.test',
      ...slack.env({ interactive: true }),
    },
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
  // Slack's addresses may differ in case: Remit compares them lower-cased.
  slack.user(ADMIN, 'Ada Admin', p.orgA.admin.email.toUpperCase());
  slack.user(GRACE, 'Grace Hopper', email);
  slack.user(UNCONFIRMED, 'Mallory', p.orgA.admin.email, false);
  slack.user(STRANGER, 'Stranger', `stranger-${tag()}@elsewhere.test`);
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
const agent = (body: Record<string, unknown> = {}) =>
  ok(
    call(t.app, 'POST', '/api/agents', {
      key: key(),
      body: {
        name: `Payer ${tag()}`,
        status: 'active',
        notification_config: { chat_channel_id: CHANNEL, events: {} },
        ...body,
      },
    }),
    201,
  );
const raise = (agentUid: string, title = `Pay ACME ${tag()}?`) =>
  ok(
    call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
      key: key(),
      body: { title, reasoning: 'Invoice 42 is due', tool_args: PAYMENT, trigger: { type: 'manual' } },
    }),
    201,
  );
const read = (taskUid: string) => ok(call(t.app, 'GET', `/api/work-tasks/${taskUid}`, { key: key() }));

/** The approval message of a task, once posted. */
function messageAbout(taskUid: string, ms = 20_000): Promise<SlackMessage> {
  return until(
    async () => slack.messages.find((m) => JSON.stringify(m.blocks ?? '').includes(taskUid)),
    'the approval message',
    ms,
  );
}

async function interact(payload: unknown, options: Parameters<FakeSlack['signed']>[1] = {}) {
  const { body, headers } = slack.signed(payload, options);
  const res = await t.app.inject({ method: 'POST', url: '/api/slack/interactions', payload: body, headers });
  return {
    status: res.statusCode,
    body: res.body ? (JSON.parse(res.body) as any) : null,
    raw: res.body,
    sent: { body, headers },
  };
}

const buttonsOf = (m: SlackMessage) =>
  ((m.blocks as any[]).find((b) => b.type === 'actions')?.elements ?? []).map((e: any) => e.action_id);
const statusOf = (m: SlackMessage) =>
  ((m.blocks as any[]).find((b) => b.block_id === 'remit_status')?.elements?.[0]?.text as string) ?? '';
const notificationsOf = (taskUid: string) =>
  t.db
    .select()
    .from(agentNotifications)
    .where(and(eq(agentNotifications.organizationUid, p.orgA.uid), eq(agentNotifications.taskUid, taskUid)));

describe('the approval message', () => {
  it('carries the text, Approve, Reject and "Open in Remit" (the console page, not the API); metadata names the notification', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    expect(buttonsOf(message)).toEqual(['remit_approve', 'remit_reject', 'remit_open']);
    expect(findButton(message.blocks, 'remit_open')!.url).toBe(
      `https://remit.example.test/app/inbox/${task.uid}`,
    );
    expect(JSON.parse(findButton(message.blocks, 'remit_approve')!.value!)).toEqual({
      organization_uid: p.orgA.uid,
      task_uid: task.uid,
      args_digest: expect.stringMatching(/^[0-9a-f]{16}$/),
      args_revision: 1,
    });
    expect(JSON.stringify(message.blocks)).not.toContain('/api/');
    expect(message.text).toContain(`Open it in Remit: https://remit.example.test/app/inbox/${task.uid}`);
    const [note] = await notificationsOf(task.uid);
    expect(message.metadata).toEqual({
      event_type: 'remit_notification',
      event_payload: { notification_uid: note!.uid },
    });
    // Recorded after Slack answered the post: the fake server may see the message first.
    const recorded = await until(async () => {
      const [now] = await notificationsOf(task.uid);
      return now?.deliveryStatus === 'sent' ? now : undefined;
    }, 'the post to be recorded');
    expect(recorded).toMatchObject({ deliveryStatus: 'sent', externalId: message.ts, attempts: 1 });
  });

  it('without a signing secret only the link is offered (Slack could not send the clicks back)', async () => {
    const plain = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000', ...slack.env() } });
    try {
      const init = await createPrincipals(plain);
      const payer = await ok(
        call(plain.app, 'POST', '/api/agents', {
          key: init.orgA.admin.key,
          body: {
            name: `Plain ${tag()}`,
            status: 'active',
            notification_config: { chat_channel_id: CHANNEL, events: {} },
          },
        }),
        201,
      );
      const task = await ok(
        call(plain.app, 'POST', `/api/agents/${payer.uid}/approvals`, {
          key: init.orgA.admin.key,
          body: { title: 'Plain?', reasoning: 'r', tool_args: PAYMENT, trigger: { type: 'manual' } },
        }),
        201,
      );
      const message = await messageAbout(task.uid);
      expect(buttonsOf(message)).toEqual(['remit_open']);
      // And its interactivity endpoint accepts nothing.
      const res = await plain.app.inject({
        method: 'POST',
        url: '/api/slack/interactions',
        ...slack.signed({ type: 'block_actions' }),
        payload: slack.signed({ type: 'block_actions' }).body,
      });
      expect(res.statusCode).toBe(404);
    } finally {
      await plain.close();
    }
  });
});

describe('delivery as jobs', () => {
  it("a 429 is tried again after Slack's Retry-After, and posted once", async () => {
    const payer = await agent();
    slack.behaviour = { kind: 'ratelimit', retryAfter: 2, times: 1 };
    try {
      const task = await raise(payer.uid);
      const [first] = await until(async () => {
        const rows = await notificationsOf(task.uid);
        return rows[0]?.deliveryError ? rows : null;
      }, 'the refused attempt');
      expect(first).toMatchObject({ deliveryStatus: 'pending', attempts: 1 });
      expect(first!.deliveryError).toContain('HTTP 429');
      const refused = slack.requestsFor('chat.postMessage').find((q) => q.status === 429)!;
      // Retry-After: 2 → the next attempt two seconds after the refusal (not the 10 s backoff).
      const wait = first!.nextAttemptAt!.getTime() - refused.at;
      expect(wait).toBeGreaterThan(1500);
      expect(wait).toBeLessThan(3000);
      const message = await messageAbout(task.uid);
      const [sent] = await until(async () => {
        const rows = await notificationsOf(task.uid);
        return rows[0]?.deliveryStatus === 'sent' ? rows : null;
      }, 'the retry');
      expect(sent).toMatchObject({
        attempts: 2,
        deliveryError: null,
        externalId: message.ts,
        nextAttemptAt: null,
      });
      const posted = slack
        .requestsFor('chat.postMessage')
        .filter((q) => JSON.stringify(q.params).includes(task.uid));
      expect(posted.map((q) => q.status)).toEqual([429, 200]);
      expect(posted[1]!.at - posted[0]!.at).toBeGreaterThanOrEqual(1900);
    } finally {
      slack.reset();
    }
  });
});

describe('after a crash', () => {
  /** A notification as a crashed process left it: pending, its attempt started `minutesAgo`, no job. */
  async function stranded(taskUid: string, minutesAgo: number) {
    const [row] = await notificationsOf(taskUid);
    await t.db
      .update(agentNotifications)
      .set({
        deliveryStatus: 'pending',
        externalId: null,
        deliveredAt: null,
        attemptStartedAt: new Date(Date.now() - minutesAgo * 60_000),
        nextAttemptAt: null,
        createdAt: new Date(Date.now() - (minutesAgo + 1) * 60_000),
      })
      .where(eq(agentNotifications.uid, row!.uid));
    return row!;
  }
  const deps = () => ({
    db: t.db,
    chat: t.deps.clients.chat,
    jobs: t.deps.jobs,
    publicBaseUrl: t.config.publicBaseUrl,
  });

  it('a post that got through before the crash is found in the channel by its metadata, not posted again', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const row = await stranded(task.uid, 5);
    const before = slack.requestsFor('chat.postMessage').length;
    expect(
      await deliverNotification(deps(), { organization_uid: p.orgA.uid, notification_uid: row.uid }),
    ).toBe('sent');
    expect(slack.requestsFor('chat.postMessage').length).toBe(before);
    const [after] = await notificationsOf(task.uid);
    expect(after).toMatchObject({ deliveryStatus: 'sent', externalId: message.ts, attemptStartedAt: null });
  });

  it('one that did not is posted, once; an attempt still under way (another worker) is left alone', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    slack.messages.splice(slack.messages.indexOf(message), 1); // as if the crashed post never arrived
    const row = await stranded(task.uid, 0);
    const data = { organization_uid: p.orgA.uid, notification_uid: row.uid };
    // Started a moment ago: a live worker is posting it.
    expect(await deliverNotification(deps(), data)).toBe('skipped');
    await stranded(task.uid, 5);
    expect(await deliverNotification(deps(), data)).toBe('sent');
    expect(await deliverNotification(deps(), data)).toBe('skipped');
    expect(slack.messages.filter((m) => JSON.stringify(m.blocks).includes(task.uid))).toHaveLength(1);
  });

  it('the sweep enqueues a pending post that has no job; the job posts it', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    slack.messages.splice(slack.messages.indexOf(message), 1);
    await stranded(task.uid, 5);
    expect(await sweepStrandedDeliveries(deps())).toBeGreaterThanOrEqual(1);
    const [job] = await rawQuery<{ state: string }>(
      t.db,
      `select state from pgboss.job where name = 'remit.chat.deliver' and data->>'notification_uid' = $1 order by created_on desc limit 1`,
      [(await notificationsOf(task.uid))[0]!.uid],
    );
    expect(job).toBeDefined();
    // Worked by the app's own workers (slow only when the machine is loaded by a whole suite).
    const reposted = await messageAbout(task.uid, 60_000);
    expect(reposted.ts).not.toBe(message.ts);
    await until(
      async () => (await notificationsOf(task.uid))[0]?.deliveryStatus === 'sent',
      'the swept post',
    );
    // Swept once: the next sweep finds nothing of it.
    expect((await notificationsOf(task.uid))[0]!.externalId).toBe(reposted.ts);
  });
});

describe('the interactivity endpoint: only what Slack signed', () => {
  const click = { type: 'block_actions', user: { id: ADMIN }, actions: [] };
  it('no signature, another secret, a stale or future timestamp, a replay: 401 invalid_signature; nothing is done', async () => {
    const unsigned = await t.app.inject({
      method: 'POST',
      url: '/api/slack/interactions',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `payload=${encodeURIComponent(JSON.stringify(click))}`,
    });
    expectErrorBody(
      {
        status: unsigned.statusCode,
        body: JSON.parse(unsigned.body),
        raw: unsigned.body,
        headers: unsigned.headers,
      } as any,
      401,
      'invalid_signature',
    );
    for (const options of [
      { secret: 'not-the-secret' },
      { timestamp: Math.floor(Date.now() / 1000) - 301 },
      { timestamp: Math.floor(Date.now() / 1000) + 301 },
      { signature: 'v0=' + '0'.repeat(64) },
    ]) {
      const res = await interact(click, options);
      expect(res.status, JSON.stringify(options)).toBe(401);
      expect(res.body.code).toBe('invalid_signature');
    }
    // A body altered after signing.
    const signed = slack.signed(click);
    const altered = await t.app.inject({
      method: 'POST',
      url: '/api/slack/interactions',
      headers: signed.headers,
      payload: signed.body.replace('U0ADMIN', 'U0GRACE'),
    });
    expect(altered.statusCode).toBe(401);
    // Accepted once; the very same bytes again are a replay.
    const first = await interact(click);
    expect(first.status, first.raw).toBe(200);
    const again = await t.app.inject({
      method: 'POST',
      url: '/api/slack/interactions',
      headers: first.sent.headers,
      payload: first.sent.body,
    });
    expect(again.statusCode).toBe(401);
    expect(JSON.parse(again.body).message).toContain('received before');
  });

  it('a signed body that is not an interaction is a 400, not a 500', async () => {
    for (const body of ['payload=not-json', 'nothing=here', 'payload=%5B%5D']) {
      const res = await interact(null, { body });
      expect(res.status, body).toBe(400);
      expect(res.body.code).toBe('bad_request');
    }
    const forged = await interact({
      type: 'block_actions',
      user: { id: ADMIN },
      actions: [{ action_id: 'remit_approve', value: '{"organization_uid":"x","task_uid":"y"}' }],
    });
    expect(forged.status).toBe(400);
  });
});

describe('deciding in Slack', () => {
  it('Approve by a Slack user matched by confirmed email decides as that person; the message is updated in place', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const res = await interact(slack.clickPayload(message, 'remit_approve', ADMIN));
    expect(res.status, res.raw).toBe(200);
    const decided = await read(task.uid);
    expect(decided).toMatchObject({
      resolution: 'approved',
      resolved_by: { user_uid: p.orgA.admin.userUid },
    });
    await until(async () => slack.message(message.ts)!.updates > 0, 'the message to be updated');
    const updated = slack.message(message.ts)!;
    expect(buttonsOf(updated)).toEqual(['remit_open']);
    expect(statusOf(updated)).toMatch(/^✅ Approved by .+ at \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    // The audit log says who, as a person (their Slack click is their own act).
    const audit = await ok(
      call(
        t.app,
        'GET',
        `/api/organization/${p.orgA.uid}/audit-events?entity_uid=${task.uid}&action=task.decided`,
        { key: key() },
      ),
    );
    expect(audit.items[0]).toMatchObject({ actor_type: 'user', actor_uid: p.orgA.admin.userUid });
  });

  it('Reject opens a modal; a blank reason is refused in it; the reason given decides; the message says so', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const views = slack.views.length;
    const opened = await interact(slack.clickPayload(message, 'remit_reject', GRACE, 'trigger-1'));
    expect(opened.status).toBe(200);
    expect(slack.views.length).toBe(views + 1);
    const { trigger_id, view } = slack.views.at(-1)!;
    expect(trigger_id).toBe('trigger-1');
    expect(view).toMatchObject({ type: 'modal', callback_id: 'remit_reject_modal' });
    expect((await read(task.uid)).resolution).toBeNull();

    const blank = await interact(slack.submitPayload(view, GRACE, '   '));
    expect(blank.body).toEqual({
      response_action: 'errors',
      errors: { reason: 'A rejection needs a reason.' },
    });
    const submitted = await interact(slack.submitPayload(view, GRACE, 'ACME was paid by wire yesterday'));
    expect(submitted.status).toBe(200);
    expect(submitted.body).toEqual({});
    expect(await read(task.uid)).toMatchObject({
      resolution: 'rejected',
      resolved_by: { user_uid: grace.userUid },
      resolution_note: 'ACME was paid by wire yesterday',
    });
    await until(async () => slack.message(message.ts)!.updates > 0, 'the message to be updated');
    expect(statusOf(slack.message(message.ts)!)).toMatch(
      /^❌ Rejected by Grace Hopper at .+: ACME was paid by wire yesterday$/,
    );
  });

  it('who cannot decide is told, alone: an unconfirmed email, no such member, another organization, not an approver', async () => {
    const payer = await agent();
    await ok(
      call(t.app, 'POST', '/api/approval-policies', {
        key: key(),
        body: { name: `Admins only ${tag()}`, agent_uid: payer.uid, approver_roles: ['admin'] },
      }),
      201,
    );
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const told = async (user: string) => {
      const before = slack.ephemerals.length;
      const res = await interact(slack.clickPayload(message, 'remit_approve', user));
      expect(res.status).toBe(200);
      await until(async () => slack.ephemerals.length > before, 'the ephemeral answer');
      const said = slack.ephemerals.at(-1)!;
      expect(said).toMatchObject({ channel: CHANNEL, user });
      return said.text;
    };
    expect(await told(UNCONFIRMED)).toContain('is not confirmed');
    expect(await told(STRANGER)).toContain('No member of this Remit organization');
    expect(await told(GRACE)).toContain('Under the policy');
    // Org B's admin, whose Slack email is confirmed, clicking org A's approval: not a member there.
    slack.user('U0ORGB', 'Bea B', p.orgB.admin.email);
    expect(await told('U0ORGB')).toContain('No member of this Remit organization');
    expect((await read(task.uid)).resolution).toBeNull();
    expect(slack.message(message.ts)!.updates).toBe(0);
  });

  it('a click in Slack and one in the console at the same moment: one wins, the other is told who won', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const before = slack.ephemerals.length;
    const [inSlack, inConsole] = await Promise.all([
      interact(slack.clickPayload(message, 'remit_approve', GRACE)),
      call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, {
        key: key(),
        body: { action: 'reject', resolution_note: 'Not this month' },
      }),
    ]);
    expect(inSlack.status).toBe(200);
    const decided = await read(task.uid);
    if (decided.resolution === 'approved') {
      expect(decided.resolved_by.user_uid).toBe(grace.userUid);
      expect(inConsole.status).toBe(409);
      expect(inConsole.body).toMatchObject({ code: 'already_resolved' });
      expect(inConsole.body.message).toContain('already approved by Grace Hopper at');
    } else {
      expect(decided).toMatchObject({
        resolution: 'rejected',
        resolved_by: { user_uid: p.orgA.admin.userUid },
      });
      expect(inConsole.status).toBe(200);
      await until(async () => slack.ephemerals.length > before, 'the loser told');
      expect(slack.ephemerals.at(-1)!.text).toMatch(/already rejected by .+ at /);
    }
    await until(async () => slack.message(message.ts)!.updates > 0, 'the message to be updated');
  });

  it('decided in the console, or expired: the Slack message is updated too, without buttons', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const asPosted = structuredClone(message);
    await ok(
      call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, { key: key(), body: { action: 'approve' } }),
    );
    await until(async () => slack.message(message.ts)!.updates > 0, 'the message to be updated');
    expect(buttonsOf(slack.message(message.ts)!)).toEqual(['remit_open']);
    // A click on the old message now: told who decided.
    const before = slack.ephemerals.length;
    await interact(slack.clickPayload(asPosted, 'remit_approve', GRACE));
    await until(async () => slack.ephemerals.length > before, 'the ephemeral answer');
    expect(slack.ephemerals.at(-1)!.text).toContain('already approved by');

    const expiring = await agent();
    await ok(
      call(t.app, 'POST', '/api/approval-policies', {
        key: key(),
        body: {
          name: `Expiring ${tag()}`,
          agent_uid: expiring.uid,
          approver_roles: ['admin'],
          expires_after_minutes: 30,
        },
      }),
      201,
    );
    const later = await raise(expiring.uid);
    const laterMessage = await messageAbout(later.uid);
    expect(statusOf(laterMessage)).toContain('expires');
    await expireDueApprovals(t.db, t.deps.jobs, new Date(Date.parse(later.created_at) + 31 * 60_000));
    await until(async () => slack.message(laterMessage.ts)!.updates > 0, 'the message to be updated');
    expect(statusOf(slack.message(laterMessage.ts)!)).toContain('⌛ Expired');
    expect(buttonsOf(slack.message(laterMessage.ts)!)).toEqual(['remit_open']);
  });

  it('a click approves only what its message showed: after a revision the old buttons decide nothing; the messages show the new arguments', async () => {
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const args = () =>
      (slack.message(message.ts)!.blocks as any[]).find((b) => b.block_id === 'remit_args')?.text.text;
    expect(args()).toContain('payee: ACME Corp');
    expect(args()).toContain('amount_cents: 750000');
    const asPosted = structuredClone(message);
    // The agent revises its request (an outside runtime answering feedback): asked again.
    await ok(
      call(t.app, 'PATCH', `/api/agents/${payer.uid}/approvals/${task.uid}`, {
        key: key(),
        body: { tool_args: { amount_cents: 900_000 }, summary: 'Pay the late fee too' },
      }),
    );
    await until(async () => slack.message(message.ts)!.updates > 0, 'the first message to be updated');
    expect(args()).toContain('amount_cents: 900000');
    const before = slack.ephemerals.length;
    await interact(slack.clickPayload(asPosted, 'remit_approve', ADMIN));
    await until(async () => slack.ephemerals.length > before, 'the ephemeral answer');
    // Who changed what, and when, in UTC as people read it.
    expect(slack.ephemerals.at(-1)!.text).toMatch(
      new RegExp(
        `^This approval changed after you saw it: the agent ${payer.name} revised amount_cents at ` +
          '\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC\\. Nothing was decided',
      ),
    );
    expect((await read(task.uid)).resolution).toBeNull();
    // A message posted before buttons carried the revision is held to its digest.
    const legacy = structuredClone(asPosted);
    for (const element of (legacy.blocks as any[]).find((b) => b.type === 'actions').elements) {
      if (!element.value) continue;
      const { args_revision: _revision, ...value } = JSON.parse(element.value);
      element.value = JSON.stringify(value);
    }
    const beforeLegacy = slack.ephemerals.length;
    await interact(slack.clickPayload(legacy, 'remit_approve', ADMIN));
    await until(async () => slack.ephemerals.length > beforeLegacy, 'the ephemeral answer');
    expect(slack.ephemerals.at(-1)!.text).toContain('changed after that message was posted');
    expect(slack.ephemerals.at(-1)!.text).not.toContain('the agent revised');
    expect((await read(task.uid)).resolution).toBeNull();
    // The message as it is now approves the revision.
    await interact(slack.clickPayload(slack.message(message.ts)!, 'remit_approve', ADMIN));
    expect(await read(task.uid)).toMatchObject({
      resolution: 'approved',
      tool_args: { amount_cents: 900_000 },
    });
  });

  it('Slack, an email link and the API at the same moment: exactly one decides; the others are told who won', async () => {
    const opt = await call(t.app, 'PATCH', '/api/me/preferences', {
      key: grace.key,
      body: { approval_emails: true },
    });
    expect(opt.status, opt.raw).toBe(200);
    const payer = await agent();
    const task = await raise(payer.uid);
    const message = await messageAbout(task.uid);
    const email = await until(
      async () =>
        outboxMessages(t, grace.email).find((m) => m.includes(`Subject: Approval needed: ${task.title}`)),
      'the approval email',
    );
    const token = /\/approval\?token=([\w.-]+)/.exec(email)![1]!;
    const before = slack.ephemerals.length;
    const [inSlack, byLink, byApi] = await Promise.all([
      interact(slack.clickPayload(message, 'remit_approve', ADMIN)),
      call(t.app, 'POST', '/api/approval-links/decide', { body: { token, action: 'approve' } }),
      call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, {
        key: p.orgA.member.key,
        body: { action: 'reject', resolution_note: 'Hold it' },
      }),
    ]);
    expect(inSlack.status).toBe(200);
    const decided = await read(task.uid);
    const winner = decided.resolved_by.user_uid;
    expect([p.orgA.admin.userUid, grace.userUid, p.orgA.member.userUid]).toContain(winner);
    // Each loser was told the decision stood, naming the winner.
    if (winner !== grace.userUid) {
      expect(byLink.status).toBe(409);
      expect(byLink.body.code).toBe('already_resolved');
    } else expect(byLink.status, byLink.raw).toBe(200);
    if (winner !== p.orgA.member.userUid) {
      expect(byApi.status).toBe(409);
      expect(byApi.body.message).toMatch(/already (approved|rejected) by .+ at /);
    } else expect(byApi.status, byApi.raw).toBe(200);
    if (winner !== p.orgA.admin.userUid) {
      await until(async () => slack.ephemerals.length > before, 'the Slack loser told');
      expect(slack.ephemerals.at(-1)!.text).toMatch(/already (approved|rejected) by .+ at /);
    }
    const audit = await ok(
      call(
        t.app,
        'GET',
        `/api/organization/${p.orgA.uid}/audit-events?entity_uid=${task.uid}&action=task.decided`,
        {
          key: key(),
        },
      ),
    );
    expect(audit.items).toHaveLength(1);
  });
});
