import { describe, expect, it } from 'vitest';
import { agingBars, seriesFrom, snapshotOf } from './metrics-view.ts';

describe('the receivables snapshot', () => {
  it('is null before any value exists', () => {
    expect(snapshotOf({})).toBeNull();
    expect(snapshotOf({ dso_countback: [], aging_current_cents: [] })).toBeNull();
  });

  it('takes the newest day, and only that day, for every figure', () => {
    const snapshot = snapshotOf({
      dso_countback: [
        { metric_date: '2025-03-14', value: 80 },
        { metric_date: '2025-03-15', value: 87.29 },
      ],
      overdue_amount_cents: [
        { metric_date: '2025-03-14', value: 1 },
        { metric_date: '2025-03-15', value: 180_000 },
      ],
      // No value on the newest day: shown as missing, not as the day before's.
      overdue_invoice_count: [{ metric_date: '2025-03-14', value: 3 }],
      aging_current_cents: [{ metric_date: '2025-03-15', value: 80_000 }],
      aging_1_30_cents: [{ metric_date: '2025-03-15', value: 30_000 }],
    });
    expect(snapshot).toMatchObject({
      asOf: '2025-03-15',
      dso: 87.29,
      overdueCents: 180_000,
      overdueCount: null,
    });
    expect(snapshot!.buckets.map((b) => b.cents)).toEqual([80_000, 30_000, null, null, null]);
  });
});

describe('the aging chart', () => {
  it('scales bars to the largest bucket and labels shares of the balance', () => {
    const { bars, totalCents } = agingBars([
      { uid: 'a', label: 'Current', cents: 80_000 },
      { uid: 'b', label: '1–30', cents: 30_000 },
      { uid: 'c', label: '31–60', cents: 100_000 },
      { uid: 'd', label: '61–90', cents: 10_000 },
      { uid: 'e', label: '90+', cents: null },
    ]);
    expect(totalCents).toBe(220_000);
    expect(bars.map((b) => b.share)).toEqual([0.8, 0.3, 1, 0.1, 0]);
    expect(bars[2]!.ofTotal).toBeCloseTo(100 / 220);
  });

  it('draws nothing for an empty book, without dividing by zero', () => {
    const { bars, totalCents } = agingBars([{ uid: 'a', label: 'Current', cents: 0 }]);
    expect(totalCents).toBe(0);
    expect(bars[0]).toMatchObject({ share: 0, ofTotal: 0 });
  });
});

describe('the series read', () => {
  it('starts 400 days back, across a leap day', () => {
    expect(seriesFrom('2025-03-15')).toBe('2024-02-09');
  });
});
