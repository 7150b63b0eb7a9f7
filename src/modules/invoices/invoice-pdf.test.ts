import { describe, expect, it } from 'vitest';
import { contentHash, renderInvoicePdf, totalRows, type InvoiceDocument } from './invoice-pdf.ts';

const base: InvoiceDocument = {
  issuer: { name: 'Northwind Ltd', address: '1 Quay', tax_id: null, payment_instructions: 'IBAN X' },
  client: { name: 'Client Co', address: '', tax_id: null, email: null },
  invoice_number: 'INV-1',
  status: 'open',
  currency: 'EUR',
  issue_date: '2026-03-05T00:00:00.000Z',
  due_date: null,
  paid_date: null,
  lines: [
    {
      kind: 'PRODUCT',
      description: 'Widget',
      sku: 'W',
      quantity: 2,
      unit_price_cents: 1000,
      line_total_cents: 2000,
    },
  ],
  subtotal_cents: 2000,
  discount_cents: 0,
  tax_cents: 380,
  total_cents: 2380,
  credit_notes_cents: 0,
  amount_due_cents: 2380,
  amount_paid_cents: 0,
  amount_remaining_cents: 2380,
  memo: '',
  footer: '',
};

async function textOf(bytes: Buffer): Promise<{ text: string; pages: number }> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  const { text, totalPages } = await extractText(pdf, { mergePages: true });
  return { text, pages: totalPages };
}

describe('invoice PDF', () => {
  it('the content version changes with anything shown, and only then', () => {
    expect(contentHash(base)).toBe(contentHash(structuredClone(base)));
    expect(contentHash(base)).toMatch(/^[0-9a-f]{64}$/);
    for (const changed of [
      { ...base, status: 'paid' },
      { ...base, issuer: { ...base.issuer, payment_instructions: 'IBAN Y' } },
      { ...base, lines: [{ ...base.lines[0]!, quantity: 3 }] },
      { ...base, client: null },
    ]) {
      expect(contentHash(changed)).not.toBe(contentHash(base));
    }
  });

  it('totals: the optional rows only when not zero, discounts and credit notes negative', () => {
    expect(totalRows(base).map(([label]) => label)).toEqual([
      'Subtotal',
      'Tax',
      'Total',
      'Amount paid',
      'Amount remaining',
    ]);
    expect(
      totalRows({ ...base, discount_cents: 500, credit_notes_cents: 100, amount_due_cents: 1780 }),
    ).toEqual([
      ['Subtotal', 2000],
      ['Discount', -500],
      ['Tax', 380],
      ['Total', 2380],
      ['Credit notes', -100],
      ['Amount due', 1780],
      ['Amount paid', 0],
      ['Amount remaining', 2380],
    ]);
  });

  it('a long invoice flows onto more pages, every line and the totals included', async () => {
    const lines = Array.from({ length: 120 }, (_, i) => ({
      ...base.lines[0]!,
      description: `Item number ${i + 1}`,
    }));
    const { text, pages } = await textOf(await renderInvoicePdf({ ...base, lines }));
    expect(pages).toBeGreaterThan(2);
    expect(text).toContain('Item number 1 (W)');
    expect(text).toContain('Item number 120 (W)');
    expect(text).toContain('€23.80');
    expect(text).toContain('IBAN X');
  });
});
