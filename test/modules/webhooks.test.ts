/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { claimDelivery } from '../../src/modules/webhooks/webhooks.repository.ts';
import {
  deliverDueWebhooks,
  deliverWebhook,
  emitEvent,
  purgeOldEvents,
  sendDisabledNotice,
  WEBHOOK_DELIVER_QUEUE,
  WEBHOOK_DISABLED_NOTICE_QUEUE,
  webhookOptionsOf,
  type DisabledNoticeJobData,
  type WebhookOptions,
} from '../../src/modules/webhooks/webhooks.service.ts';
import { nextAttemptAfter, signedHeaders } from '../../src/modules/webhooks/webhook-signing.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { engine } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';

/**
 * Outbound webhooks (docs/webhooks.md) against a real local receiver: the admin routes (happy path,
 * errors, security), `GET /api/events`, Standard Webhooks signatures (the specification's test vector,
 * `Webhook.verify`, both secrets during a rotation), retries on 500 and on timeout, abandoning and
 * disabling (with the admins' email), resend, per-entity order, a delivery left by a killed worker, and
 * the first two sources (the others: webhook-sources.test.ts).
 * Time moves by passing `now` to the delivery functions: no sleeps.
 */

let t: TestApp;
let p: Principals;
let receiver: WebhookReceiver;
let options: WebhookOptions;
let smtp: FakeSmtp;
const TIMEOUT_MS = 300;
const MINUTE = 60_000;
const HOUR = 3_600_000;

beforeAll(async () => {
  smtp = await new FakeSmtp().start();
  t = await createTestApp({
    env: { WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), RATE_LIMIT_MAX: '100000', SMTP_URL: smtp.url() },
  });
  p = await createPrincipals(t);
  receiver = await WebhookReceiver.start();
  options = webhookOptionsOf(t.deps);
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
  await smtp?.stop();
});
afterEach(async () => {
  // Each test registers its own endpoints; none outlives it (their deliveries go with them).
  await rawQuery(t.db, 'delete from webhook_endpoints');
  receiver.script = [];
  receiver.fallback = { status: 200, body: 'ok' };
});

const base = (org = p.orgA.uid) => `/api/organization/${org}/webhook-endpoints`;
const admin = () => p.orgA.admin.key;

async function register(body: Record<string, unknown> = {}, org = p.orgA) {
  const path = `/hook/${crypto.randomUUID()}`;
  const res = await call(t.app, 'POST', base(org.uid), {
    key: org.admin.key,
    body: { url: receiver.url(path), ...body },
  });
  expect(res.status, res.raw).toBe(201);
  return { ...res.body.data, path } as { uid: string; secret: string; path: string; [k: string]: any };
}

async function deliveriesOf(endpointUid: string) {
  const res = await call(t.app, 'GET', `${base()}/${endpointUid}/deliveries`, { key: admin() });
  expect(res.status, res.raw).toBe(200);
  return res.body.data.items as any[];
}

const entity = () => ({ type: 'invoice', uid: crypto.randomUUID() });
const emit = (type: 'invoice.updated' | 'invoice.created', on: { type: string; uid: string }, payload = {}) =>
  t.db.transaction((tx) => emitEvent(tx, t.deps.jobs, { organizationUid: p.orgA.uid }, type, on, payload));
const later = (ms: number) => new Date(Date.now() + ms);

async function newInvoice(number = `WH-${crypto.randomUUID().slice(0, 8)}`) {
  const res = await call(t.app, 'POST', '/api/invoices', {
    key: admin(),
    body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: number, currency: 'USD' },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

describe('signatures (Standard Webhooks)', () => {
  it('matches the test vector of the specification', () => {
    const headers = signedHeaders(
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      new Date(1614265330 * 1000),
      '{"test": 2432232314}',
    );
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('a delivery verifies with Webhook.verify and the secret answered at creation; a wrong secret does not', async () => {
    const endpoint = await register();
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const res = await call(t.app, 'POST', `${base()}/${endpoint.uid}/test`, { key: admin() });
    expect(res.status, res.raw).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'pending', attempts: 0, event_type: 'webhook.test' });
    await deliverDueWebhooks(t.db, options);
    const [got] = receiver.on(endpoint.path);
    expect(got).toBeDefined();
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['webhook-id']).toBe(res.body.data.event_uid);
    expect(new Webhook(endpoint.secret).verify(got!.body, got!.headers as Record<string, string>)).toEqual(
      got!.json,
    );
    expect(got!.json).toMatchObject({ type: 'webhook.test', data: { webhook_endpoint_uid: endpoint.uid } });
    expect(() =>
      new Webhook(`whsec_${crypto.randomBytes(32).toString('base64')}`).verify(
        got!.body,
        got!.headers as Record<string, string>,
      ),
    ).toThrow();
  });

  it('after a rotation both secrets verify for 24 hours, then only the new one signs', async () => {
    const endpoint = await register();
    const rotated = await call(t.app, 'POST', `${base()}/${endpoint.uid}/rotate-secret`, { key: admin() });
    expect(rotated.status, rotated.raw).toBe(200);
    const fresh = rotated.body.data.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(endpoint.secret);
    const expires = Date.parse(rotated.body.data.previous_secret_expires_at);
    expect(Math.abs(expires - (Date.now() + 24 * HOUR))).toBeLessThan(MINUTE);
    expect(rotated.body.data).not.toHaveProperty('previous_secret');
    const got = await call(t.app, 'GET', `${base()}/${endpoint.uid}`, { key: admin() });
    expect(got.body.data).not.toHaveProperty('secret');

    await call(t.app, 'POST', `${base()}/${endpoint.uid}/test`, { key: admin() });
    await deliverDueWebhooks(t.db, options);
    const [during] = receiver.on(endpoint.path);
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [endpoint.secret, fresh]) {
      expect(() =>
        new Webhook(secret).verify(during!.body, during!.headers as Record<string, string>),
      ).not.toThrow();
    }

    // 25 hours on: one signature, under the new secret (checked by hand: verify() would refuse the
    // timestamp, which is the fake clock's).
    await call(t.app, 'POST', `${base()}/${endpoint.uid}/test`, { key: admin() });
    await deliverDueWebhooks(t.db, options, later(25 * HOUR));
    const after = receiver.on(endpoint.path)[1]!;
    const signature = String(after.headers['webhook-signature']);
    const at = new Date(Number(after.headers['webhook-timestamp']) * 1000);
    const id = String(after.headers['webhook-id']);
    expect(signature).toBe(signedHeaders([fresh], id, at, after.body)['webhook-signature']);
  });
});

describe('the endpoint routes', () => {
  it('create, list, get, update and delete; the secret is answered once and stored sealed', async () => {
    const endpoint = await register({
      description: 'ERP',
      event_types: ['invoice.created', 'invoice.created'],
    });
    expect(endpoint).toMatchObject({
      organization_uid: p.orgA.uid,
      description: 'ERP',
      event_types: ['invoice.created'],
      enabled: true,
      disabled_reason: null,
      previous_secret_expires_at: null,
    });
    const [stored] = await rawQuery<{ secret: string }>(
      t.db,
      'select secret from webhook_endpoints where uid = $1',
      [endpoint.uid],
    );
    expect(stored!.secret).toMatch(/^enc:v1:/);
    expect(stored!.secret).not.toContain(endpoint.secret);

    const listed = await call(t.app, 'GET', base(), { key: admin() });
    expect(listed.status).toBe(200);
    expect(listed.body.data.items.map((e: any) => e.uid)).toEqual([endpoint.uid]);
    expect(listed.body.data._meta).toMatchObject({ total_items: 1, page: 1 });
    expect(listed.body.data.items[0]).not.toHaveProperty('secret');

    const patched = await call(t.app, 'PATCH', `${base()}/${endpoint.uid}`, {
      key: admin(),
      body: { description: 'ERP 2', event_types: [], enabled: false },
    });
    expect(patched.status, patched.raw).toBe(200);
    expect(patched.body.data).toMatchObject({ description: 'ERP 2', event_types: [], enabled: false });

    const audit = await rawQuery<{ action: string; changes: any }>(
      t.db,
      'select action, changes from audit_events where entity_uid = $1 order by id',
      [endpoint.uid],
    );
    expect(audit.map((a) => a.action)).toEqual(['webhook_endpoint.created', 'webhook_endpoint.updated']);
    // Field names as the API shows them, as in every audit event; only what changed on update.
    expect(audit[0]!.changes).toMatchObject({ url: { before: null }, event_types: { before: null } });
    expect(Object.keys(audit[1]!.changes).sort()).toEqual(['description', 'enabled', 'event_types']);

    const removed = await call(t.app, 'DELETE', `${base()}/${endpoint.uid}`, { key: admin() });
    expect(removed.status).toBe(200);
    expectErrorBody(
      await call(t.app, 'GET', `${base()}/${endpoint.uid}`, { key: admin() }),
      404,
      'not_found',
    );
  });

  it('refuses bad input with the one error body', async () => {
    const post = (body: unknown) => call(t.app, 'POST', base(), { key: admin(), body });
    expectErrorBody(await post({ url: 'ftp://example.test/x' }), 422, 'validation_failed');
    expectErrorBody(await post({ url: 'https://user:pw@example.test/x' }), 422, 'validation_failed');
    expectErrorBody(await post({ url: 'not a url' }), 422, 'validation_failed');
    expect((await post({ url: receiver.url(), event_types: ['invoice.exploded'] })).status).toBe(422);
    expect((await post({ url: receiver.url(), event_types: ['webhook.test'] })).status).toBe(422);
    expectErrorBody(await post({ url: receiver.url(), surprise: 1 }), 422);
    expect((await post({})).status).toBe(422);
    const endpoint = await register();
    const patch = await call(t.app, 'PATCH', `${base()}/${endpoint.uid}`, { key: admin(), body: {} });
    expect(patch.status).toBe(422);
    expectErrorBody(
      await call(t.app, 'PATCH', `${base()}/${crypto.randomUUID()}`, {
        key: admin(),
        body: { enabled: true },
      }),
      404,
      'not_found',
    );
    expectErrorBody(
      await call(t.app, 'GET', `${base()}/not-a-uuid`, { key: admin() }),
      400,
      'invalid_parameter',
    );
  });

  it('refuses private, loopback and metadata addresses unless ALLOW_PRIVATE_NETWORK_TARGETS, at registration and at delivery', async () => {
    const strict = await secondInstance(t, { config: { allowPrivateNetworkTargets: false } });
    try {
      for (const url of [
        'http://127.0.0.1:9/x',
        'http://169.254.169.254/latest',
        'http://[::1]/x',
        'http://10.1.2.3/',
      ]) {
        const res = await call(strict.app, 'POST', base(), { key: admin(), body: { url } });
        expectErrorBody(res, 422, 'validation_failed');
      }
    } finally {
      await strict.close();
    }
    // Registered while allowed; the delivery itself checks again.
    const endpoint = await register();
    await call(t.app, 'POST', `${base()}/${endpoint.uid}/test`, { key: admin() });
    const counts = await deliverDueWebhooks(t.db, { ...options, allowPrivateNetworkTargets: false });
    expect(counts.failed).toBe(1);
    expect(receiver.on(endpoint.path)).toHaveLength(0);
    const [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery.last_error).toMatch(/private/);
  });

  it("another organization's endpoint or delivery is 404; members are refused", async () => {
    const theirs = await register({}, p.orgB);
    expectErrorBody(await call(t.app, 'GET', `${base()}/${theirs.uid}`, { key: admin() }), 404);
    const memberRes = await call(t.app, 'GET', base(), { key: p.orgA.member.key });
    expectErrorBody(memberRes, 403, 'missing_scope');
  });

  it('test events to a disabled endpoint and resends on one are refused (409)', async () => {
    const endpoint = await register();
    const sent = await call(t.app, 'POST', `${base()}/${endpoint.uid}/test`, { key: admin() });
    await call(t.app, 'PATCH', `${base()}/${endpoint.uid}`, { key: admin(), body: { enabled: false } });
    expectErrorBody(
      await call(t.app, 'POST', `${base()}/${endpoint.uid}/test`, { key: admin() }),
      409,
      'invalid_state',
    );
    expectErrorBody(
      await call(t.app, 'POST', `${base()}/deliveries/${sent.body.data.uid}/resend`, { key: admin() }),
      409,
      'invalid_state',
    );
    expectErrorBody(
      await call(t.app, 'POST', `${base()}/deliveries/${crypto.randomUUID()}/resend`, { key: admin() }),
      404,
    );
  });
});

describe('GET /api/events', () => {
  it('lists the last 30 days, newest first, filtered by type and entity; older ones are purged', async () => {
    const invoice = await newInvoice();
    const on = { type: 'invoice', uid: invoice.uid };
    await emit('invoice.updated', on, { step: 2 });
    await rawQuery(
      t.db,
      `insert into events (organization_uid, type, entity_type, entity_uid, payload, created_at)
       values ($1, 'invoice.updated', 'invoice', $2, '{"old": true}', now() - interval '31 days')`,
      [p.orgA.uid, invoice.uid],
    );
    const res = await call(t.app, 'GET', '/api/events', { key: admin(), query: { entity_uid: invoice.uid } });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.items.map((e: any) => e.type)).toEqual(['invoice.updated', 'invoice.created']);
    expect(res.body.data.items[0]).toMatchObject({
      entity_type: 'invoice',
      entity_uid: invoice.uid,
      data: { step: 2 },
    });
    expect(res.body.data.items[1].data.invoice.uid).toBe(invoice.uid);
    const typed = await call(t.app, 'GET', '/api/events', {
      key: admin(),
      query: { entity_uid: invoice.uid, type: 'invoice.created', organization_uid: p.orgA.uid },
    });
    expect(typed.body.data.items).toHaveLength(1);
    expect(typed.body.data._links.self).toContain('page=1');
    expect(await purgeOldEvents(t.db)).toBeGreaterThanOrEqual(1);
    const [left] = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from events where entity_uid = $1`,
      [invoice.uid],
    );
    expect(left!.n).toBe(2);
  });

  it("another organization's events are not listed; naming it is 403; members are refused", async () => {
    const res = await call(t.app, 'GET', '/api/events', { key: p.orgB.admin.key });
    expect(res.status).toBe(200);
    expect(res.body.data.items.every((e: any) => e.entity_uid !== undefined)).toBe(true);
    const [count] = await rawQuery<{ n: number }>(
      t.db,
      'select count(*)::int as n from events where organization_uid = $1',
      [p.orgB.uid],
    );
    expect(res.body.data._meta.total_items).toBe(count!.n);
    expectErrorBody(
      await call(t.app, 'GET', '/api/events', { key: admin(), query: { organization_uid: p.orgB.uid } }),
      403,
    );
    expectErrorBody(
      await call(t.app, 'GET', '/api/events', { key: p.orgA.member.key }),
      403,
      'missing_scope',
    );
    expectErrorBody(
      await call(t.app, 'GET', '/api/events', { key: admin(), query: { type: 'nope' } }),
      400,
      'invalid_parameter',
    );
  });
});

describe('the wired sources', () => {
  it('invoice.created: written with the invoice, a delivery job enqueued in the same transaction, then delivered', async () => {
    const endpoint = await register({ event_types: ['invoice.created'] });
    const other = await register({ event_types: ['work_task.approval_decided'] });
    const invoice = await newInvoice();
    const [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery).toMatchObject({
      status: 'pending',
      event_type: 'invoice.created',
      entity_uid: invoice.uid,
    });
    expect(await deliveriesOf(other.uid)).toEqual([]);
    const jobs = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from pgboss.job where name = $1 and data->>'delivery_uid' = $2`,
      [WEBHOOK_DELIVER_QUEUE, delivery.uid],
    );
    expect(jobs[0]!.n).toBe(1);
    const claimedAt = Date.now();
    await deliverDueWebhooks(t.db, options);
    // The claim left a job for the end of its lease: a worker killed mid-send is taken over then.
    const [leaseJob] = await rawQuery<{ start_after: Date }>(
      t.db,
      `select start_after from pgboss.job where name = $1 and data->>'delivery_uid' = $2
        order by start_after desc limit 1`,
      [WEBHOOK_DELIVER_QUEUE, delivery.uid],
    );
    expect(new Date(leaseJob!.start_after).getTime()).toBeGreaterThanOrEqual(
      claimedAt + t.config.webhookLeaseMs,
    );
    const [got] = receiver.on(endpoint.path);
    expect(got!.json).toMatchObject({ type: 'invoice.created', data: { invoice: { uid: invoice.uid } } });
    expect(got!.headers['webhook-id']).toBe(delivery.event_uid);
    const [done] = await deliveriesOf(endpoint.uid);
    expect(done).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      last_response_status: 200,
      last_response_excerpt: 'ok',
    });
    expect(done.last_duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('an invoice that is not created writes no event', async () => {
    const endpoint = await register({ event_types: ['invoice.created'] });
    const invoice = await newInvoice();
    const again = await call(t.app, 'POST', '/api/invoices', {
      key: admin(),
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: invoice.invoice_number, currency: 'USD' },
    });
    expect(again.status).toBe(409);
    expect(await deliveriesOf(endpoint.uid)).toHaveLength(1);
  });

  it('approval.decided: resolving an approval sends the decision, also to endpoints subscribed by the old name', async () => {
    const current = await register({ event_types: ['approval.decided'] });
    // `work_task.approval_decided` is the deprecated name: accepted, and stored as the new one.
    const old = await register({ event_types: ['work_task.approval_decided', 'invoice.created'] });
    expect(old.event_types).toEqual(['approval.decided', 'invoice.created']);
    const both = await register({ event_types: ['work_task.approval_decided', 'approval.decided'] });
    expect(both.event_types).toEqual(['approval.decided']);
    const patched = await call(t.app, 'PATCH', `${base()}/${current.uid}`, {
      key: admin(),
      body: { event_types: ['work_task.approval_decided'] },
    });
    expect(patched.status, patched.raw).toBe(200);
    expect(patched.body.data.event_types).toEqual(['approval.decided']);

    const agent = await call(t.app, 'POST', '/api/agents', { key: admin(), body: { name: 'Webhook agent' } });
    expect(agent.status, agent.raw).toBe(201);
    const raised = await call(t.app, 'POST', `/api/agents/${agent.body.data.uid}/approvals`, {
      key: admin(),
      body: {
        title: 'Send it?',
        reasoning: 'overdue',
        tool_args: { type: 'send_email' },
        trigger: { type: 'manual' },
      },
    });
    expect(raised.status, raised.raw).toBe(201);
    const decided = await call(t.app, 'PATCH', `/api/work-tasks/${raised.body.data.uid}`, {
      key: admin(),
      body: { action: 'reject', resolution_note: 'not now' },
    });
    expect(decided.status, decided.raw).toBe(200);
    await deliverDueWebhooks(t.db, options);
    for (const endpoint of [current, old, both]) {
      const received = receiver.on(endpoint.path);
      expect(received, endpoint.path).toHaveLength(1);
      expect(received[0]!.json).toMatchObject({
        type: 'approval.decided',
        data: { decision: 'reject', work_task: { uid: raised.body.data.uid, resolution: 'rejected' } },
      });
    }
    // The event list filters by either name and shows the new one.
    for (const type of ['approval.decided', 'work_task.approval_decided']) {
      const events = await call(t.app, 'GET', '/api/events', {
        key: admin(),
        query: { type, entity_uid: raised.body.data.uid },
      });
      expect(events.status, events.raw).toBe(200);
      expect(events.body.data.items.map((e: any) => e.type)).toEqual(['approval.decided']);
    }
  });

  it('migration 0025 renames the old type in stored subscriptions and events', async () => {
    const endpoint = await register({ event_types: ['invoice.created'] });
    await rawQuery(t.db, `update webhook_endpoints set event_types = $1 where uid = $2`, [
      ['work_task.approval_decided', 'invoice.created', 'approval.decided'],
      endpoint.uid,
    ]);
    const entityUid = crypto.randomUUID();
    await rawQuery(
      t.db,
      `insert into events (organization_uid, type, entity_type, entity_uid) values ($1, 'work_task.approval_decided', 'work_task', $2)`,
      [p.orgA.uid, entityUid],
    );
    const sql = fs.readFileSync(
      path.join(import.meta.dirname, '../../migrations/0025_outside_runtime_runs.sql'),
      'utf8',
    );
    for (const statement of sql
      .split('--> statement-breakpoint')
      .filter((s) => /^\s*(--.*\n)*\s*UPDATE/i.test(s)))
      await rawQuery(t.db, statement);
    const [row] = await rawQuery<{ event_types: string[] }>(
      t.db,
      'select event_types from webhook_endpoints where uid = $1',
      [endpoint.uid],
    );
    expect(row!.event_types).toEqual(['approval.decided', 'invoice.created']);
    const [event] = await rawQuery<{ type: string }>(t.db, 'select type from events where entity_uid = $1', [
      entityUid,
    ]);
    expect(event!.type).toBe('approval.decided');
  });
});

describe('delivery', () => {
  it('the lease is the timeout + 30 s unless WEBHOOK_LEASE_S sets it, and never ends before the timeout', () => {
    expect(loadConfig({}).webhookLeaseMs).toBe(40_000);
    expect(loadConfig({ WEBHOOK_TIMEOUT_MS: '2500' }).webhookLeaseMs).toBe(33_000);
    expect(loadConfig({ WEBHOOK_LEASE_S: '6', WEBHOOK_TIMEOUT_MS: '5000' }).webhookLeaseMs).toBe(6000);
    expect(() => loadConfig({ WEBHOOK_LEASE_S: '5', WEBHOOK_TIMEOUT_MS: '5000' })).toThrow(ConfigError);
    expect(() => loadConfig({ WEBHOOK_LEASE_S: '5', WEBHOOK_TIMEOUT_MS: '5000' })).toThrow(
      /WEBHOOK_LEASE_S must be longer than WEBHOOK_TIMEOUT_MS/,
    );
  });

  it('retries a 500 after 5 s, then succeeds; the log keeps the status, excerpt and attempts', async () => {
    const endpoint = await register();
    receiver.script = [{ status: 500, body: 'down for maintenance' }];
    await emit('invoice.updated', entity());
    const start = new Date();
    expect((await deliverDueWebhooks(t.db, options, start)).failed).toBe(1);
    let [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_response_status: 500,
      last_response_excerpt: 'down for maintenance',
      last_error: 'answered 500',
    });
    expect(Date.parse(delivery.next_attempt_at) - start.getTime()).toBe(5000);
    // Not yet due.
    expect((await deliverDueWebhooks(t.db, options, new Date(start.getTime() + 4000))).succeeded).toBe(0);
    expect((await deliverDueWebhooks(t.db, options, new Date(start.getTime() + 5000))).succeeded).toBe(1);
    [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      last_response_status: 200,
      next_attempt_at: null,
    });
    const ids = receiver.on(endpoint.path).map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toBe(ids[1]);
  });

  it('a receiver that does not answer within the timeout is a failed attempt, retried', async () => {
    const endpoint = await register();
    receiver.script = ['hang'];
    await emit('invoice.updated', entity());
    const start = new Date();
    expect((await deliverDueWebhooks(t.db, options, start)).failed).toBe(1);
    const [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery).toMatchObject({
      status: 'failed',
      last_response_status: null,
      last_error: `timed out after ${TIMEOUT_MS} ms`,
    });
    expect(delivery.last_duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect((await deliverDueWebhooks(t.db, options, new Date(start.getTime() + 5000))).succeeded).toBe(1);
  });

  it('backs off 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h, within 3 days of the first attempt', () => {
    const first = new Date('2026-01-01T00:00:00Z');
    const gaps: number[] = [];
    let now = first;
    for (let attempts = 1; ; attempts += 1) {
      const next = nextAttemptAfter(attempts, first, now);
      if (!next) break;
      gaps.push(next.getTime() - now.getTime());
      now = next;
    }
    expect(gaps.slice(0, 7)).toEqual([
      5000,
      5 * MINUTE,
      30 * MINUTE,
      2 * HOUR,
      5 * HOUR,
      10 * HOUR,
      10 * HOUR,
    ]);
    expect(now.getTime() - first.getTime()).toBeLessThanOrEqual(3 * 24 * HOUR);
    expect(now.getTime() - first.getTime()).toBeGreaterThan(3 * 24 * HOUR - 10 * HOUR);
  });

  it('abandons after 3 days of failures and disables the endpoint, with a reason, an audit event and an email to the admins; enabling resets it', async () => {
    const endpoint = await register();
    receiver.fallback = { status: 503, body: 'no' };
    await emit('invoice.updated', entity());
    let now = new Date();
    let [delivery] = await deliveriesOf(endpoint.uid);
    while (delivery.status !== 'abandoned') {
      await deliverDueWebhooks(t.db, options, now);
      [delivery] = await deliveriesOf(endpoint.uid);
      if (delivery.next_attempt_at) now = new Date(delivery.next_attempt_at);
    }
    expect(delivery.attempts).toBeGreaterThan(8);
    expect(Date.parse(delivery.last_attempt_at) - Date.parse(delivery.first_attempt_at)).toBeLessThanOrEqual(
      3 * 24 * HOUR,
    );
    const got = await call(t.app, 'GET', `${base()}/${endpoint.uid}`, { key: admin() });
    expect(got.body.data.enabled).toBe(false);
    expect(got.body.data.disabled_reason).toMatch(
      /^Disabled automatically: every delivery attempt failed since /,
    );
    const [audit] = await rawQuery<{ actor_type: string; changes: any }>(
      t.db,
      `select actor_type, changes from audit_events where entity_uid = $1 and action = 'webhook_endpoint.disabled'`,
      [endpoint.uid],
    );
    expect(audit).toMatchObject({
      actor_type: 'system',
      changes: { enabled: { before: true, after: false }, disabled_reason: { before: null } },
    });

    // The admins' notice: a job written with the disabling, whose handler emails every admin.
    const [notice] = await rawQuery<{ data: DisabledNoticeJobData }>(
      t.db,
      `select data from pgboss.job where name = $1 and data->>'endpoint_uid' = $2`,
      [WEBHOOK_DISABLED_NOTICE_QUEUE, endpoint.uid],
    );
    expect(notice!.data).toEqual({
      organization_uid: p.orgA.uid,
      endpoint_uid: endpoint.uid,
      reason: got.body.data.disabled_reason,
    });
    const noticeDeps = { db: t.db, config: t.config, mail: t.deps.clients.mail };
    expect(await sendDisabledNotice(noticeDeps, notice!.data)).toBe(1);
    const [mail] = smtp.accepted().filter((m) => m.recipients.includes(p.orgA.admin.email));
    expect(mail!.parsed.subject).toMatch(/^Remit: webhook endpoint disabled/);
    const text = mail!.parsed.text!;
    expect(text).toContain(endpoint.uid);
    expect(text).toContain(receiver.url(endpoint.path));
    expect(text).toContain(got.body.data.disabled_reason);
    expect(text).toContain(`PATCH '${t.config.publicBaseUrl}${base()}/${endpoint.uid}'`);
    expect(text).toContain('{"enabled": true}');
    // Members are not told; the secret is never in it.
    expect(smtp.accepted().some((m) => m.recipients.includes(p.orgA.member.email))).toBe(false);
    expect(text).not.toContain(endpoint.secret);

    // Disabled: new events are not queued for it, and nothing is sent.
    await emit('invoice.updated', entity());
    expect(await deliveriesOf(endpoint.uid)).toHaveLength(1);

    const enabled = await call(t.app, 'PATCH', `${base()}/${endpoint.uid}`, {
      key: admin(),
      body: { enabled: true },
    });
    expect(enabled.body.data).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
    // Enabled again before the notice went: there is nothing left to tell.
    expect(await sendDisabledNotice(noticeDeps, notice!.data)).toBe(0);
  });

  it('enabling an endpoint again enqueues its waiting deliveries in the same transaction, not at the sweep', async () => {
    const endpoint = await register();
    const patch = (enabled: boolean) =>
      call(t.app, 'PATCH', `${base()}/${endpoint.uid}`, { key: admin(), body: { enabled } });
    // Emitted while it was enabled, disabled by hand before its job ran: the job finds nothing to send.
    await emit('invoice.updated', entity(), { waited: true });
    expect((await patch(false)).status).toBe(200);
    const [delivery] = await deliveriesOf(endpoint.uid);
    expect(await deliverWebhook(t.db, options, delivery.uid)).toBe('skipped');
    const jobsOf = async () =>
      rawQuery<{ state: string; start_after: Date }>(
        t.db,
        `select state, start_after from pgboss.job where name = $1 and data->>'delivery_uid' = $2`,
        [WEBHOOK_DELIVER_QUEUE, delivery.uid],
      );
    const before = (await jobsOf()).length;

    const enabling = Date.now();
    expect((await patch(true)).status).toBe(200);
    const after = await jobsOf();
    // One more job, due now (the sweep would have taken it up to a minute later).
    expect(after).toHaveLength(before + 1);
    expect(after.some((job) => new Date(job.start_after).getTime() <= enabling + 5000)).toBe(true);
    // What that job does: the delivery goes.
    expect(await deliverWebhook(t.db, options, delivery.uid)).toBe('succeeded');
    expect(receiver.on(endpoint.path).map((r) => r.json.data)).toEqual([{ waited: true }]);
  });

  it('resend sends a settled delivery again, with the same webhook-id', async () => {
    const endpoint = await register();
    await emit('invoice.updated', entity());
    await deliverDueWebhooks(t.db, options);
    const [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery.status).toBe('succeeded');
    const res = await call(t.app, 'POST', `${base()}/deliveries/${delivery.uid}/resend`, { key: admin() });
    expect(res.status, res.raw).toBe(202);
    expect(res.body.data).toMatchObject({ uid: delivery.uid, status: 'pending', first_attempt_at: null });
    await deliverDueWebhooks(t.db, options);
    const got = receiver.on(endpoint.path);
    expect(got).toHaveLength(2);
    expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
    const [after] = await deliveriesOf(endpoint.uid);
    expect(after).toMatchObject({ status: 'succeeded', attempts: 2 });
    const filtered = await call(t.app, 'GET', `${base()}/${endpoint.uid}/deliveries`, {
      key: admin(),
      query: { status: 'failed' },
    });
    expect(filtered.body.data.items).toEqual([]);
  });

  it('keeps the order per entity: a later event waits while an earlier one of its entity is retried; other entities go', async () => {
    const endpoint = await register();
    const slow = entity();
    const quick = entity();
    receiver.script = [{ status: 500 }];
    for (const n of [1, 2, 3]) await emit('invoice.updated', slow, { n });
    await emit('invoice.updated', quick, { n: 9 });
    const start = new Date();
    const first = await deliverDueWebhooks(t.db, options, start);
    expect(first).toMatchObject({ failed: 1, succeeded: 1 });
    expect(receiver.on(endpoint.path).map((r) => r.json.data.n)).toEqual([1, 9]);
    await deliverDueWebhooks(t.db, options, new Date(start.getTime() + 5000));
    expect(receiver.on(endpoint.path).map((r) => r.json.data.n)).toEqual([1, 9, 1, 2, 3]);
  });

  it('a delivery whose worker died mid-send (attempt counted, lease held) is sent again once the lease ends', async () => {
    const endpoint = await register();
    await emit('invoice.updated', entity());
    const [pending] = await deliveriesOf(endpoint.uid);
    // What a worker writes before it sends; then the process is gone (kill -9): nothing settles it.
    const now = new Date();
    const lease = new Date(now.getTime() + TIMEOUT_MS + 30_000);
    expect(await claimDelivery(t.db, pending.uid, now, lease)).toBeDefined();
    expect((await deliverDueWebhooks(t.db, options, now)).succeeded).toBe(0);
    expect(receiver.on(endpoint.path)).toHaveLength(0);
    expect((await deliverDueWebhooks(t.db, options, lease)).succeeded).toBe(1);
    const [delivery] = await deliveriesOf(endpoint.uid);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(receiver.on(endpoint.path)).toHaveLength(1);
  });

  // Two connections wait on each other only on PostgreSQL (PGlite has one).
  it.skipIf(engine !== 'postgres')(
    'an endpoint deleted while an attempt is settling: the delete goes through and the attempt is dropped, no deadlock',
    async () => {
      const endpoint = await register();
      await emit('invoice.updated', entity());
      const admin = new pg.Client({ connectionString: t.databaseUrl });
      await admin.connect();
      try {
        // What DELETE does first: lock the endpoint. The attempt sends, then has to settle.
        await admin.query('begin');
        await admin.query('select 1 from webhook_endpoints where uid = $1 for update', [endpoint.uid]);
        const attempt = deliverDueWebhooks(t.db, options, new Date());
        await until(
          async () =>
            (
              await admin.query(
                `select 1 from pg_stat_activity
                  where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
              )
            ).rowCount,
          'the settling attempt to wait on the lock',
        );
        // Then the delete itself, which takes the endpoint's deliveries by cascade.
        await admin.query('delete from webhook_endpoints where uid = $1', [endpoint.uid]);
        await admin.query('commit');
        expect(await attempt).toMatchObject({ skipped: 1, succeeded: 0 });
        expect(receiver.on(endpoint.path)).toHaveLength(1);
        expect(
          await rawQuery(t.db, 'select 1 from webhook_deliveries where endpoint_uid = $1', [endpoint.uid]),
        ).toHaveLength(0);
      } finally {
        await admin.end();
      }
    },
  );

  it('an endpoint gets only the types it subscribes to; an empty list means all', async () => {
    const all = await register({ event_types: [] });
    const some = await register({ event_types: ['invoice.created'] });
    await emit('invoice.updated', entity());
    expect(await deliveriesOf(all.uid)).toHaveLength(1);
    expect(await deliveriesOf(some.uid)).toHaveLength(0);
  });
});

// ---- the checks every route gets ----

let shared: { uid: string; deliveryUid: string; foreign: string; foreignDelivery: string } | undefined;
async function fixtures() {
  if (shared) {
    const [row] = await rawQuery(t.db, 'select 1 from webhook_endpoints where uid = $1', [shared.uid]);
    if (row) return shared;
  }
  const mine = await register();
  const sent = await call(t.app, 'POST', `${base()}/${mine.uid}/test`, { key: admin() });
  const theirs = await register({}, p.orgB);
  const theirSent = await call(t.app, 'POST', `${base(p.orgB.uid)}/${theirs.uid}/test`, {
    key: p.orgB.admin.key,
  });
  shared = {
    uid: mine.uid,
    deliveryUid: sent.body.data.uid,
    foreign: theirs.uid,
    foreignDelivery: theirSent.body.data.uid,
  };
  return shared;
}

const env = () => ({ t, p });
commonRouteChecks(
  'GET webhook-endpoints',
  {
    method: 'GET',
    url: () => base(),
    scope: 'webhooks:read',
    foreignOrganizationUrl: () => base(p.orgB.uid),
  },
  env,
);
commonRouteChecks(
  'POST webhook-endpoints',
  {
    method: 'POST',
    url: () => base(),
    body: () => ({ url: receiver.url() }),
    scope: 'webhooks:write',
    foreignOrganizationUrl: () => base(p.orgB.uid),
  },
  env,
);
commonRouteChecks(
  'GET webhook-endpoints/{uid}',
  {
    method: 'GET',
    url: async () => `${base()}/${(await fixtures()).uid}`,
    scope: 'webhooks:read',
    foreignUrl: async () => `${base()}/${(await fixtures()).foreign}`,
  },
  env,
);
commonRouteChecks(
  'PATCH webhook-endpoints/{uid}',
  {
    method: 'PATCH',
    url: async () => `${base()}/${(await fixtures()).uid}`,
    body: () => ({ description: 'x' }),
    scope: 'webhooks:write',
    foreignUrl: async () => `${base()}/${(await fixtures()).foreign}`,
  },
  env,
);
commonRouteChecks(
  'DELETE webhook-endpoints/{uid}',
  {
    method: 'DELETE',
    url: async () => `${base()}/${(await fixtures()).uid}`,
    scope: 'webhooks:write',
    foreignUrl: async () => `${base()}/${(await fixtures()).foreign}`,
  },
  env,
);
commonRouteChecks(
  'POST webhook-endpoints/{uid}/rotate-secret',
  {
    method: 'POST',
    url: async () => `${base()}/${(await fixtures()).uid}/rotate-secret`,
    scope: 'webhooks:write',
    foreignUrl: async () => `${base()}/${(await fixtures()).foreign}/rotate-secret`,
  },
  env,
);
commonRouteChecks(
  'POST webhook-endpoints/{uid}/test',
  {
    method: 'POST',
    url: async () => `${base()}/${(await fixtures()).uid}/test`,
    scope: 'webhooks:write',
    foreignUrl: async () => `${base()}/${(await fixtures()).foreign}/test`,
  },
  env,
);
commonRouteChecks(
  'GET webhook-endpoints/{uid}/deliveries',
  {
    method: 'GET',
    url: async () => `${base()}/${(await fixtures()).uid}/deliveries`,
    scope: 'webhooks:read',
    foreignUrl: async () => `${base()}/${(await fixtures()).foreign}/deliveries`,
  },
  env,
);
commonRouteChecks(
  'POST webhook-endpoints/deliveries/{delivery_uid}/resend',
  {
    method: 'POST',
    url: async () => `${base()}/deliveries/${(await fixtures()).deliveryUid}/resend`,
    scope: 'webhooks:write',
    foreignUrl: async () => `${base()}/deliveries/${(await fixtures()).foreignDelivery}/resend`,
  },
  env,
);
commonRouteChecks(
  'GET /api/events',
  {
    method: 'GET',
    url: () => '/api/events',
    scope: 'webhooks:read',
    foreignOrganizationUrl: () => `/api/events?organization_uid=${p.orgB.uid}`,
  },
  env,
);
