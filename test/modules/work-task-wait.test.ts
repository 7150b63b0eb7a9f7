import http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { engine } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';

/**
 * `GET /api/work-tasks/{uid}?wait=N` (issue 21, docs/work-tasks.md#waiting-for-a-decision): an outside
 * agent runtime holds the request until its approval is decided. The app re-reads a held task only every
 * 60 s without a notification (TASK_WAIT_RECHECK_S), far beyond these tests' timeout: a test that passes
 * was woken by the decision's notification, not by the safety net.
 */

let t: TestApp;
let p: Principals;
let agentUid: string;
let foreignTask: string;

const path = (uid: string) => `/api/work-tasks/${uid}`;

async function raise(key: string, agent: string): Promise<string> {
  const res = await call(t.app, 'POST', `/api/agents/${agent}/approvals`, {
    key,
    body: {
      title: 'Send a reminder',
      reasoning: 'It is overdue',
      tool_args: { type: 'send_email', subject: 'Overdue', body: 'Please pay.', recipients: ['ap@x.test'] },
      trigger: { type: 'manual' },
    },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.uid as string;
}

const decide = (uid: string, action: 'approve' | 'reject' = 'approve') =>
  call(t.app, 'PATCH', path(uid), {
    key: p.orgA.member.key,
    body: { action, resolution_note: action === 'reject' ? 'Not now' : undefined },
  });

beforeAll(async () => {
  t = await createTestApp({ env: { TASK_WAIT_RECHECK_S: '60', RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const agent = await call(t.app, 'POST', '/api/agents', {
    key: p.orgA.admin.key,
    body: { name: 'Waiter', status: 'active' },
  });
  agentUid = agent.body.data.uid;
  const foreignAgent = await call(t.app, 'POST', '/api/agents', {
    key: p.orgB.admin.key,
    body: { name: 'Elsewhere', status: 'active' },
  });
  foreignTask = await raise(p.orgB.admin.key, foreignAgent.body.data.uid);
  await until(async () => t.app.taskWaiters.isLive, 'the waiters to listen');
});
afterAll(async () => {
  await t?.close();
});

describe('GET /api/work-tasks/{uid}?wait=N', () => {
  it('answers as soon as the approval is decided, with the decision', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const held = call(t.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');
    expect((await decide(uid)).status).toBe(200);
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ uid, status: 'done', resolution: 'approved' });
    expect(res.body.data.resolved_by).toMatchObject({ user_uid: p.orgA.member.userUid });
    expect(t.app.taskWaiters.size).toBe(0);
  });

  it('a rejection wakes it too', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const held = call(t.app, 'GET', path(uid), { key: p.orgA.member.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');
    await decide(uid, 'reject');
    expect((await held).body.data).toMatchObject({ resolution: 'rejected', resolution_note: 'Not now' });
  });

  it('a person responding with feedback answers it (the approval still open, its response set)', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const held = call(t.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');
    const responded = await call(t.app, 'PATCH', path(uid), {
      key: p.orgA.member.key,
      body: { action: 'respond', feedback: 'Mention the payment plan' },
    });
    expect(responded.status, responded.raw).toBe(200);
    const res = await held;
    expect(res.body.data).toMatchObject({
      uid,
      resolution: null,
      status: 'in_progress',
      response: { feedback: 'Mention the payment plan', user_uid: p.orgA.member.userUid },
    });

    // A response already pending when the wait begins does not end it: the decision does.
    const again = call(t.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held again');
    expect((await decide(uid)).status).toBe(200);
    expect((await again).body.data).toMatchObject({ resolution: 'approved', response: null });
  });

  it('a change that decides nothing (another task decided) does not answer it', async () => {
    const waiting = await raise(p.orgA.admin.key, agentUid);
    const other = await raise(p.orgA.admin.key, agentUid);
    const held = call(t.app, 'GET', path(waiting), { key: p.orgA.admin.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');
    await decide(other);
    // Still held after the other task's notification has come and gone.
    const probe = await raise(p.orgA.admin.key, agentUid);
    const probeHeld = call(t.app, 'GET', path(probe), { key: p.orgA.admin.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 2, 'both requests to be held');
    await decide(probe);
    await probeHeld;
    expect(t.app.taskWaiters.size).toBe(1);
    await decide(waiting);
    expect((await held).body.data.resolution).toBe('approved');
  });

  it('answers the pending approval once the wait has passed', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const res = await call(t.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait: 1 } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ uid, status: 'todo', resolution: null });
    expect(t.app.taskWaiters.size).toBe(0);
  });

  it('answers at once for a decided approval, a plain task and wait=0', async () => {
    const decided = await raise(p.orgA.admin.key, agentUid);
    await decide(decided);
    const task = await call(t.app, 'POST', '/api/work-tasks', {
      key: p.orgA.admin.key,
      body: { title: 'Call the client' },
    });
    const pending = await raise(p.orgA.admin.key, agentUid);
    // With wait=60 any of these that waited would outlast the test's timeout.
    for (const [uid, wait] of [
      [decided, 60],
      [task.body.data.uid as string, 60],
      [pending, 0],
    ] as const) {
      const res = await call(t.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait } });
      expect(res.status).toBe(200);
      expect(res.body.data.uid).toBe(uid);
    }
  });

  it('another organization’s task is 404 at once, never held', async () => {
    const res = await call(t.app, 'GET', path(foreignTask), { key: p.orgA.admin.key, query: { wait: 60 } });
    expectErrorBody(res, 404, 'not_found');
    expect(t.app.taskWaiters.size).toBe(0);
  });

  it('400 for a wait that is not a whole number of seconds from 0 to 60', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    for (const wait of ['61', '-1', '1.5', 'soon']) {
      const res = await call(t.app, 'GET', `${path(uid)}?wait=${wait}`, { key: p.orgA.admin.key });
      expectErrorBody(res, 400, 'invalid_parameter');
    }
  });

  it('403 without work_tasks:read, 401 without a key, whatever the wait', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const key = await p.keyWithScopes(['invoices:read']);
    expectErrorBody(await call(t.app, 'GET', path(uid), { key, query: { wait: 60 } }), 403, 'missing_scope');
    expectErrorBody(await call(t.app, 'GET', path(uid), { query: { wait: 60 } }), 401);
  });

  it('a client that goes away stops being waited for', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const request = http.get(`${address}${path(uid)}?wait=60`, {
      headers: { authorization: `Bearer ${p.orgA.admin.key}` },
    });
    request.on('error', () => undefined);
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');
    request.destroy();
    await until(async () => t.app.taskWaiters.size === 0, 'the wait to end with its client');
  });

  it('a stopping server answers what it holds at once, the approval still pending', async () => {
    const other = await secondInstance(t);
    let closed = false;
    try {
      await until(async () => other.app.taskWaiters.isLive, 'the second instance to listen');
      const uid = await raise(p.orgA.admin.key, agentUid);
      const held = call(other.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait: 60 } });
      await until(async () => other.app.taskWaiters.size === 1, 'the request to be held');
      const closing = other.close();
      closed = true;
      const res = await held;
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ uid, resolution: null });
      await closing;
    } finally {
      if (!closed) await other.close();
    }
  });

  it.skipIf(engine !== 'postgres')('a decision made by another process wakes it', async () => {
    const uid = await raise(p.orgA.admin.key, agentUid);
    const held = call(t.app, 'GET', path(uid), { key: p.orgA.admin.key, query: { wait: 60 } });
    await until(async () => t.app.taskWaiters.size === 1, 'the request to be held');
    // Another process: a connection of its own, outside this process's pool.
    const pool = t.database.pool as unknown as { options: { connectionString: string } };
    const outside = new pg.Client({ connectionString: pool.options.connectionString });
    await outside.connect();
    try {
      await outside.query(
        `update work_tasks set status = 'done', resolution = 'approved', resolved_at = now() where uid = $1`,
        [uid],
      );
    } finally {
      await outside.end();
    }
    expect((await held).body.data).toMatchObject({ uid, resolution: 'approved' });
  });
});
