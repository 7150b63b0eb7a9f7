import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { rawQuery } from '../../src/platform/db/client.ts';
import { sql } from 'drizzle-orm';
import { WEBHOOK_DELIVER_QUEUE, emitEvent } from '../../src/modules/webhooks/webhooks.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { until } from '../helpers/until.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * The job path with the app's own workers running (pg-boss): the job enqueued with the event delivers
 * it, a failed attempt's retry job delivers it again after its backoff, and events of one entity
 * arrive in order although their jobs run as they come. webhooks.test.ts drives the same functions
 * with a fake clock; this one waits on the receiver (never a fixed sleep).
 */
let t: TestApp;
let p: Principals;
let receiver: WebhookReceiver;

beforeAll(async () => {
  // A held request stays unanswered for the whole test (no timeout cuts it short).
  t = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000', WEBHOOK_TIMEOUT_MS: '60000' } });
  p = await createPrincipals(t);
  receiver = await WebhookReceiver.start();
});
// One endpoint per test: a scripted answer must reach the endpoint the test means.
afterEach(async () => {
  await rawQuery(t.db, 'delete from webhook_endpoints');
  receiver.script = [];
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

async function register(path: string, org = p.orgA) {
  const res = await call(t.app, 'POST', `/api/organization/${org.uid}/webhook-endpoints`, {
    key: org.admin.key,
    body: { url: receiver.url(path) },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { uid: string; secret: string };
}

describe('delivery by the workers', () => {
  it('an invoice created over HTTP reaches the receiver through its job, signed', async () => {
    const endpoint = await register('/created');
    const res = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.admin.key,
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: 'WHW-1', currency: 'USD' },
    });
    expect(res.status, res.raw).toBe(201);
    const [got] = await until(
      async () => receiver.on('/created').length > 0 && receiver.on('/created'),
      'the delivery',
    );
    expect(got!.json).toMatchObject({
      type: 'invoice.created',
      data: { invoice: { uid: res.body.data.uid } },
    });
    expect(
      new Webhook(endpoint.secret).verify(got!.body, got!.headers as Record<string, string>),
    ).toBeTruthy();
  });

  it('a 500 is retried by the job enqueued for its backoff (5 s)', async () => {
    await register('/retry');
    receiver.script = [{ status: 500 }];
    await t.db.transaction((tx) =>
      emitEvent(
        tx,
        t.deps.jobs,
        { organizationUid: p.orgA.uid },
        'invoice.updated',
        { type: 'invoice', uid: crypto.randomUUID() },
        {},
      ),
    );
    const got = await until(
      async () => receiver.on('/retry').length >= 2 && receiver.on('/retry'),
      'the retry',
    );
    expect(got[0]!.headers['webhook-id']).toBe(got[1]!.headers['webhook-id']);
  });

  it('enabling an endpoint again sends what waited for it at once, by jobs committed with the change', async () => {
    const endpoint = await register('/waited');
    // A delivery written while the endpoint was on, which it then stopped taking (disabled in the same
    // transaction, so the job enqueued with the event finds nothing it may send).
    const event = await t.db.transaction(async (tx) => {
      const written = await emitEvent(
        tx,
        t.deps.jobs,
        { organizationUid: p.orgA.uid },
        'invoice.updated',
        { type: 'invoice', uid: crypto.randomUUID() },
        { n: 1 },
      );
      await tx.execute(sql`update webhook_endpoints set enabled = false where uid = ${endpoint.uid}`);
      return written;
    });
    // One statement per count: a job moving from created to completed between two reads counted twice.
    const jobsOf = (...states: string[]) =>
      rawQuery<{ n: number }>(
        t.db,
        `select count(*)::int as n from pgboss.job j join webhook_deliveries d on d.uid::text = j.data->>'delivery_uid'
          where j.name = $1 and d.endpoint_uid = $2 and j.state::text = any($3::text[])`,
        [WEBHOOK_DELIVER_QUEUE, endpoint.uid, states],
      ).then(([row]) => row!.n);
    await until(async () => (await jobsOf('completed')) === 1, "the first job's skip");
    expect(await jobsOf('created')).toBe(0);

    const enabled = await call(
      t.app,
      'PATCH',
      `/api/organization/${p.orgA.uid}/webhook-endpoints/${endpoint.uid}`,
      {
        key: p.orgA.admin.key,
        body: { enabled: true },
      },
    );
    expect(enabled.status, enabled.raw).toBe(200);
    // The job exists as the change commits (not a minute later from the sweep) …
    expect(await jobsOf('created', 'active', 'completed')).toBe(2);
    // … and the delivery arrives by it.
    const [got] = await until(
      async () => receiver.on('/waited').length > 0 && receiver.on('/waited'),
      'the waiting delivery',
    );
    expect(got!.headers['webhook-id']).toBe(event.uid);
  });

  it('events of one entity arrive in the order they were written', async () => {
    await register('/order');
    const on = { type: 'invoice', uid: crypto.randomUUID() };
    for (const n of [1, 2, 3, 4, 5]) {
      await t.db.transaction((tx) =>
        emitEvent(tx, t.deps.jobs, { organizationUid: p.orgA.uid }, 'invoice.updated', on, { n }),
      );
    }
    const got = await until(
      async () => receiver.on('/order').length >= 5 && receiver.on('/order'),
      'five deliveries',
    );
    expect(got.map((r) => r.json.data.n)).toEqual([1, 2, 3, 4, 5]);
  });

  it("one organization's hanging endpoints hold their share of the workers, not every other organization's deliveries", async () => {
    const hanging = ['/hang/1', '/hang/2', '/hang/3'];
    for (const path of hanging) {
      receiver.holding.add(path);
      await register(path);
    }
    // Six deliveries due for one organization (two events to three endpoints), none ever answered.
    for (const n of [1, 2]) {
      await t.db.transaction((tx) =>
        emitEvent(
          tx,
          t.deps.jobs,
          { organizationUid: p.orgA.uid },
          'invoice.updated',
          { type: 'invoice', uid: crypto.randomUUID() },
          { n },
        ),
      );
    }
    const heldNow = () => hanging.reduce((sum, path) => sum + receiver.heldOn(path), 0);
    await until(async () => heldNow() > 0, 'a hanging delivery to be sent');

    // Another organization's invoice, to its healthy endpoint.
    await register('/healthy', p.orgB);
    const res = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgB.admin.key,
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: 'WHW-FAIR', currency: 'USD' },
    });
    expect(res.status, res.raw).toBe(201);
    await until(async () => receiver.on('/healthy').length > 0, 'the healthy delivery');
    // It arrived while the hanging ones were still held, none of them answered.
    expect(receiver.on('/healthy')[0]!.json).toMatchObject({ type: 'invoice.created' });
    const received = hanging.reduce((sum, path) => sum + receiver.on(path).length, 0);
    expect(heldNow()).toBe(received);
    // Their share: at most 2 at once to one endpoint, 4 of one organization (the defaults).
    expect(received).toBeLessThanOrEqual(4);
    for (const path of hanging) expect(receiver.heldOn(path)).toBeLessThanOrEqual(2);
    const [leased] = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from webhook_deliveries
        where organization_uid = $1 and leased_until > now() and status in ('pending', 'failed')`,
      [p.orgA.uid],
    );
    expect(leased!.n).toBeLessThanOrEqual(4);

    // Answered at last: the ones passed over while the caps were full go too, every one of the six.
    for (const path of hanging) receiver.release(path);
    await until(async () => {
      const [row] = await rawQuery<{ n: number }>(
        t.db,
        `select count(*)::int as n from webhook_deliveries where organization_uid = $1 and status = 'succeeded'`,
        [p.orgA.uid],
      );
      return row!.n === 6;
    }, 'all six deliveries to succeed');
    expect(hanging.map((path) => receiver.on(path).length)).toEqual([2, 2, 2]);
  }, 60_000);
});
