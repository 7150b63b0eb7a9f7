import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * A billing partner that stalls must not stall anything else. The update's partner call runs outside
 * any transaction, so on the embedded database (one connection) other requests go on meanwhile. When
 * the call ran inside the update's transaction, every other request waited for the partner.
 */
const STALL_MS = 3000;

let t: TestApp;
let p: Principals;
let partner: FakePartner;

beforeAll(async () => {
  // The default partner timeout (5 s), longer than the stall.
  t = await createTestApp({ env: { BILLING_TIMEOUT_MS: '5000' } });
  p = await createPrincipals(t);
  partner = await FakePartner.start(`whsec_${crypto.randomBytes(16).toString('hex')}`);
});
afterAll(async () => {
  await partner?.close();
  await t?.close();
});

async function createInvoice(number: string) {
  const res = await call(t.app, 'POST', '/api/invoices', {
    key: p.orgA.admin.key,
    body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: number, currency: 'USD', tax_cents: 500 },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { uid: string };
}

describe('a stalled billing partner', () => {
  it(`while the partner holds an update for ${STALL_MS / 1000} s, other requests answer at once`, async () => {
    const configured = await call(t.app, 'PUT', `/api/organization/${p.orgA.uid}/integrations/billing`, {
      key: p.orgA.admin.key,
      body: { type: 'http', url: partner.url(), secret: partner.secret },
    });
    expect(configured.status, configured.raw).toBe(201);
    const slow = await createInvoice('STALL-1');
    const other = await createInvoice('STALL-2');

    let stallOver = false;
    let reached!: () => void;
    const atPartner = new Promise<void>((resolve) => (reached = resolve));
    partner.next({
      kind: 'succeed',
      before: async () => {
        reached();
        await new Promise((r) => setTimeout(r, STALL_MS));
        stallOver = true;
      },
    });
    const update = call(t.app, 'PUT', `/api/invoices/${slow.uid}`, {
      key: p.orgA.admin.key,
      body: { stamp_number: 'SLOW' },
    });
    await atPartner;

    const timings: number[] = [];
    const timed = async (method: 'GET' | 'PUT', url: string, body?: unknown) => {
      const started = performance.now();
      const res = await call(t.app, method, url, { key: p.orgA.admin.key, ...(body ? { body } : {}) });
      timings.push(performance.now() - started);
      return res;
    };
    for (let i = 0; i < 3; i++) {
      expect((await timed('GET', '/api/me')).status).toBe(200);
      expect((await timed('GET', `/api/invoices/${other.uid}`)).status).toBe(200);
    }
    // A write to another invoice needs the database too, and its own partner call (which succeeds).
    expect((await timed('PUT', `/api/invoices/${other.uid}`, { stamp_number: 'FAST' })).status).toBe(200);
    // All of it while the partner was still holding the first update.
    expect(stallOver).toBe(false);
    const sorted = [...timings].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThan(200);

    const res = await update;
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.stamp_number).toBe('SLOW');
  }, 20_000);
});
