import crypto from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawQuery } from '../../src/platform/db/client.ts';
import { asService } from '../../src/platform/db/session-role.ts';
import { recordInvoiceIntegration } from '../../src/modules/invoices/invoice-integrations.service.ts';
import { InvoiceViewCache, type HeldInvoice } from '../../src/modules/invoices/invoice-view-cache.ts';
import type { InvoiceView } from '../../src/modules/invoices/invoice-view.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { engine } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';

/**
 * The invoice view cache (docs/performance.md#invoice-view-cache): `GET /api/invoices/{uid}` answers a
 * held view only while nothing it reads has changed. Every kind of change — through each route that
 * makes it, through an integration written by a job, and through plain SQL on another connection — is
 * followed by a GET that must equal what a server without the cache reads.
 */
let t: TestApp;
let p: Principals;
let uncached: Awaited<ReturnType<typeof secondInstance>>;
let uid: string;
let clientUid: string;
const tag = () => crypto.randomBytes(4).toString('hex');

async function ok(status: number, method: string, url: string, body?: unknown, key = p.orgA.admin.key) {
  const res = await call(t.app, method, url, { key, body });
  expect(res.status, res.raw).toBe(status);
  return res.body.data;
}

const cache = () => t.app.invoiceViewCache!;
const get = (key = p.orgA.admin.key, id = uid) => call(t.app, 'GET', `/api/invoices/${id}`, { key });
const fresh = async (id = uid) => {
  const res = await call(uncached.app, 'GET', `/api/invoices/${id}`, { key: p.orgA.admin.key });
  expect(res.status, res.raw).toBe(200);
  return res.raw;
};

/** GET twice, so the view is held (the second answer comes from memory), and returns the answer. */
async function warm(id = uid): Promise<string> {
  const first = await get(p.orgA.admin.key, id);
  expect(first.status, first.raw).toBe(200);
  const again = await get(p.orgA.admin.key, id);
  expect(again.raw).toBe(first.raw);
  return first.raw;
}

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  uncached = await secondInstance(t, { config: { invoiceCacheTtlS: 0 } });
  expect(uncached.app.invoiceViewCache).toBeNull();
  await until(async () => cache().isLive, 'the cache to listen');
  clientUid = (
    await ok(201, 'POST', '/api/parties', {
      name: 'Client Co',
      role: 'client',
      billing_contact: { name: 'Cara', email: 'cara@client.test' },
    })
  ).uid;
  await ok(201, 'POST', '/api/products', {
    sku: 'WIDGET',
    name: 'Widget',
    context_type: 'PRODUCT',
    unit_price: 700,
    currency: 'USD',
  });
  uid = (
    await ok(201, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `CACHE-${tag()}`,
      status: 'open',
      currency: 'USD',
      client_party_uid: clientUid,
      line_items: [{ context_type: 'PRODUCT', sku: 'WIDGET', quantity: 3 }],
    })
  ).uid;
  await ok(201, 'POST', `/api/invoices/${uid}/comments`, { text: 'first' });
});
afterAll(async () => {
  await uncached?.close();
  await t?.close();
});

describe('GET /api/invoices/{uid} held between changes', () => {
  it('is held after a read: the next read answers the same bytes without the database', async () => {
    // A notification of the setup's own writes may still be on its way on a loaded machine: read
    // again until one read is kept.
    const before = await until(async () => {
      const raw = await warm();
      return cache().get(uid) !== undefined && raw;
    }, 'a read that is kept');
    expect(before).toBe(await fresh());
  });

  const changes: [string, () => Promise<unknown>][] = [
    ['a PUT of the invoice', () => ok(200, 'PUT', `/api/invoices/${uid}`, { invoice_number: `R-${tag()}` })],
    [
      'a line item added',
      () => ok(200, 'POST', `/api/invoices/${uid}/line_items`, { context_type: 'PRODUCT', sku: 'WIDGET' }),
    ],
    ['a comment', () => ok(201, 'POST', `/api/invoices/${uid}/comments`, { text: `c-${tag()}` })],
    [
      'assignees changed',
      () => ok(200, 'PUT', `/api/invoices/${uid}`, { assignee_user_uids: [p.orgA.member.userUid] }),
    ],
    ['a payment', () => ok(201, 'POST', `/api/invoices/${uid}/payments`, { amount_cents: 100 })],
    [
      'its client party renamed',
      () => ok(200, 'PATCH', `/api/parties/${clientUid}`, { name: `Client ${tag()}` }),
    ],
    [
      "its party's contact changed",
      () =>
        ok(200, 'PATCH', `/api/parties/${clientUid}`, {
          billing_contact: { name: `Cara ${tag()}`, email: 'cara@client.test' },
        }),
    ],
    [
      'an integration recorded by a job',
      () =>
        t.db.transaction((tx) =>
          recordInvoiceIntegration(tx, {
            organizationUid: p.orgA.uid,
            entityUid: uid,
            integrationName: `erp-${tag()}`,
            integrationUid: 'x-1',
            integrationMetadata: { n: 1 },
          }),
        ),
    ],
    [
      "a comment author's name, changed by plain SQL",
      () =>
        asService(() =>
          rawQuery(t.db, `update users set full_name = $1 where uid = $2`, [
            `Ada ${tag()}`,
            p.orgA.admin.userUid,
          ]),
        ),
    ],
    [
      'the invoice row, changed by plain SQL',
      () =>
        asService(() =>
          rawQuery(t.db, `update invoices set invoice_number = $1 where uid = $2`, [`SQL-${tag()}`, uid]),
        ),
    ],
  ];
  for (const [what, change] of changes) {
    it(`${what}: the next read answers the change`, async () => {
      const before = await warm();
      await change();
      const after = await get();
      expect(after.status, after.raw).toBe(200);
      expect(after.raw).not.toBe(before);
      expect(after.raw).toBe(await fresh());
    });
  }

  it("another organization's change keeps this organization's views", async () => {
    await warm();
    await ok(
      201,
      'POST',
      '/api/invoices',
      { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `B-${tag()}`, currency: 'USD' },
      p.orgB.admin.key,
    );
    expect(cache().get(uid)).toBeDefined();
  });

  it('access is checked on every read of a held view: a member not assigned and another organization get 404', async () => {
    await ok(200, 'PUT', `/api/invoices/${uid}`, { assignee_user_uids: [] });
    await warm();
    expect((await get(p.orgA.member.key)).status).toBe(404);
    expect((await get(p.orgB.admin.key)).status).toBe(404);
    await ok(200, 'PUT', `/api/invoices/${uid}`, { assignee_user_uids: [p.orgA.member.userUid] });
    await warm();
    expect((await get(p.orgA.member.key)).status).toBe(200);
  });

  it.runIf(engine === 'postgres')(
    'a change committed by another process is heard: the held view goes without any request here',
    async () => {
      await warm();
      const other = new pg.Client({ connectionString: t.databaseUrl });
      await other.connect();
      try {
        await other.query(`update invoices set invoice_number = $1 where uid = $2`, [`OTHER-${tag()}`, uid]);
      } finally {
        await other.end();
      }
      await until(async () => cache().get(uid) === undefined, 'the notification from the other connection');
      expect((await get()).raw).toBe(await fresh());
    },
  );
});

describe('InvoiceViewCache', () => {
  const held = (organizationUid: string): HeldInvoice => ({
    view: { uid: 'x' } as unknown as InvoiceView,
    organizationUid,
    responsible: null,
    assigneeUids: [],
  });
  const at = (iso: string) => Date.parse(iso);

  it('serves nothing and keeps nothing until it listens, and forgets all when it stops or starts again', () => {
    const c = new InvoiceViewCache(10_000);
    c.set('a', c.mark(), held('o1'));
    expect(c.get('a')).toBeUndefined();
    c.live(true);
    c.set('a', c.mark(), held('o1'));
    expect(c.get('a')?.organizationUid).toBe('o1');
    c.live(false);
    expect(c.get('a')).toBeUndefined();
    c.live(true);
    expect(c.get('a')).toBeUndefined();
  });

  it('a read that a notification overtook is not kept', () => {
    const c = new InvoiceViewCache(10_000);
    c.live(true);
    const readAt = c.mark();
    c.notify('o2');
    c.set('a', readAt, held('o1'));
    expect(c.get('a')).toBeUndefined();
  });

  it("forgets an organization's views on its notification, everyone's on '*'", () => {
    const c = new InvoiceViewCache(10_000);
    c.live(true);
    c.set('a', c.mark(), held('o1'));
    c.set('b', c.mark(), held('o2'));
    c.notify('o1');
    expect(c.get('a')).toBeUndefined();
    expect(c.get('b')).toBeDefined();
    expect(c.size).toBe(1);
    c.notify('*');
    expect(c.get('b')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('an entry lasts its TTL, and never past the UTC day its overdue days were computed for', () => {
    let now = at('2026-05-01T23:59:50Z');
    const c = new InvoiceViewCache(60_000, 100, () => now);
    c.live(true);
    c.set('a', c.mark(), held('o1'));
    now = at('2026-05-01T23:59:59Z');
    expect(c.get('a')).toBeDefined();
    now = at('2026-05-02T00:00:01Z');
    expect(c.get('a')).toBeUndefined();
    c.set('b', c.mark(), held('o1'));
    now += 60_001;
    expect(c.get('b')).toBeUndefined();
    // A read that began on one day and ended on the next is not kept.
    const readAt = c.mark();
    now = at('2026-05-03T00:00:00Z');
    c.set('c', readAt, held('o1'));
    expect(c.get('c')).toBeUndefined();
  });

  it('holds at most its bound (it starts over when full) and held views are frozen', () => {
    const c = new InvoiceViewCache(10_000, 2);
    c.live(true);
    c.set('a', c.mark(), held('o1'));
    c.set('b', c.mark(), held('o1'));
    c.set('c', c.mark(), held('o1'));
    expect(c.size).toBe(1);
    expect(Object.isFrozen(c.get('c')!.view)).toBe(true);
  });
});
