import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { FakeLlm, type LlmRequest } from '../../../test/helpers/fake-llm.ts';
import { call } from '../../../test/helpers/http.ts';
import { createPrincipals, type Principals } from '../../../test/helpers/principals.ts';
import { until } from '../../../test/helpers/until.ts';
import { runGuardedLoop, type Tool } from '../examples/guarded-tool-loop.ts';
import {
  ApprovalTimeoutError,
  createRemitClient,
  findFollowUpRun,
  requireApproval,
  type RemitClient,
  type RequireApprovalOptions,
} from '../src/index.ts';

/**
 * `requireApproval()` against a live Remit over real HTTP: it raises the approval, waits on the
 * long-poll, and answers the person's decision (docs/client.md#guarding-a-tool-with-an-approval). A
 * person decides through the API, as the console does, while the client waits.
 */

let t: TestApp;
let p: Principals;
let remit: RemitClient;
let agentUid: string;
const llm = new FakeLlm();

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000', TASK_WAIT_RECHECK_S: '60' } });
  p = await createPrincipals(t);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  remit = createRemitClient({
    baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
    apiKey: p.orgA.admin.key,
  });
  agentUid = (await remit.POST('/api/agents', { body: { name: 'Refund bot', status: 'active' } })).data.uid;
  await llm.start();
});
afterAll(async () => {
  await llm.close();
  await t?.close();
});

const proposal = (extra: Partial<RequireApprovalOptions> = {}): RequireApprovalOptions => ({
  agent_uid: agentUid,
  title: 'Refund order 1042?',
  reasoning: 'Damaged on arrival',
  tool_args: { type: 'refund', order: '1042', amount_cents: 3900 },
  trigger: { type: 'manual' },
  ...extra,
});

/** A person decides in the console (the same PATCH), once the client is waiting on the long-poll. */
async function personDecides(taskUid: string, body: Record<string, unknown>) {
  await until(async () => t.app.taskWaiters.size > 0, 'the client to wait');
  const res = await call(t.app, 'PATCH', `/api/work-tasks/${taskUid}`, { key: p.orgA.member.key, body });
  expect(res.status, res.raw).toBe(200);
}

describe('requireApproval', () => {
  it('answers an approval with the person’s edits merged into the arguments', async () => {
    let raised = '';
    const decision = requireApproval(remit, proposal({ onRaised: (task) => (raised = task.uid) }));
    await until(async () => raised !== '', 'the approval to be raised');
    await personDecides(raised, { action: 'approve', tool_args: { amount_cents: 2500 } });
    const result = await decision;
    expect(result).toMatchObject({
      approved: true,
      resolution: 'approved',
      toolArgs: { type: 'refund', order: '1042', amount_cents: 2500 },
      decidedBy: { user_uid: p.orgA.member.userUid },
    });
    expect(result.task.uid).toBe(raised);
  });

  it('answers a rejection with its reason, approved false', async () => {
    let raised = '';
    const decision = requireApproval(remit, proposal({ onRaised: (task) => (raised = task.uid) }));
    await until(async () => raised !== '', 'the approval to be raised');
    await personDecides(raised, { action: 'reject', resolution_note: 'Photo shows no damage' });
    expect(await decision).toMatchObject({
      approved: false,
      resolution: 'rejected',
      note: 'Photo shows no damage',
    });
  });

  it('feedback: onFeedback gets it, its revision is sent, and the wait goes on to the decision of the revision', async () => {
    let raised = '';
    const heard: { feedback: string; by: string; amount: unknown }[] = [];
    const decision = requireApproval(
      remit,
      proposal({
        onRaised: (task) => (raised = task.uid),
        onFeedback: ({ feedback, respondedBy, task }) => {
          heard.push({ feedback, by: respondedBy.user_uid, amount: task.tool_args?.amount_cents });
          return { tool_args: { amount_cents: 2000 }, summary: 'Partial refund, as asked' };
        },
      }),
    );
    await until(async () => raised !== '', 'the approval to be raised');
    await personDecides(raised, { action: 'respond', feedback: 'Refund $20 only: the box is fine' });
    const revised = await until(async () => {
      const res = await call(t.app, 'GET', `/api/work-tasks/${raised}`, { key: p.orgA.admin.key });
      return res.body.data.response === null && res.body.data.tool_args.amount_cents === 2000
        ? res.body.data
        : undefined;
    }, 'the client to revise the approval');
    expect(revised.change_log.at(-1)).toMatchObject({
      action: 'revised',
      details: { summary: 'Partial refund, as asked', feedback: 'Refund $20 only: the box is fine' },
    });
    expect(heard).toEqual([
      { feedback: 'Refund $20 only: the box is fine', by: p.orgA.member.userUid, amount: 3900 },
    ]);
    await personDecides(raised, { action: 'approve' });
    expect(await decision).toMatchObject({
      approved: true,
      toolArgs: { type: 'refund', order: '1042', amount_cents: 2000 },
    });
  });

  it('feedback without onFeedback does not end the wait: the decision does', async () => {
    let raised = '';
    const decision = requireApproval(remit, proposal({ onRaised: (task) => (raised = task.uid) }));
    await until(async () => raised !== '', 'the approval to be raised');
    await personDecides(raised, { action: 'respond', feedback: 'Is the photo attached?' });
    // Still waiting, on a fresh hold, after the response.
    await until(async () => t.app.taskWaiters.size > 0, 'the client to wait again');
    await personDecides(raised, { action: 'reject', resolution_note: 'No photo' });
    expect(await decision).toMatchObject({ approved: false, resolution: 'rejected', note: 'No photo' });
  });

  it('with the same idempotency key, a restarted caller waits for the same task and gets its decision', async () => {
    const key = `refund-${Math.random().toString(36).slice(2)}`;
    let first = '';
    const waiting = new AbortController();
    const abandoned = requireApproval(
      remit,
      proposal({ idempotencyKey: key, signal: waiting.signal, onRaised: (task) => (first = task.uid) }),
    ).catch((error: unknown) => error);
    await until(async () => first !== '' && t.app.taskWaiters.size > 0, 'the first caller to wait');
    waiting.abort();
    expect((await abandoned) as Error).toMatchObject({ name: 'AbortError' });
    // Decided while nobody waits.
    const decided = await call(t.app, 'PATCH', `/api/work-tasks/${first}`, {
      key: p.orgA.member.key,
      body: { action: 'approve' },
    });
    expect(decided.status).toBe(200);
    // The process "restarts" and asks again for the same piece of work.
    let second = '';
    const again = await requireApproval(
      remit,
      proposal({ idempotencyKey: key, onRaised: (task) => (second = task.uid) }),
    );
    expect(second).toBe(first);
    expect(again).toMatchObject({ approved: true, resolution: 'approved' });
  });

  it('gives up after timeoutMs with ApprovalTimeoutError; the task stays pending', async () => {
    const error = await requireApproval(remit, proposal({ timeoutMs: 1000 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApprovalTimeoutError);
    const task = (error as ApprovalTimeoutError).task;
    expect(task).toMatchObject({ type: 'hil_approval', resolution: null });
  });

  it('an agent of another organization is the API’s 404', async () => {
    const foreign = createRemitClient({
      baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
      apiKey: p.orgB.admin.key,
    });
    await expect(requireApproval(foreign, proposal())).rejects.toMatchObject({ status: 404 });
  });
});

describe('the guarded tool-calling loop of docs/client.md', () => {
  const refunds: Record<string, unknown>[] = [];
  const tools: Record<string, Tool> = {
    lookup_order: {
      description: 'Look up an order',
      parameters: { type: 'object', properties: { order: { type: 'string' } } },
      requiresApproval: false,
      run: async (args) => JSON.stringify({ order: args.order, total_cents: 3900, status: 'delivered' }),
    },
    issue_refund: {
      description: 'Refund an order',
      parameters: {
        type: 'object',
        properties: { order: { type: 'string' }, amount_cents: { type: 'integer' } },
      },
      requiresApproval: true,
      run: async (args) => {
        refunds.push(args);
        return `Refunded ${String(args.amount_cents)} cents`;
      },
    },
  };
  /** The model: look the order up, then ask to refund it all, then report what the tool said. */
  const script = (request: LlmRequest) => {
    const messages = request.json.messages as { role: string; content: string | null }[];
    const toolResults = messages.filter((m) => m.role === 'tool');
    if (toolResults.length === 0) {
      return {
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'lookup_order', arguments: '{"order":"1042"}' },
          },
        ],
      };
    }
    if (toolResults.length === 1) {
      return {
        tool_calls: [
          {
            id: 'call_2',
            type: 'function',
            function: { name: 'issue_refund', arguments: '{"order":"1042","amount_cents":3900}' },
          },
        ],
      };
    }
    return { content: `Done: ${toolResults.at(-1)!.content}` };
  };

  const loop = (workId: string) =>
    runGuardedLoop({
      remit,
      agentUid,
      modelBaseUrl: llm.baseUrl,
      modelApiKey: 'sk-fake',
      model: 'fake-model',
      tools,
      task: 'The customer says order 1042 arrived broken. Make it right.',
      workId,
    });

  async function pendingApprovalOf(workId: string): Promise<string> {
    let uid = '';
    await until(async () => {
      const list = await call(t.app, 'GET', '/api/work-tasks', {
        key: p.orgA.admin.key,
        query: { type: 'hil_approval', q: 'issue_refund', status: 'todo' },
      });
      uid =
        (list.body.data.items as { uid: string; title: string }[]).find((task) =>
          task.title.includes('"order":"1042"'),
        )?.uid ?? '';
      return uid !== '' && t.app.taskWaiters.size > 0;
    }, `the refund approval of ${workId}`);
    return uid;
  }

  it('runs the refund only once a person approved it, with the amount they set', async () => {
    llm.behaviour = { kind: 'chat', reply: script };
    refunds.length = 0;
    const answer = loop('ticket-1');
    const taskUid = await pendingApprovalOf('ticket-1');
    await personDecides(taskUid, {
      action: 'approve',
      tool_args: { amount_cents: 2000 },
    });
    expect(await answer).toBe('Done: Refunded 2000 cents');
    expect(refunds).toEqual([{ order: '1042', amount_cents: 2000 }]);
    // The refund ran inside the approval's follow-up run, which the loop claimed and completed.
    const followUp = await findFollowUpRun(remit, taskUid);
    expect(followUp?.attributes).toMatchObject({
      status: 'completed',
      trigger_type: 'approval',
      claimed_by: 'guarded-loop:ticket-1',
      outcome: { summary: 'Refunded 2000 cents' },
    });
    // The loop restarted for the same work finds the refund done and does not refund again.
    refunds.length = 0;
    expect(await loop('ticket-1')).toBe('Done: Refunded 2000 cents');
    expect(refunds).toEqual([]);
    // The model was told the tool's result in the conversation it was sent next.
    const last = llm.requests.at(-1)!.json.messages.at(-1);
    expect(last).toMatchObject({ role: 'tool', tool_call_id: 'call_2', content: 'Refunded 2000 cents' });
  });

  it('does not run a rejected refund, and tells the model why', async () => {
    llm.behaviour = { kind: 'chat', reply: script };
    refunds.length = 0;
    const answer = loop('ticket-2');
    await personDecides(await pendingApprovalOf('ticket-2'), {
      action: 'reject',
      resolution_note: 'Send a replacement instead',
    });
    expect(await answer).toMatch(/^Done: A person rejected this \(rejected\): Send a replacement instead/);
    expect(refunds).toEqual([]);
  });
});
