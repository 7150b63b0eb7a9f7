import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Every invoice view built by assembleInvoiceViews must share one hidden class. Built with
 * `{ ...core(row), …many more }` each object got a map of its own (V8 11, Node 20): maps live in old
 * space, so every GET /api/invoices/{uid} allocated there and each scavenge took 10–15 ms instead of
 * ≈ 1 ms (docs/performance.md#get-invoice-and-the-garbage-collector). Checked with V8's own
 * `%HaveSameMap` in a child process started with `--allow-natives-syntax`.
 */
const CHILD = `
import { assembleInvoiceViews } from './src/modules/invoices/invoice-view.ts';
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
const fast = new Function('a', 'return %HasFastProperties(a)');
const row = (n) => ({
  uid: 'inv-' + n, organizationUid: 'org', invoiceNumber: 'INV-' + n, invoiceType: 'ACCOUNTS_PAYABLE',
  status: 'received', collectionMethod: null, currency: 'USD', issueDate: new Date(Date.UTC(2026, 0, n)),
  dueDate: new Date(Date.UTC(2026, 1, n)), paidDate: null, subtotalCents: 100 * n, discountCents: 0,
  taxCents: 0, totalCents: 100 * n, prePaymentCreditNotesCents: 0, amountDueCents: 100 * n,
  amountPaidCents: 0, amountRemainingCents: 100 * n, invoiceLink: null, documentUid: null,
  invoiceBlueprintUid: null, targetPartyUid: null, hasComments: false, invoiceFields: {},
  clientPartyUid: null, serviceProviderPartyUid: null, invoiceMemo: '', invoiceFooter: '',
  stampNumber: null, receivedDate: null, documentType: null, registrationNumber: null, vendorName: null,
  vendorNit: null, approvedBy: null, approvalDate: null, registeredBy: null, registrationDate: null,
  responsible: null, revision: 1, createdAt: new Date(), updatedAt: new Date(),
});
const empty = { lines: [], partyRows: [], integrations: [], assignees: [], comments: [] };
const views = [];
for (let n = 1; n <= 200; n++) views.push(assembleInvoiceViews([row(n)], empty, { includeComments: n % 2 === 0 })[0]);
const full = views.filter((_, i) => i % 2 === 1);
const listed = views.filter((_, i) => i % 2 === 0);
console.log(JSON.stringify({
  full: full.every((v) => sameMap(v, full[0])),
  listed: listed.every((v) => sameMap(v, listed[0])),
  fast: views.every((v) => fast(v)),
}));
`;

describe('invoice views', () => {
  it('share one hidden class (no per-object map: GET invoice stays out of old space)', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', CHILD],
      { cwd: ROOT },
    );
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ full: true, listed: true, fast: true });
  });
});
