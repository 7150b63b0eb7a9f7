import { describe, expect, it } from 'vitest';
import {
  addDays,
  agingAt,
  agingBucketOf,
  ceiInputs,
  ceiPeriod,
  collectionEffectivenessIndex,
  creditSalesCents,
  daysBetween,
  daysInMonth,
  daysPastDue,
  dsoCountback,
  monthsBefore,
  outstandingCents,
  overdueAt,
  type ReceivableInvoice,
} from './metric-formulas.ts';

let n = 0;
function invoice(fields: Partial<ReceivableInvoice> & { amountDueCents: number }): ReceivableInvoice {
  return {
    uid: `inv-${++n}`,
    clientPartyUid: null,
    issuedOn: '2024-10-01',
    dueOn: null,
    settledOn: null,
    payments: [],
    ...fields,
  };
}

describe('calendar helpers', () => {
  it('counts whole UTC days, across month ends and leap days', () => {
    expect(daysBetween('2025-02-09', '2025-03-15')).toBe(34);
    expect(daysBetween('2024-12-01', '2025-03-15')).toBe(104);
    expect(daysBetween('2024-02-28', '2024-03-01')).toBe(2);
    expect(daysBetween('2025-03-15', '2025-03-14')).toBe(-1);
    expect(addDays('2025-03-31', -30)).toBe('2025-03-01');
    expect(addDays('2024-12-31', 1)).toBe('2025-01-01');
    expect(daysInMonth('2024-02')).toBe(29);
    expect(daysInMonth('2025-02')).toBe(28);
    expect(daysInMonth('2025-12')).toBe(31);
    expect(monthsBefore('2025-03', 24)).toBe('2023-03');
    expect(monthsBefore('2025-01', 1)).toBe('2024-12');
  });
});

describe('outstandingCents', () => {
  const inv = invoice({
    issuedOn: '2025-02-01',
    dueOn: '2025-03-03',
    amountDueCents: 100_000,
    payments: [
      { paidOn: '2025-02-10', amountCents: 30_000 },
      { paidOn: '2025-03-05', amountCents: 20_000 },
    ],
  });

  it('is nothing before the issue date, then the amount due less the payments made by the day', () => {
    expect(outstandingCents(inv, '2025-01-31')).toBe(0);
    expect(outstandingCents(inv, '2025-02-01')).toBe(100_000);
    expect(outstandingCents(inv, '2025-02-10')).toBe(70_000);
    expect(outstandingCents(inv, '2025-03-05')).toBe(50_000);
  });

  it('is nothing from the day a paid invoice was settled, even if its payments fall short', () => {
    const markedPaid = { ...inv, settledOn: '2025-03-20' };
    expect(outstandingCents(markedPaid, '2025-03-19')).toBe(50_000);
    expect(outstandingCents(markedPaid, '2025-03-20')).toBe(0);
  });

  it('never goes below zero when payments exceed the amount due', () => {
    const over = invoice({ amountDueCents: 10, payments: [{ paidOn: '2024-10-02', amountCents: 25 }] });
    expect(outstandingCents(over, '2024-10-05')).toBe(0);
  });
});

describe('days past due and aging buckets', () => {
  it('is 0 without a due date, before it and on it; then whole days', () => {
    expect(daysPastDue(invoice({ amountDueCents: 1 }), '2025-03-15')).toBe(0);
    expect(daysPastDue(invoice({ amountDueCents: 1, dueOn: '2025-03-16' }), '2025-03-15')).toBe(0);
    expect(daysPastDue(invoice({ amountDueCents: 1, dueOn: '2025-03-15' }), '2025-03-15')).toBe(0);
    expect(daysPastDue(invoice({ amountDueCents: 1, dueOn: '2025-03-14' }), '2025-03-15')).toBe(1);
  });

  it('puts the bucket edges where docs/metrics.md says', () => {
    expect([0, 1, 30, 31, 60, 61, 90, 91, 400].map(agingBucketOf)).toEqual([
      'current',
      'days_1_30',
      'days_1_30',
      'days_31_60',
      'days_31_60',
      'days_61_90',
      'days_61_90',
      'over_90',
      'over_90',
    ]);
  });
});

/**
 * The hand-computed book of docs/metrics.md, as of 2025-03-15. Days past due: A 34, B 14, D 104,
 * G 74, and the edge invoices 1, 30, 31, 60, 61, 90, 91.
 */
const AS_OF = '2025-03-15';
const book: ReceivableInvoice[] = [
  invoice({ uid: 'A', issuedOn: '2025-01-10', dueOn: '2025-02-09', amountDueCents: 100_000 }),
  invoice({
    uid: 'B',
    issuedOn: '2025-02-20',
    dueOn: '2025-03-01',
    amountDueCents: 50_000,
    payments: [{ paidOn: '2025-03-05', amountCents: 20_000 }],
  }),
  invoice({ uid: 'C', issuedOn: '2025-03-10', dueOn: '2025-04-09', amountDueCents: 80_000 }),
  invoice({ uid: 'D', issuedOn: '2024-11-01', dueOn: '2024-12-01', amountDueCents: 40_000 }),
  invoice({
    uid: 'E',
    issuedOn: '2024-12-10',
    dueOn: '2025-01-09',
    amountDueCents: 60_000,
    settledOn: '2025-02-20',
    payments: [{ paidOn: '2025-02-20', amountCents: 60_000 }],
  }),
  invoice({ uid: 'G', issuedOn: '2024-12-01', dueOn: '2024-12-31', amountDueCents: 10_000 }),
  invoice({ uid: 'H', issuedOn: '2025-03-16', dueOn: '2025-03-20', amountDueCents: 99_999 }),
  invoice({ uid: 'I', issuedOn: '2025-03-01', dueOn: null, amountDueCents: 5_000 }),
  invoice({ uid: 'J', issuedOn: '2025-03-01', dueOn: '2025-03-15', amountDueCents: 7_000 }),
  invoice({ uid: 'K1', dueOn: '2025-03-14', amountDueCents: 9_000 }),
  invoice({ uid: 'K30', dueOn: '2025-02-13', amountDueCents: 3_000 }),
  invoice({ uid: 'K31', dueOn: '2025-02-12', amountDueCents: 6_000 }),
  invoice({ uid: 'K60', dueOn: '2025-01-14', amountDueCents: 4_000 }),
  invoice({ uid: 'K61', dueOn: '2025-01-13', amountDueCents: 8_000 }),
  invoice({ uid: 'K90', dueOn: '2024-12-15', amountDueCents: 2_000 }),
  invoice({ uid: 'K91', dueOn: '2024-12-14', amountDueCents: 1_000 }),
];

describe('aging and overdue on the hand-computed book', () => {
  it('splits the balance by days past due', () => {
    const aging = agingAt(book, AS_OF);
    expect(aging.cents).toEqual({
      current: 92_000, // C 80,000 + I 5,000 (no due date) + J 7,000 (due today)
      days_1_30: 42_000, // B 30,000 (50,000 − 20,000 paid) + K1 9,000 + K30 3,000
      days_31_60: 110_000, // A 100,000 + K31 6,000 + K60 4,000
      days_61_90: 20_000, // G 10,000 + K61 8,000 + K90 2,000
      over_90: 41_000, // D 40,000 + K91 1,000
    });
    expect(aging.counts).toEqual({ current: 3, days_1_30: 3, days_31_60: 3, days_61_90: 3, over_90: 2 });
    expect(aging.totalCents).toBe(305_000);
    expect(aging.invoiceCount).toBe(14); // E is settled, H is issued after the day
  });

  it('overdue = every bucket past due: 213,000 cents on 11 invoices', () => {
    expect(overdueAt(book, AS_OF)).toEqual({ amountCents: 213_000, count: 11 });
  });

  it('a month earlier the same book ages differently (balances are reconstructed at that day)', () => {
    // 2025-02-15: A 6 days past due; D 76; G 46; E still owed (37 days); B, C, I, J, H not issued yet.
    const aging = agingAt(book, '2025-02-15');
    expect(aging.cents.days_1_30).toBe(100_000 + 3_000 + 6_000); // A, K30 (2 days), K31 (3 days)
    expect(overdueAt(book, '2025-02-15').count).toBe(10);
  });

  it('credit sales count the amount due of invoices issued in the range, both ends included', () => {
    expect(creditSalesCents(book, '2025-03-01', '2025-03-15')).toBe(80_000 + 5_000 + 7_000);
    expect(creditSalesCents(book, '2025-02-20', '2025-02-20')).toBe(50_000);
  });
});

describe('dsoCountback', () => {
  it('covers the balance inside the as-of month: days × balance ÷ sales', () => {
    // 2025-03-10: 10 days of March, sales 100,000 cover 50,000 → 10 × 0.5 = 5.
    expect(dsoCountback(50_000, { '2025-03': 100_000 }, '2025-03-10').days).toBe(5);
  });

  it('walks back one month: 15 + 28 × 50,000 ÷ 100,000 = 29', () => {
    const dso = dsoCountback(150_000, { '2025-03': 100_000, '2025-02': 100_000 }, '2025-03-15');
    expect(dso.days).toBe(29);
    expect(dso.fullyCovered).toBe(true);
    expect(dso.steps).toEqual([
      { month: '2025-03', days: 15, sales_cents: 100_000, balance_before_cents: 150_000, days_counted: 15 },
      { month: '2025-02', days: 28, sales_cents: 100_000, balance_before_cents: 50_000, days_counted: 14 },
    ]);
  });

  it('counts a month without sales in full: 15 + 28 + 31 + 31 × 0.5 = 89.5', () => {
    const sales = { '2025-03': 100_000, '2025-02': 100_000, '2024-12': 100_000 };
    expect(dsoCountback(250_000, sales, '2025-03-15').days).toBe(89.5);
  });

  it('uses 29 days for a leap February: 10 + 29 × 20,000 ÷ 40,000 = 24.5', () => {
    expect(dsoCountback(30_000, { '2024-03': 10_000, '2024-02': 40_000 }, '2024-03-10').days).toBe(24.5);
  });

  it('rounds to 2 decimals: 10 × 100 ÷ 300 = 3.33', () => {
    expect(dsoCountback(100, { '2025-03': 300 }, '2025-03-10').days).toBe(3.33);
  });

  it('is 0 without a balance', () => {
    expect(dsoCountback(0, { '2025-03': 100 }, '2025-03-10')).toMatchObject({ days: 0, fullyCovered: true });
  });

  it('stops after the last allowed month and says the balance was not covered', () => {
    const dso = dsoCountback(1_000, {}, '2025-03-15', 2);
    expect(dso.days).toBe(15 + 28 + 31);
    expect(dso.fullyCovered).toBe(false);
    expect(dso.steps.map((s) => s.month)).toEqual(['2025-03', '2025-02', '2025-01']);
  });
});

describe('collection effectiveness index', () => {
  it('the 30-day window ends on the day; the beginning balance is the day before it starts', () => {
    expect(ceiPeriod('2025-03-31')).toEqual({
      start: '2025-03-02',
      end: '2025-03-31',
      beginningAt: '2025-03-01',
    });
  });

  it('on hand-computed data: (140,000 + 120,000 − 100,000) ÷ (140,000 + 120,000 − 80,000) = 88.89 %', () => {
    const invoices = [
      // Owed 100,000 at the beginning; paid in full on 03-10.
      invoice({
        issuedOn: '2025-02-01',
        dueOn: '2025-03-03',
        amountDueCents: 100_000,
        settledOn: '2025-03-10',
        payments: [{ paidOn: '2025-03-10', amountCents: 100_000 }],
      }),
      // 50,000 less 10,000 paid before the window: 40,000 at the beginning; 20,000 paid in it; 20,000 past due at the end.
      invoice({
        issuedOn: '2025-02-15',
        dueOn: '2025-03-17',
        amountDueCents: 50_000,
        payments: [
          { paidOn: '2025-02-25', amountCents: 10_000 },
          { paidOn: '2025-03-20', amountCents: 20_000 },
        ],
      }),
      // Sold in the window, not yet due at the end: 80,000 current.
      invoice({ issuedOn: '2025-03-05', dueOn: '2025-04-04', amountDueCents: 80_000 }),
      // Sold and collected in the window.
      invoice({
        issuedOn: '2025-03-10',
        dueOn: '2025-03-20',
        amountDueCents: 40_000,
        settledOn: '2025-03-25',
        payments: [{ paidOn: '2025-03-25', amountCents: 40_000 }],
      }),
      // Settled before the window; issued after it: neither counts.
      invoice({ issuedOn: '2025-01-10', amountDueCents: 70_000, settledOn: '2025-02-10' }),
      invoice({ issuedOn: '2025-04-01', amountDueCents: 30_000 }),
    ];
    const inputs = ceiInputs(invoices, '2025-03-31');
    expect(inputs).toEqual({
      period_start: '2025-03-02',
      period_end: '2025-03-31',
      beginning_receivables_cents: 140_000,
      credit_sales_cents: 120_000,
      ending_total_receivables_cents: 100_000,
      ending_current_receivables_cents: 80_000,
    });
    expect(collectionEffectivenessIndex(inputs)).toBe(88.89);
  });

  it('is 100 when everything collectible was collected, and null when nothing was collectible', () => {
    const base = {
      period_start: '2025-03-02',
      period_end: '2025-03-31',
      beginning_receivables_cents: 1_000,
      credit_sales_cents: 500,
    };
    expect(
      collectionEffectivenessIndex({
        ...base,
        ending_total_receivables_cents: 300,
        ending_current_receivables_cents: 300,
      }),
    ).toBe(100);
    expect(
      collectionEffectivenessIndex({
        ...base,
        beginning_receivables_cents: 0,
        credit_sales_cents: 0,
        ending_total_receivables_cents: 0,
        ending_current_receivables_cents: 0,
      }),
    ).toBeNull();
  });
});
