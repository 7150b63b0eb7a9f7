/* eslint-disable @typescript-eslint/no-explicit-any -- invoice views are compared field by field */
import crypto from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import {
  reconcileBillingSyncs,
  recordSyncIntent,
  signBody,
  syncPayload,
} from '../../src/modules/billing/billing.service.ts';
import { invoiceViewForSync } from '../../src/modules/invoices/invoices.service.ts';
import { billingSyncIntents } from '../../src/modules/billing/billing.tables.ts';
import { invoices } from '../../src/modules/invoices/invoices.tables.ts';
import { sendOutbound } from '../../src/platform/http/outbound.ts';
import type { App } from '../../src/platform/http/types.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { FakePartner, verifySignature } from '../helpers/fake-partner.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

/** Short partner timeout so the 504 paths stay fast (the default, 5 s, is asserted separately). */
/**
 * The partner timeout of the calls this file makes a partner hang for (through `impatient`, an instance
 * over the same database, and the reconciler): short, so a hang ends soon. Every call that must succeed
 * goes through `t`, which keeps the 5 s default, so a busy machine never turns a success into a timeout.
 */
const SHORT_TIMEOUT_MS = 500;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

let t: TestApp;
let impatient: { app: App; close(): Promise<void> };
let p: Principals;
const partners: FakePartner[] = [];

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  impatient = await secondInstance(t, { config: { billingTimeoutMs: SHORT_TIMEOUT_MS } });
  p = await createPrincipals(t);
});
afterAll(async () => {
  await Promise.all(partners.map((partner) => partner.close()));
  await impatient?.close();
  await t?.close();
});

const newSecret = () => `whsec_${crypto.randomBytes(16).toString('hex')}`;
const integrationPath = (org: string) => `/api/organization/${org}/integrations/billing`;
const configure = (key: string, org: string, body: unknown, app: App = t.app) =>
  call(app, 'PUT', integrationPath(org), { key, body });
const getInvoice = (uid: string, key: string) => call(t.app, 'GET', `/api/invoices/${uid}`, { key });
const putInvoice = (uid: string, body: unknown, key: string, app: App = t.app) =>
  call(app, 'PUT', `/api/invoices/${uid}`, { key, body });
const reconcile = (timeoutMs = 5000) =>
  reconcileBillingSyncs(t.db, t.deps.jobs, invoiceViewForSync, {
    allowPrivateNetworkTargets: true,
    timeoutMs,
    secrets: t.deps.secrets,
    olderThanSeconds: 0,
  });

async function startPartner(secret = newSecret()): Promise<FakePartner> {
  const partner = await FakePartner.start(secret);
  partners.push(partner);
  return partner;
}

async function createInvoice(key: string, extra: Record<string, unknown> = {}) {
  const res = await call(t.app, 'POST', '/api/invoices', {
    key,
    body: {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `INV-${crypto.randomBytes(4).toString('hex')}`,
      currency: 'USD',
      due_date: '2026-01-31',
      tax_cents: 500,
      invoice_notes: { invoice_memo: 'Thanks', invoice_footer: '' },
      ...extra,
    },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

/**
 * One organization of its own with a billing partner configured, so the scripts, requests and
 * reconciler sends of one test never mix with another's (the reconciler works across organizations).
 */
async function scenario() {
  const org = (await createPrincipals(t)).orgA;
  const partner = await startPartner();
  const res = await configure(org.admin.key, org.uid, {
    type: 'http',
    url: partner.url(),
    secret: partner.secret,
  });
  expect(res.status, res.raw).toBe(201);
  const invoice = await createInvoice(org.admin.key);
  return { org, partner, invoice };
}

async function intentsOf(invoiceUid: string) {
  return t.db
    .select()
    .from(billingSyncIntents)
    .where(eq(billingSyncIntents.invoiceUid, invoiceUid))
    .orderBy(asc(billingSyncIntents.revision), asc(billingSyncIntents.createdAt));
}

/** The invoice as the partner stores it: the integrations record is ours, written after its answer. */
function withoutIntegrations(invoice: Record<string, any>) {
  const { integrations: _ours, ...rest } = invoice;
  return rest;
}

async function expectPartnerMatchesDatabase(partner: FakePartner, uid: string, key: string) {
  const current = (await getInvoice(uid, key)).body.data;
  const state = partner.state.get(uid);
  expect(state, 'the partner holds this invoice').toBeDefined();
  expect(withoutIntegrations(state!.invoice)).toEqual(withoutIntegrations(current));
  expect(state!.revision).toBe(current.revision);
  return current;
}

describe('billing integration admin routes', () => {
  it('PUT creates (201), PUT again updates (200), GET never shows the secret, DELETE removes', async () => {
    const partner = await startPartner();
    const secret = partner.secret;
    const first = await configure(p.orgA.admin.key, p.orgA.uid, {
      type: 'http',
      url: partner.url(),
      secret,
    });
    expect(first.status, first.raw).toBe(201);
    expect(first.body).toMatchObject({ status: 'success', status_code: 201 });
    expect(first.body.data).toEqual({
      organization_uid: p.orgA.uid,
      type: 'http',
      url: partner.url(),
      has_secret: true,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(first.raw).not.toContain(secret);

    const rotated = newSecret();
    const second = await configure(p.orgA.admin.key, p.orgA.uid, {
      type: 'http',
      url: partner.url('127.0.0.1', '/v2/hook'),
      secret: rotated,
    });
    expect(second.status, second.raw).toBe(200);
    expect(second.body.data.url).toBe(partner.url('127.0.0.1', '/v2/hook'));
    expect(second.body.data.created_at).toBe(first.body.data.created_at);
    expect(second.raw).not.toContain(rotated);

    const got = await call(t.app, 'GET', integrationPath(p.orgA.uid), { key: p.orgA.admin.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(second.body.data);
    expect(got.body.data).not.toHaveProperty('secret');
    expect(got.raw).not.toContain(rotated);
    expect(got.raw).not.toContain(secret);

    const removed = await call(t.app, 'DELETE', integrationPath(p.orgA.uid), { key: p.orgA.admin.key });
    expect(removed.status).toBe(200);
    expect(removed.raw).not.toContain(rotated);
    expectErrorBody(
      await call(t.app, 'GET', integrationPath(p.orgA.uid), { key: p.orgA.admin.key }),
      404,
      'not_found',
    );
    expectErrorBody(
      await call(t.app, 'DELETE', integrationPath(p.orgA.uid), { key: p.orgA.admin.key }),
      404,
      'not_found',
    );
  });

  it('members get 403 on all three routes', async () => {
    const body = { type: 'http', url: 'http://127.0.0.1:9/x', secret: newSecret() };
    expectErrorBody(await configure(p.orgA.member.key, p.orgA.uid, body), 403, 'forbidden');
    expectErrorBody(
      await call(t.app, 'GET', integrationPath(p.orgA.uid), { key: p.orgA.member.key }),
      403,
      'forbidden',
    );
    expectErrorBody(
      await call(t.app, 'DELETE', integrationPath(p.orgA.uid), { key: p.orgA.member.key }),
      403,
      'forbidden',
    );
  });

  it('422: type other than http, url not http(s) or with credentials, secret shorter than 16', async () => {
    const ok = { type: 'http', url: 'http://127.0.0.1:9/x', secret: 'a'.repeat(16) };
    const cases: [unknown, string][] = [
      [{ ...ok, type: 'smtp' }, 'type'],
      [{ ...ok, url: 'ftp://billing.example.com/x' }, 'url'],
      [{ ...ok, url: 'file:///etc/passwd' }, 'url'],
      [{ ...ok, url: 'not a url' }, 'url'],
      [{ ...ok, url: 'https://user:pw@billing.example.com/' }, 'url'],
      [{ ...ok, secret: 'a'.repeat(15) }, 'secret'],
      [{ type: 'http', url: ok.url }, 'secret'],
      [{ type: 'http', secret: ok.secret }, 'url'],
    ];
    for (const [body, field] of cases) {
      const res = await configure(p.orgA.admin.key, p.orgA.uid, body);
      const error = expectErrorBody(res, 422, 'validation_failed');
      expect(
        error.errors?.some((e) => e.field === field || e.field.endsWith(field)),
        `${JSON.stringify(body)} → ${res.raw}`,
      ).toBe(true);
    }
    // The 16-character minimum itself is accepted.
    const res = await configure(p.orgB.admin.key, p.orgB.uid, ok);
    expect(res.status, res.raw).toBe(201);
    expect((await call(t.app, 'DELETE', integrationPath(p.orgB.uid), { key: p.orgB.admin.key })).status).toBe(
      200,
    );
  });

  it('signs as docs/billing-integration.md shows: HMAC-SHA-256(secret, "<t>.<raw body>")', () => {
    const body =
      '{"event":"invoice.updated","revision":4,"invoice":{"uid":"3f0c2a9e-8d1b-4c55-9a43-2b7e6f1d0c11","invoice_number":"INV-1042","revision":4}}';
    expect(signBody('whsec_example_secret_0123456789', body, 1767225600)).toBe(
      't=1767225600,v1=ed6279b6de2d7a1e94dce25b04afe4084a60037f2b38d3bf47ead661271ab2fc',
    );
  });

  it('the default partner timeout is 5 s (BILLING_TIMEOUT_MS sets another)', () => {
    expect(loadConfig({}).billingTimeoutMs).toBe(5000);
    expect(loadConfig({ BILLING_TIMEOUT_MS: '500' }).billingTimeoutMs).toBe(500);
    expect(loadConfig({}).allowPrivateNetworkTargets).toBe(false);
    expect(t.config.billingTimeoutMs).toBe(5000);
  });

  const adminBody = () => ({ type: 'http', url: 'http://127.0.0.1:9/x', secret: 'b'.repeat(20) });
  commonRouteChecks(
    'PUT /api/organization/{organization_uid}/integrations/billing',
    {
      method: 'PUT',
      url: ({ p }) => integrationPath(p.orgA.uid),
      body: adminBody,
      scope: 'invoices:write',
      foreignOrganizationUrl: ({ p }) => integrationPath(p.orgB.uid),
    },
    () => ({ t, p }),
  );
  commonRouteChecks(
    'GET /api/organization/{organization_uid}/integrations/billing',
    {
      method: 'GET',
      url: ({ p }) => integrationPath(p.orgA.uid),
      scope: 'invoices:read',
      foreignOrganizationUrl: ({ p }) => integrationPath(p.orgB.uid),
    },
    () => ({ t, p }),
  );
  commonRouteChecks(
    'DELETE /api/organization/{organization_uid}/integrations/billing',
    {
      method: 'DELETE',
      url: ({ p }) => integrationPath(p.orgA.uid),
      scope: 'invoices:write',
      foreignOrganizationUrl: ({ p }) => integrationPath(p.orgB.uid),
    },
    () => ({ t, p }),
  );
});

describe('private network targets (ALLOW_PRIVATE_NETWORK_TARGETS=false)', () => {
  let strict: TestApp;
  let sp: Principals;
  beforeAll(async () => {
    strict = await createTestApp({ env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'false' } });
    sp = await createPrincipals(strict);
  });
  afterAll(async () => strict?.close());

  it('refuses loopback, private, link-local and metadata endpoints at configuration (422)', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost:8080/hook',
      'http://10.0.0.5/hook',
      'http://192.168.1.20/hook',
      'http://172.16.4.4/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]:8080/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[fd00::1]/hook',
      'http://0.0.0.0:8080/hook',
      'http://2130706433/hook',
    ]) {
      const res = await configure(
        sp.orgA.admin.key,
        sp.orgA.uid,
        { type: 'http', url, secret: newSecret() },
        strict.app,
      );
      const error = expectErrorBody(res, 422, 'validation_failed');
      expect(error.errors?.[0]?.field, url).toBe('url');
    }
    expectErrorBody(
      await call(strict.app, 'GET', integrationPath(sp.orgA.uid), { key: sp.orgA.admin.key }),
      404,
    );
    // A public address is accepted (nothing is called at configuration).
    const ok = await configure(
      sp.orgA.admin.key,
      sp.orgA.uid,
      { type: 'http', url: 'https://93.184.216.34/hook', secret: newSecret() },
      strict.app,
    );
    expect(ok.status, ok.raw).toBe(201);
  });

  it('refuses again at call time: configured while allowed, called by an instance that disallows', async () => {
    const { org, partner, invoice } = await scenario();
    // A second instance of the service on the same database, configured not to allow private targets.
    const strictApp = await buildApp(
      { ...t.deps, config: { ...t.config, allowPrivateNetworkTargets: false } },
      { logger: false },
    );
    await strictApp.ready();
    try {
      const before = await getInvoice(invoice.uid, org.admin.key);
      const res = await putInvoice(invoice.uid, { invoice_number: 'NEVER-SENT' }, org.admin.key, strictApp);
      const error = expectErrorBody(res, 502, 'bad_gateway');
      expect(error.message).toMatch(/private/);
      expect(partner.requests).toHaveLength(0);
      expect((await getInvoice(invoice.uid, org.admin.key)).raw).toBe(before.raw);

      // The same name-based endpoint: "localhost" is refused after resolution as well.
      await configure(org.admin.key, org.uid, {
        type: 'http',
        url: partner.url('localhost'),
        secret: partner.secret,
      });
      expectErrorBody(await putInvoice(invoice.uid, { stamp_number: 'X' }, org.admin.key, strictApp), 502);
      expect(partner.requests).toHaveLength(0);
      // The instance that allows private targets reaches it by name.
      const allowed = await putInvoice(invoice.uid, { stamp_number: 'X' }, org.admin.key);
      expect(allowed.status, allowed.raw).toBe(200);
      expect(partner.requests).toHaveLength(1);
      // The refused attempts never left the building: nothing for the reconciler to repair.
      expect((await intentsOf(invoice.uid)).map((i) => i.state)).toEqual([
        'abandoned',
        'abandoned',
        'confirmed',
      ]);
    } finally {
      await strictApp.close();
    }
  });
});

describe('PUT /api/invoices/{uid} with a billing integration', () => {
  it('syncs before commit: a signed PUT of the full invoice, keyed uid:revision; the reference is recorded', async () => {
    const { org, partner, invoice } = await scenario();
    expect(invoice.integrations).toEqual([]);
    const started = Date.now();
    const res = await putInvoice(
      invoice.uid,
      { invoice_number: `${invoice.invoice_number}-R1`, status: 'open', invoice_fields: { po: 'PO-7' } },
      org.admin.key,
    );
    expect(res.status, res.raw).toBe(200);
    const updated = res.body.data;
    expect(updated.invoice_number).toBe(`${invoice.invoice_number}-R1`);
    expect(updated.revision).toBeGreaterThan(invoice.revision);

    expect(partner.requests).toHaveLength(1);
    const request = partner.requests[0]!;
    expect(request.method).toBe('PUT');
    expect(request.url).toBe('/remit/invoices');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toMatch(/^Remit-Billing-Sync\//);
    expect(request.headers['remit-organization']).toBe(org.uid);
    expect(request.idempotencyKey).toBe(`${invoice.uid}:${updated.revision}`);
    expect(request.signatureValid).toBe(true);
    // The signature is exactly HMAC-SHA-256(secret, "<t>.<raw body>"), and covers the body.
    const signature = String(request.headers['remit-signature']);
    const [, ts, mac] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature)!;
    expect(Math.abs(Number(ts) - started / 1000)).toBeLessThan(60);
    expect(mac).toBe(
      crypto.createHmac('sha256', partner.secret).update(`${ts}.${request.body}`).digest('hex'),
    );
    expect(verifySignature('another-secret-entirely', signature, request.body)).toBe(false);
    expect(verifySignature(partner.secret, signature, `${request.body} `)).toBe(false);

    // The body: the event, the revision, and the full invoice as GET shows it.
    const current = (await getInvoice(invoice.uid, org.admin.key)).body.data;
    expect(request.json).toMatchObject({ event: 'invoice.updated', revision: updated.revision });
    expect(Object.keys(request.json!.invoice).sort()).toEqual(Object.keys(current).sort());
    expect(withoutIntegrations(request.json!.invoice)).toEqual(withoutIntegrations(current));

    // Our record of the sync: the partner's reference and when.
    const reference = partner.state.get(invoice.uid)!.reference;
    for (const view of [updated, current]) {
      expect(view.integrations).toHaveLength(1);
      const record = view.integrations[0];
      expect(record).toMatchObject({
        entity_uid: invoice.uid,
        integration_name: 'billing',
        integration_uid: reference,
        integration_metadata: { revision: updated.revision, last_status: 200, type: 'http' },
      });
      expect(record.integration_metadata.last_synced_at).toMatch(ISO);
      const syncedAt = Date.parse(record.integration_metadata.last_synced_at);
      expect(syncedAt).toBeGreaterThanOrEqual(started - 1000);
      expect(syncedAt).toBeLessThanOrEqual(Date.now());
    }
    expect((await intentsOf(invoice.uid)).map((i) => [i.revision, i.state])).toEqual([
      [updated.revision, 'confirmed'],
    ]);

    // A second update: the next revision, a new key, the same reference, a later sync time.
    const again = await putInvoice(invoice.uid, { tax_cents: 900 }, org.admin.key);
    expect(again.status).toBe(200);
    expect(again.body.data.revision).toBe(updated.revision + 1);
    expect(partner.requests[1]!.idempotencyKey).toBe(`${invoice.uid}:${updated.revision + 1}`);
    expect(again.body.data.integrations).toHaveLength(1);
    expect(again.body.data.integrations[0].integration_uid).toBe(reference);
    expect(again.body.data.integrations[0].integration_metadata.revision).toBe(updated.revision + 1);
    await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
  });

  it.each([500, 400])(
    'partner answers %i → 502, and the invoice is byte-for-byte as before',
    async (status) => {
      const { org, partner, invoice } = await scenario();
      await putInvoice(invoice.uid, { stamp_number: 'S-1' }, org.admin.key); // one good sync first
      const before = await getInvoice(invoice.uid, org.admin.key);
      partner.next({ kind: 'fail', status });
      const res = await putInvoice(
        invoice.uid,
        { invoice_number: 'REFUSED', tax_cents: 12_345, invoice_notes: { invoice_memo: 'changed' } },
        org.admin.key,
      );
      const error = expectErrorBody(res, 502, 'bad_gateway');
      expect(error.message).toContain(`HTTP ${status}`);
      expect(partner.requests).toHaveLength(2);
      const after = await getInvoice(invoice.uid, org.admin.key);
      expect(after.raw).toBe(before.raw);
      expect(partner.state.get(invoice.uid)!.invoice.stamp_number).toBe('S-1');
    },
  );

  it('a partner that rejects our signature (secret mismatch) → 502; rotating the secret fixes it', async () => {
    const { org, partner, invoice } = await scenario();
    await configure(org.admin.key, org.uid, { type: 'http', url: partner.url(), secret: newSecret() });
    const before = await getInvoice(invoice.uid, org.admin.key);
    expectErrorBody(await putInvoice(invoice.uid, { stamp_number: 'S' }, org.admin.key), 502);
    expect(partner.requests[0]!.outcome).toBe('refused');
    expect((await getInvoice(invoice.uid, org.admin.key)).raw).toBe(before.raw);
    await configure(org.admin.key, org.uid, { type: 'http', url: partner.url(), secret: partner.secret });
    expect((await putInvoice(invoice.uid, { stamp_number: 'S' }, org.admin.key)).status).toBe(200);
    expect(partner.requests.at(-1)!.outcome).toBe('applied');
  });

  it('partner hangs → 504 within about the timeout, and the invoice is unchanged', async () => {
    const { org, partner, invoice } = await scenario();
    const before = await getInvoice(invoice.uid, org.admin.key);
    partner.next({ kind: 'hang' });
    const started = Date.now();
    const res = await putInvoice(invoice.uid, { invoice_number: 'TOO-SLOW' }, org.admin.key, impatient.app);
    const elapsed = Date.now() - started;
    // The configured timeout (0.5 s, not the 5 s default) ended it; it never ends a call early.
    expect(expectErrorBody(res, 504, 'gateway_timeout').message).toContain('within 0.5 s');
    expect(elapsed).toBeGreaterThanOrEqual(SHORT_TIMEOUT_MS - 20);
    expect(partner.requests).toHaveLength(1);
    expect((await getInvoice(invoice.uid, org.admin.key)).raw).toBe(before.raw);
    const [intent] = await intentsOf(invoice.uid);
    expect(intent).toMatchObject({ state: 'pending', attempts: 1 });
    expect(intent!.lastError).toMatch(/did not answer/);
  });

  it('no integration → no call, no intent, the update commits', async () => {
    const { org, partner, invoice } = await scenario();
    expect((await call(t.app, 'DELETE', integrationPath(org.uid), { key: org.admin.key })).status).toBe(200);
    const res = await putInvoice(invoice.uid, { invoice_number: 'LOCAL-ONLY' }, org.admin.key);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.invoice_number).toBe('LOCAL-ONLY');
    expect(res.body.data.integrations).toEqual([]);
    expect(partner.requests).toHaveLength(0);
    expect(await intentsOf(invoice.uid)).toHaveLength(0);
    // Another organization that never configured one.
    const other = await createInvoice(p.orgB.admin.key);
    expect((await putInvoice(other.uid, { stamp_number: 'B' }, p.orgB.admin.key)).status).toBe(200);
    expect(await intentsOf(other.uid)).toHaveLength(0);
  });

  it('an update refused before the call (422) never reaches the partner and leaves nothing to repair', async () => {
    const { org, partner, invoice } = await scenario();
    const before = await getInvoice(invoice.uid, org.admin.key);
    expectErrorBody(await putInvoice(invoice.uid, { status: 'no-such-status' }, org.admin.key), 422);
    expect(partner.requests).toHaveLength(0);
    expect((await getInvoice(invoice.uid, org.admin.key)).raw).toBe(before.raw);
    // Refused while the update was prepared, before its intent: nothing was written at all.
    expect(await intentsOf(invoice.uid)).toEqual([]);
  });

  it('after a 502 the same update sent again at once succeeds (the failed attempt blocks nothing)', async () => {
    const { org, partner, invoice } = await scenario();
    partner.next({ kind: 'fail', status: 500 });
    const update = { invoice_number: `${invoice.invoice_number}-AGAIN`, tax_cents: 777 };
    expectErrorBody(await putInvoice(invoice.uid, update, org.admin.key), 502, 'bad_gateway');
    const retried = await putInvoice(invoice.uid, update, org.admin.key);
    expect(retried.status, retried.raw).toBe(200);
    expect(retried.body.data.invoice_number).toBe(update.invoice_number);
    await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    // The failed attempt's intent is confirmed by the later one: the partner holds our committed state.
    expect((await intentsOf(invoice.uid)).map((i) => i.state)).toEqual(['confirmed', 'confirmed']);
  });

  it('while one update is with the partner, another of the same invoice is 409 sync_in_progress; other invoices go on', async () => {
    const { org, partner, invoice } = await scenario();
    const other = await createInvoice(org.admin.key);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atPartner = new Promise<void>((resolve) => (reached = resolve));
    partner.next({
      kind: 'succeed',
      before: async () => {
        reached();
        await released;
      },
    });
    const first = putInvoice(invoice.uid, { stamp_number: 'FIRST' }, org.admin.key);
    await atPartner;
    try {
      const second = await putInvoice(invoice.uid, { stamp_number: 'SECOND' }, org.admin.key);
      expectErrorBody(second, 409, 'sync_in_progress');
      expect((await putInvoice(other.uid, { stamp_number: 'OTHER' }, org.admin.key)).status).toBe(200);
    } finally {
      release();
    }
    expect((await first).status).toBe(200);
    const current = await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    expect(current.stamp_number).toBe('FIRST');
  });

  it('never re-uses a key after a failed attempt: the partner cannot answer a new body from its cache', async () => {
    const { org, partner, invoice } = await scenario();
    // The partner applies "A" under uid:N+1 but its answer never arrives: we roll back.
    partner.next({ kind: 'hang', apply: true });
    expectErrorBody(
      await putInvoice(invoice.uid, { invoice_number: 'A' }, org.admin.key, impatient.app),
      504,
    );
    const firstKey = partner.requests[0]!.idempotencyKey!;
    expect(firstKey).toBe(`${invoice.uid}:${invoice.revision + 1}`);
    expect(partner.state.get(invoice.uid)!.invoice.invoice_number).toBe('A');
    // The caller sends "B": it goes under a revision no attempt has used.
    const res = await putInvoice(invoice.uid, { invoice_number: 'B' }, org.admin.key);
    expect(res.status, res.raw).toBe(200);
    const second = partner.requests[1]!;
    expect(second.idempotencyKey).not.toBe(firstKey);
    expect(second.idempotencyKey).toBe(`${invoice.uid}:${res.body.data.revision}`);
    expect(second.replayed).toBe(false);
    expect(res.body.data.revision).toBe(invoice.revision + 2);
    await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
  });

  it('concurrent updates of one invoice: each key is used once, and the partner ends where we commit', async () => {
    const { org, partner, invoice } = await scenario();
    const results = await Promise.all(
      ['C1', 'C2', 'C3'].map((n) => putInvoice(invoice.uid, { invoice_number: n }, org.admin.key)),
    );
    for (const r of results) expect([200, 409], r.raw).toContain(r.status);
    expect(results.some((r) => r.status === 200)).toBe(true);
    const keys = partner.requests.map((r) => r.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(partner.requests.every((r) => !r.replayed)).toBe(true);
    await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    const intents = await intentsOf(invoice.uid);
    expect(new Set(intents.map((i) => i.revision)).size).toBe(intents.length);
    expect(intents.every((i) => i.state !== 'pending')).toBe(true);
  });
});

describe('reconcileBillingSyncs', () => {
  it('(a) after a 504 whose fate is unknown, re-sends the committed state under a new revision', async () => {
    const { org, partner, invoice } = await scenario();
    // The partner applied the update, then its answer was lost: it holds a state we never committed.
    partner.next({ kind: 'hang', apply: true });
    expectErrorBody(
      await putInvoice(invoice.uid, { invoice_number: 'UNCOMMITTED' }, org.admin.key, impatient.app),
      504,
    );
    const lostKey = partner.requests[0]!.idempotencyKey!;
    expect(partner.state.get(invoice.uid)!.invoice.invoice_number).toBe('UNCOMMITTED');
    const committed = (await getInvoice(invoice.uid, org.admin.key)).body.data;
    expect(committed.invoice_number).toBe(invoice.invoice_number);

    const result = await reconcile();
    expect(result.resent).toBeGreaterThanOrEqual(1);
    const sends = partner.requestsFor(invoice.uid).slice(1);
    expect(sends).toHaveLength(1);
    const resend = sends[0]!;
    expect(resend.signatureValid).toBe(true);
    expect(resend.replayed).toBe(false);
    expect(resend.idempotencyKey).not.toBe(lostKey);
    const [, revision] = resend.idempotencyKey!.split(':');
    expect(Number(revision)).toBeGreaterThan(Number(lostKey.split(':')[1]));
    expect(resend.json!.revision).toBe(Number(revision));

    const current = await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    expect(current.invoice_number).toBe(invoice.invoice_number);
    expect(current.revision).toBe(Number(revision));
    expect(current.integrations[0]).toMatchObject({
      integration_name: 'billing',
      integration_uid: partner.state.get(invoice.uid)!.reference,
      integration_metadata: { revision: Number(revision) },
    });
    expect((await intentsOf(invoice.uid)).map((i) => i.state)).toEqual(['confirmed']);

    // Nothing left to repair: a second run sends nothing.
    const count = partner.requests.length;
    await reconcile();
    expect(partner.requests).toHaveLength(count);
  });

  it('(b) partner accepted, but the invoice changed during the call (a payment): 409, and the reconciler repairs', async () => {
    const { org, partner, invoice } = await scenario();
    await putInvoice(invoice.uid, { status: 'open' }, org.admin.key);
    partner.next({
      kind: 'succeed',
      before: async () => {
        // Meanwhile a payment is recorded: the invoice the update was prepared from is gone.
        const paid = await call(t.app, 'POST', `/api/invoices/${invoice.uid}/payments`, {
          key: org.admin.key,
          body: { amount_cents: 100 },
        });
        expect(paid.status, paid.raw).toBe(201);
      },
    });
    const res = await putInvoice(invoice.uid, { invoice_number: 'ACCEPTED-NOT-APPLIED' }, org.admin.key);
    expectErrorBody(res, 409, 'conflict');
    // The partner has a state we did not commit; the database has the payment and the old number.
    expect(partner.state.get(invoice.uid)!.invoice.invoice_number).toBe('ACCEPTED-NOT-APPLIED');
    const committed = (await getInvoice(invoice.uid, org.admin.key)).body.data;
    expect(committed.invoice_number).toBe(invoice.invoice_number);
    expect(committed.amount_paid_cents).toBe(100);
    expect((await intentsOf(invoice.uid)).map((i) => i.state)).toEqual(['confirmed', 'pending']);

    await reconcile();
    const current = await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    expect(current.invoice_number).toBe(invoice.invoice_number);
    expect((await intentsOf(invoice.uid)).every((i) => i.state === 'confirmed')).toBe(true);
  });

  it('(b) partner accepted, our commit failed (constructed on any engine: intent committed, body applied, no commit)', async () => {
    const { org, partner, invoice } = await scenario();
    const before = await getInvoice(invoice.uid, org.admin.key);
    const [row] = await t.db
      .select()
      .from(invoices)
      .where(and(eq(invoices.organizationUid, org.uid), eq(invoices.uid, invoice.uid)));
    // Exactly what PUT /api/invoices commits before it calls the partner...
    const intent = await recordSyncIntent(t.db, row!, { timeoutMs: 5000 });
    expect(intent.state).toBe('in_progress');
    expect(intent.idempotencyKey).toBe(`${invoice.uid}:${invoice.revision + 1}`);
    // ...and what it sends inside it: the updated invoice, which the partner accepts (200)...
    const view = JSON.parse(JSON.stringify(await invoiceViewForSync(t.db, row!)));
    const uncommitted = { ...view, invoice_number: 'LOST-COMMIT', revision: intent.revision };
    const body = JSON.stringify(syncPayload(uncommitted, intent.revision));
    const response = await sendOutbound(partner.url(), {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': intent.idempotencyKey,
        'remit-signature': signBody(partner.secret, body),
      },
      body,
      timeoutMs: 5000,
      allowPrivate: true,
    });
    expect(response.status).toBe(200);
    // ...and then its process is killed before the apply.
    expect(partner.state.get(invoice.uid)!.invoice.invoice_number).toBe('LOST-COMMIT');
    expect((await getInvoice(invoice.uid, org.admin.key)).raw).toBe(before.raw);

    // While the intent is fresh, its process may still be applying it: updates wait (409), the
    // reconciler leaves it alone.
    expectErrorBody(
      await putInvoice(invoice.uid, { stamp_number: 'Z' }, org.admin.key),
      409,
      'sync_in_progress',
    );
    await reconcile();
    expect(partner.requestsFor(invoice.uid)).toHaveLength(1);
    // Past the partner timeout plus 30 s it is taken as left by a stopped process.
    await t.db
      .update(billingSyncIntents)
      .set({ updatedAt: new Date(Date.now() - 3_600_000) })
      .where(eq(billingSyncIntents.uid, intent.uid));
    await reconcile();
    const resend = partner.requestsFor(invoice.uid).at(-1)!;
    expect(resend.idempotencyKey).not.toBe(intent.idempotencyKey);
    expect(resend.replayed).toBe(false);
    const current = await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    expect(current.invoice_number).toBe(invoice.invoice_number);
    expect((await intentsOf(invoice.uid)).map((i) => i.state)).toEqual(['confirmed']);
  });

  it('(c) while the partner still fails the intent stays pending (attempts, last_error); later it succeeds', async () => {
    const { org, partner, invoice } = await scenario();
    partner.next({ kind: 'hang' });
    expectErrorBody(
      await putInvoice(invoice.uid, { invoice_number: 'NEVER' }, org.admin.key, impatient.app),
      504,
    );
    expect(await intentsOf(invoice.uid)).toMatchObject([{ state: 'pending', attempts: 1 }]);

    partner.always({ kind: 'fail', status: 503 });
    try {
      const failing = await reconcile();
      expect(failing.failed).toBeGreaterThanOrEqual(1);
      expect(partner.requestsFor(invoice.uid)).toHaveLength(2);
      const [pending] = await intentsOf(invoice.uid);
      expect(pending).toMatchObject({ state: 'pending', attempts: 2 });
      expect(pending!.lastError).toContain('HTTP 503');

      // A partner that does not answer at all counts the same way.
      partner.always({ kind: 'hang' });
      await reconcile(SHORT_TIMEOUT_MS);
      const [stillPending] = await intentsOf(invoice.uid);
      expect(stillPending).toMatchObject({ state: 'pending', attempts: 3 });
      expect(stillPending!.lastError).toMatch(/did not answer/);
    } finally {
      partner.reset();
    }
    await reconcile();
    const sends = partner.requestsFor(invoice.uid);
    expect(sends).toHaveLength(4);
    // Every attempt went under its own key (a failed attempt's key is never sent again).
    expect(new Set(sends.map((s) => s.idempotencyKey)).size).toBe(4);
    expect(sends.at(-1)!.outcome).toBe('applied');
    const current = await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
    expect(current.invoice_number).toBe(invoice.invoice_number);
    expect(await intentsOf(invoice.uid)).toMatchObject([{ state: 'confirmed' }]);
    const count = partner.requests.length;
    await reconcile();
    expect(partner.requests).toHaveLength(count);
  });

  it('abandons the intents of an organization whose integration was removed', async () => {
    const { org, partner, invoice } = await scenario();
    partner.next({ kind: 'fail', status: 500 });
    expectErrorBody(await putInvoice(invoice.uid, { invoice_number: 'X' }, org.admin.key), 502);
    await call(t.app, 'DELETE', integrationPath(org.uid), { key: org.admin.key });
    await reconcile();
    expect(partner.requests).toHaveLength(1);
    const [intent] = await intentsOf(invoice.uid);
    expect(intent).toMatchObject({ state: 'abandoned' });
    expect(intent!.lastError).toMatch(/no longer exists/);
  });

  it('leaves recent intents alone (olderThanSeconds), so it never races an update in flight', async () => {
    const { org, partner, invoice } = await scenario();
    partner.next({ kind: 'fail', status: 500 });
    expectErrorBody(await putInvoice(invoice.uid, { invoice_number: 'Y' }, org.admin.key), 502);
    await reconcileBillingSyncs(t.db, t.deps.jobs, invoiceViewForSync, {
      allowPrivateNetworkTargets: true,
      timeoutMs: 5000,
      secrets: t.deps.secrets,
      olderThanSeconds: 3600,
    });
    expect(partner.requests).toHaveLength(1);
    expect(await intentsOf(invoice.uid)).toMatchObject([{ state: 'pending' }]);
    await reconcile();
    await expectPartnerMatchesDatabase(partner, invoice.uid, org.admin.key);
  });
});
