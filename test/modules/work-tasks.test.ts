import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { and, count, eq, sql } from 'drizzle-orm';
import { findAgent } from '../../src/modules/agents/agents.repository.ts';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { raiseApproval } from '../../src/modules/work-tasks/work-tasks.service.ts';
import { jobOrigin } from '../../src/modules/audit/audit.service.ts';
import { workTasks } from '../../src/modules/work-tasks/work-tasks.tables.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody, type CallResult } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/**
 * Work tasks and human-in-the-loop approvals (interface 2.8, 3.1, 4.5; CONTRACT §2–§4): create, list,
 * get and patch tasks; raise approvals through `POST /api/agents/{uid}/approvals`; resolve them, with
 * the follow-up run an approval requests, and exactly one winner when resolutions race.
 */

/* eslint-disable @typescript-eslint/no-explicit-any -- responses are checked field by field */

let t: TestApp;
let p: Principals;
let activeAgent: Agent;
let pausedAgent: Agent;
let draftAgent: Agent;
let foreignAgent: Agent;
let client: { uid: string; name: string };
let vendor: { uid: string; name: string };
let arInvoice: { uid: string; invoice_number: string };
let apInvoice: { uid: string; invoice_number: string };
let foreignParty: string;
let foreignInvoice: string;
let foreignTask: string;

interface Agent {
  uid: string;
  name: string;
  status: string;
  runs_count: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const AGENT_RUN_QUEUE = 'remit.agent.run';
const tag = () => `T${Math.random().toString(36).slice(2, 10)}`;
const ADMIN_NAME = 'A Admin';
const MEMBER_NAME = 'A Member';
const EMAIL_ARGS = {
  type: 'send_email',
  subject: 'Invoice overdue',
  body: 'Please pay.',
  recipients: ['ap@client.test'],
};
const TRIGGER = { type: 'email_received', from_email: 'ap@client.test', subject: 'Where is my invoice?' };

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const key = p.orgA.admin.key;
  activeAgent = await post(key, '/api/agents', { name: 'Collector', status: 'active' });
  pausedAgent = await post(key, '/api/agents', { name: 'Sleeper', status: 'paused' });
  draftAgent = await post(key, '/api/agents', { name: 'Drafty' });
  foreignAgent = await post(p.orgB.admin.key, '/api/agents', { name: 'B agent', status: 'active' });
  client = await post(key, '/api/parties', { name: 'Client Co', role: 'client' });
  vendor = await post(key, '/api/parties', { name: 'Vendor Inc', role: 'vendor' });
  arInvoice = await post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: 'AR-77',
    currency: 'USD',
    client_party_uid: client.uid,
    service_provider_party_uid: vendor.uid,
  });
  apInvoice = await post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_PAYABLE',
    invoice_number: 'AP-88',
    currency: 'USD',
    client_party_uid: client.uid,
    service_provider_party_uid: vendor.uid,
  });
  foreignParty = (await post(p.orgB.admin.key, '/api/parties', { name: 'B party', role: 'client' })).uid;
  foreignInvoice = (
    await post(p.orgB.admin.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'B-1',
      currency: 'USD',
    })
  ).uid;
  foreignTask = (await post(p.orgB.admin.key, '/api/work-tasks', { title: 'B secret' })).uid;
});
afterAll(async () => t?.close());

async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
const createTask = (body: Record<string, unknown>, key = p.orgA.admin.key) =>
  post(key, '/api/work-tasks', body);
const postTask = (body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'POST', '/api/work-tasks', { key, body });
const getTask = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/work-tasks/${uid}`, { key });
const patchTask = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/work-tasks/${uid}`, { key, body });
const listTasks = (query: Record<string, string | number>, key = p.orgA.admin.key) =>
  call(t.app, 'GET', '/api/work-tasks', { key, query });
const raise = (agentUid: string, body: Record<string, unknown> = {}, key = p.orgA.admin.key) =>
  call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
    key,
    body: {
      title: 'Send the reminder?',
      reasoning: 'AR-77 is 12 days overdue',
      tool_args: EMAIL_ARGS,
      trigger: TRIGGER,
      ...body,
    },
  });
async function raised(agentUid = activeAgent.uid, body: Record<string, unknown> = {}) {
  const res = await raise(agentUid, body);
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}
async function data(resPromise: Promise<CallResult>) {
  const res = await resPromise;
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}
async function runsOf(taskUid: string) {
  return t.db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.organizationUid, p.orgA.uid), eq(agentRuns.taskUid, taskUid)));
}
const agentNow = async (uid: string): Promise<Agent> =>
  data(call(t.app, 'GET', `/api/agents/${uid}`, { key: p.orgA.admin.key }));
const uids = (items: { uid: string }[]) => items.map((i) => i.uid);

const HIL_FIELDS = ['reasoning', 'tool_args', 'trigger', 'resolution', 'resolved_at', 'resolved_by'];

describe('POST /api/work-tasks', () => {
  it('201 with the task: type task, defaults priority medium and status todo, origin the caller, change log "created"', async () => {
    const res = await postTask({ title: '  Call the client  ' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      title: 'Call the client',
      type: 'task',
      status: 'todo',
      priority: 'medium',
      due_date: null,
      description: '',
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      assign_to: null,
      origin: { type: 'user', user_uid: p.orgA.admin.userUid, user_name: ADMIN_NAME, avatar_url: null },
      context_entities: [],
      change_log: [
        {
          at: expect.stringMatching(ISO),
          by_name: ADMIN_NAME,
          by_type: 'user',
          action: 'created',
          details: null,
        },
      ],
    });
    for (const field of HIL_FIELDS) expect(res.body.data).not.toHaveProperty(field);
  });

  it('takes every field; context entities come back hydrated, in the order given', async () => {
    const task = await createTask({
      title: 'Chase AR-77',
      description: 'Twice already',
      priority: 'urgent',
      status: 'in_progress',
      due_date: '2031-05-06',
      assign_to: { type: 'user', user_uid: p.orgA.member.userUid },
      context_entities: [
        { entity_type: 'party', entity_uid: client.uid },
        { entity_type: 'invoice', entity_uid: arInvoice.uid },
      ],
    });
    expect(task).toMatchObject({
      title: 'Chase AR-77',
      description: 'Twice already',
      priority: 'urgent',
      status: 'in_progress',
      due_date: '2031-05-06',
      assign_to: {
        type: 'user',
        user_uid: p.orgA.member.userUid,
        full_name: MEMBER_NAME,
        avatar_url: null,
      },
      context_entities: [
        { entity_type: 'party', entity_uid: client.uid, name: 'Client Co' },
        {
          entity_type: 'invoice',
          entity_uid: arInvoice.uid,
          invoice_number: 'AR-77',
          counterparty_name: 'Client Co',
        },
      ],
    });
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });

  it('a member creates tasks too; organization_uid of the own organization is accepted', async () => {
    const task = await createTask({ title: 'Member task', organization_uid: p.orgA.uid }, p.orgA.member.key);
    expect(task.origin).toEqual({
      type: 'user',
      user_uid: p.orgA.member.userUid,
      user_name: MEMBER_NAME,
      avatar_url: null,
    });
    expect(task.change_log[0]).toMatchObject({ by_name: MEMBER_NAME, action: 'created' });
  });

  it('title 1 to 255 characters: empty, blank or 256 → 422; 255 is fine', async () => {
    expect((await createTask({ title: 't'.repeat(255) })).title).toHaveLength(255);
    for (const title of ['', '   ', 't'.repeat(256)]) {
      const body = expectErrorBody(await postTask({ title }), 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toMatch(/title/);
    }
    expectErrorBody(await postTask({ description: 'no title' }), 422, 'validation_failed');
  });

  it('422 for an unknown priority, status or field, a malformed due_date, or resolve fields', async () => {
    for (const body of [
      { title: 'x', priority: 'critical' },
      { title: 'x', status: 'blocked' },
      { title: 'x', due_date: '06/05/2031' },
      { title: 'x', type: 'hil_approval' },
      { title: 'x', action: 'approve' },
      { title: 'x', context_entities: [{ entity_type: 'message', entity_uid: MISSING }] },
      { title: 'x', assign_to: { type: 'team', user_uid: p.orgA.member.userUid } },
    ])
      expectErrorBody(await postTask(body), 422, 'validation_failed');
  });

  it("another organization's user, agent, invoice or party → 422 and no task is written", async () => {
    const title = tag();
    for (const extra of [
      { assign_to: { type: 'user', user_uid: p.orgB.member.userUid } },
      { assign_to: { type: 'agent', agent_uid: foreignAgent.uid } },
      { context_entities: [{ entity_type: 'invoice', entity_uid: foreignInvoice }] },
      { context_entities: [{ entity_type: 'party', entity_uid: foreignParty }] },
      { context_entities: [{ entity_type: 'invoice', entity_uid: MISSING }] },
    ])
      expectErrorBody(await postTask({ title, ...extra }), 422, 'validation_failed');
    expect((await data(listTasks({ q: title }))).items).toEqual([]);
  });

  commonRouteChecks(
    'POST /api/work-tasks',
    {
      method: 'POST',
      url: () => '/api/work-tasks',
      body: () => ({ title: 'Checked' }),
      scope: 'work_tasks:write',
      foreignOrganizationBody: ({ p }) => ({ title: 'Checked', organization_uid: p.orgB.uid }),
    },
    () => ({ t, p }),
  );
});

describe('GET /api/work-tasks (filters, sort, paging)', () => {
  const T = tag();
  const made: Record<string, any> = {};
  beforeAll(async () => {
    const key = p.orgA.admin.key;
    // Created one after another: created_at ascending a, b, c, d, e.
    made.a = await createTask({
      title: `${T} alpha`,
      priority: 'low',
      status: 'done',
      due_date: '2030-03-01',
    });
    made.b = await createTask({
      title: `${T} bravo`,
      priority: 'urgent',
      status: 'todo',
      assign_to: { type: 'user', user_uid: p.orgA.member.userUid },
    });
    made.c = await createTask({
      title: `${T} charlie`,
      priority: 'high',
      status: 'in_review',
      due_date: '2030-01-01',
      assign_to: { type: 'agent', agent_uid: activeAgent.uid },
    });
    made.d = await createTask({
      title: `${T} delta`,
      description: 'mentions 50% off',
      priority: 'medium',
      status: 'canceled',
      due_date: '2030-02-01',
    });
    made.e = (await raise(activeAgent.uid, { title: `${T} echo approval`, priority: 'high' })).body.data;
    made.f = await createTask({ title: `${T} under_score`, priority: 'low', status: 'in_progress' });
    made.g = await createTask({ title: `${T} underXscore`, priority: 'low', status: 'in_progress' });
    // Touch a: now the most recently updated.
    await patchTask(made.a.uid, { description: 'touched' });
    // The same tag in orgB: never listed for orgA.
    await createTask({ title: `${T} foreign` }, p.orgB.admin.key);
    void key;
  });
  const list = async (query: Record<string, string | number>) => data(listTasks({ q: T, ...query }));

  it('lists the organization’s tasks newest first, full shape per item, _meta; never another organization’s', async () => {
    const page = await list({});
    expect(uids(page.items)).toEqual(uids([made.g, made.f, made.e, made.d, made.c, made.b, made.a]));
    expect(page._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 7 });
    expect(page.items.every((i: any) => i.organization_uid === p.orgA.uid)).toBe(true);
    expect(page.items.find((i: any) => i.uid === made.c.uid)).toEqual((await getTask(made.c.uid)).body.data);
    expect(page.items.find((i: any) => i.uid === made.e.uid)).toEqual((await getTask(made.e.uid)).body.data);
    const all = await data(listTasks({ per_page: 100 }));
    expect(uids(all.items)).not.toContain(foreignTask);
    const asB = await data(listTasks({ q: T }, p.orgB.admin.key));
    expect(asB.items.map((i: any) => i.title)).toEqual([`${T} foreign`]);
  });

  it('a member sees every task of the organization, not only their own', async () => {
    expect((await data(listTasks({ q: T }, p.orgA.member.key)))._meta.total_items).toBe(7);
  });

  it('status: one value or a comma-separated list', async () => {
    expect(uids((await list({ status: 'done' })).items)).toEqual([made.a.uid]);
    expect(uids((await list({ status: 'todo,in_review' })).items)).toEqual(uids([made.e, made.c, made.b]));
    expect(uids((await list({ status: 'todo, canceled' })).items)).toEqual(uids([made.e, made.d, made.b]));
  });

  it('type, priority, assignee_user_uid, assignee_agent_uid', async () => {
    expect(uids((await list({ type: 'hil_approval' })).items)).toEqual([made.e.uid]);
    expect((await list({ type: 'task' })).items).toHaveLength(6);
    expect(uids((await list({ priority: 'high' })).items)).toEqual(uids([made.e, made.c]));
    expect(uids((await list({ priority: 'urgent,low' })).items)).toEqual(
      uids([made.g, made.f, made.b, made.a]),
    );
    expect(uids((await list({ assignee_user_uid: p.orgA.member.userUid })).items)).toEqual([made.b.uid]);
    expect(uids((await list({ assignee_agent_uid: activeAgent.uid })).items)).toEqual([made.c.uid]);
    expect((await list({ assignee_user_uid: p.orgB.member.userUid })).items).toEqual([]);
    expect(uids((await list({ type: 'task', priority: 'low', status: 'in_progress' })).items)).toEqual(
      uids([made.g, made.f]),
    );
  });

  it('q: case-insensitive substring of title or description, with LIKE wildcards taken literally', async () => {
    expect(uids((await data(listTasks({ q: `${T} BRAVO` }))).items)).toEqual([made.b.uid]);
    expect(uids((await list({ status: 'canceled' })).items)).toEqual([made.d.uid]);
    expect(uids((await data(listTasks({ q: '50% off' }))).items)).toEqual([made.d.uid]);
    expect((await data(listTasks({ q: '50%off' }))).items).toEqual([]);
    expect(uids((await data(listTasks({ q: `${T} under_score` }))).items)).toEqual([made.f.uid]);
    expect((await data(listTasks({ q: `${T} under%` }))).items).toEqual([]);
    expect((await data(listTasks({ q: `${T}\\` }))).items).toEqual([]);
  });

  it('sort: + ascending, - descending on created_at, updated_at, due_date, priority (urgency), status (workflow)', async () => {
    const order = async (sort: string) => uids((await list({ sort })).items);
    expect(await order('+created_at')).toEqual(
      uids([made.a, made.b, made.c, made.d, made.e, made.f, made.g]),
    );
    expect(await order('created_at')).toEqual(await order('+created_at'));
    expect(await order('-created_at')).toEqual(
      uids([made.g, made.f, made.e, made.d, made.c, made.b, made.a]),
    );
    expect((await order('-updated_at'))[0]).toBe(made.a.uid);
    expect((await order('+updated_at'))[6]).toBe(made.a.uid);
    // Tasks without a due date come last either way.
    expect((await order('+due_date')).slice(0, 3)).toEqual(uids([made.c, made.d, made.a]));
    expect((await order('-due_date')).slice(0, 3)).toEqual(uids([made.a, made.d, made.c]));
    const priorities = async (sort: string) => (await list({ sort })).items.map((i: any) => i.priority);
    expect(await priorities('+priority')).toEqual(['urgent', 'high', 'high', 'medium', 'low', 'low', 'low']);
    expect(await priorities('-priority')).toEqual(['low', 'low', 'low', 'medium', 'high', 'high', 'urgent']);
    const statuses = async (sort: string) => (await list({ sort })).items.map((i: any) => i.status);
    expect(await statuses('+status')).toEqual([
      'todo',
      'todo',
      'in_progress',
      'in_progress',
      'in_review',
      'done',
      'canceled',
    ]);
    expect(await statuses('-status')).toEqual([
      'canceled',
      'done',
      'in_review',
      'in_progress',
      'in_progress',
      'todo',
      'todo',
    ]);
  });

  it('a "+" sent unencoded (arriving as a space) still sorts ascending', async () => {
    const res = await call(t.app, 'GET', `/api/work-tasks?q=${T}&sort=+created_at`, {
      key: p.orgA.admin.key,
    });
    expect(res.status, res.raw).toBe(200);
    expect(uids(res.body.data.items)[0]).toBe(made.a.uid);
  });

  it('paging: page and per_page with _meta', async () => {
    const second = await list({ per_page: 3, page: 2, sort: '+created_at' });
    expect(uids(second.items)).toEqual(uids([made.d, made.e, made.f]));
    expect(second._meta).toEqual({ page: 2, per_page: 3, total_pages: 3, total_items: 7 });
    const beyond = await list({ per_page: 3, page: 4 });
    expect(beyond.items).toEqual([]);
    expect(beyond._meta.total_items).toBe(7);
  });

  it('400 for an unknown status, priority, type or sort, a bad uuid or per_page out of range', async () => {
    const queries: Record<string, string | number>[] = [
      { status: 'blocked' },
      { status: 'todo,blocked' },
      { priority: 'critical' },
      { type: 'email' },
      { sort: 'title' },
      { sort: '-' },
      { sort: '*due_date' },
      { assignee_user_uid: 'nobody' },
      { assignee_agent_uid: '123' },
      { per_page: 0 },
      { per_page: 101 },
      { page: 0 },
      { q: 'x'.repeat(201) },
    ];
    for (const query of queries) {
      const res = await listTasks(query);
      expectErrorBody(res, 400);
    }
  });

  commonRouteChecks(
    'GET /api/work-tasks',
    {
      method: 'GET',
      url: () => '/api/work-tasks',
      scope: 'work_tasks:read',
      foreignOrganizationUrl: ({ p }) => `/api/work-tasks?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

describe('GET /api/work-tasks/{uid}', () => {
  it('a hil_approval task: the full shape of interface 2.8, origin the agent with its trigger type', async () => {
    const task = await raised(activeAgent.uid, {
      description: 'Reminder 2',
      priority: 'high',
      due_date: '2031-01-02',
      assign_to: { type: 'agent', agent_uid: pausedAgent.uid },
      context_entities: [{ entity_type: 'invoice', entity_uid: apInvoice.uid }],
    });
    const res = await getTask(task.uid);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data).toEqual({
      uid: task.uid,
      organization_uid: p.orgA.uid,
      title: 'Send the reminder?',
      type: 'hil_approval',
      status: 'todo',
      priority: 'high',
      due_date: '2031-01-02',
      description: 'Reminder 2',
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      assign_to: { type: 'agent', agent_uid: pausedAgent.uid, name: 'Sleeper', avatar_url: null },
      origin: {
        type: 'agent',
        agent_uid: activeAgent.uid,
        agent_name: 'Collector',
        avatar_url: null,
        trigger_type: 'email_received',
      },
      // A payable's counterparty is its vendor.
      context_entities: [
        {
          entity_type: 'invoice',
          entity_uid: apInvoice.uid,
          invoice_number: 'AP-88',
          counterparty_name: 'Vendor Inc',
        },
      ],
      change_log: [
        {
          at: expect.stringMatching(ISO),
          by_name: 'Collector',
          by_type: 'agent',
          action: 'created',
          details: null,
        },
      ],
      reasoning: 'AR-77 is 12 days overdue',
      tool_args: EMAIL_ARGS,
      args_revision: 1,
      trigger: TRIGGER,
      run_uid: null,
      resolution: null,
      resolved_at: null,
      resolved_by: null,
      resolution_note: null,
      // No approval policy in this organization: today's rules, no deadline.
      approval_policy: null,
      approvals: [],
      expires_at: null,
      escalated_at: null,
      response: null,
    });
    expect(res.body.data).toEqual(task);
  });

  it('needs no organization_uid: a member of the organization reads it; a party entry carries the name', async () => {
    const task = await createTask({
      title: 'With party',
      context_entities: [{ entity_type: 'party', entity_uid: vendor.uid }],
    });
    const res = await getTask(task.uid, p.orgA.member.key);
    expect(res.status).toBe(200);
    expect(res.body.data.context_entities).toEqual([
      { entity_type: 'party', entity_uid: vendor.uid, name: 'Vendor Inc' },
    ]);
  });

  it('hydrated names follow renames of the party', async () => {
    const party = await post(p.orgA.admin.key, '/api/parties', { name: 'Old Name', role: 'client' });
    const task = await createTask({
      title: 'rename',
      context_entities: [{ entity_type: 'party', entity_uid: party.uid }],
    });
    await data(
      call(t.app, 'PATCH', `/api/parties/${party.uid}`, {
        key: p.orgA.admin.key,
        body: { name: 'New Name' },
      }),
    );
    expect((await getTask(task.uid)).body.data.context_entities[0].name).toBe('New Name');
  });

  it("400 for a uid that is not a uuid; 404 for an unknown one and for another organization's task", async () => {
    expectErrorBody(await getTask('nope'), 400);
    expectErrorBody(await getTask(MISSING), 404, 'not_found');
    const foreign = expectErrorBody(await getTask(foreignTask), 404, 'not_found');
    expect(JSON.stringify(foreign)).not.toContain('B secret');
  });

  commonRouteChecks(
    'GET /api/work-tasks/{uid}',
    {
      method: 'GET',
      url: async () => `/api/work-tasks/${(await createTask({ title: 'route' })).uid}`,
      scope: 'work_tasks:read',
      foreignUrl: () => `/api/work-tasks/${foreignTask}`,
    },
    () => ({ t, p }),
  );
});

describe('PATCH /api/work-tasks/{uid} on a task', () => {
  it('each field changes alone and logs one entry with {from, to}; the others stay as they were', async () => {
    const task = await createTask({ title: 'Original', description: 'd0', due_date: '2030-01-01' });
    const steps: [Record<string, unknown>, string, unknown, unknown][] = [
      [{ title: 'Renamed' }, 'title_changed', 'Original', 'Renamed'],
      [{ description: 'd1' }, 'description_changed', 'd0', 'd1'],
      [{ description: '' }, 'description_changed', 'd1', ''],
      [{ priority: 'urgent' }, 'priority_changed', 'medium', 'urgent'],
      [{ status: 'in_progress' }, 'status_changed', 'todo', 'in_progress'],
      [{ due_date: '2030-12-31' }, 'due_date_changed', '2030-01-01', '2030-12-31'],
      [{ due_date: null }, 'due_date_changed', '2030-12-31', null],
    ];
    let previous = task;
    for (const [body, action, from, to] of steps) {
      const res = await patchTask(task.uid, body);
      expect(res.status, res.raw).toBe(200);
      expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
      const now = res.body.data;
      const [field] = Object.keys(body);
      expect(now).toEqual({
        ...previous,
        [field!]: to,
        updated_at: expect.stringMatching(ISO),
        change_log: [
          ...previous.change_log,
          {
            at: expect.stringMatching(ISO),
            by_name: ADMIN_NAME,
            by_type: 'user',
            action,
            details: { from, to },
          },
        ],
      });
      expect(Date.parse(now.updated_at)).toBeGreaterThanOrEqual(Date.parse(previous.updated_at));
      expect((await getTask(task.uid)).body.data).toEqual(now);
      previous = now;
    }
  });

  it('several fields in one PATCH: one entry each; a field sent with its current value logs nothing', async () => {
    const task = await createTask({ title: 'Multi', priority: 'low' });
    const now = await data(patchTask(task.uid, { title: 'Multi', priority: 'high', status: 'done' }));
    expect(now.change_log.map((c: any) => [c.action, c.details])).toEqual([
      ['created', null],
      ['priority_changed', { from: 'low', to: 'high' }],
      ['status_changed', { from: 'todo', to: 'done' }],
    ]);
    const same = await data(patchTask(task.uid, { title: 'Multi', priority: 'high' }));
    expect(same.change_log).toHaveLength(3);
    expect(same.updated_at).toBe(now.updated_at);
    const empty = await data(patchTask(task.uid, {}));
    expect(empty).toEqual(same);
  });

  it('status moves from any state to any other, each one logged', async () => {
    const task = await createTask({ title: 'Moves' });
    const path = ['done', 'todo', 'canceled', 'in_review', 'in_progress', 'done', 'canceled', 'todo'];
    let from = 'todo';
    for (const status of path) {
      const now = await data(patchTask(task.uid, { status }));
      expect(now.status).toBe(status);
      expect(now.change_log.at(-1)).toMatchObject({
        action: 'status_changed',
        details: { from, to: status },
      });
      from = status;
    }
  });

  it('title: 256 characters, empty or blank → 422 and unchanged; 255 is fine; it is trimmed', async () => {
    const task = await createTask({ title: 'Keep me' });
    for (const title of ['t'.repeat(256), '', '  \t ']) {
      const body = expectErrorBody(await patchTask(task.uid, { title }), 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toMatch(/title/);
    }
    expect((await getTask(task.uid)).body.data).toEqual(task);
    expect((await data(patchTask(task.uid, { title: 'u'.repeat(255) }))).title).toHaveLength(255);
    expect((await data(patchTask(task.uid, { title: '  spaced  ' }))).title).toBe('spaced');
  });

  it('422 for an unknown priority, status or field, or a malformed due date; nothing changes', async () => {
    const task = await createTask({ title: 'Strict' });
    for (const body of [
      { priority: 'p0' },
      { status: 'blocked' },
      { status: null },
      { due_date: 'tomorrow' },
      { type: 'hil_approval' },
      { origin: { type: 'agent' } },
    ])
      expectErrorBody(await patchTask(task.uid, body), 422, 'validation_failed');
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });

  it('assign_to: a member, an agent; null or {} unassigns; each logged as assigned/unassigned', async () => {
    const task = await createTask({ title: 'Assign me' });
    const toUser = await data(
      patchTask(task.uid, { assign_to: { type: 'user', user_uid: p.orgA.member.userUid } }),
    );
    expect(toUser.assign_to).toEqual({
      type: 'user',
      user_uid: p.orgA.member.userUid,
      full_name: MEMBER_NAME,
      avatar_url: null,
    });
    expect(toUser.change_log.at(-1)).toMatchObject({
      action: 'assigned',
      details: { from: null, to: { type: 'user', user_uid: p.orgA.member.userUid } },
    });

    const toAgent = await data(
      patchTask(task.uid, { assign_to: { type: 'agent', agent_uid: activeAgent.uid } }),
    );
    expect(toAgent.assign_to).toEqual({
      type: 'agent',
      agent_uid: activeAgent.uid,
      name: 'Collector',
      avatar_url: null,
    });
    expect(toAgent.change_log.at(-1)).toMatchObject({
      action: 'assigned',
      details: {
        from: { type: 'user', user_uid: p.orgA.member.userUid },
        to: { type: 'agent', agent_uid: activeAgent.uid },
      },
    });

    const cleared = await data(patchTask(task.uid, { assign_to: null }));
    expect(cleared.assign_to).toBeNull();
    expect(cleared.change_log.at(-1)).toMatchObject({
      action: 'unassigned',
      details: { from: { type: 'agent', agent_uid: activeAgent.uid }, to: null },
    });

    // The type may be left out when the uid says it.
    const again = await data(patchTask(task.uid, { assign_to: { user_uid: p.orgA.admin.userUid } }));
    expect(again.assign_to).toMatchObject({
      type: 'user',
      user_uid: p.orgA.admin.userUid,
      full_name: ADMIN_NAME,
    });
    const emptied = await data(patchTask(task.uid, { assign_to: {} }));
    expect(emptied.assign_to).toBeNull();
    expect(emptied.change_log.at(-1).action).toBe('unassigned');
    // Unassigning an unassigned task logs nothing.
    expect((await data(patchTask(task.uid, { assign_to: null }))).change_log).toHaveLength(
      emptied.change_log.length,
    );
  });

  it('assign_to a user or agent of another organization, or a malformed one → 422 and unchanged', async () => {
    const task = await createTask({
      title: 'Guarded',
      assign_to: { type: 'user', user_uid: p.orgA.member.userUid },
    });
    for (const assign_to of [
      { type: 'user', user_uid: p.orgB.admin.userUid },
      { type: 'agent', agent_uid: foreignAgent.uid },
      { type: 'user', user_uid: MISSING },
      { type: 'user' },
      { type: 'user', agent_uid: activeAgent.uid },
      { type: 'agent', agent_uid: activeAgent.uid, user_uid: p.orgA.admin.userUid },
      { type: 'user', user_uid: 'not-a-uuid' },
    ])
      expectErrorBody(await patchTask(task.uid, { assign_to }), 422, 'validation_failed');
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });

  it('context_entities replaces the whole linked set (logged with from and to); [] clears it', async () => {
    const task = await createTask({
      title: 'Linked',
      context_entities: [
        { entity_type: 'invoice', entity_uid: arInvoice.uid },
        { entity_type: 'party', entity_uid: client.uid },
      ],
    });
    const replaced = await data(
      patchTask(task.uid, { context_entities: [{ entity_type: 'party', entity_uid: vendor.uid }] }),
    );
    expect(replaced.context_entities).toEqual([
      { entity_type: 'party', entity_uid: vendor.uid, name: 'Vendor Inc' },
    ]);
    expect(replaced.change_log.at(-1)).toMatchObject({
      action: 'context_entities_changed',
      details: {
        from: [
          { entity_type: 'invoice', entity_uid: arInvoice.uid },
          { entity_type: 'party', entity_uid: client.uid },
        ],
        to: [{ entity_type: 'party', entity_uid: vendor.uid }],
      },
    });
    expect((await getTask(task.uid)).body.data.context_entities).toEqual(replaced.context_entities);

    // Duplicates collapse; the given order is kept.
    const twice = await data(
      patchTask(task.uid, {
        context_entities: [
          { entity_type: 'invoice', entity_uid: apInvoice.uid },
          { entity_type: 'party', entity_uid: vendor.uid },
          { entity_type: 'invoice', entity_uid: apInvoice.uid },
        ],
      }),
    );
    expect(twice.context_entities.map((e: any) => e.entity_uid)).toEqual([apInvoice.uid, vendor.uid]);

    const cleared = await data(patchTask(task.uid, { context_entities: [] }));
    expect(cleared.context_entities).toEqual([]);
    expect(cleared.change_log.at(-1).action).toBe('context_entities_changed');
  });

  it('an entity of another organization → 422 naming it; nothing changes, not even fields sent with it', async () => {
    const task = await createTask({
      title: 'Atomic',
      priority: 'low',
      context_entities: [{ entity_type: 'party', entity_uid: client.uid }],
    });
    for (const foreign of [
      { entity_type: 'invoice', entity_uid: foreignInvoice },
      { entity_type: 'party', entity_uid: foreignParty },
      // The right uid under the wrong type is no entity either.
      { entity_type: 'party', entity_uid: arInvoice.uid },
    ]) {
      const res = await patchTask(task.uid, {
        title: 'Changed?',
        priority: 'urgent',
        status: 'done',
        context_entities: [{ entity_type: 'party', entity_uid: vendor.uid }, foreign],
      });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors).toEqual([
        { field: 'context_entities[1]', message: expect.stringContaining(foreign.entity_uid) },
      ]);
    }
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });

  it('resolve fields (action, tool_args, resolution_note) on a task → 422 naming them; nothing changes', async () => {
    const task = await createTask({ title: 'Not an approval' });
    const one = expectErrorBody(await patchTask(task.uid, { action: 'approve' }), 422, 'validation_failed');
    expect(one.message).toContain('action');
    expect(one.errors?.map((e) => e.field)).toEqual(['action']);
    const all = expectErrorBody(
      await patchTask(task.uid, { title: 'x', action: 'reject', tool_args: {}, resolution_note: 'n' }),
      422,
      'validation_failed',
    );
    expect(all.errors?.map((e) => e.field)).toEqual(['action', 'tool_args', 'resolution_note']);
    expect(all.message).toMatch(/action, tool_args, resolution_note/);
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });

  it('a member may update tasks of the organization; the change log names them', async () => {
    const task = await createTask({ title: 'Team task' });
    const now = await data(patchTask(task.uid, { status: 'in_progress' }, p.orgA.member.key));
    expect(now.change_log.at(-1)).toMatchObject({
      by_name: MEMBER_NAME,
      by_type: 'user',
      action: 'status_changed',
    });
  });

  it("404 for an unknown task and for another organization's task, which stays untouched", async () => {
    expectErrorBody(await patchTask(MISSING, { title: 'x' }), 404, 'not_found');
    expectErrorBody(await patchTask(foreignTask, { title: 'hijacked' }), 404, 'not_found');
    expectErrorBody(await patchTask(foreignTask, { action: 'approve' }), 404, 'not_found');
    expect((await getTask(foreignTask, p.orgB.admin.key)).body.data).toMatchObject({
      title: 'B secret',
      change_log: [{ action: 'created' }],
    });
  });

  commonRouteChecks(
    'PATCH /api/work-tasks/{uid}',
    {
      method: 'PATCH',
      url: async () => `/api/work-tasks/${(await createTask({ title: 'route' })).uid}`,
      body: () => ({ priority: 'high' }),
      scope: 'work_tasks:write',
      foreignUrl: () => `/api/work-tasks/${foreignTask}`,
    },
    () => ({ t, p }),
  );
});

describe('POST /api/agents/{uid}/approvals', () => {
  it('201: a hil_approval task, origin the agent with the trigger type, logged as created by the agent', async () => {
    const res = await raise(activeAgent.uid);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', status_code: 201, message: expect.any(String) });
    const task = res.body.data;
    expect(task).toMatchObject({
      type: 'hil_approval',
      status: 'todo',
      priority: 'medium',
      organization_uid: p.orgA.uid,
      origin: {
        type: 'agent',
        agent_uid: activeAgent.uid,
        agent_name: 'Collector',
        avatar_url: null,
        trigger_type: 'email_received',
      },
      reasoning: 'AR-77 is 12 days overdue',
      tool_args: EMAIL_ARGS,
      trigger: TRIGGER,
      resolution: null,
      change_log: [{ by_type: 'agent', by_name: 'Collector', action: 'created', details: null }],
    });
    expect(task.origin).not.toHaveProperty('user_uid');
    expect(task.origin).not.toHaveProperty('user_name');
  });

  it('run_uid names the run that raised it, and must be one of that agent’s runs', async () => {
    expectErrorBody(await raise(activeAgent.uid, { run_uid: MISSING }), 422, 'validation_failed');
  });

  it('422 without title, reasoning, tool_args or trigger, for a trigger without a type, or a foreign entity', async () => {
    for (const missing of ['title', 'reasoning', 'tool_args', 'trigger']) {
      const body: Record<string, unknown> = {
        title: 't',
        reasoning: 'r',
        tool_args: EMAIL_ARGS,
        trigger: TRIGGER,
      };
      delete body[missing];
      const res = await call(t.app, 'POST', `/api/agents/${activeAgent.uid}/approvals`, {
        key: p.orgA.admin.key,
        body,
      });
      expectErrorBody(res, 422, 'validation_failed');
    }
    expectErrorBody(await raise(activeAgent.uid, { trigger: { from: 'x' } }), 422, 'validation_failed');
    expectErrorBody(await raise(activeAgent.uid, { trigger: { type: '' } }), 422, 'validation_failed');
    expectErrorBody(await raise(activeAgent.uid, { title: ' ' }), 422, 'validation_failed');
    expectErrorBody(
      await raise(activeAgent.uid, {
        context_entities: [{ entity_type: 'invoice', entity_uid: foreignInvoice }],
      }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await raise(activeAgent.uid, { assign_to: { type: 'user', user_uid: p.orgB.admin.userUid } }),
      422,
      'validation_failed',
    );
  });

  it('an Idempotency-Key makes a retried raise safe: the same task comes back, only one is written', async () => {
    const title = tag();
    const send = () =>
      call(t.app, 'POST', `/api/agents/${activeAgent.uid}/approvals`, {
        key: p.orgA.admin.key,
        headers: { 'idempotency-key': `raise-${title}` },
        body: { title, reasoning: 'r', tool_args: EMAIL_ARGS, trigger: TRIGGER },
      });
    const first = await send();
    const again = await send();
    expect(first.status, first.raw).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.data.uid).toBe(first.body.data.uid);
    expect((await data(listTasks({ q: title })))._meta.total_items).toBe(1);
  });

  it('404 for an unknown agent and for an agent of another organization', async () => {
    expectErrorBody(await raise(MISSING), 404, 'not_found');
    expectErrorBody(await raise(foreignAgent.uid), 404, 'not_found');
  });

  it('one service function raises approvals for the HTTP door and for our own agents alike', async () => {
    const viaHttp = await raised(activeAgent.uid, {
      context_entities: [{ entity_type: 'invoice', entity_uid: arInvoice.uid }],
    });
    const agent = (await findAgent(t.db, [p.orgA.uid], activeAgent.uid))!;
    const row = await t.db.transaction((tx) =>
      raiseApproval(tx, {
        agent,
        title: 'Send the reminder?',
        reasoning: 'AR-77 is 12 days overdue',
        toolArgs: EMAIL_ARGS,
        trigger: TRIGGER,
        contextEntities: [{ entity_type: 'invoice', entity_uid: arInvoice.uid }],
        origin: jobOrigin(null),
        jobs: t.deps.jobs,
      }),
    );
    const viaService = (await getTask(row.uid)).body.data;
    const comparable = (task: any) => ({
      ...task,
      uid: undefined,
      created_at: undefined,
      updated_at: undefined,
      change_log: task.change_log.map((c: any) => ({ ...c, at: undefined })),
    });
    expect(comparable(viaService)).toEqual(comparable(viaHttp));
    // And it resolves the same way.
    const approved = await data(patchTask(row.uid, { action: 'approve' }));
    expect(approved).toMatchObject({ status: 'done', resolution: 'approved' });
    expect(await runsOf(row.uid)).toHaveLength(1);
  });
});

describe('resolving a hil_approval (PATCH action approve | reject)', () => {
  it('approve: done, approved, resolved_at and resolved_by set, edited tool_args merged over the agent’s, logged', async () => {
    const task = await raised(activeAgent.uid);
    const before = Date.now();
    const res = await patchTask(
      task.uid,
      {
        action: 'approve',
        tool_args: { body: 'Please pay today.', cc: ['boss@client.test'] },
        resolution_note: 'Softer tone',
      },
      p.orgA.member.key,
    );
    const after = Date.now();
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    const now = res.body.data;
    expect(now).toEqual({
      ...task,
      status: 'done',
      updated_at: expect.stringMatching(ISO),
      tool_args: { ...EMAIL_ARGS, body: 'Please pay today.', cc: ['boss@client.test'] },
      // The edit is a new version of the arguments.
      args_revision: 2,
      resolution: 'approved',
      resolved_at: expect.stringMatching(ISO),
      resolved_by: {
        type: 'user',
        user_uid: p.orgA.member.userUid,
        user_name: MEMBER_NAME,
        avatar_url: null,
      },
      resolution_note: 'Softer tone',
      change_log: [
        ...task.change_log,
        {
          at: expect.stringMatching(ISO),
          by_name: MEMBER_NAME,
          by_type: 'user',
          action: 'resolved',
          details: expect.objectContaining({
            action: 'approve',
            resolution: 'approved',
            resolution_note: 'Softer tone',
          }),
        },
      ],
    });
    // Resolved while the request ran.
    expect(Date.parse(now.resolved_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(now.resolved_at)).toBeLessThanOrEqual(after);
    // The active agent's follow-up run: no warning.
    expect(now).not.toHaveProperty('_warning');
    // Stored, not only answered.
    expect((await getTask(task.uid)).body.data).toEqual(now);
  });

  it('approve without edits keeps the agent’s tool_args; resolution_note defaults to null', async () => {
    const task = await raised(activeAgent.uid);
    const now = await data(patchTask(task.uid, { action: 'approve' }));
    expect(now.tool_args).toEqual(EMAIL_ARGS);
    expect(now.resolution_note).toBeNull();
    expect(now.change_log.at(-1)).toMatchObject({
      action: 'resolved',
      details: { action: 'approve', resolution: 'approved', resolution_note: null },
    });
  });

  it('reject: canceled, rejected, resolved_* set, logged; a follow-up run tells the agent', async () => {
    const task = await raised(activeAgent.uid);
    const runsBefore = (await agentNow(activeAgent.uid)).runs_count;
    const now = await data(patchTask(task.uid, { action: 'reject', resolution_note: 'Not now' }));
    expect(now).toMatchObject({
      status: 'canceled',
      resolution: 'rejected',
      resolved_at: expect.stringMatching(ISO),
      resolved_by: { type: 'user', user_uid: p.orgA.admin.userUid, user_name: ADMIN_NAME, avatar_url: null },
      resolution_note: 'Not now',
      tool_args: EMAIL_ARGS,
    });
    expect(now.change_log.at(-1)).toMatchObject({
      action: 'resolved',
      by_name: ADMIN_NAME,
      details: { action: 'reject', resolution: 'rejected', resolution_note: 'Not now' },
    });
    expect(now).not.toHaveProperty('_warning');
    // The agent learns of the rejection: a follow-up run whose input carries the decision.
    const runs = await runsOf(task.uid);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      triggerType: 'approval',
      trigger: { type: 'approval', task_uid: task.uid, original_trigger: TRIGGER },
      input: {
        task_uid: task.uid,
        decision: {
          action: 'reject',
          tool_args: EMAIL_ARGS,
          edited: false,
          note: 'Not now',
          feedback: null,
          decided_by: { user_uid: p.orgA.admin.userUid, name: ADMIN_NAME },
          decided_at: now.resolved_at,
        },
      },
      requestedByUid: p.orgA.admin.userUid,
    });
    expect((await agentNow(activeAgent.uid)).runs_count).toBe(runsBefore + 1);
  });

  it('reject without a reason works (resolution_note is optional, interface 4.5); a blank one is stored as null', async () => {
    for (const body of [{ action: 'reject' }, { action: 'reject', resolution_note: '  \n ' }]) {
      const task = await raised(activeAgent.uid);
      const now = await data(patchTask(task.uid, body));
      expect(now).toMatchObject({ status: 'canceled', resolution: 'rejected', resolution_note: null });
      expect(now.change_log.at(-1)).toMatchObject({
        action: 'resolved',
        details: { action: 'reject', resolution: 'rejected', resolution_note: null },
      });
      const runs = await runsOf(task.uid);
      expect(runs).toHaveLength(1);
      expect(runs[0]!.input).toMatchObject({ decision: { action: 'reject', note: null } });
    }
  });

  it('reject with edited tool_args → 422 (edits only go with an approval)', async () => {
    const task = await raised(activeAgent.uid);
    expectErrorBody(
      await patchTask(task.uid, { action: 'reject', tool_args: { body: 'x' } }),
      422,
      'validation_failed',
    );
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });

  it('a second resolution → 409 already_resolved, whatever it asks; nothing changes', async () => {
    const approved = await raised(activeAgent.uid);
    const first = await data(patchTask(approved.uid, { action: 'approve' }));
    for (const body of [
      { action: 'approve' },
      { action: 'reject', resolution_note: 'Too late' },
      { action: 'approve', tool_args: { body: 'late edit' } },
      { action: 'respond', feedback: 'Shorter, please' },
    ]) {
      expectErrorBody(await patchTask(approved.uid, body), 409, 'already_resolved');
    }
    expect((await getTask(approved.uid)).body.data).toEqual(first);
    expect(await runsOf(approved.uid)).toHaveLength(1);

    const rejected = await raised(activeAgent.uid);
    const firstReject = await data(patchTask(rejected.uid, { action: 'reject', resolution_note: 'No' }));
    const late = expectErrorBody(
      await patchTask(rejected.uid, { action: 'approve' }),
      409,
      'already_resolved',
    );
    // Times as people read them in messages ("2026-11-26 10:03 UTC"), not raw ISO.
    expect(late.message).toMatch(
      /^This approval was already rejected by .+ at \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/,
    );
    expect((await getTask(rejected.uid)).body.data).toEqual(firstReject);
    expect(await runsOf(rejected.uid)).toHaveLength(1);
  });

  it('the resolve schema is its only body: update fields → 422 naming them; action is required', async () => {
    const task = await raised(activeAgent.uid);
    const update = expectErrorBody(
      await patchTask(task.uid, { title: 'x', status: 'done' }),
      422,
      'validation_failed',
    );
    expect(update.errors?.map((e) => e.field)).toEqual(['title', 'status']);
    expect(update.message).toContain('title, status');
    expectErrorBody(
      await patchTask(task.uid, { action: 'approve', priority: 'high' }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await patchTask(task.uid, { action: 'approve', assign_to: null }),
      422,
      'validation_failed',
    );
    const missing = expectErrorBody(await patchTask(task.uid, {}), 422, 'validation_failed');
    expect(missing.errors?.[0]?.field).toBe('action');
    expectErrorBody(await patchTask(task.uid, { resolution_note: 'just a note' }), 422, 'validation_failed');
    expectErrorBody(await patchTask(task.uid, { tool_args: { body: 'x' } }), 422, 'validation_failed');
    expectErrorBody(await patchTask(task.uid, { action: 'maybe' }), 422, 'validation_failed');
    expectErrorBody(
      await patchTask(task.uid, { action: 'approve', tool_args: 'body' }),
      422,
      'validation_failed',
    );
    expect((await getTask(task.uid)).body.data).toEqual(task);
  });
});

describe('the follow-up run an approval requests', () => {
  it('active agent: one pending run (trigger_type approval, linked to the task) and its pg-boss job; runs_count + 1', async () => {
    const task = await raised(activeAgent.uid);
    const before = await agentNow(activeAgent.uid);
    await data(patchTask(task.uid, { action: 'approve', tool_args: { body: 'edited' } }));
    const runs = await runsOf(task.uid);
    expect(runs).toHaveLength(1);
    const run = runs[0]!;
    expect(run).toMatchObject({
      organizationUid: p.orgA.uid,
      agentUid: activeAgent.uid,
      status: 'pending',
      triggerType: 'approval',
      taskUid: task.uid,
      requestedByUid: p.orgA.admin.userUid,
      workflowId: expect.any(String),
      startedOn: null,
    });
    expect(run.agentVersionUid).toMatch(UUID);
    expect(run.trigger).toMatchObject({ type: 'approval', task_uid: task.uid });
    const job = await t.deps.jobs.getJob(AGENT_RUN_QUEUE, run.workflowId!);
    expect(job).toBeTruthy();
    expect(job!.data).toEqual({ run_uid: run.uid, organization_uid: p.orgA.uid });
    expect((await agentNow(activeAgent.uid)).runs_count).toBe(before.runs_count + 1);
  });

  it('paused or draft agent: the approval stands, data._warning says why, and no run is written', async () => {
    for (const agent of [pausedAgent, draftAgent]) {
      const task = await raised(agent.uid);
      const res = await patchTask(task.uid, { action: 'approve' });
      expect(res.status, res.raw).toBe(200);
      const now = res.body.data;
      expect(now).toMatchObject({
        status: 'done',
        resolution: 'approved',
        resolved_by: { user_uid: p.orgA.admin.userUid },
      });
      expect(now._warning).toEqual(expect.any(String));
      expect(now._warning).toContain(agent.status);
      expect(now._warning).toContain(agent.name);
      expect(await runsOf(task.uid)).toEqual([]);
      expect((await agentNow(agent.uid)).runs_count).toBe(0);
      // The warning belongs to that answer only; the stored approval is intact.
      const stored = (await getTask(task.uid)).body.data;
      expect(stored).not.toHaveProperty('_warning');
      expect(stored).toMatchObject({ status: 'done', resolution: 'approved' });
      expectErrorBody(await patchTask(task.uid, { action: 'approve' }), 409, 'already_resolved');
    }
  });

  it('run row, job and resolution commit together: a failure right after the enqueue leaves none of them', async () => {
    const task = await raised(activeAgent.uid);
    const jobCount = async () => {
      const result = await t.db.execute(
        sql`select count(*)::int as n from pgboss.job where name = ${AGENT_RUN_QUEUE}`,
      );
      return (result as unknown as { rows: { n: number }[] }).rows[0]!.n;
    };
    const jobsBefore = await jobCount();
    const jobs = t.deps.jobs;
    const original = jobs.enqueue.bind(jobs);
    const spy = vi.spyOn(jobs, 'enqueue').mockImplementationOnce(async (...args) => {
      await original(...args);
      throw new Error('crash after the job was written');
    });
    try {
      expectErrorBody(await patchTask(task.uid, { action: 'approve' }), 500, 'internal_error');
    } finally {
      spy.mockRestore();
    }
    expect(await jobCount()).toBe(jobsBefore);
    expect(await runsOf(task.uid)).toEqual([]);
    expect((await getTask(task.uid)).body.data).toEqual(task);
    // Nothing half-done blocks the retry.
    expect((await data(patchTask(task.uid, { action: 'approve' }))).resolution).toBe('approved');
    expect(await runsOf(task.uid)).toHaveLength(1);
    expect(await jobCount()).toBe(jobsBefore + 1);
  });

  it('an agent activated after raising the approval gets its run when it is approved', async () => {
    const agent = await post(p.orgA.admin.key, '/api/agents', { name: 'Late riser', status: 'paused' });
    const task = await raised(agent.uid);
    await data(
      call(t.app, 'PATCH', `/api/agents/${agent.uid}`, { key: p.orgA.admin.key, body: { status: 'active' } }),
    );
    const now = await data(patchTask(task.uid, { action: 'approve' }));
    expect(now).not.toHaveProperty('_warning');
    expect(await runsOf(task.uid)).toHaveLength(1);
  });
});

describe('concurrent resolutions', () => {
  it('ten approvals at once: exactly one 200 and nine 409; one resolution, one change-log entry, one run', async () => {
    const task = await raised(activeAgent.uid);
    const before = await agentNow(activeAgent.uid);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        patchTask(
          task.uid,
          { action: 'approve', resolution_note: `note ${i}` },
          i % 2 === 0 ? p.orgA.admin.key : p.orgA.member.key,
        ),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of results.filter((r) => r.status === 409)) expectErrorBody(r, 409, 'already_resolved');
    const winner = results.find((r) => r.status === 200)!.body.data;

    const stored = (await getTask(task.uid)).body.data;
    expect(stored).toEqual(winner);
    expect(stored.change_log.filter((c: any) => c.action === 'resolved')).toHaveLength(1);
    expect(stored.change_log.at(-1).details.resolution_note).toBe(stored.resolution_note);
    expect(await runsOf(task.uid)).toHaveLength(1);
    expect((await agentNow(activeAgent.uid)).runs_count).toBe(before.runs_count + 1);
    const [revised] = await t.db
      .select({ total: count() })
      .from(workTasks)
      .where(and(eq(workTasks.uid, task.uid), eq(workTasks.revision, 2)));
    expect(revised?.total).toBe(1);
  });

  it('fifty bare rejections and approvals at once: exactly one 200, 49 × 409 already_resolved, never 422', async () => {
    const task = await raised(activeAgent.uid);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        patchTask(
          task.uid,
          i % 5 === 0 ? { action: 'approve' } : { action: 'reject' },
          i % 2 === 0 ? p.orgA.admin.key : p.orgA.member.key,
        ),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(49);
    for (const r of refused) expectErrorBody(r, 409, 'already_resolved');
    const stored = (await getTask(task.uid)).body.data;
    expect(stored.change_log.filter((c: any) => c.action === 'resolved')).toHaveLength(1);
    expect(await runsOf(task.uid)).toHaveLength(1);
  });

  it('approvals and rejections racing: one wins, and one run carries the decision that won', async () => {
    const task = await raised(activeAgent.uid);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        patchTask(
          task.uid,
          i % 2 === 0 ? { action: 'approve' } : { action: 'reject', resolution_note: `No (${i})` },
        ),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(9);
    const stored = (await getTask(task.uid)).body.data;
    expect(stored.change_log.filter((c: any) => c.action === 'resolved')).toHaveLength(1);
    const runs = await runsOf(task.uid);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.input).toMatchObject({
      decision: { action: stored.resolution === 'approved' ? 'approve' : 'reject' },
    });
  });
});
