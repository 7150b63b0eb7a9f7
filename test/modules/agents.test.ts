import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, asc, eq } from 'drizzle-orm';
import { agents, agentVersions } from '../../src/modules/agents/agents.tables.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * Agent definitions (interface 2.5, 3.2, 4.3; CONTRACT §3, §4): create, get, list and patch, the
 * notification settings and their Slack channel check (against a local fake Slack), and the agent
 * versions a run is stamped with.
 */

let t: TestApp;
let p: Principals;
let slack: FakeSlack;
/** An agent of orgB: orgA's callers must never see or touch it. */
let foreignAgent: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const DEFAULT_EVENTS = {
  action_taken: true,
  approval_required: true,
  outcome: true,
  error: true,
  digest: false,
};
/** Channels of the fake Slack workspace. */
const MEMBER = 'C0MEMBER';
const MEMBER2 = 'C0MEMBER2';
const NOT_MEMBER = 'C0OUTSIDE';
const ARCHIVED = 'C0ARCHIVED';
const tag = () => Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel(MEMBER, true);
  slack.channel(MEMBER2, true);
  slack.channel(NOT_MEMBER, false);
  slack.channel(ARCHIVED, true, true);
  t = await createTestApp({
    // The default Slack timeout (5 s) for every call that must succeed; the hang test has its own.
    env: { RATE_LIMIT_MAX: '100000', ...slack.env() },
  });
  p = await createPrincipals(t);
  foreignAgent = (await createAgent({ name: 'Foreign agent' }, p.orgB.admin.key)).uid;
});
afterAll(async () => {
  await t?.close();
  await slack?.close();
});

async function createAgent(body: Record<string, unknown>, key = p.orgA.admin.key) {
  const res = await call(t.app, 'POST', '/api/agents', { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const getAgent = (uid: string, key = p.orgA.admin.key) => call(t.app, 'GET', `/api/agents/${uid}`, { key });
const patchAgent = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/agents/${uid}`, { key, body });
const postAgent = (body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'POST', '/api/agents', { key, body });

async function versionsOf(agentUid: string) {
  return t.db
    .select()
    .from(agentVersions)
    .where(eq(agentVersions.agentUid, agentUid))
    .orderBy(asc(agentVersions.version));
}
async function currentVersionUid(agentUid: string) {
  const [row] = await t.db
    .select({ uid: agents.currentVersionUid })
    .from(agents)
    .where(and(eq(agents.organizationUid, p.orgA.uid), eq(agents.uid, agentUid)));
  return row?.uid;
}

describe('POST /api/agents', () => {
  it('creates a draft agent: 201 in the envelope with the full agent of interface 2.5', async () => {
    const res = await postAgent({ name: '  Collections helper  ', description: 'Chases invoices' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      agent_type: 'custom',
      name: 'Collections helper',
      description: 'Chases invoices',
      instructions: '',
      status: 'draft',
      created_by_uid: p.orgA.admin.userUid,
      notification_config: null,
      runs_count: 0,
      created_on: expect.stringMatching(ISO),
      updated_on: expect.stringMatching(ISO),
      triggers: [],
      tools: [],
    });
  });

  it('takes status, instructions, triggers and tools; tools default to requiring approval', async () => {
    const agent = await createAgent({
      name: 'Full',
      status: 'active',
      instructions: 'Be polite.',
      triggers: [{ type: 'email_received' }, { type: 'schedule', cron: '0 9 * * 1' }],
      tools: [{ type: 'send_email' }, { type: 'lookup', requires_approval: false, description: 'd' }],
    });
    expect(agent).toMatchObject({
      status: 'active',
      instructions: 'Be polite.',
      triggers: [{ type: 'email_received' }, { type: 'schedule', cron: '0 9 * * 1' }],
      tools: [
        { type: 'send_email', requires_approval: true },
        { type: 'lookup', requires_approval: false, description: 'd' },
      ],
    });
    expect((await getAgent(agent.uid)).body.data).toEqual(agent);
  });

  it('the built-in collections type gets its default tool (send_email needing approval) and trigger', async () => {
    const agent = await createAgent({ name: 'Built in', agent_type: 'collections' });
    expect(agent).toMatchObject({
      agent_type: 'collections',
      tools: [{ type: 'send_email', requires_approval: true }],
      triggers: [{ type: 'manual' }],
    });
  });

  it('name: 1 to 128 characters; empty, 129 characters or only spaces → 422', async () => {
    expect((await createAgent({ name: 'x' })).name).toBe('x');
    expect((await createAgent({ name: 'n'.repeat(128) })).name).toHaveLength(128);
    for (const name of ['', 'n'.repeat(129), '   ']) {
      const body = expectErrorBody(await postAgent({ name }), 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toMatch(/name/);
    }
    expectErrorBody(await postAgent({ description: 'no name' }), 422, 'validation_failed');
  });

  it('422 for an unknown status, an unknown field, or a malformed trigger or tool', async () => {
    for (const body of [
      { name: 'x', status: 'running' },
      { name: 'x', status: 'ACTIVE' },
      { name: 'x', colour: 'blue' },
      { name: 'x', triggers: [{ type: 'webhook' }] },
      { name: 'x', triggers: [{ type: 'schedule' }] },
      { name: 'x', triggers: [{ type: 'manual', cron: '* * * * *' }] },
      { name: 'x', triggers: [{ type: 'schedule', cron: 'every monday' }] },
      { name: 'x', tools: [{ type: 'Send Email' }] },
    ])
      expectErrorBody(await postAgent(body), 422, 'validation_failed');
  });

  it('notification_config: events filled with their defaults; partial events keep the others at defaults', async () => {
    const bare = await createAgent({ name: 'n1', notification_config: { chat_channel_id: MEMBER } });
    expect(bare.notification_config).toEqual({ chat_channel_id: MEMBER, events: DEFAULT_EVENTS });

    const partial = await createAgent({
      name: 'n2',
      notification_config: { chat_channel_id: MEMBER, events: { digest: true, error: false } },
    });
    expect(partial.notification_config).toEqual({
      chat_channel_id: MEMBER,
      events: { ...DEFAULT_EVENTS, digest: true, error: false },
    });
    expect((await getAgent(partial.uid)).body.data.notification_config).toEqual(partial.notification_config);
  });

  it('notification_config without chat_channel_id, with an empty one or an unknown event → 422', async () => {
    for (const notification_config of [
      {},
      { events: { digest: true } },
      { chat_channel_id: '' },
      { chat_channel_id: MEMBER, events: { sms: true } },
      { chat_channel_id: MEMBER, events: { digest: 'yes' } },
      'C123',
    ]) {
      expectErrorBody(await postAgent({ name: 'x', notification_config }), 422, 'validation_failed');
    }
  });

  it('notification_config null is no notification settings', async () => {
    expect((await createAgent({ name: 'quiet', notification_config: null })).notification_config).toBeNull();
  });

  it('writes version 1 of the agent (instructions and tools) and points the agent at it', async () => {
    const agent = await createAgent({
      name: 'v',
      instructions: 'First',
      tools: [{ type: 'send_email' }],
    });
    const versions = await versionsOf(agent.uid);
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatchObject({
      version: 1,
      instructions: 'First',
      tools: [{ type: 'send_email', requires_approval: true }],
      organizationUid: p.orgA.uid,
    });
    expect(await currentVersionUid(agent.uid)).toBe(versions[0]!.uid);
  });

  commonRouteChecks(
    'POST /api/agents',
    {
      method: 'POST',
      url: () => '/api/agents',
      body: () => ({ name: 'Checked' }),
      scope: 'agents:write',
      foreignOrganizationBody: ({ p }) => ({ name: 'Checked', organization_uid: p.orgB.uid }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/agents/{uid}', () => {
  it('returns the agent as created; a member of the organization may read it', async () => {
    const created = await createAgent({ name: 'Readable', instructions: 'Read me' });
    const res = await getAgent(created.uid);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data).toEqual(created);
    expect((await getAgent(created.uid, p.orgA.member.key)).body.data).toEqual(created);
  });

  it('400 for a uid that is not a uuid; 404 for an unknown one', async () => {
    expectErrorBody(await getAgent('not-a-uuid'), 400);
    expectErrorBody(await getAgent(MISSING), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/agents/{uid}',
    {
      method: 'GET',
      url: async () => `/api/agents/${(await createAgent({ name: 'route' })).uid}`,
      scope: 'agents:read',
      foreignUrl: () => `/api/agents/${foreignAgent}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/agents', () => {
  it("lists the organization's agents newest first with _meta; never another organization's", async () => {
    // Its own agents, whatever the other tests (in whatever order) created before.
    const mine: string[] = [];
    for (let i = 0; i < 4; i++) mine.push((await createAgent({ name: `Listed ${i}` })).uid);
    const res = await call(t.app, 'GET', '/api/agents', { key: p.orgA.admin.key, query: { per_page: 100 } });
    expect(res.status).toBe(200);
    const { items, _meta } = res.body.data;
    expect(items.length).toBeGreaterThan(3);
    const uids = items.map((a: { uid: string }) => a.uid);
    expect(uids.filter((uid: string) => mine.includes(uid))).toEqual([...mine].reverse());
    expect(_meta).toEqual({ page: 1, per_page: 100, total_pages: 1, total_items: items.length });
    expect(items.every((a: { organization_uid: string }) => a.organization_uid === p.orgA.uid)).toBe(true);
    expect(items.map((a: { uid: string }) => a.uid)).not.toContain(foreignAgent);
    const created = items.map((a: { created_on: string }) => Date.parse(a.created_on));
    expect(created).toEqual([...created].sort((a, b) => b - a));
    // Items carry the full shape.
    expect(Object.keys(items[0]).sort()).toEqual(
      [
        'uid',
        'organization_uid',
        'agent_type',
        'name',
        'description',
        'instructions',
        'status',
        'created_by_uid',
        'notification_config',
        'runs_count',
        'created_on',
        'updated_on',
        'triggers',
        'tools',
      ].sort(),
    );
  });

  it('filters by status and agent_type; pages', async () => {
    const type = `t_${tag()}`;
    const a = await createAgent({ name: 'p1', agent_type: type, status: 'paused' });
    const b = await createAgent({ name: 'p2', agent_type: type, status: 'active' });
    const c = await createAgent({ name: 'p3', agent_type: type, status: 'paused' });
    const list = async (query: Record<string, string | number>) => {
      const res = await call(t.app, 'GET', '/api/agents', { key: p.orgA.admin.key, query });
      expect(res.status, res.raw).toBe(200);
      return res.body.data;
    };
    expect((await list({ agent_type: type })).items.map((x: { uid: string }) => x.uid)).toEqual([
      c.uid,
      b.uid,
      a.uid,
    ]);
    expect(
      (await list({ agent_type: type, status: 'paused' })).items.map((x: { uid: string }) => x.uid),
    ).toEqual([c.uid, a.uid]);
    const page2 = await list({ agent_type: type, per_page: 2, page: 2 });
    expect(page2.items.map((x: { uid: string }) => x.uid)).toEqual([a.uid]);
    expect(page2._meta).toEqual({ page: 2, per_page: 2, total_pages: 2, total_items: 3 });
  });

  it('400 for an unknown status filter or per_page out of range', async () => {
    const list = (query: Record<string, string | number>) =>
      call(t.app, 'GET', '/api/agents', { key: p.orgA.admin.key, query });
    expectErrorBody(await list({ status: 'running' }), 400);
    expectErrorBody(await list({ per_page: 0 }), 400);
    expectErrorBody(await list({ per_page: 101 }), 400);
  });

  commonRouteChecks(
    'GET /api/agents',
    {
      method: 'GET',
      url: () => '/api/agents',
      scope: 'agents:read',
      foreignOrganizationUrl: ({ p }) => `/api/agents?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('PATCH /api/agents/{uid}', () => {
  it('partial: only the sent fields change; 200 with the agent in the envelope', async () => {
    const before = await createAgent({
      name: 'Before',
      description: 'desc',
      instructions: 'inst',
      status: 'active',
      notification_config: { chat_channel_id: MEMBER, events: { digest: true } },
      triggers: [{ type: 'manual' }],
      tools: [{ type: 'send_email' }],
    });
    const res = await patchAgent(before.uid, { name: 'After' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: expect.any(String) });
    const after = res.body.data;
    expect(after).toEqual({ ...before, name: 'After', updated_on: expect.stringMatching(ISO) });
    expect(Date.parse(after.updated_on)).toBeGreaterThanOrEqual(Date.parse(before.updated_on));
    expect((await getAgent(before.uid)).body.data).toEqual(after);

    for (const [field, value] of [
      ['description', 'new desc'],
      ['instructions', 'new inst'],
      ['status', 'paused'],
      ['triggers', [{ type: 'email_received' }]],
    ] as const) {
      const previous = (await getAgent(before.uid)).body.data;
      const patched = (await patchAgent(before.uid, { [field]: value })).body.data;
      expect(patched).toEqual({ ...previous, [field]: value, updated_on: expect.stringMatching(ISO) });
    }
  });

  it('an empty body changes nothing', async () => {
    const before = await createAgent({ name: 'Empty patch', instructions: 'keep' });
    const res = await patchAgent(before.uid, {});
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ ...before, updated_on: expect.stringMatching(ISO) });
  });

  it('status moves from any of draft/active/paused to any other', async () => {
    const agent = await createAgent({ name: 'Mover' });
    expect(agent.status).toBe('draft');
    const moves = ['active', 'paused', 'draft', 'paused', 'active', 'draft', 'draft'];
    for (const status of moves) {
      const res = await patchAgent(agent.uid, { status });
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.status).toBe(status);
    }
  });

  it('422 for an empty, 129-character or blank name, an unknown status or an unknown field; nothing changes', async () => {
    const agent = await createAgent({ name: 'Strict' });
    for (const body of [
      { name: '' },
      { name: 'n'.repeat(129) },
      { name: '  ' },
      { status: 'archived' },
      { status: null },
      { agent_type: 'collections' },
      { runs_count: 5 },
    ])
      expectErrorBody(await patchAgent(agent.uid, body), 422, 'validation_failed');
    expect((await getAgent(agent.uid)).body.data).toEqual(agent);
    expect((await patchAgent(agent.uid, { name: 'n'.repeat(128) })).body.data.name).toHaveLength(128);
  });

  it('notification_config: set with defaults filled, partial events, null clears, other PATCHes keep it', async () => {
    const agent = await createAgent({ name: 'Notifier' });
    const set = await patchAgent(agent.uid, { notification_config: { chat_channel_id: MEMBER } });
    expect(set.status, set.raw).toBe(200);
    expect(set.body.data.notification_config).toEqual({ chat_channel_id: MEMBER, events: DEFAULT_EVENTS });

    const partial = await patchAgent(agent.uid, {
      notification_config: { chat_channel_id: MEMBER, events: { action_taken: false } },
    });
    expect(partial.body.data.notification_config).toEqual({
      chat_channel_id: MEMBER,
      events: { ...DEFAULT_EVENTS, action_taken: false },
    });

    // Another field alone leaves the settings as they are.
    const renamed = await patchAgent(agent.uid, { name: 'Notifier 2' });
    expect(renamed.body.data.notification_config).toEqual(partial.body.data.notification_config);

    const cleared = await patchAgent(agent.uid, { notification_config: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.notification_config).toBeNull();
    expect((await getAgent(agent.uid)).body.data.notification_config).toBeNull();
  });

  it('notification_config without chat_channel_id → 422 and the settings stay', async () => {
    const agent = await createAgent({ name: 'Keep', notification_config: { chat_channel_id: MEMBER } });
    for (const notification_config of [{}, { events: { digest: true } }, { chat_channel_id: '' }]) {
      const body = expectErrorBody(await patchAgent(agent.uid, { notification_config }), 422);
      expect(body.code).toBe('validation_failed');
    }
    expect((await getAgent(agent.uid)).body.data.notification_config).toEqual(agent.notification_config);
  });

  it('a new agent version whenever instructions or tools change, none for other fields', async () => {
    const agent = await createAgent({
      name: 'Versioned',
      instructions: 'v1',
      tools: [{ type: 'send_email' }],
    });
    expect(await versionsOf(agent.uid)).toHaveLength(1);

    // Only name, description, status, triggers or notification settings: no new version.
    await patchAgent(agent.uid, { name: 'Renamed' });
    await patchAgent(agent.uid, { description: 'd', status: 'active', triggers: [{ type: 'manual' }] });
    await patchAgent(agent.uid, { notification_config: { chat_channel_id: MEMBER } });
    // The same instructions and the same tools again: no change, no version.
    await patchAgent(agent.uid, {
      instructions: 'v1',
      tools: [{ type: 'send_email', requires_approval: true }],
    });
    let versions = await versionsOf(agent.uid);
    expect(versions).toHaveLength(1);

    await patchAgent(agent.uid, { instructions: 'v2' });
    versions = await versionsOf(agent.uid);
    expect(versions.map((v) => [v.version, v.instructions])).toEqual([
      [1, 'v1'],
      [2, 'v2'],
    ]);
    expect(await currentVersionUid(agent.uid)).toBe(versions[1]!.uid);

    await patchAgent(agent.uid, { tools: [{ type: 'send_email', requires_approval: false }] });
    versions = await versionsOf(agent.uid);
    expect(versions).toHaveLength(3);
    expect(versions[2]).toMatchObject({
      version: 3,
      instructions: 'v2',
      tools: [{ type: 'send_email', requires_approval: false }],
    });
    expect(await currentVersionUid(agent.uid)).toBe(versions[2]!.uid);

    // Both in one PATCH: one version.
    await patchAgent(agent.uid, { instructions: 'v4', tools: [] });
    versions = await versionsOf(agent.uid);
    expect(versions.map((v) => v.version)).toEqual([1, 2, 3, 4]);
    expect(versions[3]).toMatchObject({ instructions: 'v4', tools: [] });

    // A rejected PATCH writes none.
    expectErrorBody(await patchAgent(agent.uid, { instructions: 'v5', name: '' }), 422);
    expect(await versionsOf(agent.uid)).toHaveLength(4);
  });

  it('404 for an unknown agent', async () => {
    expectErrorBody(await patchAgent(MISSING, { name: 'x' }), 404, 'not_found');
  });

  commonRouteChecks(
    'PATCH /api/agents/{uid}',
    {
      method: 'PATCH',
      url: async () => `/api/agents/${(await createAgent({ name: 'route' })).uid}`,
      body: () => ({ description: 'checked' }),
      scope: 'agents:write',
      foreignUrl: () => `/api/agents/${foreignAgent}`,
    },
    () => ({ t, p }),
  );

  it("another organization's agent is never changed", async () => {
    expectErrorBody(await patchAgent(foreignAgent, { name: 'hijacked' }), 404);
    const res = await getAgent(foreignAgent, p.orgB.admin.key);
    expect(res.body.data.name).toBe('Foreign agent');
  });
});

describe('the chat channel check (SLACK_BOT_TOKEN set, fake Slack)', () => {
  it('a channel the bot is a member of is accepted; Slack was asked with our token', async () => {
    const before = slack.requestsFor('conversations.info').length;
    const agent = await createAgent({ name: 'Slacky', notification_config: { chat_channel_id: MEMBER } });
    expect(agent.notification_config.chat_channel_id).toBe(MEMBER);
    const asked = slack.requestsFor('conversations.info').slice(before);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ token: slack.token, params: { channel: MEMBER } });
    expect(asked[0]!.error).toBeUndefined();
  });

  it('a channel the bot is not a member of → 422 saying so, and no agent is created', async () => {
    const name = `outsider-${tag()}`;
    const res = await postAgent({ name, notification_config: { chat_channel_id: NOT_MEMBER } });
    const body = expectErrorBody(res, 422, 'validation_failed');
    expect(body.message).toMatch(/not a member/);
    expect(body.message).toContain(NOT_MEMBER);
    expect(body.errors).toEqual([
      { field: 'notification_config.chat_channel_id', message: expect.stringMatching(/not a member/) },
    ]);
    const list = await call(t.app, 'GET', '/api/agents', { key: p.orgA.admin.key, query: { per_page: 100 } });
    expect(list.body.data.items.map((a: { name: string }) => a.name)).not.toContain(name);
  });

  it('an unknown channel → 422 saying it does not exist; an archived one → 422', async () => {
    const unknown = expectErrorBody(
      await postAgent({ name: 'x', notification_config: { chat_channel_id: 'C0NOPE' } }),
      422,
      'validation_failed',
    );
    expect(unknown.message).toMatch(/does not exist/);
    const archived = expectErrorBody(
      await postAgent({ name: 'x', notification_config: { chat_channel_id: ARCHIVED } }),
      422,
      'validation_failed',
    );
    expect(archived.message).toMatch(/archived/);
  });

  it('PATCH to a channel the bot is not in → 422 and the old settings stay; a member channel is taken', async () => {
    const agent = await createAgent({ name: 'Mover', notification_config: { chat_channel_id: MEMBER } });
    const refused = expectErrorBody(
      await patchAgent(agent.uid, { notification_config: { chat_channel_id: NOT_MEMBER } }),
      422,
    );
    expect(refused.message).toMatch(/not a member/);
    expect((await getAgent(agent.uid)).body.data).toEqual(agent);
    const moved = await patchAgent(agent.uid, { notification_config: { chat_channel_id: MEMBER2 } });
    expect(moved.status).toBe(200);
    expect(moved.body.data.notification_config.chat_channel_id).toBe(MEMBER2);
  });

  it('the channel is checked only when it changes (new events on the same channel ask Slack nothing)', async () => {
    const agent = await createAgent({ name: 'Same', notification_config: { chat_channel_id: MEMBER } });
    const before = slack.requestsFor('conversations.info').length;
    const res = await patchAgent(agent.uid, {
      notification_config: { chat_channel_id: MEMBER, events: { digest: true } },
    });
    expect(res.status).toBe(200);
    expect(slack.requestsFor('conversations.info')).toHaveLength(before);
  });

  it('Slack down (HTTP 500), refusing our token, or timing out → 502/504, not 422, and nothing is stored', async () => {
    const name = `unchecked-${tag()}`;
    const body = { name, notification_config: { chat_channel_id: MEMBER } };
    try {
      slack.infoBehaviour = { kind: 'http', status: 500 };
      expectErrorBody(await postAgent(body), 502, 'bad_gateway');
      slack.infoBehaviour = { kind: 'fail', error: 'invalid_auth' };
      expect(expectErrorBody(await postAgent(body), 502, 'bad_gateway').message).toContain('invalid_auth');
      // An instance over the same database whose Slack timeout is short, so the hang ends soon.
      const impatient = await secondInstance(t, {
        config: { chat: { ...t.config.chat, timeoutMs: 300 } as typeof t.config.chat },
      });
      try {
        slack.infoBehaviour = { kind: 'hang' };
        const timedOut = await call(impatient.app, 'POST', '/api/agents', { key: p.orgA.admin.key, body });
        expectErrorBody(timedOut, 504, 'gateway_timeout');
      } finally {
        await impatient.close();
      }
    } finally {
      slack.reset();
    }
    const list = await call(t.app, 'GET', '/api/agents', { key: p.orgA.admin.key, query: { per_page: 100 } });
    expect(list.body.data.items.map((a: { name: string }) => a.name)).not.toContain(name);
  });

  it('the fake itself answers like Slack: invalid_auth for another token, not_authed for none', async () => {
    const ask = async (headers: Record<string, string>) => {
      const res = await fetch(`${slack.url}/conversations.info`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ channel: MEMBER }).toString(),
      });
      expect(res.status).toBe(200);
      return res.json();
    };
    expect(await ask({ authorization: 'Bearer xoxb-wrong' })).toEqual({ ok: false, error: 'invalid_auth' });
    expect(await ask({})).toEqual({ ok: false, error: 'not_authed' });
    expect(await ask({ authorization: `Bearer ${slack.token}` })).toMatchObject({
      ok: true,
      channel: { id: MEMBER, is_member: true },
    });
  });
});

describe('without SLACK_BOT_TOKEN', () => {
  let plain: TestApp;
  let key: string;
  beforeAll(async () => {
    plain = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
    key = (await createPrincipals(plain)).orgA.admin.key;
  });
  afterAll(async () => plain?.close());

  it('any channel is stored unchecked (no chat service to ask)', async () => {
    const before = slack.requests.length;
    const res = await call(plain.app, 'POST', '/api/agents', {
      key,
      body: { name: 'Unchecked', notification_config: { chat_channel_id: NOT_MEMBER } },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data.notification_config).toEqual({
      chat_channel_id: NOT_MEMBER,
      events: DEFAULT_EVENTS,
    });
    const patched = await call(plain.app, 'PATCH', `/api/agents/${res.body.data.uid}`, {
      key,
      body: { notification_config: { chat_channel_id: 'C0WHATEVER' } },
    });
    expect(patched.status).toBe(200);
    expect(slack.requests.length).toBe(before);
  });
});

describe('POST /api/agents/{uid}/approvals (route checks; behaviour in work-tasks.test.ts)', () => {
  commonRouteChecks(
    'POST /api/agents/{uid}/approvals',
    {
      method: 'POST',
      url: async () => `/api/agents/${(await createAgent({ name: 'asker' })).uid}/approvals`,
      body: () => ({
        title: 'May I?',
        reasoning: 'because',
        tool_args: { type: 'send_email' },
        trigger: { type: 'manual' },
      }),
      scope: 'work_tasks:write',
      foreignUrl: () => `/api/agents/${foreignAgent}/approvals`,
    },
    () => ({ t, p }),
  );
});
