/* eslint-disable @typescript-eslint/no-explicit-any -- API answers and event data are checked field by field */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { rawQuery } from '../../src/platform/db/client.ts';
import { registerExecutor, failAbandonedRuns } from '../../src/modules/agents/agent-runs.service.ts';
import { reconcileBillingSyncs } from '../../src/modules/billing/billing.service.ts';
import { invoiceViewForSync } from '../../src/modules/invoices/invoices.service.ts';
import { emitEvent } from '../../src/modules/webhooks/webhooks.service.ts';
import { EVENT_TYPES } from '../../src/modules/webhooks/webhook-signing.ts';
import { createAgent } from '../helpers/agent-fixtures.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { listeningTestApp, uploadWithForm, type ListeningTestApp } from '../helpers/presigned-post.ts';
import { createPrincipals, type OrgPrincipals, type Principals } from '../helpers/principals.ts';
import { CONTENT_TYPES, sampleFile } from '../helpers/sample-files.ts';
import { until } from '../helpers/until.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * Every event source of docs/webhooks.md#event-types, each through the route or job that makes the
 * change: the event row (`GET /api/events`) with the resource as its GET route answers it, and for a
 * sample the signed delivery to a real local receiver; a change refused (4xx) or rolled back writes no
 * event. The app's own workers run (the send, processing, run and delivery jobs); waits poll, never
 * sleep.
 */

let t: ListeningTestApp;
let p: Principals;
let receiver: WebhookReceiver;
let endpoint: { uid: string; secret: string };
let smtp: FakeSmtp;
const HOOK = '/sources';

registerExecutor('source_ok', (_env, step) => Promise.resolve({ summary: `${step.agent.name} did it` }));
registerExecutor('source_fail', () => Promise.reject(new Error('the ledger would not balance')));

beforeAll(async () => {
  smtp = await new FakeSmtp().start();
  smtp.behaviour = { kind: 'reject', code: 550, message: 'mailbox unavailable' };
  t = await listeningTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  receiver = await WebhookReceiver.start();
  // Every type, to one receiver: the sample deliveries below are checked there.
  const res = await call(t.app, 'POST', `/api/organization/${p.orgA.uid}/webhook-endpoints`, {
    key: p.orgA.admin.key,
    body: { url: receiver.url(HOOK) },
  });
  expect(res.status, res.raw).toBe(201);
  endpoint = res.body.data;
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await smtp?.stop();
});

const admin = () => p.orgA.admin.key;
const tag = () => crypto.randomBytes(4).toString('hex');

async function request(method: string, url: string, body?: unknown, key = admin(), status?: number) {
  const res = await call(t.app, method, url, { key, ...(body !== undefined ? { body } : {}) });
  if (status !== undefined) expect(res.status, `${method} ${url}: ${res.raw}`).toBe(status);
  return res;
}

interface EventItem {
  uid: string;
  type: string;
  entity_type: string;
  entity_uid: string;
  data: Record<string, any>;
  created_at: string;
}

/** The organization's events about one entity, oldest first (the list is newest first). */
async function eventsOf(entityUid: string, org: OrgPrincipals = p.orgA): Promise<EventItem[]> {
  const res = await call(t.app, 'GET', '/api/events', {
    key: org.admin.key,
    query: { entity_uid: entityUid, per_page: '100', organization_uid: org.uid },
  });
  expect(res.status, res.raw).toBe(200);
  return (res.body.data.items as EventItem[]).reverse();
}
const typesOf = async (entityUid: string) => (await eventsOf(entityUid)).map((e) => e.type);

/** Waits for an event of `type` about the entity (one a job writes). */
async function eventually(entityUid: string, type: string): Promise<EventItem> {
  return until(
    async () => (await eventsOf(entityUid)).find((e) => e.type === type),
    `${type} about ${entityUid}`,
  );
}

async function newInvoice(body: Record<string, unknown> = {}) {
  const res = await request(
    'POST',
    '/api/invoices',
    {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `SRC-${tag()}`,
      currency: 'USD',
      ...body,
    },
    admin(),
    201,
  );
  return res.body.data;
}
const getInvoice = async (uid: string) =>
  (await request('GET', `/api/invoices/${uid}`, undefined, admin(), 200)).body.data;

async function newProduct() {
  const sku = `SKU-${tag()}`;
  await request(
    'POST',
    '/api/products',
    { sku, name: 'Widget', context_type: 'PRODUCT', unit_price: 10_000, currency: 'USD' },
    admin(),
    201,
  );
  return sku;
}

describe('invoices', () => {
  it('invoice.updated and invoice.status_changed: a PUT that moves the status, with the invoice as GET answers it', async () => {
    const invoice = await newInvoice({ status: 'draft' });
    await request(
      'PUT',
      `/api/invoices/${invoice.uid}`,
      { status: 'open', invoice_notes: { invoice_memo: 'Thanks' } },
      admin(),
      200,
    );
    const events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual([
      'invoice.created',
      'invoice.updated',
      'invoice.status_changed',
    ]);
    const [, updated, moved] = events as [EventItem, EventItem, EventItem];
    const current = await getInvoice(invoice.uid);
    expect(updated).toMatchObject({ entity_type: 'invoice', entity_uid: invoice.uid });
    expect(updated.data.invoice).toEqual(current);
    expect(updated.data.changed_fields).toEqual(['status', 'invoice_notes']);
    expect(moved.data).toMatchObject({ previous_status: 'draft', status: 'open' });
    expect(moved.data.invoice).toEqual(current);
  });

  it('a PUT that changes nothing GET shows writes no event; neither does a refused one (422)', async () => {
    const invoice = await newInvoice({ status: 'open', invoice_notes: { invoice_memo: 'Same' } });
    await request(
      'PUT',
      `/api/invoices/${invoice.uid}`,
      { invoice_notes: { invoice_memo: 'Same' } },
      admin(),
      200,
    );
    expectErrorBody(
      await request('PUT', `/api/invoices/${invoice.uid}`, { status: 'approved' }),
      422,
      'validation_failed',
    );
    expect(await typesOf(invoice.uid)).toEqual(['invoice.created']);
  });

  it('line items added and changed: invoice.updated with the lines and the totals that moved', async () => {
    const sku = await newProduct();
    const invoice = await newInvoice();
    const added = await request(
      'POST',
      `/api/invoices/${invoice.uid}/line_items`,
      { context_type: 'PRODUCT', sku, quantity: 2 },
      admin(),
      200,
    );
    await request(
      'PUT',
      `/api/invoices/${invoice.uid}/line_items`,
      { uid: added.body.data.uid, quantity: 3 },
      admin(),
      200,
    );
    // Refused (unknown SKU): nothing changed, no event.
    expectErrorBody(
      await request('POST', `/api/invoices/${invoice.uid}/line_items`, {
        context_type: 'PRODUCT',
        sku: 'NOPE',
        quantity: 1,
      }),
      422,
      'validation_failed',
    );
    const events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual(['invoice.created', 'invoice.updated', 'invoice.updated']);
    expect(events[1]!.data.changed_fields).toEqual(
      expect.arrayContaining(['line_items', 'subtotal_cents', 'total_cents', 'amount_remaining_cents']),
    );
    expect(events[1]!.data.invoice.line_items).toHaveLength(1);
    expect(events[2]!.data.invoice.line_items[0].quantity).toBe(3);
    expect(events[2]!.data.invoice).toEqual(await getInvoice(invoice.uid));
  });

  it('a comment added or resolved: invoice.updated (GET shows comments)', async () => {
    const invoice = await newInvoice();
    const comment = await request(
      'POST',
      `/api/invoices/${invoice.uid}/comments`,
      { text: 'Call them' },
      admin(),
      201,
    );
    await request(
      'PATCH',
      `/api/invoices/${invoice.uid}/comments/${comment.body.data.uid}`,
      { resolved: true },
      admin(),
      200,
    );
    const events = await eventsOf(invoice.uid);
    expect(events.map((e) => [e.type, e.data.changed_fields])).toEqual([
      ['invoice.created', undefined],
      ['invoice.updated', ['has_comments', 'comments']],
      ['invoice.updated', ['comments']],
    ]);
  });

  it('party.updated with the party and what changed; its invoices send no event of their own', async () => {
    const vendor = (
      await request(
        'POST',
        '/api/parties',
        { name: `Vendor ${tag()}`, role: 'vendor', tax_id: '900-1' },
        admin(),
        201,
      )
    ).body.data;
    const ap = await newInvoice({ invoice_type: 'ACCOUNTS_PAYABLE', service_provider_party_uid: vendor.uid });
    const renamed = (
      await request(
        'PATCH',
        `/api/parties/${vendor.uid}`,
        { name: 'Vendor Renamed', tax_id: '900-2' },
        admin(),
        200,
      )
    ).body.data;
    // The same values again: nothing changed, nothing sent.
    await request('PATCH', `/api/parties/${vendor.uid}`, { name: 'Vendor Renamed' }, admin(), 200);
    const events = await eventsOf(vendor.uid);
    expect(events.map((e) => e.type)).toEqual(['party.updated']);
    expect(events[0]!.data).toEqual({ party: renamed, changed_fields: ['name', 'tax_id'] });
    expect(events[0]).toMatchObject({ entity_type: 'party', entity_uid: vendor.uid });
    // The invoice shows the new name (GET reads the party), with no invoice event for it.
    expect(await typesOf(ap.uid)).toEqual(['invoice.created']);
    expect((await getInvoice(ap.uid)).parties.service_provider.name).toBe('Vendor Renamed');
  });

  it('payment.recorded with the payment and the invoice; the one that settles it moves it to paid', async () => {
    const sku = await newProduct();
    const invoice = await newInvoice({
      status: 'open',
      line_items: [{ context_type: 'PRODUCT', sku, quantity: 1 }],
    });
    expectErrorBody(
      await request('POST', `/api/invoices/${invoice.uid}/payments`, { amount_cents: 10_001 }),
      422,
      'validation_failed',
    );
    await request('POST', `/api/invoices/${invoice.uid}/payments`, { amount_cents: 4_000 }, admin(), 201);
    await request('POST', `/api/invoices/${invoice.uid}/payments`, { amount_cents: 6_000 }, admin(), 201);
    const events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual([
      'invoice.created',
      'payment.recorded',
      'invoice.updated',
      'payment.recorded',
      'invoice.updated',
      'invoice.status_changed',
    ]);
    // The one payment object: as the payments list shows it (nothing changed either payment since).
    const listed = (await request('GET', `/api/invoices/${invoice.uid}/payments`, undefined, admin(), 200))
      .body.data.items;
    expect(events[1]!.data.payment).toEqual(listed[0]);
    expect(events[3]!.data.payment).toEqual(listed[1]);
    expect(events[1]!.data.payment).toMatchObject({
      invoice_uid: invoice.uid,
      amount_cents: 4_000,
      recorded_by: { user_uid: p.orgA.admin.userUid },
    });
    expect(events[1]!.data.invoice).toMatchObject({
      amount_paid_cents: 4_000,
      amount_remaining_cents: 6_000,
    });
    expect(events[2]!.data.changed_fields).toEqual(
      expect.arrayContaining(['amount_paid_cents', 'amount_remaining_cents']),
    );
    expect(events[5]!.data).toMatchObject({ previous_status: 'open', status: 'paid' });
    expect(events[5]!.data.invoice).toEqual(await getInvoice(invoice.uid));

    // A sample delivery: signed, with the event's data and its uid as webhook-id.
    const got = await until(
      async () => receiver.on(HOOK).find((r) => r.headers['webhook-id'] === events[1]!.uid),
      'the payment.recorded delivery',
    );
    expect(new Webhook(endpoint.secret).verify(got.body, got.headers as Record<string, string>)).toEqual({
      type: 'payment.recorded',
      timestamp: events[1]!.created_at,
      data: events[1]!.data,
    });
  });
  it('credit_note.created/voided, payment.refunded/voided: each with its record and the invoice, before the invoice events', async () => {
    const sku = await newProduct();
    const invoice = await newInvoice({
      status: 'open',
      line_items: [{ context_type: 'PRODUCT', sku, quantity: 1 }],
    });
    const url = `/api/invoices/${invoice.uid}`;
    const note = (
      await request(
        'POST',
        `${url}/credit-notes`,
        { amount_cents: 1_000, reason: 'order_change' },
        admin(),
        201,
      )
    ).body.data.credit_note;
    await request('POST', `${url}/payments`, { amount_cents: 9_000 }, admin(), 201);
    const [payment] = (await request('GET', `${url}/payments`, undefined, admin(), 200)).body.data.items;
    const refunded = (
      await request(
        'POST',
        `${url}/payments/${payment.uid}/refund`,
        { amount_cents: 500, reason: 'r' },
        admin(),
        201,
      )
    ).body.data;
    await request('POST', `${url}/credit-notes/${note.uid}/void`, {}, admin(), 200);
    // Refused changes write no event.
    expectErrorBody(
      await request('POST', `${url}/payments/${payment.uid}/refund`, { amount_cents: 9_000, reason: 'r' }),
      422,
      'validation_failed',
    );
    await request('POST', `${url}/payments/${payment.uid}/void`, { reason: 'mistake' }, admin(), 409);
    const events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual([
      'invoice.created',
      'credit_note.created',
      'invoice.updated',
      'payment.recorded',
      'invoice.updated',
      'invoice.status_changed',
      'payment.refunded',
      'invoice.updated',
      'invoice.status_changed',
      'credit_note.voided',
      'invoice.updated',
    ]);
    expect(events[1]!.data.credit_note).toMatchObject({
      uid: note.uid,
      amount_cents: 1_000,
      status: 'issued',
    });
    expect(events[6]!.data).toEqual({
      refund: refunded.refund,
      payment: refunded.payment,
      invoice: refunded.invoice,
    });
    // payment.recorded and payment.refunded carry the same payment object, before and after the refund.
    expect(events[3]!.data.payment).toEqual({
      ...refunded.payment,
      status: 'succeeded',
      amount_refunded_cents: 0,
      amount_net_cents: 9_000,
      refunds: [],
    });
    expect(events[9]!.data.credit_note).toMatchObject({ uid: note.uid, status: 'void' });
    expect(events[9]!.data.invoice).toEqual(await getInvoice(invoice.uid));

    const other = await newInvoice({
      status: 'open',
      line_items: [{ context_type: 'PRODUCT', sku, quantity: 1 }],
    });
    await request('POST', `/api/invoices/${other.uid}/payments`, { amount_cents: 2_000 }, admin(), 201);
    const [mistake] = (await request('GET', `/api/invoices/${other.uid}/payments`, undefined, admin(), 200))
      .body.data.items;
    await request(
      'POST',
      `/api/invoices/${other.uid}/payments/${mistake.uid}/void`,
      { reason: 'x' },
      admin(),
      200,
    );
    const voided = (await eventsOf(other.uid)).filter((e) => e.type === 'payment.voided');
    expect(voided).toHaveLength(1);
    expect(voided[0]!.data.payment).toMatchObject({ uid: mistake.uid, status: 'voided', void_reason: 'x' });
    expect(voided[0]!.data.invoice).toMatchObject({ amount_paid_cents: 0 });

    const got = await until(
      async () => receiver.on(HOOK).find((r) => r.headers['webhook-id'] === events[6]!.uid),
      'the payment.refunded delivery',
    );
    expect(new Webhook(endpoint.secret).verify(got.body, got.headers as Record<string, string>)).toEqual({
      type: 'payment.refunded',
      timestamp: events[6]!.created_at,
      data: events[6]!.data,
    });
  });
});

describe('the billing integration', () => {
  let partner: FakePartner;
  beforeAll(async () => {
    partner = await FakePartner.start(`partner-secret-${tag()}`);
    const res = await request('PUT', `/api/organization/${p.orgA.uid}/integrations/billing`, {
      type: 'http',
      url: partner.url(),
      secret: partner.secret,
    });
    expect([200, 201], res.raw).toContain(res.status);
  });
  afterAll(async () => {
    await request('DELETE', `/api/organization/${p.orgA.uid}/integrations/billing`);
    await partner?.close();
  });

  const reconcile = () =>
    reconcileBillingSyncs(t.db, t.deps.jobs, invoiceViewForSync, {
      allowPrivateNetworkTargets: true,
      timeoutMs: 5000,
      secrets: t.deps.secrets,
      olderThanSeconds: 0,
    });

  it('invoice.synced after the partner accepted the update, after the update’s own event', async () => {
    const invoice = await newInvoice();
    await request(
      'PUT',
      `/api/invoices/${invoice.uid}`,
      { invoice_notes: { invoice_memo: 'Synced' } },
      admin(),
      200,
    );
    const events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual(['invoice.created', 'invoice.updated', 'invoice.synced']);
    const synced = events[2]!;
    const current = await getInvoice(invoice.uid);
    expect(synced.data).toMatchObject({ revision: current.revision, resent: false });
    expect(synced.data.invoice).toEqual(current);
    expect(current.integrations[0]).toMatchObject({ integration_name: 'billing' });
  });

  it('invoice.sync_failed when the partner refuses (502: nothing changed), once; the reconciler’s success is invoice.synced', async () => {
    const invoice = await newInvoice();
    partner.next({ kind: 'fail', status: 500 });
    expectErrorBody(
      await request('PUT', `/api/invoices/${invoice.uid}`, { invoice_notes: { invoice_memo: 'X' } }),
      502,
    );
    let events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual(['invoice.created', 'invoice.sync_failed']);
    expect(events[1]!.data).toMatchObject({
      will_retry: true,
      error: expect.stringMatching(/refused the update \(HTTP 500\)/),
    });
    expect(events[1]!.data.invoice).toEqual(await getInvoice(invoice.uid));
    // The reconciler's retry fails too: no second sync_failed (its end is reported by invoice.synced).
    partner.next({ kind: 'fail', status: 503 });
    expect((await reconcile()).failed).toBeGreaterThanOrEqual(1);
    expect(await typesOf(invoice.uid)).toEqual(['invoice.created', 'invoice.sync_failed']);
    expect((await reconcile()).resent).toBeGreaterThanOrEqual(1);
    events = await eventsOf(invoice.uid);
    expect(events.map((e) => e.type)).toEqual(['invoice.created', 'invoice.sync_failed', 'invoice.synced']);
    expect(events[2]!.data).toMatchObject({ resent: true });
    expect(events[2]!.data.invoice).toEqual(await getInvoice(invoice.uid));
  });
});

describe('work tasks', () => {
  const tasks = '/api/work-tasks';

  it('work_task.created, and work_task.assigned when created with an assignee', async () => {
    const plain = (await request('POST', tasks, { title: 'Plain' }, admin(), 201)).body.data;
    const assigned = (
      await request(
        'POST',
        tasks,
        { title: 'Assigned', assign_to: { type: 'user', user_uid: p.orgA.member.userUid } },
        admin(),
        201,
      )
    ).body.data;
    expectErrorBody(await request('POST', tasks, { title: '   ' }), 422, 'validation_failed');
    const [created] = await eventsOf(plain.uid);
    expect(created).toMatchObject({ type: 'work_task.created', entity_type: 'work_task' });
    expect(created!.data.work_task).toEqual(
      (await request('GET', `${tasks}/${plain.uid}`, undefined, admin(), 200)).body.data,
    );
    const events = await eventsOf(assigned.uid);
    expect(events.map((e) => e.type)).toEqual(['work_task.created', 'work_task.assigned']);
    expect(events[1]!.data).toMatchObject({
      previous_assign_to: null,
      work_task: { assign_to: { type: 'user', user_uid: p.orgA.member.userUid } },
    });
  });

  it('work_task.assigned when the assignee is changed or removed, not for other edits or a refused one', async () => {
    const task = (await request('POST', tasks, { title: 'Reassign me' }, admin(), 201)).body.data;
    await request('PATCH', `${tasks}/${task.uid}`, { priority: 'high' }, admin(), 200);
    await request(
      'PATCH',
      `${tasks}/${task.uid}`,
      { assign_to: { type: 'user', user_uid: p.orgA.admin.userUid } },
      admin(),
      200,
    );
    expectErrorBody(
      await request('PATCH', `${tasks}/${task.uid}`, {
        assign_to: { type: 'user', user_uid: p.orgB.admin.userUid },
      }),
      422,
      'validation_failed',
    );
    await request('PATCH', `${tasks}/${task.uid}`, { assign_to: null }, admin(), 200);
    const events = await eventsOf(task.uid);
    expect(
      events.map((e) => [e.type, e.data.previous_assign_to, e.data.work_task.assign_to?.user_uid ?? null]),
    ).toEqual([
      ['work_task.created', undefined, null],
      ['work_task.assigned', null, p.orgA.admin.userUid],
      ['work_task.assigned', { type: 'user', user_uid: p.orgA.admin.userUid }, null],
    ]);
  });

  it('a removed member’s open tasks: work_task.assigned (reason member_removed)', async () => {
    const org = p.orgB;
    const task = (
      await request(
        'POST',
        tasks,
        {
          title: 'Theirs',
          organization_uid: org.uid,
          assign_to: { type: 'user', user_uid: org.member.userUid },
        },
        org.admin.key,
        201,
      )
    ).body.data;
    await request(
      'DELETE',
      `/api/organization/${org.uid}/members/${org.member.userUid}`,
      undefined,
      org.admin.key,
      200,
    );
    const events = await eventsOf(task.uid, org);
    expect(events.map((e) => e.type)).toEqual([
      'work_task.created',
      'work_task.assigned',
      'work_task.assigned',
    ]);
    expect(events[2]!.data).toMatchObject({
      reason: 'member_removed',
      previous_assign_to: { type: 'user', user_uid: org.member.userUid },
      work_task: { assign_to: null },
    });
    // Another organization's events are not listed to this one.
    expect(await eventsOf(task.uid, p.orgA)).toEqual([]);
  });

  it('work_task.approval_requested: an approval raised by an agent through the API', async () => {
    const agent = await createAgent(t, admin(), { status: 'active', agent_type: 'outside' });
    const raised = await request(
      'POST',
      `/api/agents/${agent.uid}/approvals`,
      { title: 'Send it?', reasoning: 'Overdue', tool_args: { to: 'a@b.test' }, trigger: { type: 'manual' } },
      admin(),
      201,
    );
    const events = await eventsOf(raised.body.data.uid);
    expect(events.map((e) => e.type)).toEqual(['work_task.created', 'work_task.approval_requested']);
    expect(events[1]!.data.work_task).toMatchObject({
      type: 'hil_approval',
      tool_args: { to: 'a@b.test' },
      origin: { type: 'agent', agent_uid: agent.uid },
    });
  });
});

describe('agent runs', () => {
  it('agent_run.started and agent_run.completed, through the run job', async () => {
    const agent = await createAgent(t, admin(), { status: 'active', agent_type: 'source_ok' });
    const run = (await request('POST', `/api/agents/${agent.uid}/runs`, {}, admin(), 202)).body.data;
    const completed = await eventually(run.id, 'agent_run.completed');
    expect(await typesOf(run.id)).toEqual(['agent_run.started', 'agent_run.completed']);
    expect(completed).toMatchObject({ entity_type: 'agent_run' });
    expect(completed.data.agent_run).toEqual(
      (await request('GET', `/api/agent-runs/${run.id}`, undefined, admin(), 200)).body.data,
    );
    expect(completed.data.agent_run.attributes).toMatchObject({
      status: 'completed',
      outcome: { summary: expect.any(String) },
    });
    expect(completed.data.agent_run.attributes).not.toHaveProperty('token_usage');
  });

  it('agent_run.failed with the error: an executor that throws, and a run a dead worker left running', async () => {
    const agent = await createAgent(t, admin(), { status: 'active', agent_type: 'source_fail' });
    const run = (await request('POST', `/api/agents/${agent.uid}/runs`, {}, admin(), 202)).body.data;
    const failed = await eventually(run.id, 'agent_run.failed');
    expect(failed.data).toMatchObject({
      error: 'the ledger would not balance',
      agent_run: { id: run.id, attributes: { status: 'failed', error: 'the ledger would not balance' } },
    });

    // The hourly maintenance job's function, on a run whose worker died an hour and a half ago.
    const stuck = await createAgent(t, admin(), { status: 'draft', agent_type: 'source_ok' });
    const sandbox = (await request('POST', `/api/agents/${stuck.uid}/runs`, { sandbox: true }, admin(), 202))
      .body.data;
    await eventually(sandbox.id, 'agent_run.completed');
    await rawQuery(
      t.db,
      `update agent_runs set status = 'running', started_on = now() - interval '90 minutes' where uid = $1`,
      [sandbox.id],
    );
    expect(await failAbandonedRuns(t.db, t.deps.jobs)).toBe(1);
    const abandoned = (await eventsOf(sandbox.id)).at(-1)!;
    expect(abandoned).toMatchObject({
      type: 'agent_run.failed',
      data: { error: 'The worker executing this run stopped before it finished' },
    });
  });
});

describe('email drafts', () => {
  let outbox: string;
  let refusing: string;
  beforeAll(async () => {
    outbox = (
      await request(
        'POST',
        '/api/email/accounts',
        { email: `ar-${tag()}@acme.test`, display_name: 'AR' },
        admin(),
        201,
      )
    ).body.data.uid;
    refusing = (
      await request(
        'POST',
        '/api/email/accounts',
        { email: `smtp-${tag()}@acme.test`, display_name: 'AR', smtp_url: smtp.url() },
        admin(),
        201,
      )
    ).body.data.uid;
  });
  const draft = (from: string, plannedSendAt: string | null) =>
    request(
      'POST',
      '/api/email/drafts',
      {
        from_account_id: from,
        to: ['client@client.test'],
        subject: 'Reminder',
        body_text: 'Please pay.',
        planned_send_at: plannedSendAt,
      },
      admin(),
      201,
    );

  it('email_draft.scheduled when a send time is saved or changed; not for a draft without one', async () => {
    const unscheduled = (await draft(outbox, null)).body;
    expect(await typesOf(unscheduled.uid)).toEqual([]);
    const first = new Date(Date.now() + 86_400_000).toISOString();
    const second = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const scheduled = (await draft(outbox, first)).body;
    await request('POST', '/api/email/drafts', { uid: scheduled.uid, subject: 'Reminder (2)' }, admin(), 200);
    await request('POST', '/api/email/drafts', { uid: scheduled.uid, planned_send_at: second }, admin(), 200);
    const events = await eventsOf(scheduled.uid);
    expect(
      events.map((e) => [e.type, e.data.previous_planned_send_at, e.data.email_draft.planned_send_at]),
    ).toEqual([
      ['email_draft.scheduled', null, first],
      ['email_draft.scheduled', first, second],
    ]);
    expect(events[1]!.data.email_draft).toEqual(
      (await request('GET', `/api/email/drafts/${scheduled.uid}`, undefined, admin(), 200)).body,
    );
  });

  it('email_draft.sent by the send job; email_draft.failed with the error when the server refuses', async () => {
    const now = new Date().toISOString();
    const good = (await draft(outbox, now)).body;
    const bad = (await draft(refusing, now)).body;
    const sent = await eventually(good.uid, 'email_draft.sent');
    expect(sent.data.email_draft).toMatchObject({
      status: 'sent',
      error: null,
      message_id: expect.any(String),
    });
    expect(sent.data.email_draft).toEqual(
      (await request('GET', `/api/email/drafts/${good.uid}`, undefined, admin(), 200)).body,
    );
    const failed = await eventually(bad.uid, 'email_draft.failed');
    expect(failed.data.email_draft.status).toBe('failed');
    expect(failed.data.error).toMatch(/550/);
    expect(await typesOf(bad.uid)).toEqual(['email_draft.scheduled', 'email_draft.failed']);
  });
});

describe('knowledge', () => {
  async function upload(content: Buffer) {
    const res = await request(
      'POST',
      '/api/knowledge/presign',
      { filename: 'policy.pdf', organization_uid: p.orgA.uid, content_type: CONTENT_TYPES.pdf },
      admin(),
      200,
    );
    const presigned = res.body.data;
    expect((await uploadWithForm(presigned.presigned_post, { content })).status).toBe(204);
    await request(
      'POST',
      '/api/knowledge/confirm',
      { knowledge_document_uid: presigned.knowledge_document_uid, organization_uid: p.orgA.uid },
      admin(),
      202,
    );
    return presigned.knowledge_document_uid as string;
  }

  it('knowledge.processed by the processing job, with the document as GET answers it', async () => {
    const uid = await upload(sampleFile('pdf'));
    const processed = await eventually(uid, 'knowledge.processed');
    expect(processed).toMatchObject({ entity_type: 'knowledge_document' });
    expect(processed.data.knowledge_document).toEqual(
      (await request('GET', `/api/knowledge/${uid}`, undefined, admin(), 200)).body.data,
    );
    expect(processed.data.knowledge_document.status).toBe('ready');
  });

  it('knowledge.failed with the reason', async () => {
    const uid = await upload(Buffer.from('%PDF-1.4\nthis is not really a PDF\n%%EOF\n'));
    const failed = await eventually(uid, 'knowledge.failed');
    expect(failed.data.error).toMatch(/^The PDF could not be read/);
    expect(failed.data.knowledge_document).toMatchObject({ status: 'failed', error: failed.data.error });
  });
});

describe('the outbox rule', () => {
  it('an event written in a transaction that rolls back is gone with it, deliveries and jobs too', async () => {
    const entity = crypto.randomUUID();
    await expect(
      t.db.transaction(async (tx) => {
        await emitEvent(
          tx,
          t.deps.jobs,
          { organizationUid: p.orgA.uid },
          'invoice.updated',
          { type: 'invoice', uid: entity },
          {},
        );
        throw new Error('the change failed after its event was written');
      }),
    ).rejects.toThrow(/the change failed/);
    expect(await eventsOf(entity)).toEqual([]);
    expect(await rawQuery(t.db, 'select 1 from webhook_deliveries where entity_uid = $1', [entity])).toEqual(
      [],
    );
  });

  it('every declared type has a source exercised above', () => {
    // Kept in step with EVENT_TYPES: a new type needs its source and a test here.
    expect([...EVENT_TYPES].sort()).toEqual(
      [
        'agent_run.completed',
        'agent_run.failed',
        'agent_run.started',
        'email_draft.failed',
        'email_draft.scheduled',
        'email_draft.sent',
        'invoice.created',
        'invoice.status_changed',
        'invoice.sync_failed',
        'invoice.synced',
        'invoice.updated',
        'knowledge.failed',
        'knowledge.processed',
        'party.updated',
        'payment.recorded',
        'payment.refunded',
        'payment.voided',
        'credit_note.created',
        'credit_note.voided',
        'approval.decided',
        'work_task.approval_requested',
        'work_task.assigned',
        'work_task.created',
      ].sort(),
    );
  });
});
