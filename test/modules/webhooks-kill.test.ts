import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { rawQuery } from '../../src/platform/db/client.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { startWorker, type WorkerProcess } from '../helpers/processes.ts';
import { engine } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * At-least-once delivery across a kill -9, for real (PostgreSQL: processes share it): a `remit worker`
 * process sends a delivery to a receiver that holds the request unanswered; the worker is killed with
 * SIGKILL mid-send; a second worker takes the delivery over once its lease has run out (the job the
 * claim left for that moment) and the receiver gets the same `webhook-id`, body and valid signature
 * again. A short lease (WEBHOOK_LEASE_S=6, above WEBHOOK_TIMEOUT_MS=5000) keeps it to seconds.
 */
const TIMEOUT_MS = 5000;
const LEASE_S = 6;
const HOOK = '/held';

describe.skipIf(engine !== 'postgres')('a worker killed mid-delivery', () => {
  let t: TestApp;
  let p: Principals;
  let receiver: WebhookReceiver;
  let dataDir: string;
  const workers: WorkerProcess[] = [];
  const settings = { WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_LEASE_S: String(LEASE_S) };

  beforeAll(async () => {
    // The test's app only writes (its workers are off): the worker processes do the delivering.
    t = await createTestApp({ env: { ...settings, RATE_LIMIT_MAX: '100000' } });
    p = await createPrincipals(t);
    receiver = await WebhookReceiver.start();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-webhook-kill-'));
  });
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await receiver?.close();
    await t?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('another worker delivers it again after the lease, with the same webhook-id', async () => {
    const env = {
      DATABASE_URL: t.databaseUrl!,
      DATA_DIR: dataDir,
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      ...settings,
    };
    const registered = await call(t.app, 'POST', `/api/organization/${p.orgA.uid}/webhook-endpoints`, {
      key: p.orgA.admin.key,
      body: { url: receiver.url(HOOK), event_types: ['invoice.created'] },
    });
    expect(registered.status, registered.raw).toBe(201);
    const secret = registered.body.data.secret as string;

    // The first attempt is held unanswered; the next one is answered 200.
    receiver.script = ['hang'];
    const first = await startWorker(env);
    workers.push(first);
    const created = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.admin.key,
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: 'KILL-1', currency: 'USD' },
    });
    expect(created.status, created.raw).toBe(201);
    await until(async () => receiver.on(HOOK).length === 1, 'the first worker to send the delivery');

    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    const [held] = await rawQuery<{ status: string; attempts: number; leased_until: Date }>(
      t.db,
      `select status, attempts, leased_until from webhook_deliveries where entity_uid = $1`,
      [created.body.data.uid],
    );
    // What the dead worker left: the attempt counted, the delivery pending under its lease.
    expect(held).toMatchObject({ status: 'pending', attempts: 1 });
    expect(held!.leased_until).not.toBeNull();

    const second = await startWorker(env);
    workers.push(second);
    const got = await until(
      async () => receiver.on(HOOK).length >= 2 && receiver.on(HOOK),
      'the second worker to deliver it after the lease',
      60_000,
    );
    const [lost, again] = got as [(typeof got)[number], (typeof got)[number]];
    expect(again.headers['webhook-id']).toBe(lost.headers['webhook-id']);
    expect(again.body).toBe(lost.body);
    expect(again.json).toMatchObject({
      type: 'invoice.created',
      data: { invoice: { uid: created.body.data.uid } },
    });
    for (const request of [lost, again]) {
      expect(new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).toEqual(
        request.json,
      );
    }
    // Not before the lease had run out.
    expect(Number(again.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(
      Math.floor(new Date(held!.leased_until).getTime() / 1000),
    );
    const settled = await until(async () => {
      const [row] = await rawQuery<{ status: string; attempts: number }>(
        t.db,
        `select status, attempts from webhook_deliveries where entity_uid = $1`,
        [created.body.data.uid],
      );
      return row?.status === 'succeeded' && row;
    }, 'the delivery to be settled');
    expect(settled.attempts).toBe(2);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    workers.length = 0;
  }, 120_000);
});
