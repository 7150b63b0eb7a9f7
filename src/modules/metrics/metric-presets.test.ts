import { describe, expect, it } from 'vitest';
import type { ReceivableInvoice } from './metric-formulas.ts';
import { evaluatePreset, PRESET_DEFINITIONS, PRESET_FORMULAS } from './metric-presets.ts';
import { METRIC_UID_PATTERN } from './metrics.schemas.ts';

const inv = (
  fields: Partial<ReceivableInvoice> & { uid: string; amountDueCents: number },
): ReceivableInvoice => ({
  clientPartyUid: null,
  issuedOn: '2025-03-01',
  dueOn: null,
  settledOn: null,
  payments: [],
  ...fields,
});

describe('the preset catalog', () => {
  it('has snake_case, unique uids, every formula at organization level, and each formula written out', () => {
    const uids = PRESET_DEFINITIONS.map((p) => p.uid);
    expect(new Set(uids).size).toBe(uids.length);
    for (const p of PRESET_DEFINITIONS) {
      expect(p.uid).toMatch(new RegExp(METRIC_UID_PATTERN));
      expect(p.formula.length).toBeGreaterThan(40);
      expect(p.description.length).toBeGreaterThan(10);
    }
    const orgFormulas = PRESET_DEFINITIONS.filter((p) => p.contextType === 'ORGANIZATION').map(
      (p) => p.preset,
    );
    expect([...orgFormulas].sort()).toEqual([...PRESET_FORMULAS].sort());
    expect(PRESET_DEFINITIONS.filter((p) => p.contextType === 'PARTY').map((p) => p.uid)).toEqual([
      'client_overdue_amount_cents',
      'client_overdue_invoice_count',
    ]);
  });

  it('money presets are currency in cents; counts are raw counts; DSO is days; CEI a percentage', () => {
    const byUid = Object.fromEntries(PRESET_DEFINITIONS.map((p) => [p.uid, p]));
    for (const uid of [
      'overdue_amount_cents',
      'aging_current_cents',
      'aging_1_30_cents',
      'aging_31_60_cents',
      'aging_61_90_cents',
      'aging_over_90_cents',
      'client_overdue_amount_cents',
    ]) {
      expect(byUid[uid]).toMatchObject({ valueType: 'currency', storageUnit: 'cents' });
    }
    expect(byUid.overdue_invoice_count).toMatchObject({ valueType: 'count', storageUnit: 'raw' });
    expect(byUid.dso_countback).toMatchObject({ valueType: 'days', storageUnit: 'raw' });
    expect(byUid.cei_trailing_30_days).toMatchObject({
      valueType: 'percentage',
      periodDefinition: 'trailing_30_days',
    });
  });
});

describe('evaluatePreset', () => {
  // As of 2025-03-15: X 70 days past due (owed 30,000 of 50,000), Y 5 days (20,000), Z current (40,000).
  const day = '2025-03-15';
  const invoices = [
    inv({
      uid: 'X',
      issuedOn: '2024-12-20',
      dueOn: '2025-01-04',
      amountDueCents: 50_000,
      payments: [{ paidOn: '2025-02-01', amountCents: 20_000 }],
    }),
    inv({ uid: 'Y', issuedOn: '2025-02-10', dueOn: '2025-03-10', amountDueCents: 20_000 }),
    inv({ uid: 'Z', issuedOn: '2025-03-05', dueOn: '2025-04-05', amountDueCents: 40_000 }),
  ];
  const facts = { invoices, salesByMonth: { '2025-03': 40_000, '2025-02': 20_000, '2024-12': 50_000 } };

  it('gives each formula its value and records its inputs', () => {
    const values = Object.fromEntries(PRESET_FORMULAS.map((f) => [f, evaluatePreset(f, facts, day)?.value]));
    expect(values).toEqual({
      overdue_amount: 50_000,
      overdue_invoice_count: 2,
      aging_current: 40_000,
      aging_1_30: 20_000,
      aging_31_60: 0,
      aging_61_90: 30_000,
      aging_over_90: 0,
      // Balance 90,000: March (15 days) covers 40,000, February (28) 20,000, January (31) nothing,
      // December: 31 × 30,000 ÷ 50,000 = 18.6 → 15 + 28 + 31 + 18.6 = 92.6.
      dso_countback: 92.6,
      // Beginning (02-13): X 30,000 + Y 20,000; sales 02-14…03-15: Z 40,000; ending 90,000, current
      // 40,000 → (50 + 40 − 90) ÷ (50 + 40 − 40) = 0 %: nothing was collected in the window.
      collection_effectiveness_index: 0,
    });
    expect(evaluatePreset('dso_countback', facts, day)!.metadata).toMatchObject({
      preset: 'dso_countback',
      as_of: day,
      receivables_balance_cents: 90_000,
      fully_covered: true,
    });
    expect(evaluatePreset('aging_61_90', facts, day)!.metadata).toMatchObject({
      bucket: 'days_61_90',
      invoice_count: 1,
      receivables_total_cents: 90_000,
    });
    expect(evaluatePreset('collection_effectiveness_index', facts, day)!.metadata).toMatchObject({
      beginning_receivables_cents: 50_000,
      credit_sales_cents: 40_000,
      ending_total_receivables_cents: 90_000,
      ending_current_receivables_cents: 40_000,
    });
  });

  it('CEI has no value when nothing was collectible', () => {
    expect(
      evaluatePreset('collection_effectiveness_index', { invoices: [], salesByMonth: {} }, day),
    ).toBeNull();
    expect(evaluatePreset('overdue_amount', { invoices: [], salesByMonth: {} }, day)!.value).toBe(0);
  });
});
