import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { registerExecutor } from '../../src/modules/agents/agent-runs.service.ts';
import { agentNotifications, agentRuns, agents } from '../../src/modules/agents/agents.tables.ts';
import { sendDigests } from '../../src/modules/agents/notifications.service.ts';
import { initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { createChatClient } from '../../src/platform/chat/chat.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { AGENT_DIGEST_QUEUE } from '../../src/modules/agents/agents.jobs.ts';
import { CHAT_DELIVERY_QUEUE } from '../../src/modules/agents/notification-delivery.ts';
import {
  createAgent,
  createCollectionsAgent,
  ISO,
  MISSING,
  post,
  receivables,
  runAgent,
  tag,
  until,
  UUID,
} from '../helpers/agent-fixtures.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * Chat notifications (interface §6, CONTRACT §6): an event is recorded and posted only when switched
 * on; with SLACK_BOT_TOKEN it goes through `chat.postMessage` of a local fake Slack; a Slack failure is
 * recorded on the notification and never fails the run; without Slack they are only recorded; the
 * daily digest; and the list at GET /api/agents/{uid}/notifications.
 */

let t: TestApp;
let p: Principals;
let slack: FakeSlack;
let foreignAgent: string;
const CHANNEL = 'C0COLLECT';
const LEFT = 'C0LEFT';

registerExecutor('note_ok', (_env, step) =>
  Promise.resolve({ summary: `balanced the books of ${step.agent.name}` }),
);
registerExecutor('note_fail', () => Promise.reject(new Error('the books would not balance')));

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel(CHANNEL, true);
  slack.channel(LEFT, true);
  t = await createTestApp({
    workers: true,
    // The default Slack timeout (5 s) for every post that must succeed; the hang test shortens it.
    env: { RATE_LIMIT_MAX: '100000', ...slack.env() },
  });
  p = await createPrincipals(t);
  foreignAgent = (await createAgent(t, p.orgB.admin.key, { name: 'Foreign' })).uid;
});
afterAll(async () => {
  await t?.close();
  await slack?.close();
});

/** An organization of its own, so one test's overdue invoices are not another's. */
async function freshOrg() {
  const init = await initOrganization(t.db, t.config.apiKeyPepper, {
    organizationName: `Notify ${tag()}`,
    email: `owner-${tag()}@notify.test`,
  });
  return { uid: init.organization_uid, key: init.api_key };
}

/**
 * The agent's notifications once none is still being delivered (the outcome is posted just after the
 * run is marked completed, so a caller may see the run end a moment before the delivery does).
 */
async function listNotes(agentUid: string, key: string, query = '') {
  return until(async () => {
    const res = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications${query}`, { key });
    expect(res.status, res.raw).toBe(200);
    const items = res.body.data.items as Record<string, unknown>[];
    return items.every((n) => n.delivery_status !== 'pending') && items;
  }, 'notifications to be delivered');
}

const postsSince = (before: number) => slack.requestsFor('chat.postMessage').slice(before);
const config = (events: Record<string, boolean> = {}, channel = CHANNEL) => ({
  notification_config: { chat_channel_id: channel, events },
});

describe('switches', () => {
  it('an event switched off is neither recorded nor posted; one switched on is both', async () => {
    const org = await freshOrg();
    const before = slack.requestsFor('chat.postMessage').length;
    const quiet = await createAgent(t, org.key, {
      status: 'active',
      agent_type: 'note_ok',
      ...config({ outcome: false }),
    });
    expect((await runAgent(t, org.key, quiet.uid)).attributes.status).toBe('completed');
    const quietFail = await createAgent(t, org.key, {
      status: 'active',
      agent_type: 'note_fail',
      ...config({ error: false }),
    });
    expect((await runAgent(t, org.key, quietFail.uid)).attributes.status).toBe('failed');

    const loud = await createAgent(t, org.key, { status: 'active', agent_type: 'note_ok', ...config() });
    await runAgent(t, org.key, loud.uid);
    // The run shows `completed` before its job records and posts the note: wait for the note.
    const notes = await until(async () => {
      const found = await listNotes(loud.uid, org.key);
      return found.length > 0 && found;
    }, 'the loud run’s note');
    expect(notes.map((n) => [n.event, n.delivery_status])).toEqual([['outcome', 'sent']]);
    // The quiet runs ended before the loud one was started: nothing of theirs was recorded or posted.
    expect(await listNotes(quiet.uid, org.key)).toEqual([]);
    expect(await listNotes(quietFail.uid, org.key)).toEqual([]);
    expect(postsSince(before).map((r) => r.params.text)).toEqual([notes[0]!.text]);
  });

  it('approval_required switched off: the approval is raised, nothing is recorded or posted', async () => {
    const org = await freshOrg();
    const r = await receivables(t, org.key);
    await r.invoice((await r.client()).uid);
    const agent = await createCollectionsAgent(
      t,
      org.key,
      config({ approval_required: false, outcome: false }),
    );
    const before = slack.requestsFor('chat.postMessage').length;
    const run = await runAgent(t, org.key, agent.uid);
    expect(run.attributes.outcome.approvals).toHaveLength(1);
    expect(await listNotes(agent.uid, org.key)).toEqual([]);
    expect(postsSince(before)).toEqual([]);
  });
});

describe('delivery through the Slack Web API', () => {
  it('chat.postMessage with the bot token: readable messages naming the agent, the invoice and the task', async () => {
    const org = await freshOrg();
    const r = await receivables(t, org.key);
    const client = await r.client('Acme Widgets');
    const invoice = await r.invoice(client.uid, { number: `INV-${tag()}`, dueInDays: -15 });
    await post(t, org.key, '/api/email/accounts', { email: 'ar@notify.test', display_name: 'AR' });
    const agent = await createCollectionsAgent(t, org.key, { name: 'Cash Collector', ...config() });
    const before = slack.requestsFor('chat.postMessage').length;

    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid as string;
    const task = (await call(t.app, 'GET', `/api/work-tasks/${taskUid}`, { key: org.key })).body.data;
    const approval = await until(
      async () => (await listNotes(agent.uid, org.key, '?event=approval_required'))[0],
      'the approval_required notification',
    );
    expect(approval).toEqual({
      uid: expect.stringMatching(UUID),
      agent_uid: agent.uid,
      event: 'approval_required',
      channel_id: CHANNEL,
      text: expect.any(String),
      delivery_status: 'sent',
      delivery_error: null,
      delivery_attempts: 1,
      next_attempt_at: null,
      run_uid: run.id,
      task_uid: taskUid,
      invoice_uid: invoice.uid,
      created_at: expect.stringMatching(ISO),
      delivered_at: expect.stringMatching(ISO),
    });
    for (const part of ['Cash Collector', invoice.invoice_number, task.title, 'Acme Widgets', '15 day'])
      expect(approval.text).toContain(part);
    // The link in the text is the console's page of the approval, not an API address.
    expect(approval.text).toContain(`/app/inbox/${taskUid}`);
    expect(approval.text).not.toContain('/api/');

    // Approved: the follow-up run sends it, says so (action_taken) and reports (outcome).
    const approved = await call(t.app, 'PATCH', `/api/work-tasks/${taskUid}`, {
      key: org.key,
      body: { action: 'approve' },
    });
    expect(approved.status, approved.raw).toBe(200);
    const followUp = await until(async () => {
      const [row] = await t.db.select().from(agentRuns).where(eq(agentRuns.taskUid, taskUid));
      return row && ['completed', 'failed'].includes(row.status) ? row : undefined;
    }, 'the follow-up run');
    expect(followUp.status, followUp.error ?? '').toBe('completed');
    const notes = await until(async () => {
      const all = await listNotes(agent.uid, org.key);
      return all.length === 4 ? all : undefined;
    }, 'four notifications');
    expect(notes.map((n) => n.event)).toEqual(['outcome', 'action_taken', 'outcome', 'approval_required']);
    for (const note of notes) expect(note.delivery_status, String(note.delivery_error)).toBe('sent');
    const [outcome, action] = notes;
    for (const text of [action!.text, outcome!.text]) {
      expect(text).toContain('Cash Collector');
      expect(text).toContain(invoice.invoice_number);
      expect(text).toContain(task.title);
    }
    expect(action).toMatchObject({ task_uid: taskUid, invoice_uid: invoice.uid, run_uid: followUp.uid });
    expect(outcome).toMatchObject({ task_uid: taskUid, invoice_uid: invoice.uid, run_uid: followUp.uid });

    // What Slack received: the same texts, in order, to the channel, with the bot token, as JSON.
    const posts = postsSince(before);
    expect(posts.map((q) => q.params.text)).toEqual(notes.map((n) => n.text).reverse());
    for (const q of posts) {
      expect(q).toMatchObject({ httpMethod: 'POST', token: slack.token, contentType: 'application/json' });
      expect(q.params.channel).toBe(CHANNEL);
    }
    expect(
      slack
        .messagesIn(CHANNEL)
        .slice(-4)
        // An approval's message is updated in place once decided: its first line is what was posted.
        .map((m) => m.text.split('\n')[0]),
    ).toEqual(posts.map((q) => q.params.text));
  });

  const failures = [
    // Refusals that waiting cannot cure: the notification fails at once, never retried.
    {
      name: 'a permanent error code',
      behaviour: { kind: 'fail', error: 'msg_too_long' },
      says: 'msg_too_long',
      transient: false,
    },
    // "Not now": recorded on the notification, which stays pending with its next attempt scheduled.
    {
      name: 'ratelimited',
      behaviour: { kind: 'fail', error: 'ratelimited' },
      says: 'ratelimited',
      transient: true,
    },
    { name: 'HTTP 500', behaviour: { kind: 'http', status: 500 }, says: 'HTTP 500', transient: true },
    {
      name: 'no answer within SLACK_TIMEOUT_MS',
      behaviour: { kind: 'hang' },
      says: 'timed out',
      transient: true,
      // The chat clients (the routes' and the workers') read their timeout from this configuration at
      // each call: shortened for this case only, so four hanging posts end in about a second.
      timeoutMs: 300,
    },
  ] as const;
  for (const failure of failures) {
    it(`Slack failing (${failure.name}): the run still ends as it would; the post is ${failure.transient ? 'retried later' : 'failed'}`, async () => {
      const org = await freshOrg();
      const ok = await createAgent(t, org.key, { status: 'active', agent_type: 'note_ok', ...config() });
      const bad = await createAgent(t, org.key, { status: 'active', agent_type: 'note_fail', ...config() });
      const r = await receivables(t, org.key);
      await r.invoice((await r.client()).uid);
      const collector = await createCollectionsAgent(t, org.key, config());
      slack.behaviour = failure.behaviour;
      const chat = t.config.chat as { timeoutMs: number };
      const timeoutMs = chat.timeoutMs;
      if ('timeoutMs' in failure) chat.timeoutMs = failure.timeoutMs;
      let notes: Record<string, unknown>[];
      try {
        expect((await runAgent(t, org.key, ok.uid)).attributes.status).toBe('completed');
        expect((await runAgent(t, org.key, bad.uid)).attributes.status).toBe('failed');
        const collected = await runAgent(t, org.key, collector.uid);
        expect(collected.attributes.status).toBe('completed');
        expect(collected.attributes.outcome.approvals[0].task_uid).toMatch(UUID);
        // Once each post was tried: failed for good, or pending with the error and its next attempt.
        const tried = (agentUid: string) =>
          until(async () => {
            const res = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications`, { key: org.key });
            const items = res.body.data.items as Record<string, unknown>[];
            return items.every((n) => n.delivery_error !== null) && items;
          }, 'every post to be tried');
        notes = [...(await tried(ok.uid)), ...(await tried(bad.uid)), ...(await tried(collector.uid))];
      } finally {
        slack.reset();
        chat.timeoutMs = timeoutMs;
      }
      expect(notes.map((n) => n.event)).toEqual(['outcome', 'error', 'outcome', 'approval_required']);
      for (const note of notes) {
        expect(note.delivery_error).toContain(failure.says);
        expect(note.delivered_at).toBeNull();
        expect(note.delivery_attempts).toBe(1);
        if (failure.transient) {
          expect(note.delivery_status).toBe('pending');
          // Backoff: the first retry 8–10 s after the attempt (10 s less up to a fifth at random).
          const wait = Date.parse(String(note.next_attempt_at)) - Date.now();
          expect(wait).toBeGreaterThan(0);
          expect(wait).toBeLessThanOrEqual(10_000);
        } else {
          expect(note.delivery_status).toBe('failed');
          expect(note.next_attempt_at).toBeNull();
        }
      }
      if (failure.transient) {
        // The backoff was checked above; its wait is not this test's: the retries are made due now.
        const uids = notes.map((n) => String(n.uid));
        await t.db
          .update(agentNotifications)
          .set({ nextAttemptAt: new Date() })
          .where(inArray(agentNotifications.uid, uids));
        await rawQuery(
          t.db,
          `update pgboss.job set start_after = now() where name = $1 and state = 'created'`,
          [CHAT_DELIVERY_QUEUE],
        );
        // Slack is back: each retry (its job, due at next_attempt_at) posts it, once.
        const posted = (agentUid: string) =>
          until(
            async () => {
              const res = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications`, { key: org.key });
              const items = res.body.data.items as Record<string, unknown>[];
              return items.every((n) => n.delivery_status === 'sent') && items;
            },
            'the retries to post',
            30_000,
          );
        const sent = [
          ...(await posted(ok.uid)),
          ...(await posted(bad.uid)),
          ...(await posted(collector.uid)),
        ];
        for (const note of sent) {
          expect(note).toMatchObject({ delivery_error: null, delivery_attempts: 2, next_attempt_at: null });
        }
      }
    });
  }

  it('a channel the bot has left: delivery failed with not_in_channel; the next succeeds once it is back', async () => {
    const org = await freshOrg();
    const agent = await createAgent(t, org.key, {
      status: 'active',
      agent_type: 'note_ok',
      ...config({}, LEFT),
    });
    slack.channel(LEFT, false);
    await runAgent(t, org.key, agent.uid);
    // The outcome notice is recorded just after the run ends: wait for it to be there and settled.
    await until(async () => (await listNotes(agent.uid, org.key)).length === 1, 'the first notice to settle');
    slack.channel(LEFT, true);
    await runAgent(t, org.key, agent.uid);
    const notes = await until(async () => {
      const found = await listNotes(agent.uid, org.key);
      return found.length === 2 && found;
    }, 'the second notice to settle');
    expect(notes.map((n) => n.delivery_status)).toEqual(['sent', 'failed']);
    expect(notes[1]!.delivery_error).toContain('not_in_channel');
  });

  it('an agent without notification settings: recorded with the default switches, never posted', async () => {
    const org = await freshOrg();
    const agent = await createAgent(t, org.key, { status: 'active', agent_type: 'note_fail' });
    const before = slack.requestsFor('chat.postMessage').length;
    await runAgent(t, org.key, agent.uid);
    // The run shows `failed` before its job records the note: wait for the note.
    const notes = await until(async () => {
      const found = await listNotes(agent.uid, org.key);
      return found.length > 0 && found;
    }, 'the failed run’s note');
    expect(notes).toMatchObject([{ event: 'error', channel_id: null, delivery_status: 'recorded' }]);
    expect(postsSince(before)).toEqual([]);
  });

  it("the organization's default channel: agents without settings post there; an agent's own channel wins", async () => {
    const org = await freshOrg();
    const settings = `/api/organization/${org.uid}/settings`;
    const set = await call(t.app, 'PATCH', settings, { key: org.key, body: { slack_channel_id: LEFT } });
    expect(set.status, set.raw).toBe(200);
    const plain = await createAgent(t, org.key, { status: 'active', agent_type: 'note_fail' });
    const own = await createAgent(t, org.key, { status: 'active', agent_type: 'note_ok', ...config() });
    const before = slack.requestsFor('chat.postMessage').length;

    await runAgent(t, org.key, plain.uid);
    await runAgent(t, org.key, own.uid);
    const plainNotes = await until(async () => {
      const found = await listNotes(plain.uid, org.key);
      return found.length > 0 && found;
    }, 'the plain agent’s note');
    // The default switches (error on) and the organization's channel.
    expect(plainNotes).toMatchObject([{ event: 'error', channel_id: LEFT, delivery_status: 'sent' }]);
    const ownNotes = await until(async () => {
      const found = await listNotes(own.uid, org.key);
      return found.length > 0 && found;
    }, 'the own-channel agent’s note');
    expect(ownNotes).toMatchObject([{ event: 'outcome', channel_id: CHANNEL, delivery_status: 'sent' }]);
    const posts = postsSince(before);
    expect(posts.map((q) => [q.params.channel, q.params.text])).toEqual(
      expect.arrayContaining([
        [LEFT, plainNotes[0]!.text],
        [CHANNEL, ownNotes[0]!.text],
      ]),
    );
    expect(posts).toHaveLength(2);

    // Cleared: the agent without settings records again, posting nothing.
    await call(t.app, 'PATCH', settings, { key: org.key, body: { slack_channel_id: null } });
    const beforeClear = slack.requestsFor('chat.postMessage').length;
    await runAgent(t, org.key, plain.uid);
    const after = await until(async () => {
      const found = await listNotes(plain.uid, org.key);
      return found.length > 1 && found;
    }, 'the second note');
    expect(after[0]).toMatchObject({ event: 'error', channel_id: null, delivery_status: 'recorded' });
    expect(postsSince(beforeClear)).toEqual([]);
  });

  it('a sandbox run records what it would have said, marked [sandbox], and posts nothing', async () => {
    const org = await freshOrg();
    const r = await receivables(t, org.key);
    await r.invoice((await r.client()).uid);
    const agent = await createCollectionsAgent(t, org.key, config());
    const before = slack.requestsFor('chat.postMessage').length;
    const run = await runAgent(t, org.key, agent.uid, { sandbox: true });
    expect(run.attributes.status).toBe('completed');
    // The outcome is recorded just after the run is marked completed.
    const notes = await until(async () => {
      const listed = await listNotes(agent.uid, org.key);
      return listed.length > 0 && listed;
    }, 'the outcome');
    expect(notes).toMatchObject([{ event: 'outcome', delivery_status: 'recorded', run_uid: run.id }]);
    expect(notes[0]!.text).toMatch(/^\[sandbox\] /);
    expect(postsSince(before)).toEqual([]);
  });
});

describe('without SLACK_BOT_TOKEN', () => {
  let plain: TestApp;
  beforeAll(async () => {
    plain = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  });
  afterAll(async () => {
    await plain?.close();
  });

  it('notifications are recorded and listed, nothing is posted; the channel is stored unchecked', async () => {
    const init = await initOrganization(plain.db, plain.config.apiKeyPepper, {
      organizationName: 'Plain',
      email: `plain-${tag()}@plain.test`,
    });
    const key = init.api_key;
    const agent = await createAgent(plain, key, {
      status: 'active',
      agent_type: 'note_ok',
      notification_config: { chat_channel_id: 'C0NOWHERE' },
    });
    expect(agent.notification_config.chat_channel_id).toBe('C0NOWHERE');
    await runAgent(plain, key, agent.uid);
    const res = await call(plain.app, 'GET', `/api/agents/${agent.uid}/notifications`, { key });
    expect(res.body.data.items).toMatchObject([
      { event: 'outcome', channel_id: 'C0NOWHERE', delivery_status: 'recorded', delivered_at: null },
    ]);
    expect(res.body.data.items[0].text).toContain(agent.name);
    expect(slack.requests.filter((q) => JSON.stringify(q.params).includes('C0NOWHERE'))).toEqual([]);
  });

  it("an agent without settings names the organization's channel, unchecked, and is only recorded", async () => {
    const init = await initOrganization(plain.db, plain.config.apiKeyPepper, {
      organizationName: 'Plain default',
      email: `plain-${tag()}@plain.test`,
    });
    const key = init.api_key;
    const set = await call(plain.app, 'PATCH', `/api/organization/${init.organization_uid}/settings`, {
      key,
      body: { slack_channel_id: 'C0NOWHERE' },
    });
    expect(set.body.data).toMatchObject({ slack_channel_id: 'C0NOWHERE', slack_configured: false });
    const agent = await createAgent(plain, key, { status: 'active', agent_type: 'note_ok' });
    await runAgent(plain, key, agent.uid);
    const notes = await until(async () => {
      const res = await call(plain.app, 'GET', `/api/agents/${agent.uid}/notifications`, { key });
      return res.body.data.items.length > 0 && res.body.data.items;
    }, 'the note');
    expect(notes).toMatchObject([{ event: 'outcome', channel_id: 'C0NOWHERE', delivery_status: 'recorded' }]);
    expect(slack.requests.filter((q) => JSON.stringify(q.params).includes('C0NOWHERE'))).toEqual([]);
  });
});

describe('the daily digest', () => {
  it('one summary per agent with digest on, none twice within 20 hours; scheduled at 08:00 UTC', async () => {
    const org = await freshOrg();
    const daily = await createAgent(t, org.key, {
      name: `Daily ${tag()}`,
      status: 'active',
      agent_type: 'note_ok',
      ...config({ digest: true }),
    });
    const alsoDaily = await createAgent(t, org.key, {
      name: `Also daily ${tag()}`,
      status: 'active',
      agent_type: 'note_fail',
      ...config({ digest: true, outcome: false, error: false }),
    });
    const never = await createAgent(t, org.key, { status: 'active', agent_type: 'note_ok', ...config() });
    await runAgent(t, org.key, daily.uid);
    await runAgent(t, org.key, daily.uid);
    await runAgent(t, org.key, alsoDaily.uid);
    const chat = createChatClient(t.config.chat);
    const before = slack.requestsFor('chat.postMessage').length;
    // The runs' own outcome notices are posted by their jobs meanwhile: only digests count here.
    const digestsSince = (n: number) =>
      postsSince(n).filter((q) => String(q.params.text).startsWith('Daily digest'));

    expect(await sendDigests({ db: t.db, chat, jobs: t.deps.jobs })).toBe(2);
    // Posted by their jobs, after the digest's transaction.
    await until(async () => digestsSince(before).length >= 2, 'the digests to be posted');
    const digests = digestsSince(before).map((q) => String(q.params.text));
    expect(digests).toHaveLength(2);
    const ofDaily = digests.find((text) => text.includes(daily.name))!;
    expect(ofDaily).toContain('2 run(s) started, 2 completed, 0 failed');
    const ofAlso = digests.find((text) => text.includes(alsoDaily.name))!;
    expect(ofAlso).toContain('1 run(s) started, 0 completed, 1 failed');
    const listed = await listNotes(daily.uid, org.key, '?event=digest');
    expect(listed).toMatchObject([{ event: 'digest', delivery_status: 'sent', text: ofDaily }]);
    expect(await listNotes(never.uid, org.key, '?event=digest')).toEqual([]);

    /** Makes this organization's digests look `hours` older. */
    const age = (hours: number) =>
      t.db
        .update(agentNotifications)
        .set({ createdAt: sql`${agentNotifications.createdAt} - make_interval(hours => ${hours})` })
        .where(and(eq(agentNotifications.organizationUid, org.uid), eq(agentNotifications.event, 'digest')));

    // Again within 20 hours (a repeated job, two at once): nothing more.
    expect(await sendDigests({ db: t.db, chat, jobs: t.deps.jobs })).toBe(0);
    await age(19);
    expect(
      await Promise.all([
        sendDigests({ db: t.db, chat, jobs: t.deps.jobs }),
        sendDigests({ db: t.db, chat, jobs: t.deps.jobs }),
      ]),
    ).toEqual([0, 0]);
    expect(digestsSince(before)).toHaveLength(2);
    // The next day: one more each, even when two jobs overlap.
    await age(2);
    const overlapping = await Promise.all([
      sendDigests({ db: t.db, chat, jobs: t.deps.jobs }),
      sendDigests({ db: t.db, chat, jobs: t.deps.jobs }),
    ]);
    expect(overlapping[0]! + overlapping[1]!).toBe(2);
    await until(async () => digestsSince(before).length >= 4, 'the next day’s digests');
    expect(digestsSince(before)).toHaveLength(4);
    expect(await listNotes(daily.uid, org.key, '?event=digest')).toHaveLength(2);

    // Switched off again: no digest.
    const off = await call(t.app, 'PATCH', `/api/agents/${alsoDaily.uid}`, {
      key: org.key,
      body: config({ digest: false }),
    });
    expect(off.status, off.raw).toBe(200);
    await age(21);
    expect(await sendDigests({ db: t.db, chat, jobs: t.deps.jobs })).toBe(1);

    const [schedule] = await rawQuery<{ cron: string; timezone: string }>(
      t.db,
      'select cron, timezone from pgboss.schedule where name = $1',
      [AGENT_DIGEST_QUEUE],
    );
    expect(schedule).toEqual({ cron: '0 8 * * *', timezone: 'UTC' });
  });
});

describe('GET /api/agents/{uid}/notifications', () => {
  let agentUid: string;
  let key: string;
  beforeAll(async () => {
    const org = await freshOrg();
    key = org.key;
    const agent = await createAgent(t, key, { status: 'active', agent_type: 'note_ok', ...config() });
    agentUid = agent.uid;
    for (let i = 0; i < 3; i++) await runAgent(t, key, agentUid);
    // The same agent, now run by the failing executor: error notifications.
    await t.db.update(agents).set({ agentType: 'note_fail' }).where(eq(agents.uid, agentUid));
    for (let i = 0; i < 2; i++) await runAgent(t, key, agentUid);
  });

  it('newest first, 25 a page by default; page and per_page; event filters', async () => {
    const res = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 5 });
    expect(res.body.data.items.map((n: { event: string }) => n.event)).toEqual([
      'error',
      'error',
      'outcome',
      'outcome',
      'outcome',
    ]);
    const times = res.body.data.items.map((n: { created_at: string }) => Date.parse(n.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const page2 = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications?per_page=2&page=2`, {
      key,
    });
    expect(page2.body.data._meta).toEqual({ page: 2, per_page: 2, total_pages: 3, total_items: 5 });
    expect(page2.body.data.items.map((n: { uid: string }) => n.uid)).toEqual(
      res.body.data.items.slice(2, 4).map((n: { uid: string }) => n.uid),
    );
    const errors = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications?event=error`, { key });
    expect(errors.body.data._meta.total_items).toBe(2);
    expect(errors.body.data.items.every((n: { event: string }) => n.event === 'error')).toBe(true);
    const none = await call(t.app, 'GET', `/api/agents/${agentUid}/notifications?event=digest`, { key });
    expect(none.body.data).toMatchObject({ items: [], _meta: { total_items: 0 } });
  });

  it('400 for an unknown event or bad paging; 404 for an unknown agent or one of another organization', async () => {
    for (const query of ['event=everything', 'per_page=0', 'per_page=101', 'page=0'])
      expectErrorBody(
        await call(t.app, 'GET', `/api/agents/${agentUid}/notifications?${query}`, { key }),
        400,
      );
    expectErrorBody(await call(t.app, 'GET', `/api/agents/${MISSING}/notifications`, { key }), 404);
    expectErrorBody(
      await call(t.app, 'GET', `/api/agents/${foreignAgent}/notifications`, { key: p.orgA.admin.key }),
      404,
    );
  });
});

describe('GET /api/agents/{uid}/notifications?run_uid=', () => {
  it("only what that run reported, with the other filters; another agent's or organization's run matches nothing", async () => {
    const org = await freshOrg();
    const r = await receivables(t, org.key);
    const client = await r.client();
    await r.invoice(client.uid, { dueInDays: -20 });
    await r.invoice(client.uid, { dueInDays: -9 });
    const agent = await createCollectionsAgent(t, org.key, config());
    // Two approvals and the outcome; then a sandbox run that leaves both invoices alone: its outcome.
    const real = await runAgent(t, org.key, agent.uid);
    expect(real.attributes.outcome.approvals).toHaveLength(2);
    const sandbox = await runAgent(t, org.key, agent.uid, { sandbox: true });
    await until(async () => (await listNotes(agent.uid, org.key)).length === 4, 'every note recorded');

    const ofReal = await listNotes(agent.uid, org.key, `?run_uid=${real.id}`);
    expect(ofReal.map((n) => n.event).sort()).toEqual(['approval_required', 'approval_required', 'outcome']);
    expect(ofReal.every((n) => n.run_uid === real.id)).toBe(true);
    const ofSandbox = await listNotes(agent.uid, org.key, `?run_uid=${sandbox.id}`);
    expect(ofSandbox).toMatchObject([{ event: 'outcome', run_uid: sandbox.id }]);
    const approvals = await call(
      t.app,
      'GET',
      `/api/agents/${agent.uid}/notifications?run_uid=${real.id}&event=approval_required&per_page=1`,
      { key: org.key },
    );
    expect(approvals.status, approvals.raw).toBe(200);
    expect(approvals.body.data._meta).toEqual({ page: 1, per_page: 1, total_pages: 2, total_items: 2 });

    // A run of another agent of the same organization, of another organization, or none at all: an
    // empty list, never its notifications and never a sign that it exists.
    const other = await createAgent(t, org.key, { status: 'active', agent_type: 'note_ok' });
    const otherRun = await runAgent(t, org.key, other.uid);
    await until(async () => (await listNotes(other.uid, org.key)).length === 1, 'the other note');
    const foreignRun = await post(
      t,
      p.orgB.admin.key,
      `/api/agents/${foreignAgent}/runs`,
      { sandbox: true },
      202,
    );
    for (const runUid of [otherRun.id, foreignRun.id, MISSING]) {
      const res = await call(t.app, 'GET', `/api/agents/${agent.uid}/notifications?run_uid=${runUid}`, {
        key: org.key,
      });
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data).toMatchObject({ items: [], _meta: { total_items: 0 } });
    }
    // orgA's admin naming orgB's agent with orgB's run: 404, as without the filter.
    expectErrorBody(
      await call(t.app, 'GET', `/api/agents/${foreignAgent}/notifications?run_uid=${foreignRun.id}`, {
        key: p.orgA.admin.key,
      }),
      404,
    );
    // Members read notifications as admins do; a malformed uid is 400.
    const orgAAgent = await createAgent(t, p.orgA.admin.key, { status: 'active', agent_type: 'note_ok' });
    const orgARun = await runAgent(t, p.orgA.admin.key, orgAAgent.uid);
    const asMember = await until(async () => {
      const found = await listNotes(orgAAgent.uid, p.orgA.member.key, `?run_uid=${orgARun.id}`);
      return found.length === 1 && found;
    }, 'the member to read the run’s note');
    expect(asMember).toMatchObject([{ event: 'outcome', run_uid: orgARun.id }]);
    const bad = expectErrorBody(
      await call(t.app, 'GET', `/api/agents/${agent.uid}/notifications?run_uid=nope`, { key: org.key }),
      400,
    );
    expect(bad.errors?.[0]?.field ?? bad.message).toContain('run_uid');
  });
});

let routeAgent: string;
beforeAll(async () => {
  routeAgent = (await createAgent(t, p.orgA.admin.key, { name: 'Routes' })).uid;
});
commonRouteChecks(
  'GET /api/agents/{uid}/notifications',
  {
    method: 'GET',
    url: () => `/api/agents/${routeAgent}/notifications`,
    scope: 'agents:read',
    foreignUrl: () => `/api/agents/${foreignAgent}/notifications`,
  },
  () => ({ t, p }),
);

describe('user text in Slack messages', () => {
  it('is escaped (&, <, >): a <!channel> in a name pings nobody, a <url|label> is no link', async () => {
    const org = await freshOrg();
    const agent = await createAgent(t, org.key, { status: 'active', agent_type: 'note_ok', ...config() });
    const before = slack.requestsFor('chat.postMessage').length;
    const res = await call(t.app, 'POST', `/api/agents/${agent.uid}/approvals`, {
      key: org.key,
      body: {
        title: 'Pay <!channel> & <https://evil.test|click here> now',
        reasoning: 'because',
        tool_args: { type: 'send_email' },
        trigger: { type: 'manual' },
      },
    });
    expect(res.status, res.raw).toBe(201);
    // This approval's post (another test's agent may post to the same channel meanwhile).
    const ours = () => postsSince(before).filter((r) => String(r.params.text).includes('evil.test'));
    await until(async () => ours().length > 0, 'the approval_required post');
    const [request] = ours();
    const posted = String(request!.params.text);
    expect(posted).toContain('&lt;!channel&gt;');
    expect(posted).toContain('&lt;https://evil.test|click here&gt;');
    expect(posted).toContain('&amp;');
    expect(posted).not.toMatch(/<!channel>|<https:\/\/evil/);
    // Inside the blocks the text is `plain_text`, which Slack never parses for mentions or links.
    const texts: { type: string; text: string }[] = [];
    JSON.stringify(request!.params.blocks, (key, value: unknown) => {
      if (key === 'text' && value && typeof value === 'object')
        texts.push(value as { type: string; text: string });
      return value;
    });
    expect(texts.length).toBeGreaterThan(0);
    expect(new Set(texts.map((x) => x.type))).toEqual(new Set(['plain_text']));
    expect(texts.map((x) => x.text).join('\n')).toContain(
      'Pay <!channel> & <https://evil.test|click here> now',
    );
    // What the API shows is the text as written: escaping is Slack's format, not the record's.
    const notes = await listNotes(agent.uid, org.key);
    expect(notes.map((n) => n.text).join('\n')).toContain('<!channel>');
  });
});
