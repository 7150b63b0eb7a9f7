/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { executeRun, registerExecutor } from '../../src/modules/agents/agent-runs.service.ts';
import { insertRun } from '../../src/modules/agents/agent-runs.repository.ts';
import { runDueSchedules } from '../../src/modules/agents/agent-schedules.ts';
import { findAgent } from '../../src/modules/agents/agents.repository.ts';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { emailDrafts } from '../../src/modules/email/email-drafts.tables.ts';
import { addUserToOrganization, initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { workTaskContextEntities, workTasks } from '../../src/modules/work-tasks/work-tasks.tables.ts';
import {
  createAgent,
  createCollectionsAgent,
  daysFromNow,
  deferred,
  post,
  receivables,
  runAgent,
  runEnvOf,
  tag,
  until,
  UUID,
  waitForRun,
} from '../helpers/agent-fixtures.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeLlm } from '../helpers/fake-llm.ts';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { call } from '../helpers/http.ts';

/**
 * The built-in collections agent (CONTRACT §5), end to end through the API and the real job worker:
 * overdue invoice → reminder from the email prepare engine → hil_approval task → approval_required →
 * approve (with edits) → follow-up run → draft from the organization's email account, sent → outcome;
 * and every rule around it (paid meanwhile, one open approval per invoice, no approval needed, sandbox,
 * client replies, no email account, a failing send, max_invoices, schedules). Once on the embedded
 * defaults (outbox, built-in composer, no chat), once against a fake Slack and a fake OpenAI-compatible
 * model.
 */

let t: TestApp;

/** `hold_worker` runs keep the (one) run worker busy until the test lets them go. */
const hold = { entered: deferred(), release: deferred() };
registerExecutor('hold_worker', async () => {
  hold.entered.resolve();
  await hold.release.promise;
  return { summary: 'held the worker' };
});

beforeAll(async () => {
  t = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
});
afterAll(async () => {
  hold.release.resolve();
  await t?.close();
});

interface Org {
  uid: string;
  key: string;
  userUid: string;
}

/** An organization of its own per scenario: the agent sweeps every overdue invoice of its organization. */
async function freshOrg(app: TestApp = t): Promise<Org> {
  const init = await initOrganization(app.db, app.config.apiKeyPepper, {
    organizationName: `Acme ${tag()}`,
    email: `owner-${tag()}@acme.test`,
    fullName: 'Olga Owner',
  });
  return { uid: init.organization_uid, key: init.api_key, userUid: init.user_uid };
}

async function task(app: TestApp, key: string, uid: string) {
  const res = await call(app.app, 'GET', `/api/work-tasks/${uid}`, { key });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

/** Open and closed tasks of a type about one invoice. */
async function tasksAbout(app: TestApp, invoiceUid: string, type: 'hil_approval' | 'task') {
  return app.db
    .select({ uid: workTasks.uid, status: workTasks.status, title: workTasks.title })
    .from(workTaskContextEntities)
    .innerJoin(workTasks, eq(workTasks.uid, workTaskContextEntities.taskUid))
    .where(and(eq(workTaskContextEntities.entityUid, invoiceUid), eq(workTasks.type, type)));
}

async function draftsAbout(app: TestApp, invoiceUid: string) {
  return app.db.select().from(emailDrafts).where(eq(emailDrafts.contextId, invoiceUid));
}

async function approve(app: TestApp, key: string, taskUid: string, body: Record<string, unknown> = {}) {
  const res = await call(app.app, 'PATCH', `/api/work-tasks/${taskUid}`, {
    key,
    body: { action: 'approve', ...body },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

/** The follow-up run an approval started, once it has ended. */
async function followUpOf(app: TestApp, key: string, taskUid: string) {
  const row = await until(
    async () => (await app.db.select().from(agentRuns).where(eq(agentRuns.taskUid, taskUid)))[0],
    'the follow-up run',
  );
  return waitForRun(app, key, row.uid);
}

/** A person's answer to an approval (PATCH), 200 expected. */
async function answer(app: TestApp, key: string, taskUid: string, body: Record<string, unknown>) {
  const res = await call(app.app, 'PATCH', `/api/work-tasks/${taskUid}`, { key, body });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

/** The newest follow-up run of the task that acts on `action` (input.decision), once it has ended. */
async function runOfAnswer(app: TestApp, key: string, taskUid: string, action: string, nth = 1) {
  const row = await until(async () => {
    const runs = (await app.db.select().from(agentRuns).where(eq(agentRuns.taskUid, taskUid))).filter(
      (r) => (r.input as any).decision?.action === action,
    );
    return runs.length >= nth ? runs.sort((a, b) => +a.createdOn - +b.createdOn)[nth - 1] : undefined;
  }, `the follow-up run of ${action} #${nth}`);
  return waitForRun(app, key, row.uid);
}

async function notes(app: TestApp, key: string, agentUid: string) {
  const res = await call(app.app, 'GET', `/api/agents/${agentUid}/notifications?per_page=100`, { key });
  expect(res.status, res.raw).toBe(200);
  return res.body.data.items as any[];
}

async function outboxFile(app: TestApp, messageId: string) {
  const file = path.join(app.config.dataDir, 'outbox', `${messageId.replace(/^<|>$/g, '')}.eml`);
  return fs.readFile(file, 'utf8');
}

async function outboxCount(app: TestApp) {
  return (await fs.readdir(path.join(app.config.dataDir, 'outbox')).catch(() => [])).length;
}

/** A scenario's set-up: receivables, optionally an email account, and an agent. */
async function scenario(
  options: { account?: boolean | string; agent?: Record<string, unknown>; app?: TestApp } = {},
) {
  const app = options.app ?? t;
  const org = await freshOrg(app);
  const r = await receivables(app, org.key);
  const account =
    options.account === false
      ? null
      : await post(app, org.key, '/api/email/accounts', {
          email: `ar-${tag()}@acme-us.test`,
          display_name: 'Acme Receivables',
          ...(typeof options.account === 'string' ? { smtp_url: options.account } : {}),
        });
  const agent = await createCollectionsAgent(app, org.key, { name: 'Collector', ...options.agent });
  return { app, org, r, account, agent };
}

describe('the whole loop on the embedded defaults', () => {
  it('overdue invoice → approval → approved with edits → sent from the outbox → a reply hands it to a person', async () => {
    const { org, r, account, agent } = await scenario();
    const client = await r.client('Globex Corp', `ap-${tag()}@globex.test`);
    const invoice = await r.invoice(client.uid, { dueInDays: -12, number: `INV-${tag()}` });

    // 1. The run raises an approval holding the reminder the template wrote.
    const run = await runAgent(t, org.key, agent.uid);
    expect(run.attributes.status).toBe('completed');
    expect(run.attributes.outcome).toMatchObject({
      checked: 1,
      approvals: [{ task_uid: expect.stringMatching(UUID), invoice_uid: invoice.uid }],
      sent: [],
      skipped: [],
    });
    const approval = await task(t, org.key, run.attributes.outcome.approvals[0].task_uid);
    expect(approval).toMatchObject({
      type: 'hil_approval',
      status: 'todo',
      title: `Send payment reminder for invoice ${invoice.invoice_number}`,
      origin: { type: 'agent', agent_uid: agent.uid, agent_name: 'Collector', trigger_type: 'manual' },
      context_entities: [{ entity_type: 'invoice', entity_uid: invoice.uid }],
      trigger: { type: 'manual', requested_by: org.userUid },
      run_uid: run.id,
      resolution: null,
    });
    expect(approval.reasoning).toContain(invoice.invoice_number);
    expect(approval.reasoning).toContain('12 day(s) overdue');
    expect(approval.reasoning).toContain('template');
    expect(approval.tool_args).toEqual({
      type: 'send_email',
      subject: `Payment reminder: invoice ${invoice.invoice_number} is 12 days overdue`,
      body: expect.stringContaining('$500.00'),
      recipients: [client.email],
      invoice_uid: invoice.uid,
    });
    expect(approval.tool_args.body).toContain('Hello Globex Corp');
    expect(approval.tool_args.body).not.toMatch(/\{[a-z_]+\}/);
    const raised = await notes(t, org.key, agent.uid);
    expect(raised.map((n) => n.event)).toEqual(['outcome', 'approval_required']);
    expect(raised[1]).toMatchObject({
      task_uid: approval.uid,
      invoice_uid: invoice.uid,
      delivery_status: 'recorded',
    });

    // 2. Approved with an edited subject and body: the follow-up run sends it now, from the account.
    const approved = await approve(t, org.key, approval.uid, {
      tool_args: { subject: `Edited: please settle ${invoice.invoice_number}`, body: 'Edited **body**.' },
    });
    expect(approved).toMatchObject({ status: 'done', resolution: 'approved' });
    expect(approved).not.toHaveProperty('_warning');
    const followUp = await followUpOf(t, org.key, approval.uid);
    expect(followUp.attributes).toMatchObject({
      status: 'completed',
      trigger_type: 'approval',
      task_uid: approval.uid,
      outcome: {
        sent: true,
        task_uid: approval.uid,
        invoice_uid: invoice.uid,
        draft_uid: expect.stringMatching(UUID),
      },
    });
    const draft = await call(t.app, 'GET', `/api/email/drafts/${followUp.attributes.outcome.draft_uid}`, {
      key: org.key,
    });
    expect(draft.body).toMatchObject({
      status: 'sent',
      from_account_id: account!.uid,
      from_email: account!.email,
      to: [client.email],
      subject: `Edited: please settle ${invoice.invoice_number}`,
      body_text: 'Edited **body**.',
      context_type: 'invoice',
      context_id: invoice.uid,
      message_id: followUp.attributes.outcome.message_id,
    });
    // Due at once: planned while the follow-up run was working.
    const planned = Date.parse(draft.body.planned_send_at);
    expect(planned).toBeGreaterThanOrEqual(Date.parse(followUp.attributes.started_on));
    expect(planned).toBeLessThanOrEqual(Date.parse(followUp.attributes.completed_on));
    const eml = await outboxFile(t, draft.body.message_id);
    expect(eml).toContain(`Subject: Edited: please settle ${invoice.invoice_number}`);
    expect(eml).toContain(`To: ${client.email}`);
    expect(eml).toMatch(new RegExp(`From: "?Acme Receivables"? <${account!.email}>`));
    expect(eml).toContain('Edited');
    const after = await notes(t, org.key, agent.uid);
    expect(after.map((n) => n.event)).toEqual(['outcome', 'action_taken', 'outcome', 'approval_required']);
    expect(after[1].text).toContain(invoice.invoice_number);
    expect(after[0].text).toContain('sent');

    // 3. Reminded lately: the next run leaves the invoice alone.
    const again = await runAgent(t, org.key, agent.uid);
    expect(again.attributes.outcome.approvals).toEqual([]);
    expect(again.attributes.outcome.skipped).toEqual([
      expect.objectContaining({
        invoice_uid: invoice.uid,
        reason: expect.stringContaining('less than 7 day'),
      }),
    ]);

    // 4. The client answers the reminder: threaded to it, a task for a person, no new reminder meanwhile.
    const other = await r.invoice((await r.client()).uid, { dueInDays: -3 });
    const reply = await post(t, org.key, '/api/inbound/email', {
      from_email: client.email,
      to: [account!.email],
      subject: `Re: Edited: please settle ${invoice.invoice_number}`,
      body_text: 'We paid this yesterday, see attached remittance.',
      in_reply_to: draft.body.message_id,
    });
    expect(reply.threaded_by).toBe('in_reply_to');
    expect(reply.run_uids).toHaveLength(1);
    const conversation = await call(t.app, 'GET', `/api/conversations/${reply.conversation_uid}`, {
      key: org.key,
    });
    expect(conversation.body.data).toMatchObject({ party_uid: client.uid, channel: 'email' });
    expect(conversation.body.data.messages.map((m: any) => m.direction)).toEqual(['outbound', 'inbound']);
    const replyRun = await waitForRun(t, org.key, reply.run_uids[0]);
    expect(replyRun.attributes).toMatchObject({ status: 'completed', trigger_type: 'email_received' });
    const [handOver] = await tasksAbout(t, invoice.uid, 'task');
    expect(handOver).toBeDefined();
    const person = await task(t, org.key, handOver!.uid);
    expect(person).toMatchObject({
      type: 'task',
      status: 'todo',
      title: `Client replied about invoice ${invoice.invoice_number}`,
      origin: { type: 'agent', agent_uid: agent.uid, trigger_type: 'email_received' },
      context_entities: [{ entity_type: 'invoice', entity_uid: invoice.uid }],
    });
    expect(person.description).toContain(reply.conversation_uid);
    expect(person.description).toContain('Globex Corp');
    // The same run chased the other client's invoice, not this one.
    expect(replyRun.attributes.outcome.approvals).toEqual([
      expect.objectContaining({ invoice_uid: other.uid }),
    ]);
    expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toHaveLength(1);

    // While the task is open, no reminder even once the reminder interval has passed …
    const waiting = await runAgent(t, org.key, agent.uid, { input: { min_days_between_reminders: 0 } });
    expect(waiting.attributes.outcome.skipped).toContainEqual(
      expect.objectContaining({
        invoice_uid: invoice.uid,
        reason: expect.stringContaining("client's reply"),
      }),
    );
    expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toHaveLength(1);
    // … a second reply opens no second task …
    const second = await post(t, org.key, '/api/inbound/email', {
      from_email: client.email,
      to: [account!.email],
      subject: `Re: Edited: please settle ${invoice.invoice_number}`,
      body_text: 'Any news?',
    });
    expect(second.conversation_uid).toBe(reply.conversation_uid);
    await waitForRun(t, org.key, second.run_uids[0]);
    expect(await tasksAbout(t, invoice.uid, 'task')).toHaveLength(1);
    // … and once a person closes it, the agent takes the invoice up again.
    const done = await call(t.app, 'PATCH', `/api/work-tasks/${handOver!.uid}`, {
      key: org.key,
      body: { status: 'done' },
    });
    expect(done.status, done.raw).toBe(200);
    const resumed = await runAgent(t, org.key, agent.uid, { input: { min_days_between_reminders: 0 } });
    expect(resumed.attributes.outcome.approvals).toEqual([
      expect.objectContaining({ invoice_uid: invoice.uid }),
    ]);
  });
});

describe('the rules around a reminder', () => {
  it('paid meanwhile: the follow-up run re-reads the invoice, sends nothing and says why', async () => {
    const { org, r, agent } = await scenario();
    const invoice = await r.invoice((await r.client()).uid);
    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    await post(t, org.key, `/api/invoices/${invoice.uid}/payments`, { amount_cents: 50_000 });
    const paid = await call(t.app, 'GET', `/api/invoices/${invoice.uid}`, { key: org.key });
    expect(paid.body.data.status).toBe('paid');
    const outboxBefore = await outboxCount(t);
    await approve(t, org.key, taskUid);
    const followUp = await followUpOf(t, org.key, taskUid);
    expect(followUp.attributes.status).toBe('completed');
    expect(followUp.attributes.outcome).toMatchObject({ sent: false, invoice_uid: invoice.uid });
    expect(followUp.attributes.outcome.summary).toMatch(/was paid meanwhile.*not sent/);
    expect(await draftsAbout(t, invoice.uid)).toEqual([]);
    expect(await outboxCount(t)).toBe(outboxBefore);
    const [outcome] = await notes(t, org.key, agent.uid);
    expect(outcome).toMatchObject({ event: 'outcome', run_uid: followUp.id });
    expect(outcome.text).toContain('not sent');
  });

  it('one open approval per invoice: a second run, and runs at the same time, raise no second one', async () => {
    const { org, r, agent } = await scenario();
    const invoice = await r.invoice((await r.client()).uid);
    await runAgent(t, org.key, agent.uid);
    const second = await runAgent(t, org.key, agent.uid);
    expect(second.attributes.outcome).toMatchObject({
      approvals: [],
      skipped: [{ invoice_uid: invoice.uid, reason: 'an approval for this invoice is already open' }],
    });
    expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toHaveLength(1);

    // Three runs executing at once (straight through the executor) on a new invoice.
    const fresh = await r.invoice((await r.client()).uid);
    const row = (await findAgent(t.db, [org.uid], agent.uid))!;
    const runs = await Promise.all(
      [1, 2, 3].map(() =>
        insertRun(t.db, {
          organizationUid: org.uid,
          agentUid: agent.uid,
          agentVersionUid: row.currentVersionUid!,
          triggerType: 'manual',
          trigger: { type: 'manual' },
        }),
      ),
    );
    const env = runEnvOf(t);
    const results = await Promise.all(
      runs.map((run) => executeRun(env, { run_uid: run.uid, organization_uid: org.uid })),
    );
    expect(results).toEqual(['completed', 'completed', 'completed']);
    expect(await tasksAbout(t, fresh.uid, 'hil_approval')).toHaveLength(1);
    expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toHaveLength(1);
  });

  it('send_email without approval: the reminder is sent at once, with action_taken', async () => {
    const { org, r, account, agent } = await scenario({
      agent: { tools: [{ type: 'send_email', requires_approval: false }] },
    });
    const client = await r.client();
    const invoice = await r.invoice(client.uid, { dueInDays: -40 });
    const run = await runAgent(t, org.key, agent.uid);
    expect(run.attributes.status).toBe('completed');
    expect(run.attributes.outcome).toMatchObject({
      approvals: [],
      sent: [{ invoice_uid: invoice.uid, draft_uid: expect.stringMatching(UUID) }],
    });
    expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toEqual([]);
    const [draft] = await draftsAbout(t, invoice.uid);
    expect(draft).toMatchObject({
      status: 'sent',
      fromAccountUid: account!.uid,
      to: [client.email],
      subject: `Payment reminder: invoice ${invoice.invoice_number} is 40 days overdue`,
    });
    expect(await outboxFile(t, draft!.messageId!)).toContain(`To: ${client.email}`);
    const events = await notes(t, org.key, agent.uid);
    expect(events.map((n) => n.event)).toEqual(['outcome', 'action_taken']);
    expect(events[1]).toMatchObject({ invoice_uid: invoice.uid, run_uid: run.id });
    expect(events[1].text).toContain(invoice.invoice_number);
  });

  it('a sandbox run raises no approval and sends nothing; its outcome records what it would have done', async () => {
    for (const requiresApproval of [true, false]) {
      const { org, r, agent } = await scenario({
        agent: { tools: [{ type: 'send_email', requires_approval: requiresApproval }], status: 'draft' },
      });
      const client = await r.client();
      const invoice = await r.invoice(client.uid);
      const outboxBefore = await outboxCount(t);
      const run = await runAgent(t, org.key, agent.uid, { sandbox: true });
      expect(run.attributes).toMatchObject({ status: 'completed', sandbox: true });
      const outcome = run.attributes.outcome;
      expect(outcome.summary).toMatch(/^Sandbox/);
      const would = {
        type: 'send_email',
        subject: expect.stringContaining(invoice.invoice_number),
        body: expect.any(String),
        recipients: [client.email],
        invoice_uid: invoice.uid,
      };
      if (requiresApproval)
        expect(outcome.approvals).toEqual([{ task_uid: null, invoice_uid: invoice.uid, tool_args: would }]);
      else expect(outcome.sent).toEqual([{ invoice_uid: invoice.uid, draft_uid: null, would_send: would }]);
      expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toEqual([]);
      expect(await draftsAbout(t, invoice.uid)).toEqual([]);
      expect(await outboxCount(t)).toBe(outboxBefore);
      const events = await notes(t, org.key, agent.uid);
      expect(events.map((n) => [n.event, n.delivery_status])).toEqual([['outcome', 'recorded']]);
    }
  });

  it('approving with no email account, or a paused agent: 200 with data._warning and no run', async () => {
    const { org, r, agent } = await scenario({ account: false });
    await r.invoice((await r.client()).uid);
    await r.invoice((await r.client()).uid);
    const run = await runAgent(t, org.key, agent.uid);
    const [first, second] = run.attributes.outcome.approvals.map((a: any) => a.task_uid);
    const noAccount = await approve(t, org.key, first);
    expect(noAccount).toMatchObject({ status: 'done', resolution: 'approved' });
    expect(noAccount._warning).toMatch(/email account/);
    await post(t, org.key, '/api/email/accounts', {
      email: `late-${tag()}@acme-us.test`,
      display_name: 'Late',
    });
    const paused = await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, {
      key: org.key,
      body: { status: 'paused' },
    });
    expect(paused.status).toBe(200);
    const whilePaused = await approve(t, org.key, second);
    expect(whilePaused._warning).toMatch(/paused/);
    // The approval stands; no follow-up run was requested.
    expect((await task(t, org.key, first)).resolution).toBe('approved');
    expect(await t.db.select().from(agentRuns).where(eq(agentRuns.agentUid, agent.uid))).toHaveLength(1);
  });

  it('a send that fails: the follow-up run is failed with the error, and an error notification', async () => {
    const closed = await unusedPort();
    const { org, r, agent } = await scenario({ account: `smtp://127.0.0.1:${closed}` });
    const invoice = await r.invoice((await r.client()).uid);
    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    await approve(t, org.key, taskUid);
    const followUp = await followUpOf(t, org.key, taskUid);
    expect(followUp.attributes).toMatchObject({ status: 'failed', outcome: null });
    expect(followUp.attributes.error).toContain(invoice.invoice_number);
    expect(followUp.attributes.error).toContain('not sent');
    const [draft] = await draftsAbout(t, invoice.uid);
    expect(draft!.status).toBe('failed');
    const [error] = await notes(t, org.key, agent.uid);
    expect(error).toMatchObject({
      event: 'error',
      run_uid: followUp.id,
      task_uid: taskUid,
      invoice_uid: invoice.uid,
    });
    expect(error.text).toContain(followUp.attributes.error);
  });
});

describe('answers other than an approval: reject and respond', () => {
  it('reject: the follow-up run records who rejected it and why, and sends nothing (no email account needed)', async () => {
    const { org, r, agent } = await scenario({ account: false });
    const invoice = await r.invoice((await r.client()).uid);
    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    const outboxBefore = await outboxCount(t);
    const rejected = await answer(t, org.key, taskUid, {
      action: 'reject',
      resolution_note: 'The client called: paying Friday',
    });
    expect(rejected).toMatchObject({ status: 'canceled', resolution: 'rejected' });
    expect(rejected).not.toHaveProperty('_warning');
    const followUp = await runOfAnswer(t, org.key, taskUid, 'reject');
    expect(followUp.attributes).toMatchObject({
      status: 'completed',
      trigger_type: 'approval',
      task_uid: taskUid,
      outcome: {
        task_uid: taskUid,
        invoice_uid: invoice.uid,
        sent: false,
        rejected: true,
        summary: `Not sent: rejected by Olga Owner: The client called: paying Friday (task "${rejected.title}")`,
      },
    });
    expect(await draftsAbout(t, invoice.uid)).toEqual([]);
    expect(await outboxCount(t)).toBe(outboxBefore);
    const [outcome] = await notes(t, org.key, agent.uid);
    expect(outcome).toMatchObject({ event: 'outcome', task_uid: taskUid, invoice_uid: invoice.uid });
    expect(outcome.text).toContain('Not sent: rejected by Olga Owner');
  });

  it('respond: the agent adds the feedback to its draft (no language model), discards partial approvals, asks again; the revision is what gets sent', async () => {
    const { org, r, agent } = await scenario();
    const maria = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: org.uid,
      email: `maria-${tag()}@acme.test`,
      fullName: 'Maria Member',
      role: 'member',
    });
    await post(t, org.key, '/api/approval-policies', {
      name: 'Two people for reminders',
      agent_uid: agent.uid,
      approver_roles: ['admin', 'member'],
      required_approvals: 2,
    });
    const client = await r.client('Globex Corp', `ap-${tag()}@globex.test`);
    const invoice = await r.invoice(client.uid, { dueInDays: -12 });
    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    const raised = await task(t, org.key, taskUid);

    // Olga approves (1 of 2); Maria answers with feedback instead of deciding.
    expect(await answer(t, org.key, taskUid, { action: 'approve' })).toMatchObject({ status: 'in_review' });
    const feedback = 'We can also offer a payment plan over three months; reply to set it up.';
    const responded = await answer(t, maria.api_key, taskUid, { action: 'respond', feedback });
    expect(responded).toMatchObject({
      status: 'in_progress',
      resolution: null,
      response: { feedback, user_name: 'Maria Member' },
      approvals: [{ user_name: 'Olga Owner' }],
    });

    const followUp = await runOfAnswer(t, org.key, taskUid, 'respond');
    expect(followUp.attributes).toMatchObject({
      status: 'completed',
      trigger_type: 'approval',
      task_uid: taskUid,
      outcome: {
        task_uid: taskUid,
        invoice_uid: invoice.uid,
        revised: true,
        mode: 'builtin',
        edited_tool_args: ['body'],
        discarded_approvals: 1,
      },
    });
    const revised = await task(t, org.key, taskUid);
    const paragraphs = (raised.tool_args.body as string).split('\n\n');
    // The feedback as written, as its own paragraph before the sign-off; the rest as it was.
    expect(revised.tool_args).toEqual({
      ...raised.tool_args,
      body: [...paragraphs.slice(0, -1), feedback, paragraphs.at(-1)].join('\n\n'),
    });
    expect(revised).toMatchObject({ status: 'todo', resolution: null, response: null, approvals: [] });
    expect(revised.reasoning).toContain(`Revised after Maria Member's feedback "${feedback}"`);
    expect(revised.reasoning).toContain('no language model is configured');
    expect(revised.change_log.map((c: any) => [c.action, c.by_name])).toEqual([
      ['created', 'Collector'],
      ['policy_applied', 'Remit'],
      ['approval_recorded', 'Olga Owner'],
      ['responded', 'Maria Member'],
      ['revised', 'Collector'],
    ]);
    expect(revised.change_log.at(-1).details).toMatchObject({
      feedback,
      edited_tool_args: ['body'],
      discarded_approvals: 1,
    });
    // Asked again: approval_required a second time, about the revised draft.
    const events = await notes(t, org.key, agent.uid);
    expect(events.map((n) => n.event)).toEqual([
      'outcome',
      'approval_required',
      'outcome',
      'approval_required',
    ]);
    expect(events[1]).toMatchObject({ task_uid: taskUid, invoice_uid: invoice.uid, run_uid: followUp.id });
    expect(events[1].text).toContain('revised the reminder');
    expect(events[1].text).toContain("Maria Member's feedback");

    // Two approvals of the revision decide it; the revised draft is what goes out.
    await answer(t, org.key, taskUid, { action: 'approve' });
    expect(await answer(t, maria.api_key, taskUid, { action: 'approve' })).toMatchObject({
      resolution: 'approved',
    });
    const sent = await runOfAnswer(t, org.key, taskUid, 'approve');
    expect(sent.attributes.outcome).toMatchObject({ sent: true });
    const draft = await call(t.app, 'GET', `/api/email/drafts/${sent.attributes.outcome.draft_uid}`, {
      key: org.key,
    });
    expect(draft.body).toMatchObject({ status: 'sent', subject: raised.tool_args.subject });
    expect(draft.body.body_text).toContain(feedback);
  });

  it('respond, then a decision before the revision runs: the revision changes nothing', async () => {
    const { org, r, agent } = await scenario();
    await r.invoice((await r.client()).uid);
    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    const responded = await answer(t, org.key, taskUid, { action: 'respond', feedback: 'Shorter, please.' });
    await answer(t, org.key, taskUid, { action: 'reject', resolution_note: 'Not this month' });
    // The response's run, taken by the worker only after the rejection (run here, by hand).
    const [respondRun] = (await t.db.select().from(agentRuns).where(eq(agentRuns.taskUid, taskUid))).filter(
      (r) => (r.input as any).decision.action === 'respond',
    );
    const row = (await findAgent(t.db, [org.uid], agent.uid))!;
    const late = await insertRun(t.db, {
      organizationUid: org.uid,
      agentUid: agent.uid,
      agentVersionUid: row.currentVersionUid!,
      triggerType: 'approval',
      trigger: respondRun!.trigger,
      input: respondRun!.input,
      taskUid,
    });
    expect((late.input as any).decision.decided_at).toBe(responded.response.at);
    expect(await executeRun(runEnvOf(t), { run_uid: late.uid, organization_uid: org.uid })).toBe('completed');
    const [ended] = await t.db.select().from(agentRuns).where(eq(agentRuns.uid, late.uid));
    expect(ended!.outcome).toMatchObject({ task_uid: taskUid, revised: false });
    expect(ended!.outcome!.summary).toContain('was rejected before the reminder could be revised');
    // The worker's own run of the response ended too (revised or not, depending on who came first).
    expect((await runOfAnswer(t, org.key, taskUid, 'respond')).attributes.status).toBe('completed');
    expect((await task(t, org.key, taskUid)).resolution).toBe('rejected');
  });
});

describe('sending through SMTP, and the window before the approved reminder goes out', () => {
  it('an account with an SMTP server: the approved reminder goes out through it', async () => {
    const smtp = await new FakeSmtp().start();
    try {
      const { org, r, account, agent } = await scenario({ account: smtp.url() });
      const client = await r.client();
      const invoice = await r.invoice(client.uid);
      const run = await runAgent(t, org.key, agent.uid);
      const taskUid = run.attributes.outcome.approvals[0].task_uid;
      await approve(t, org.key, taskUid, { tool_args: { subject: 'Sent by SMTP' } });
      const followUp = await followUpOf(t, org.key, taskUid);
      expect(followUp.attributes.status, followUp.attributes.error).toBe('completed');
      const [mail] = smtp.accepted();
      expect(mail).toMatchObject({ from: account!.email, recipients: [client.email] });
      expect(mail!.parsed.subject).toBe('Sent by SMTP');
      expect(mail!.parsed.messageId).toBe(followUp.attributes.outcome.message_id);
      const [draft] = await draftsAbout(t, invoice.uid);
      expect(draft).toMatchObject({ status: 'sent', transport: 'smtp' });
    } finally {
      await smtp.stop();
    }
  });

  it('approved but not sent yet: a run meanwhile raises no second approval for the invoice', async () => {
    const { org, r, agent } = await scenario();
    const invoice = await r.invoice((await r.client()).uid);
    const run = await runAgent(t, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    // Keep the run worker busy, so the follow-up run waits in the queue.
    const holder = await createAgent(t, org.key, { status: 'active', agent_type: 'hold_worker' });
    const held = await post(t, org.key, `/api/agents/${holder.uid}/runs`, {}, 202);
    await hold.entered.promise;
    try {
      await approve(t, org.key, taskUid);
      const [followUp] = await t.db.select().from(agentRuns).where(eq(agentRuns.taskUid, taskUid));
      expect(followUp!.status).toBe('pending');
      const row = (await findAgent(t.db, [org.uid], agent.uid))!;
      const sweep = await insertRun(t.db, {
        organizationUid: org.uid,
        agentUid: agent.uid,
        agentVersionUid: row.currentVersionUid!,
        triggerType: 'manual',
        trigger: { type: 'manual' },
        input: { min_days_between_reminders: 0 },
      });
      expect(await executeRun(runEnvOf(t), { run_uid: sweep.uid, organization_uid: org.uid })).toBe(
        'completed',
      );
      const [meanwhile] = await t.db.select().from(agentRuns).where(eq(agentRuns.uid, sweep.uid));
      expect(meanwhile!.outcome).toMatchObject({
        approvals: [],
        skipped: [{ invoice_uid: invoice.uid, reason: expect.stringContaining('about to be sent') }],
      });
    } finally {
      hold.release.resolve();
    }
    await waitForRun(t, org.key, held.id);
    expect((await followUpOf(t, org.key, taskUid)).attributes.status).toBe('completed');
    expect(await tasksAbout(t, invoice.uid, 'hil_approval')).toHaveLength(1);
    expect(await draftsAbout(t, invoice.uid)).toHaveLength(1);
  });
});

describe('what the agent chases', () => {
  it('open receivables at least a day overdue with money left, oldest first, up to max_invoices acted on', async () => {
    const { org, r, agent } = await scenario();
    const client = await r.client();
    const oldest = await r.invoice(client.uid, { dueInDays: -30 });
    const middle = await r.invoice(client.uid, { dueInDays: -20 });
    const newest = await r.invoice(client.uid, { dueInDays: -2 });
    // Not chased: due later today or in the future, paid, void, payable, and no billing email.
    await r.invoice(client.uid, { dueInDays: 5 });
    const paid = await r.invoice(client.uid, { dueInDays: -50 });
    await post(t, org.key, `/api/invoices/${paid.uid}/payments`, { amount_cents: 50_000 });
    const dueToday = new Date();
    dueToday.setUTCHours(0, 0, 0, 0);
    await post(t, org.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `TODAY-${tag()}`,
      status: 'open',
      currency: 'USD',
      issue_date: daysFromNow(-30),
      due_date: dueToday.toISOString(),
      client_party_uid: client.uid,
      line_items: [{ context_type: 'PRODUCT', sku: r.sku, quantity: 1 }],
    });
    const vendor = await post(t, org.key, '/api/parties', { name: 'Vendor', role: 'vendor' });
    await post(t, org.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `AP-${tag()}`,
      status: 'received',
      currency: 'USD',
      due_date: daysFromNow(-30),
      service_provider_party_uid: vendor.uid,
      line_items: [{ context_type: 'PRODUCT', sku: r.sku, quantity: 1 }],
    });
    const first = await runAgent(t, org.key, agent.uid, { input: { max_invoices: 2 } });
    expect(first.attributes.outcome.approvals.map((a: any) => a.invoice_uid)).toEqual([
      oldest.uid,
      middle.uid,
    ]);
    // The next run is not held up by the invoices already waiting for a decision.
    const next = await runAgent(t, org.key, agent.uid, { input: { max_invoices: 2 } });
    expect(next.attributes.outcome.approvals.map((a: any) => a.invoice_uid)).toEqual([newest.uid]);
    expect(next.attributes.outcome.skipped.map((s: any) => s.invoice_uid)).toEqual([oldest.uid, middle.uid]);
    expect(next.attributes.outcome.checked).toBe(3);

    const quiet = await r.client('Quiet Co', null);
    const noEmail = await r.invoice(quiet.uid, { dueInDays: -9 });
    const last = await runAgent(t, org.key, agent.uid);
    expect(last.attributes.outcome.skipped).toContainEqual({
      invoice_uid: noEmail.uid,
      invoice_number: noEmail.invoice_number,
      reason: 'the client has no billing contact email',
    });
  });

  it('a reply naming one invoice hands only that one to a person', async () => {
    const { org, r, account } = await scenario();
    const client = await r.client('Hooli', `pay-${tag()}@hooli.test`);
    // "H-…-1" is written inside "H-…-10", yet only the latter is named.
    const unnamed = await r.invoice(client.uid, { number: `H-${tag()}-1` });
    const named = await r.invoice(client.uid, { number: `${unnamed.invoice_number}0` });
    const reply = await post(t, org.key, '/api/inbound/email', {
      from_email: client.email!.toUpperCase(),
      to: [account!.email],
      subject: 'Question',
      body_text: `Hi, about ${named.invoice_number}: we dispute the amount.`,
    });
    const run = await waitForRun(t, org.key, reply.run_uids[0]);
    expect(run.attributes.outcome.reply_tasks).toEqual([
      { task_uid: expect.stringMatching(UUID), invoice_uid: named.uid },
    ]);
    expect(await tasksAbout(t, unnamed.uid, 'task')).toEqual([]);
    // A writer who is no client's billing contact opens nothing.
    const stranger = await post(t, org.key, '/api/inbound/email', {
      from_email: `someone-${tag()}@else.test`,
      to: [account!.email],
      subject: `About ${unnamed.invoice_number}`,
      body_text: 'Hello',
    });
    const strangerRun = await waitForRun(t, org.key, stranger.run_uids[0]);
    expect(strangerRun.attributes.outcome.reply_tasks).toEqual([]);
  });

  it('on a schedule: PATCH a schedule trigger (cron, UTC) and status active; the minute job starts one run', async () => {
    const { org, r, agent } = await scenario({ agent: { status: 'draft', triggers: [{ type: 'manual' }] } });
    await r.invoice((await r.client()).uid);
    const patched = await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, {
      key: org.key,
      body: { status: 'active', triggers: [{ type: 'schedule', cron: '30 9 * * 1-5' }] },
    });
    expect(patched.status, patched.raw).toBe(200);
    const monday0930 = new Date('2030-01-07T09:30:20Z');
    const jobs = t.deps.jobs;
    const mine = async () =>
      t.db
        .select()
        .from(agentRuns)
        .where(and(eq(agentRuns.agentUid, agent.uid), eq(agentRuns.triggerType, 'schedule')));
    expect(await runDueSchedules(t.db, jobs, new Date('2030-01-07T09:31:00Z'))).toBe(0);
    expect(await runDueSchedules(t.db, jobs, new Date('2030-01-05T09:30:00Z'))).toBe(0); // a Saturday
    const started = await Promise.all([
      runDueSchedules(t.db, jobs, monday0930),
      runDueSchedules(t.db, jobs, monday0930),
    ]);
    expect(started[0]! + started[1]!).toBe(1);
    const [scheduled] = await mine();
    expect(scheduled!.trigger).toEqual({
      type: 'schedule',
      cron: '30 9 * * 1-5',
      scheduled_for: '2030-01-07T09:30:00.000Z',
    });
    const run = await waitForRun(t, org.key, scheduled!.uid);
    expect(run.attributes.status).toBe('completed');
    expect(run.attributes.outcome.approvals).toHaveLength(1);
    const approval = await task(t, org.key, run.attributes.outcome.approvals[0].task_uid);
    expect(approval.trigger).toMatchObject({ type: 'schedule', cron: '30 9 * * 1-5' });
    // Paused: the schedule starts nothing.
    await call(t.app, 'PATCH', `/api/agents/${agent.uid}`, { key: org.key, body: { status: 'paused' } });
    expect(await runDueSchedules(t.db, jobs, new Date('2030-01-08T09:30:00Z'))).toBe(0);
    expect(await mine()).toHaveLength(1);
  });
});

describe('the loop against a fake Slack and a fake OpenAI-compatible model', () => {
  let app: TestApp;
  let slack: FakeSlack;
  let llm: FakeLlm;
  const CHANNEL = 'C0AR';
  beforeAll(async () => {
    slack = await new FakeSlack().start();
    slack.channel(CHANNEL, true);
    llm = await new FakeLlm().start();
    app = await createTestApp({
      workers: true,
      env: {
        RATE_LIMIT_MAX: '100000',
        ...slack.env(),
        LLM_BASE_URL: llm.baseUrl,
        LLM_MODEL: 'x',
      },
    });
  });
  afterAll(async () => {
    await app?.close();
    await slack?.close();
    await llm?.close();
  });

  it('the model writes the reminder, token_usage is its usage, Slack hears every step', async () => {
    llm.behaviour = {
      kind: 'succeed',
      content: JSON.stringify({
        subject: 'Friendly nudge from the model',
        body_text: 'Model body: please pay.',
      }),
      usage: { prompt_tokens: 321, completion_tokens: 54 },
    };
    const { org, r, agent, account } = await scenario({
      app,
      agent: {
        name: 'Model Collector',
        instructions: 'Be brief and kind.',
        notification_config: { chat_channel_id: CHANNEL },
      },
    });
    const client = await r.client('Initech', `ap-${tag()}@initech.test`);
    const invoice = await r.invoice(client.uid, { dueInDays: -25 });
    const before = slack.messages.length;
    const calls = llm.requests.length;

    const run = await runAgent(app, org.key, agent.uid);
    expect(run.attributes.status).toBe('completed');
    expect(llm.requests.length - calls).toBe(1);
    const request = llm.requests[llm.requests.length - 1]!;
    expect(request.json.model).toBe('x');
    expect(JSON.stringify(request.json.messages)).toContain('Be brief and kind.');
    const usage = await call(
      app.app,
      'GET',
      `/api/agents/${agent.uid}/activities?fields[agent-runs]=token_usage`,
      {
        key: org.key,
      },
    );
    expect(usage.body.data.items).toEqual([
      {
        id: run.id,
        type: 'agent-runs',
        attributes: { token_usage: { prompt_tokens: 321, completion_tokens: 54, total_tokens: 375 } },
      },
    ]);
    const approval = await task(app, org.key, run.attributes.outcome.approvals[0].task_uid);
    expect(approval.tool_args).toMatchObject({
      subject: 'Friendly nudge from the model',
      body: 'Model body: please pay.',
      recipients: [client.email],
      invoice_uid: invoice.uid,
    });
    expect(approval.reasoning).toContain('language model');

    await slack.waitForMessages(before + 2);
    const raised = slack
      .messagesIn(CHANNEL)
      .slice(-2)
      .map((m) => m.text);
    const askText = raised.find((text) => text.includes('needs approval'))!;
    for (const part of ['Model Collector', invoice.invoice_number, approval.title])
      expect(askText).toContain(part);

    await approve(app, org.key, approval.uid, { tool_args: { subject: 'Edited by a person' } });
    const followUp = await followUpOf(app, org.key, approval.uid);
    expect(followUp.attributes.status).toBe('completed');
    const draft = await call(app.app, 'GET', `/api/email/drafts/${followUp.attributes.outcome.draft_uid}`, {
      key: org.key,
    });
    expect(draft.body).toMatchObject({
      status: 'sent',
      subject: 'Edited by a person',
      body_text: 'Model body: please pay.',
    });
    expect(draft.body.from_account_id).toBe(account!.uid);
    const eml = await outboxFile(app, draft.body.message_id);
    expect(eml).toContain('Subject: Edited by a person');
    expect(eml).toContain(`To: ${client.email}`);

    await slack.waitForMessages(before + 4);
    const all = slack
      .messagesIn(CHANNEL)
      .slice(before)
      // The approval's message is updated in place once decided: its first line is what was posted.
      .map((m) => m.text.split('\n')[0]!);
    expect(all).toHaveLength(4);
    // Posted by jobs: each row is marked sent just after Slack answered.
    const recorded = await until(async () => {
      const rows = await notes(app, org.key, agent.uid);
      return rows.every((n) => n.delivery_status !== 'pending') && rows;
    }, 'the posts to be recorded');
    expect(recorded.map((n) => [n.event, n.delivery_status])).toEqual([
      ['outcome', 'sent'],
      ['action_taken', 'sent'],
      ['outcome', 'sent'],
      ['approval_required', 'sent'],
    ]);
    expect([...all].sort()).toEqual(recorded.map((n) => n.text).sort());
    // The follow-up made no model call: it sends what was approved.
    expect(llm.requests.length - calls).toBe(1);
  });

  it('respond: the model rewrites the draft from the feedback and the previous text; Slack hears it asks again', async () => {
    llm.behaviour = {
      kind: 'succeed',
      content: JSON.stringify({ subject: 'First draft subject', body_text: 'First draft body.' }),
    };
    const { org, r, agent } = await scenario({
      app,
      agent: {
        name: 'Model Collector',
        instructions: 'Be brief and kind.',
        notification_config: { chat_channel_id: CHANNEL },
      },
    });
    const client = await r.client('Initech', `ap-${tag()}@initech.test`);
    const invoice = await r.invoice(client.uid, { dueInDays: -20 });
    const run = await runAgent(app, org.key, agent.uid);
    const taskUid = run.attributes.outcome.approvals[0].task_uid;
    llm.behaviour = {
      kind: 'succeed',
      content: JSON.stringify({
        subject: 'Revised by the model',
        body_text: 'A shorter, **kinder** reminder.',
      }),
      usage: { prompt_tokens: 200, completion_tokens: 30 },
    };
    const calls = llm.requests.length;
    const feedback = 'Make it shorter and kinder; mention the payment plan.';
    await answer(app, org.key, taskUid, { action: 'respond', feedback });
    const followUp = await runOfAnswer(app, org.key, taskUid, 'respond');
    expect(followUp.attributes).toMatchObject({
      status: 'completed',
      outcome: { revised: true, mode: 'inference', edited_tool_args: ['subject', 'body'] },
    });
    expect(llm.requests.length - calls).toBe(1);
    const asked = JSON.stringify(llm.requests.at(-1)!.json.messages);
    for (const part of [
      'Make it shorter and kinder',
      'First draft subject',
      'First draft body.',
      invoice.invoice_number,
      'Be brief and kind.',
    ])
      expect(asked).toContain(part);
    const usage = await call(
      app.app,
      'GET',
      `/api/agent-runs/${followUp.id}?fields[agent-runs]=token_usage`,
      { key: org.key },
    );
    expect(usage.body.data.attributes.token_usage).toEqual({
      prompt_tokens: 200,
      completion_tokens: 30,
      total_tokens: 230,
    });
    const revised = await task(app, org.key, taskUid);
    expect(revised).toMatchObject({ status: 'todo', response: null });
    expect(revised.tool_args).toEqual({
      type: 'send_email',
      subject: 'Revised by the model',
      body: 'A shorter, kinder reminder.',
      recipients: [client.email],
      invoice_uid: invoice.uid,
    });
    expect(revised.reasoning).toContain('I rewrote the reminder with the language model');
    const asks = await until(async () => {
      const texts = slack.messagesIn(CHANNEL).map((m) => m.text);
      return texts.some((text) => text.includes('revised the reminder')) ? texts : undefined;
    }, 'the revised approval_required in Slack');
    expect(asks.find((text) => text.includes('revised the reminder'))).toContain('Revised by the model');
  });

  it('respond with a model that fails: the feedback is added as written, and the reasoning says why', async () => {
    llm.behaviour = { kind: 'succeed' };
    try {
      const { org, r, agent } = await scenario({ app });
      await r.invoice((await r.client()).uid, { dueInDays: -8 });
      const run = await runAgent(app, org.key, agent.uid);
      const taskUid = run.attributes.outcome.approvals[0].task_uid;
      const raised = await task(app, org.key, taskUid);
      llm.behaviour = { kind: 'fail', status: 500 };
      await answer(app, org.key, taskUid, { action: 'respond', feedback: 'Thanks for your business.' });
      const followUp = await runOfAnswer(app, org.key, taskUid, 'respond');
      expect(followUp.attributes.outcome).toMatchObject({ revised: true, mode: 'builtin' });
      const revised = await task(app, org.key, taskUid);
      expect(revised.tool_args.subject).toBe(raised.tool_args.subject);
      // Before the last paragraph (what reads as the sign-off).
      const paragraphs = (raised.tool_args.body as string).split('\n\n');
      expect(paragraphs.length).toBeGreaterThan(1);
      expect(revised.tool_args.body).toBe(
        [...paragraphs.slice(0, -1), 'Thanks for your business.', paragraphs.at(-1)].join('\n\n'),
      );
      expect(revised.reasoning).toContain(
        'the language model failed (The text generator answered with HTTP 500)',
      );
    } finally {
      llm.behaviour = { kind: 'succeed' };
    }
  });

  it('a model that fails: the template writes the reminder instead', async () => {
    llm.behaviour = { kind: 'fail', status: 500 };
    try {
      const { org, r, agent } = await scenario({ app });
      const invoice = await r.invoice((await r.client()).uid, { dueInDays: -8 });
      const run = await runAgent(app, org.key, agent.uid);
      expect(run.attributes.status).toBe('completed');
      const approval = await task(app, org.key, run.attributes.outcome.approvals[0].task_uid);
      expect(approval.tool_args.subject).toBe(
        `Payment reminder: invoice ${invoice.invoice_number} is 8 days overdue`,
      );
      expect(approval.reasoning).toContain('template');
    } finally {
      llm.behaviour = { kind: 'succeed' };
    }
  });
});

/** A TCP port nothing listens on (taken, then released). */
async function unusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
