/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
/**
 * Invoice documents (issue 22, item 2; docs/invoices.md#invoice-documents): the PDF of a receivable
 * (its text read back with unpdf), its cache per content version, the hosted invoice page behind a
 * revocable link, and the `{hosted_invoice_url}` email token.
 */
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecretKey, parseSecretKey, SecretBox } from '../../src/platform/secrets/secret-box.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let client: string;
let foreignInvoice: string;

const tag = () => crypto.randomBytes(4).toString('hex');

async function post(key: string, url: string, body: unknown) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

/** An open receivable: 4 × $25.00 − $5.00 discount + $10.00 tax = $105.00. */
async function receivable(key = p.orgA.admin.key, extra: Record<string, unknown> = {}) {
  return post(key, '/api/invoices', {
    invoice_type: 'ACCOUNTS_RECEIVABLE',
    invoice_number: `INV-${tag()}`,
    currency: 'USD',
    status: 'open',
    issue_date: '2026-03-05',
    due_date: '2026-04-04',
    client_party_uid: client,
    tax_cents: 1000,
    invoice_notes: { invoice_memo: 'Thank you for your business.' },
    line_items: [
      { context_type: 'PRODUCT', sku: 'HOUR', quantity: 4 },
      { context_type: 'DISCOUNT', sku: 'LOYAL' },
    ],
    ...extra,
  });
}

/** A raw GET through the app: the PDF routes answer bytes, not JSON. */
async function get(url: string, headers: Record<string, string> = {}, remoteAddress?: string) {
  const res = await t.app.inject({
    method: 'GET',
    url,
    headers,
    ...(remoteAddress ? { remoteAddress } : {}),
  });
  return { status: res.statusCode, headers: res.headers, bytes: res.rawPayload, text: res.body };
}

const pdfOf = (uid: string, key = p.orgA.admin.key, headers: Record<string, string> = {}) =>
  get(`/api/invoices/${uid}/pdf`, { authorization: `Bearer ${key}`, ...headers });

async function pdfText(bytes: Buffer): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  const { text } = await extractText(pdf, { mergePages: true });
  return text;
}

async function documentRow(invoiceUid: string) {
  const result = await t.db.execute(
    sql`select content_hash, storage_key, rendered_at from invoice_documents where invoice_uid = ${invoiceUid}`,
  );
  return (
    result as unknown as { rows: { content_hash: string; storage_key: string; rendered_at: unknown }[] }
  ).rows[0];
}

async function hostedLink(uid: string, query?: Record<string, string>, key = p.orgA.admin.key) {
  return call(t.app, 'POST', `/api/invoices/${uid}/hosted-link`, {
    key: key || undefined,
    ...(query ? { query } : {}),
  });
}

const tokenOf = (url: string) => new URL(url).pathname.split('/')[2]!;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  for (const [sku, name, context_type, unit_price] of [
    ['HOUR', 'Consulting hour', 'PRODUCT', 2500],
    ['LOYAL', 'Loyalty discount', 'DISCOUNT', 500],
  ] as const) {
    await post(p.orgA.admin.key, '/api/products', { sku, name, context_type, unit_price, currency: 'USD' });
  }
  const settings = await call(t.app, 'PATCH', `/api/organization/${p.orgA.uid}/settings`, {
    key: p.orgA.admin.key,
    body: {
      address: '1 Harbour Street\nPortsmouth PO1 2AB',
      tax_id: 'GB123456789',
      payment_instructions: 'Bank transfer to IBAN GB29 NWBK 6016 1331 9268 19, quoting the invoice number.',
    },
  });
  expect(settings.status, settings.raw).toBe(200);
  expect(settings.body.data).toMatchObject({
    address: '1 Harbour Street\nPortsmouth PO1 2AB',
    tax_id: 'GB123456789',
    payment_instructions: expect.stringContaining('IBAN'),
  });
  client = (
    await post(p.orgA.admin.key, '/api/parties', {
      name: 'Globex Corporation',
      role: 'client',
      address: '42 Industrial Way, Springfield',
      tax_id: 'US-98-7654321',
      billing_contact: { name: 'Hank Scorpio', email: 'ap@globex.test' },
    })
  ).uid;
  foreignInvoice = (
    await post(p.orgB.admin.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: `B-${tag()}`,
      currency: 'USD',
      status: 'open',
    })
  ).uid;
});
afterAll(async () => t?.close());

describe('GET /api/invoices/{uid}/pdf', () => {
  it('renders the receivable: organization, client, every line, the taxes and the totals', async () => {
    const inv = await receivable();
    const res = await pdfOf(inv.uid);
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-disposition']).toBe(`inline; filename="invoice-${inv.invoice_number}.pdf"`);
    expect(res.headers.etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(res.headers['cache-control']).toBe('private, no-cache');
    expect(res.bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(Number(res.headers['content-length'])).toBe(res.bytes.length);

    const text = await pdfText(res.bytes);
    for (const expected of [
      `Org A`,
      '1 Harbour Street',
      'GB123456789',
      inv.invoice_number,
      'Globex Corporation',
      '42 Industrial Way, Springfield',
      'ap@globex.test',
      'Consulting hour (HOUR)',
      'Loyalty discount (LOYAL)',
      '$25.00',
      '-$5.00',
      'Subtotal',
      '$100.00',
      'Tax',
      '$10.00',
      'Total',
      '$105.00',
      'Amount remaining',
      'March 5, 2026',
      'April 4, 2026',
      'IBAN GB29 NWBK 6016 1331 9268 19',
      'Thank you for your business.',
    ]) {
      expect(text, expected).toContain(expected);
    }
    // The totals line up: Total $105.00 and nothing paid, so $105.00 remains.
    expect(text).toMatch(/Total\s+\$105\.00/);
    expect(text).toMatch(/Amount paid\s+\$0\.00/);
    expect(text).toMatch(/Amount remaining\s+\$105\.00/);
  });

  it('is rendered once per content version: a second GET reuses it, If-None-Match answers 304', async () => {
    const inv = await receivable();
    const first = await pdfOf(inv.uid);
    const stored = await documentRow(inv.uid);
    expect(stored!.content_hash).toBe(first.headers.etag!.toString().slice(1, -1));
    const second = await pdfOf(inv.uid);
    expect(second.status).toBe(200);
    expect(second.headers.etag).toBe(first.headers.etag);
    // The same stored bytes (a new rendering would carry another creation date), and the row untouched.
    expect(second.bytes.equals(first.bytes)).toBe(true);
    expect(await documentRow(inv.uid)).toEqual(stored);
    const cached = await pdfOf(inv.uid, p.orgA.admin.key, { 'if-none-match': first.headers.etag as string });
    expect(cached.status).toBe(304);
    expect(cached.bytes.length).toBe(0);
    expect(cached.headers.etag).toBe(first.headers.etag);
  });

  it('a change to a line, a payment or the organization details makes a new PDF (and drops the old one)', async () => {
    const inv = await receivable();
    const first = await pdfOf(inv.uid);
    const firstRow = await documentRow(inv.uid);
    const hour = inv.line_items.find((l: any) => l.context_type === 'PRODUCT');
    const put = await call(t.app, 'PUT', `/api/invoices/${inv.uid}/line_items`, {
      key: p.orgA.admin.key,
      body: { uid: hour.uid, quantity: 6 },
    });
    expect(put.status, put.raw).toBe(200);
    const second = await pdfOf(inv.uid);
    expect(second.headers.etag).not.toBe(first.headers.etag);
    // 6 × $25.00 − $5.00 + $10.00
    expect(await pdfText(second.bytes)).toMatch(/Total\s+\$155\.00/);
    const secondRow = await documentRow(inv.uid);
    expect(secondRow!.storage_key).not.toBe(firstRow!.storage_key);
    expect(await t.deps.objectStorage.headObject(firstRow!.storage_key)).toBeNull();
    // The old version's ETag no longer matches.
    const stale = await pdfOf(inv.uid, p.orgA.admin.key, { 'if-none-match': first.headers.etag as string });
    expect(stale.status).toBe(200);

    const pay = await call(t.app, 'POST', `/api/invoices/${inv.uid}/payments`, {
      key: p.orgA.admin.key,
      body: { amount_cents: 5000 },
    });
    expect(pay.status, pay.raw).toBe(201);
    const third = await pdfOf(inv.uid);
    expect(third.headers.etag).not.toBe(second.headers.etag);
    const text = await pdfText(third.bytes);
    expect(text).toMatch(/Amount paid\s+\$50\.00/);
    expect(text).toMatch(/Amount remaining\s+\$105\.00/);

    const instructions = `Pay to account ${tag()}`;
    const settingsUrl = `/api/organization/${p.orgA.uid}/settings`;
    const original = (await call(t.app, 'GET', settingsUrl, { key: p.orgA.admin.key })).body.data
      .payment_instructions as string;
    const patch = await call(t.app, 'PATCH', settingsUrl, {
      key: p.orgA.admin.key,
      body: { payment_instructions: instructions },
    });
    expect(patch.status, patch.raw).toBe(200);
    try {
      const fourth = await pdfOf(inv.uid);
      expect(fourth.headers.etag).not.toBe(third.headers.etag);
      expect(await pdfText(fourth.bytes)).toContain(instructions);
    } finally {
      // The organization's details as the other tests expect them, whichever runs next.
      await call(t.app, 'PATCH', settingsUrl, {
        key: p.orgA.admin.key,
        body: { payment_instructions: original },
      });
    }
  });

  it('409 invalid_state for a payable: its document is the vendor’s', async () => {
    const ap = await post(p.orgA.admin.key, '/api/invoices', {
      invoice_type: 'ACCOUNTS_PAYABLE',
      invoice_number: `AP-${tag()}`,
      currency: 'USD',
    });
    const res = await call(t.app, 'GET', `/api/invoices/${ap.uid}/pdf`, { key: p.orgA.admin.key });
    expectErrorBody(res, 409, 'invalid_state');
    expectErrorBody(await hostedLink(ap.uid), 409, 'invalid_state');
    expectErrorBody(
      await call(t.app, 'DELETE', `/api/invoices/${ap.uid}/hosted-link`, { key: p.orgA.admin.key }),
      409,
      'invalid_state',
    );
  });

  it('404 for an unknown invoice, and for a member it is not assigned to (as every invoice read)', async () => {
    const inv = await receivable();
    const missing = '00000000-0000-4000-8000-000000000000';
    expectErrorBody(await call(t.app, 'GET', `/api/invoices/${missing}/pdf`, { key: p.orgA.admin.key }), 404);
    expectErrorBody(
      await call(t.app, 'GET', `/api/invoices/${inv.uid}/pdf`, { key: p.orgA.member.key }),
      404,
    );
    const assigned = await receivable(p.orgA.admin.key, { assignee_user_uids: [p.orgA.member.userUid] });
    expect((await pdfOf(assigned.uid, p.orgA.member.key)).status).toBe(200);
  });

  commonRouteChecks(
    'GET /api/invoices/{uid}/pdf',
    {
      method: 'GET',
      url: async () => `/api/invoices/${(await receivable()).uid}/pdf`,
      scope: 'invoices:read',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/pdf`,
    },
    () => ({ t, p }),
  );
});

describe('hosted invoice page', () => {
  it('POST makes the link (201), then returns the same live link (200)', async () => {
    const inv = await receivable();
    const made = await hostedLink(inv.uid);
    expect(made.status, made.raw).toBe(201);
    const link = made.body.data;
    expect(Object.keys(link).sort()).toEqual(['created_at', 'created_by_user_uid', 'pdf_url', 'url']);
    expect(link.url).toMatch(new RegExp(`^${t.config.publicBaseUrl}/i/[A-Za-z0-9_-]{43}$`));
    expect(link.pdf_url).toBe(`${link.url}/pdf`);
    expect(link.created_by_user_uid).toBe(p.orgA.admin.userUid);
    expect(made.headers['cache-control']).toBe('no-store');
    const again = await hostedLink(inv.uid);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(link);
    // Only its hash and its seal are stored.
    const rows = await t.db.execute(
      sql`select token_hash, token_sealed from hosted_invoice_links where invoice_uid = ${inv.uid}`,
    );
    const [row] = (rows as unknown as { rows: { token_hash: string; token_sealed: string }[] }).rows;
    expect(row!.token_hash).toBe(crypto.createHash('sha256').update(tokenOf(link.url)).digest('hex'));
    expect(row!.token_sealed).not.toContain(tokenOf(link.url));
    // Audited, never with the token.
    const events = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
      key: p.orgA.admin.key,
      query: { entity_uid: inv.uid },
    });
    expect(events.status, events.raw).toBe(200);
    expect(events.raw).toContain('hosted_invoice_link.created');
    expect(events.raw).not.toContain(tokenOf(link.url));
  });

  it('shows organization, number, status, amounts, due date and lines without a key; then paid', async () => {
    const inv = await receivable();
    const { url, pdf_url } = (await hostedLink(inv.uid)).body.data;
    const page = await get(new URL(url).pathname);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['x-robots-tag']).toBe('noindex, nofollow');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.text).toContain('<meta name="robots" content="noindex, nofollow">');
    expect(page.text).toContain('<h1>Org A</h1>');
    expect(page.text).toContain(`Invoice ${inv.invoice_number}`);
    expect(page.text).toContain('id="status">open<');
    expect(page.text).toContain('<dd id="total">$105.00</dd>');
    expect(page.text).toContain('<dd id="paid">$0.00</dd>');
    expect(page.text).toContain('<dd id="remaining">$105.00</dd>');
    expect(page.text).toContain('<dd id="due-date">April 4, 2026</dd>');
    expect(page.text).toContain('Consulting hour');
    expect(page.text).toContain('Loyalty discount');
    expect(page.text).toContain(`href="${tokenOf(url)}/pdf"`);
    expect(page.text).not.toMatch(/<script/i);
    // No internal identifier leaks: not the invoice's, the organization's, the client's or a line's.
    for (const uid of [inv.uid, p.orgA.uid, client, ...inv.line_items.map((l: any) => l.uid)]) {
      expect(page.text).not.toContain(uid);
    }

    const pdf = await get(new URL(pdf_url).pathname);
    expect(pdf.status).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(await pdfText(pdf.bytes)).toContain(inv.invoice_number);

    const pay = await call(t.app, 'POST', `/api/invoices/${inv.uid}/payments`, {
      key: p.orgA.admin.key,
      body: { amount_cents: 10_500 },
    });
    expect(pay.status, pay.raw).toBe(201);
    const paid = await get(new URL(url).pathname);
    expect(paid.text).toContain('id="status">paid<');
    expect(paid.text).toContain('<dd id="paid">$105.00</dd>');
    expect(paid.text).toContain('<dd id="remaining">$0.00</dd>');
    expect(await pdfText((await get(new URL(pdf_url).pathname)).bytes)).toMatch(/Status: paid/);
  });

  it('DELETE revokes it: the page and the PDF become the not-found page; a new link is another', async () => {
    const inv = await receivable();
    const { url } = (await hostedLink(inv.uid)).body.data;
    const del = await call(t.app, 'DELETE', `/api/invoices/${inv.uid}/hosted-link`, {
      key: p.orgA.admin.key,
    });
    expect(del.status, del.raw).toBe(200);
    expect(del.body.data).toEqual({ revoked: true });
    for (const path of [new URL(url).pathname, `${new URL(url).pathname}/pdf`]) {
      const gone = await get(path);
      expect(gone.status).toBe(404);
      expect(gone.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(gone.text).toContain('This invoice is not available');
      expect(gone.text).not.toContain(inv.invoice_number);
    }
    const again = await call(t.app, 'DELETE', `/api/invoices/${inv.uid}/hosted-link`, {
      key: p.orgA.admin.key,
    });
    expect(again.body.data).toEqual({ revoked: false });
    const fresh = await hostedLink(inv.uid);
    expect(fresh.status).toBe(201);
    expect(fresh.body.data.url).not.toBe(url);
    expect((await get(new URL(fresh.body.data.url).pathname)).status).toBe(200);
  });

  it('a live link sealed under a key no longer configured is replaced, not shown', async () => {
    const inv = await receivable();
    const { url } = (await hostedLink(inv.uid)).body.data;
    const elsewhere = new SecretBox([parseSecretKey(generateSecretKey(), 'another key')]);
    await t.db.execute(
      sql`update hosted_invoice_links set token_sealed = ${elsewhere.seal(tokenOf(url), 'hosted invoice link')}
          where invoice_uid = ${inv.uid} and revoked_at is null`,
    );
    const replaced = await hostedLink(inv.uid);
    expect(replaced.status, replaced.raw).toBe(201);
    expect(replaced.body.data.url).not.toBe(url);
    expect((await get(new URL(url).pathname)).status).toBe(404);
    expect((await get(new URL(replaced.body.data.url).pathname)).status).toBe(200);
  });

  it('rotate revokes the live link and makes a new one', async () => {
    const inv = await receivable();
    const { url } = (await hostedLink(inv.uid)).body.data;
    const rotated = await hostedLink(inv.uid, { rotate: 'true' });
    expect(rotated.status).toBe(201);
    expect(rotated.body.data.url).not.toBe(url);
    expect((await get(new URL(url).pathname)).status).toBe(404);
    expect((await get(new URL(rotated.body.data.url).pathname)).status).toBe(200);
  });

  it("a link shows its own invoice only, another organization's included; made-up tokens are 404", async () => {
    const a = await receivable();
    const b = await receivable();
    const linkA = (await hostedLink(a.uid)).body.data.url;
    const linkB = (await hostedLink(foreignInvoice, undefined, p.orgB.admin.key)).body.data.url;
    const pageA = await get(new URL(linkA).pathname);
    expect(pageA.text).toContain(a.invoice_number);
    expect(pageA.text).not.toContain(b.invoice_number);
    const pageB = await get(new URL(linkB).pathname);
    expect(pageB.status).toBe(200);
    expect(pageB.text).toContain('<h1>Org B</h1>');
    expect(pageB.text).not.toContain('Org A');
    // orgA's key cannot make or revoke orgB's link.
    expectErrorBody(await hostedLink(foreignInvoice), 404, 'not_found');
    for (const token of [
      crypto.randomBytes(32).toString('base64url'),
      'short',
      `${tokenOf(linkA).slice(0, -1)}${tokenOf(linkA).endsWith('A') ? 'B' : 'A'}`,
    ]) {
      const res = await get(`/i/${token}`);
      expect(res.status, token).toBe(404);
      expect(res.text).toContain('This invoice is not available');
    }
  });

  it('many bad links from one address answer 429 for a while, with Retry-After', async () => {
    const address = '203.0.113.77';
    let last = 0;
    let retryAfter: unknown;
    for (let i = 0; i < 25 && last !== 429; i++) {
      const res = await get(`/i/${crypto.randomBytes(32).toString('base64url')}`, {}, address);
      last = res.status;
      retryAfter = res.headers['retry-after'];
    }
    expect(last).toBe(429);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    // Another address is not held back.
    const inv = await receivable();
    const { url } = (await hostedLink(inv.uid)).body.data;
    expect((await get(new URL(url).pathname, {}, '203.0.113.78')).status).toBe(200);
  });

  it('401 without a key, 403 without invoices:write, and a member not assigned gets 404', async () => {
    const inv = await receivable();
    expectErrorBody(await hostedLink(inv.uid, undefined, ''), 401);
    const readOnly = await p.keyWithScopes(['invoices:read']);
    expectErrorBody(await hostedLink(inv.uid, undefined, readOnly), 403, 'missing_scope');
    expectErrorBody(await hostedLink(inv.uid, undefined, p.orgA.member.key), 404, 'not_found');
  });

  commonRouteChecks(
    'POST /api/invoices/{uid}/hosted-link',
    {
      method: 'POST',
      url: async () => `/api/invoices/${(await receivable()).uid}/hosted-link`,
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/hosted-link`,
    },
    () => ({ t, p }),
  );
  commonRouteChecks(
    'DELETE /api/invoices/{uid}/hosted-link',
    {
      method: 'DELETE',
      url: async () => `/api/invoices/${(await receivable()).uid}/hosted-link`,
      scope: 'invoices:write',
      foreignUrl: () => `/api/invoices/${foreignInvoice}/hosted-link`,
    },
    () => ({ t, p }),
  );
});

describe('the {hosted_invoice_url} email token', () => {
  const prepare = (key: string, uid: string) =>
    call(t.app, 'POST', '/api/email/prepare', {
      key,
      body: {
        context_type: 'invoice',
        context_uid: uid,
        mode: 'template',
        subject: 'Invoice {invoice_number}',
        body_text: 'View and download it here: {hosted_invoice_url}',
      },
    });

  it('renders the live link, making it when there is none', async () => {
    const inv = await receivable();
    const res = await prepare(p.orgA.admin.key, inv.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.errors).toEqual([]);
    const live = (await hostedLink(inv.uid)).body.data.url;
    expect(res.body.body_text).toBe(`View and download it here: ${live}`);
    expect((await prepare(p.orgA.admin.key, inv.uid)).body.body_text).toContain(live);
    expect((await get(new URL(live).pathname)).status).toBe(200);
  });

  it('is reported, not made, for a key that may not write invoices', async () => {
    const inv = await receivable();
    const key = await p.keyWithScopes(['invoices:read', 'email:write', 'email:read']);
    const res = await prepare(key, inv.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.body_text).toBe('View and download it here: {hosted_invoice_url}');
    expect(res.body.errors).toEqual([
      { token: '{hosted_invoice_url}', message: expect.stringContaining('invoices:write') },
    ]);
  });
});
