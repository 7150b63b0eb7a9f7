import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eq } from 'drizzle-orm';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { createAgent, ISO, MISSING, post, tag, UUID } from '../helpers/agent-fixtures.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * Conversations, messages and inbound email (CONTRACT §4): create, read and list conversations, add
 * messages, and `POST /api/inbound/email`, which threads a message by In-Reply-To, then by subject and
 * sender, else opens a conversation with the writer's party, and starts an `email_received` run for
 * every active agent with that trigger.
 */

let t: TestApp;
let p: Principals;
let admin: string;
let client: { uid: string; email: string };
let foreignConversation: string;
let foreignParty: string;

beforeAll(async () => {
  // No workers: the runs inbound email starts stay pending, to be looked at.
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  admin = p.orgA.admin.key;
  const email = `ap-${tag()}@globex.test`;
  client = {
    uid: (
      await post(t, admin, '/api/parties', {
        name: 'Globex',
        role: 'client',
        billing_contact: { name: 'Gil', email: email.toUpperCase() },
      })
    ).uid,
    email,
  };
  foreignParty = (await post(t, p.orgB.admin.key, '/api/parties', { name: 'Initech', role: 'client' })).uid;
  foreignConversation = (
    await post(t, p.orgB.admin.key, '/api/conversations', { subject: 'Theirs', channel: 'email' })
  ).uid;
});
afterAll(async () => {
  await t?.close();
});

const inbound = (body: Record<string, unknown>, key = admin) =>
  call(t.app, 'POST', '/api/inbound/email', { key, body });
async function receive(body: Record<string, unknown>) {
  const res = await inbound({ to: ['ar@us.test'], body_text: 'Hello', ...body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as {
    conversation_uid: string;
    message_uid: string;
    threaded_by: string;
    run_uids: string[];
  };
}
const getConversation = (uid: string, key = admin) =>
  call(t.app, 'GET', `/api/conversations/${uid}`, { key });

describe('POST /api/conversations', () => {
  it('201 with the conversation (open by default, no messages yet)', async () => {
    const res = await call(t.app, 'POST', '/api/conversations', {
      key: admin,
      body: { subject: 'Invoice questions', channel: 'phone', party_uid: client.uid },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201 });
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      subject: 'Invoice questions',
      channel: 'phone',
      status: 'open',
      party_uid: client.uid,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      messages: [],
    });
    for (const channel of ['email', 'chat', 'sms']) {
      const other = await call(t.app, 'POST', '/api/conversations', {
        key: admin,
        body: { subject: 's', channel, status: 'pending', organization_uid: p.orgA.uid },
      });
      expect(other.status, other.raw).toBe(201);
      expect(other.body.data).toMatchObject({ channel, status: 'pending', party_uid: null });
    }
  });

  it('422 for a bad body, and for a party that is not of the organization', async () => {
    for (const body of [
      { channel: 'email' },
      { subject: 's' },
      { subject: 's', channel: 'fax' },
      { subject: 's', channel: 'email', status: 'archived' },
      { subject: 's', channel: 'email', party_uid: 'nope' },
      { subject: 's', channel: 'email', extra: 1 },
    ]) {
      expectErrorBody(await call(t.app, 'POST', '/api/conversations', { key: admin, body }), 422);
    }
    for (const party of [MISSING, foreignParty]) {
      const res = await call(t.app, 'POST', '/api/conversations', {
        key: admin,
        body: { subject: 's', channel: 'email', party_uid: party },
      });
      expect(expectErrorBody(res, 422, 'validation_failed').errors?.[0]?.field).toBe('party_uid');
    }
  });
});

describe('messages and reading conversations', () => {
  it('POST …/messages → 201; GET returns the conversation with its messages, oldest first', async () => {
    const conversation = await post(t, admin, '/api/conversations', { subject: 'Thread', channel: 'email' });
    const first = await call(t.app, 'POST', `/api/conversations/${conversation.uid}/messages`, {
      key: admin,
      body: { subject: 'Thread', from_email: 'AR@Us.test', to: ['Gil@Globex.test'], body_text: 'One' },
    });
    expect(first.status, first.raw).toBe(201);
    expect(first.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      conversation_uid: conversation.uid,
      direction: 'outbound',
      subject: 'Thread',
      from_email: 'ar@us.test',
      to: ['gil@globex.test'],
      body_text: 'One',
      message_id: null,
      in_reply_to: null,
      created_at: expect.stringMatching(ISO),
    });
    const second = await post(t, admin, `/api/conversations/${conversation.uid}/messages`, {
      subject: 'Re: Thread',
      from_email: 'gil@globex.test',
      to: ['ar@us.test'],
      body_text: 'Two',
      direction: 'inbound',
    });
    expect(second.direction).toBe('inbound');
    const res = await getConversation(conversation.uid);
    expect(res.status).toBe(200);
    expect(res.body.data.messages.map((m: { body_text: string }) => m.body_text)).toEqual(['One', 'Two']);
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(conversation.updated_at));
  });

  it('422 for a bad message; 404 for an unknown conversation or one of another organization', async () => {
    const conversation = await post(t, admin, '/api/conversations', { subject: 'Bad', channel: 'email' });
    const url = `/api/conversations/${conversation.uid}/messages`;
    const good = { subject: 's', from_email: 'a@b.test', to: ['c@d.test'], body_text: 'x' };
    for (const body of [
      { ...good, to: [] },
      { ...good, to: ['not an address'] },
      { ...good, from_email: 'nobody' },
      { ...good, body_text: undefined },
      { ...good, direction: 'sideways' },
      { ...good, cc: ['x@y.test'] },
    ]) {
      expectErrorBody(await call(t.app, 'POST', url, { key: admin, body }), 422);
    }
    for (const uid of [MISSING, foreignConversation]) {
      expectErrorBody(
        await call(t.app, 'POST', `/api/conversations/${uid}/messages`, { key: admin, body: good }),
        404,
      );
      expectErrorBody(await getConversation(uid), 404);
    }
    expectErrorBody(await getConversation('nope'), 400);
    // orgB still sees its own, unchanged.
    expect((await getConversation(foreignConversation, p.orgB.admin.key)).body.data.messages).toEqual([]);
  });

  it('GET /api/conversations: newest first, 25 a page, filtered by status and party', async () => {
    const party = (await post(t, admin, '/api/parties', { name: `Listed ${tag()}`, role: 'client' })).uid;
    const made: string[] = [];
    for (const status of ['open', 'closed', 'open'])
      made.push(
        (
          await post(t, admin, '/api/conversations', {
            subject: status,
            channel: 'chat',
            status,
            party_uid: party,
          })
        ).uid,
      );
    const byParty = await call(t.app, 'GET', `/api/conversations?party_uid=${party}`, { key: admin });
    expect(byParty.status, byParty.raw).toBe(200);
    expect(byParty.body.data.items.map((c: { uid: string }) => c.uid)).toEqual([...made].reverse());
    expect(byParty.body.data._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 3 });
    expect(byParty.body.data.items[0]).not.toHaveProperty('messages');
    const closed = await call(t.app, 'GET', `/api/conversations?party_uid=${party}&status=closed`, {
      key: admin,
    });
    expect(closed.body.data.items.map((c: { uid: string }) => c.uid)).toEqual([made[1]]);
    const paged = await call(t.app, 'GET', `/api/conversations?party_uid=${party}&per_page=2&page=2`, {
      key: admin,
    });
    expect(paged.body.data.items.map((c: { uid: string }) => c.uid)).toEqual([made[0]]);
    const all = await call(t.app, 'GET', '/api/conversations?per_page=100', { key: admin });
    expect(all.body.data.items.map((c: { uid: string }) => c.uid)).not.toContain(foreignConversation);
    for (const query of ['status=gone', 'party_uid=nope', 'per_page=0', 'per_page=101'])
      expectErrorBody(await call(t.app, 'GET', `/api/conversations?${query}`, { key: admin }), 400);
  });
});

describe('POST /api/inbound/email: threading', () => {
  it('a new sender and subject open an email conversation with the party whose billing contact wrote', async () => {
    const got = await receive({
      from_email: client.email,
      subject: 'Re: Payment reminder for INV-7',
      body_text: 'We will pay on Friday.',
      message_id: '<first-7@globex.test>',
    });
    expect(got).toEqual({
      conversation_uid: expect.stringMatching(UUID),
      message_uid: expect.stringMatching(UUID),
      threaded_by: 'new',
      run_uids: [],
    });
    const conversation = (await getConversation(got.conversation_uid)).body.data;
    expect(conversation).toMatchObject({
      subject: 'Payment reminder for INV-7',
      channel: 'email',
      status: 'open',
      party_uid: client.uid,
    });
    expect(conversation.messages).toEqual([
      {
        uid: got.message_uid,
        conversation_uid: got.conversation_uid,
        direction: 'inbound',
        subject: 'Re: Payment reminder for INV-7',
        from_email: client.email,
        to: ['ar@us.test'],
        body_text: 'We will pay on Friday.',
        message_id: 'first-7@globex.test',
        in_reply_to: null,
        created_at: expect.stringMatching(ISO),
      },
    ]);
    // Someone who is no party's billing contact: a conversation with no party.
    const stranger = await receive({ from_email: `who-${tag()}@else.test`, subject: `Hi ${tag()}` });
    expect((await getConversation(stranger.conversation_uid)).body.data.party_uid).toBeNull();
  });

  it('by In-Reply-To, with or without angle brackets, whatever the subject and sender', async () => {
    const first = await receive({
      from_email: client.email,
      subject: `Order ${tag()}`,
      message_id: '<root-1@globex.test>',
    });
    for (const inReplyTo of ['<root-1@globex.test>', 'root-1@globex.test', '  <root-1@globex.test> ']) {
      const reply = await receive({
        from_email: `colleague-${tag()}@globex.test`,
        subject: `Something else ${tag()}`,
        in_reply_to: inReplyTo,
      });
      expect(reply).toMatchObject({ conversation_uid: first.conversation_uid, threaded_by: 'in_reply_to' });
    }
    // It also finds a reply to a reply (the second message's own Message-ID).
    const second = await receive({
      from_email: client.email,
      subject: 'x',
      in_reply_to: 'root-1@globex.test',
      message_id: 'root-2@globex.test',
    });
    const third = await receive({
      from_email: 'z@z.test',
      subject: 'y',
      in_reply_to: '<root-2@globex.test>',
    });
    expect(third.conversation_uid).toBe(second.conversation_uid);
    expect(second.conversation_uid).toBe(first.conversation_uid);
    const messages = (await getConversation(first.conversation_uid)).body.data.messages;
    expect(messages).toHaveLength(6);
    expect(messages[1].in_reply_to).toBe('root-1@globex.test');
  });

  it('by subject (Re:, Fwd: and the like stripped, any case) and sender', async () => {
    const subject = `Statement ${tag()}`;
    const first = await receive({ from_email: client.email, subject });
    for (const variant of [
      `Re: ${subject}`,
      `RE: re: ${subject}`,
      `Fwd: ${subject.toUpperCase()}`,
      `  fw: Re:${subject}`,
    ]) {
      const reply = await receive({ from_email: client.email.toUpperCase(), subject: variant });
      expect(reply, variant).toMatchObject({
        conversation_uid: first.conversation_uid,
        threaded_by: 'subject_and_sender',
      });
    }
    // Same subject from someone else, or another subject from the same sender: a new conversation.
    const other = await receive({ from_email: `other-${tag()}@globex.test`, subject: `Re: ${subject}` });
    expect(other.threaded_by).toBe('new');
    expect(other.conversation_uid).not.toBe(first.conversation_uid);
    const another = await receive({ from_email: client.email, subject: `Re: Another ${tag()}` });
    expect(another.threaded_by).toBe('new');
    // An In-Reply-To naming no message we know falls back to subject and sender.
    const unknownParent = await receive({
      from_email: client.email,
      subject: `Re: ${subject}`,
      in_reply_to: '<never-seen@nowhere.test>',
    });
    expect(unknownParent).toMatchObject({
      conversation_uid: first.conversation_uid,
      threaded_by: 'subject_and_sender',
    });
  });

  it('a reply threads into a conversation where the sender was written to', async () => {
    const subject = `Overdue ${tag()}`;
    const conversation = await post(t, admin, '/api/conversations', { subject, channel: 'email' });
    await post(t, admin, `/api/conversations/${conversation.uid}/messages`, {
      subject,
      from_email: 'ar@us.test',
      to: [client.email],
      body_text: 'Please pay',
    });
    const reply = await receive({ from_email: client.email, subject: `Re: ${subject}` });
    expect(reply).toMatchObject({ conversation_uid: conversation.uid, threaded_by: 'subject_and_sender' });
  });

  it('422 for a bad body; 403 for another organization named explicitly', async () => {
    const good = { from_email: 'a@b.test', to: ['c@d.test'], subject: 's', body_text: 'x' };
    for (const body of [
      { ...good, from_email: undefined },
      { ...good, from_email: 'nope' },
      { ...good, to: [] },
      { ...good, to: ['bad'] },
      { ...good, subject: undefined },
      { ...good, body_text: undefined },
      { ...good, message_id: '' },
      { ...good, in_reply_to: '' },
      { ...good, headers: {} },
    ]) {
      expectErrorBody(await inbound(body), 422);
    }
    expectErrorBody(await inbound({ ...good, organization_uid: p.orgB.uid }), 403);
    const own = await inbound({ ...good, organization_uid: p.orgA.uid });
    expect(own.status, own.raw).toBe(201);
  });
});

describe('POST /api/inbound/email: email_received runs', () => {
  it('one run for every active agent with the trigger; none for paused, draft or trigger-less agents', async () => {
    const make = (status: string, triggers: { type: string }[]) =>
      createAgent(t, admin, { status, triggers });
    const listening = [
      await make('active', [{ type: 'email_received' }]),
      await make('active', [{ type: 'manual' }, { type: 'email_received' }]),
    ];
    // Other tests of the file (in any order) expect inbound email to start no run: pause them after.
    onTestFinished(async () => {
      for (const agent of listening) {
        const paused = await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, {
          key: admin,
          body: { status: 'paused' },
        });
        expect(paused.status, paused.raw).toBe(200);
      }
    });
    const silent = [
      await make('paused', [{ type: 'email_received' }]),
      await make('draft', [{ type: 'email_received' }]),
      await make('active', [{ type: 'manual' }]),
      await make('active', []),
    ];
    const foreign = await createAgent(t, p.orgB.admin.key, {
      status: 'active',
      triggers: [{ type: 'email_received' }],
    });
    const subject = `Runs ${tag()}`;
    const got = await receive({
      from_email: client.email,
      subject,
      body_text: 'About INV-9',
      message_id: '<runs@globex.test>',
    });
    expect(got.run_uids).toHaveLength(2);
    const runs = await Promise.all(
      got.run_uids.map(
        async (uid) => (await t.db.select().from(agentRuns).where(eq(agentRuns.uid, uid)))[0]!,
      ),
    );
    expect(runs.map((r) => r.agentUid).sort()).toEqual(listening.map((a) => a.uid).sort());
    for (const run of runs) {
      expect(run).toMatchObject({ status: 'pending', triggerType: 'email_received', sandbox: false });
      expect(run.workflowId).toMatch(UUID);
      expect(run.trigger).toEqual({
        type: 'email_received',
        from_email: client.email,
        subject,
        conversation_uid: got.conversation_uid,
        message_uid: got.message_uid,
      });
      expect(run.input.body_text).toBe('About INV-9');
    }
    for (const agent of [...silent, foreign]) {
      expect(await t.db.select().from(agentRuns).where(eq(agentRuns.agentUid, agent.uid))).toEqual([]);
    }
    // Visible through the API as the agents' activity.
    const activity = await call(t.app, 'GET', `/api/agents/${listening[0]!.uid}/activities`, { key: admin });
    expect(activity.body.data.items).toMatchObject([
      { id: expect.any(String), attributes: { trigger_type: 'email_received', status: 'pending' } },
    ]);
  });
});

// ---- the checks every route passes ----

let ownConversation: string;
beforeAll(async () => {
  ownConversation = (await post(t, admin, '/api/conversations', { subject: 'Routes', channel: 'email' })).uid;
});
const env = () => ({ t, p });
const message = { subject: 's', from_email: 'a@b.test', to: ['c@d.test'], body_text: 'x' };
commonRouteChecks(
  'POST /api/conversations',
  {
    method: 'POST',
    url: () => '/api/conversations',
    body: () => ({ subject: 'x', channel: 'email' }),
    scope: 'email:write',
    foreignOrganizationBody: (e) => ({ subject: 'x', channel: 'email', organization_uid: e.p.orgB.uid }),
  },
  env,
);
commonRouteChecks(
  'GET /api/conversations',
  {
    method: 'GET',
    url: () => '/api/conversations',
    scope: 'email:read',
    foreignOrganizationUrl: (e) => `/api/conversations?organization_uid=${e.p.orgB.uid}`,
  },
  env,
);
commonRouteChecks(
  'GET /api/conversations/{uid}',
  {
    method: 'GET',
    url: () => `/api/conversations/${ownConversation}`,
    scope: 'email:read',
    foreignUrl: () => `/api/conversations/${foreignConversation}`,
  },
  env,
);
commonRouteChecks(
  'POST /api/conversations/{uid}/messages',
  {
    method: 'POST',
    url: () => `/api/conversations/${ownConversation}/messages`,
    body: () => message,
    scope: 'email:write',
    foreignUrl: () => `/api/conversations/${foreignConversation}/messages`,
  },
  env,
);
commonRouteChecks(
  'POST /api/inbound/email',
  {
    method: 'POST',
    url: () => '/api/inbound/email',
    body: () => message,
    scope: 'email:write',
    foreignOrganizationBody: (e) => ({ ...message, organization_uid: e.p.orgB.uid }),
  },
  env,
);
