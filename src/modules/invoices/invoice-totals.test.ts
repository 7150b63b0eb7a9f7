import { describe, expect, it } from 'vitest';
import { ageDays, computeTotals, overdueDays } from './invoice-totals.ts';

describe('computeTotals', () => {
  it('follows the contract formulas', () => {
    const t = computeTotals({
      lines: [
        { context_type: 'PRODUCT', line_total: 10_000 },
        { context_type: 'PRODUCT', line_total: 2_550 },
        { context_type: 'DISCOUNT', line_total: 1_000 },
      ],
      taxCents: 1_150,
      prePaymentCreditNotesCents: 700,
      paidCents: 5_000,
    });
    expect(t).toEqual({
      subtotal_cents: 12_550,
      discount_cents: 1_000,
      tax_cents: 1_150,
      total_cents: 12_700,
      pre_payment_credit_notes_cents: 700,
      amount_due_cents: 12_000,
      amount_paid_cents: 5_000,
      amount_remaining_cents: 7_000,
    });
  });

  it('is all zero for an empty invoice', () => {
    const t = computeTotals({ lines: [], taxCents: 0, prePaymentCreditNotesCents: 0, paidCents: 0 });
    expect(Object.values(t).every((v) => v === 0)).toBe(true);
  });
});

describe('overdueDays and ageDays', () => {
  const today = new Date('2026-03-10T15:00:00Z');
  it('counts whole UTC days past due while money is owed on an open invoice', () => {
    expect(overdueDays(new Date('2026-03-05T00:00:00Z'), 100, 'open', today)).toBe(5);
    expect(overdueDays(new Date('2026-03-10T23:00:00Z'), 100, 'open', today)).toBe(0);
    expect(overdueDays(new Date('2026-03-20T00:00:00Z'), 100, 'open', today)).toBe(0);
    expect(overdueDays(new Date('2026-03-05T00:00:00Z'), 0, 'open', today)).toBe(0);
    expect(overdueDays(new Date('2026-03-05T00:00:00Z'), 100, 'paid', today)).toBe(0);
    expect(overdueDays(null, 100, 'open', today)).toBe(0);
  });
  it('ages from the issue date', () => {
    expect(ageDays(new Date('2026-02-28T23:59:00Z'), today)).toBe(10);
    expect(ageDays(null, today)).toBe(0);
  });
});
