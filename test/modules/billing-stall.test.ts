import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred } from '../helpers/agent-fixtures.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * A billing partner that stalls must not stall anything else. The update's partner call runs outside
 * any transaction, so on the embedded database (one connection) other requests go on meanwhile. When
 * the call ran inside the update's transaction, every other request waited for the partner (until its
 * timeout ended the update). The partner here holds the update until the test lets it go: the other
 * requests must all answer while it still holds, and before the update has ended.
 */
let t: TestApp;
let p: Principals;
let partner: FakePartner;

beforeAll(async () => {
  // A partner timeout far beyond the hold: the update must succeed once the partner answers.
  t = await createTestApp({ env: { BILLING_TIMEOUT_MS: '60000' } });
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
  it('while the partner holds an update, other requests answer (reads, and a write with its own partner call)', async () => {
    const configured = await call(t.app, 'PUT', `/api/organization/${p.orgA.uid}/integrations/billing`, {
      key: p.orgA.admin.key,
      body: { type: 'http', url: partner.url(), secret: partner.secret },
    });
    expect(configured.status, configured.raw).toBe(201);
    const slow = await createInvoice('STALL-1');
    const other = await createInvoice('STALL-2');

    const atPartner = deferred();
    const release = deferred();
    partner.next({
      kind: 'succeed',
      before: async () => {
        atPartner.resolve();
        await release.promise;
      },
    });
    let updateEnded = false;
    const update = call(t.app, 'PUT', `/api/invoices/${slow.uid}`, {
      key: p.orgA.admin.key,
      body: { stamp_number: 'SLOW' },
    }).finally(() => (updateEnded = true));
    await atPartner.promise;

    try {
      for (let i = 0; i < 3; i++) {
        expect((await call(t.app, 'GET', '/api/me', { key: p.orgA.admin.key })).status).toBe(200);
        const read = await call(t.app, 'GET', `/api/invoices/${other.uid}`, { key: p.orgA.admin.key });
        expect(read.status).toBe(200);
      }
      // A write to another invoice needs the database too, and its own partner call (which succeeds).
      const write = await call(t.app, 'PUT', `/api/invoices/${other.uid}`, {
        key: p.orgA.admin.key,
        body: { stamp_number: 'FAST' },
      });
      expect(write.status, write.raw).toBe(200);
      // All of it while the partner still held the first update, which had not ended either.
      expect(updateEnded).toBe(false);
    } finally {
      release.resolve();
    }

    const res = await update;
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.stamp_number).toBe('SLOW');
  });
});
