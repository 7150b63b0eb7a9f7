/**
 * Pure: the receivables snapshot the Metrics page shows, from the preset series
 * (docs/metrics.md#preset-receivables-metrics). Kept apart from the page so the choice of day and the
 * chart's geometry are tested without a browser.
 */

export const AGING_BUCKETS = [
  { uid: 'aging_current_cents', label: 'Current' },
  { uid: 'aging_1_30_cents', label: '1–30 days' },
  { uid: 'aging_31_60_cents', label: '31–60 days' },
  { uid: 'aging_61_90_cents', label: '61–90 days' },
  { uid: 'aging_over_90_cents', label: 'Over 90 days' },
] as const;

export const SNAPSHOT_METRICS = [
  'dso_countback',
  'overdue_amount_cents',
  'overdue_invoice_count',
  ...AGING_BUCKETS.map((b) => b.uid),
] as const;

export type SnapshotMetric = (typeof SNAPSHOT_METRICS)[number];

export interface SeriesPoint {
  metric_date: string;
  value: number;
}

export interface Snapshot {
  /** The newest day any preset has a value for; every figure shown is that day's. */
  asOf: string;
  dso: number | null;
  overdueCents: number | null;
  overdueCount: number | null;
  buckets: { uid: string; label: string; cents: number | null }[];
}

/**
 * The newest day with a value, and each metric's value on that day (null when that metric has none then,
 * e.g. a preset deactivated or installed later): mixing days would show figures that do not add up.
 * Null when no preset has any value yet.
 */
export function snapshotOf(series: Partial<Record<SnapshotMetric, SeriesPoint[]>>): Snapshot | null {
  let asOf = '';
  for (const points of Object.values(series))
    for (const p of points ?? []) if (p.metric_date > asOf) asOf = p.metric_date;
  if (!asOf) return null;
  const on = (uid: SnapshotMetric) => series[uid]?.find((p) => p.metric_date === asOf)?.value ?? null;
  return {
    asOf,
    dso: on('dso_countback'),
    overdueCents: on('overdue_amount_cents'),
    overdueCount: on('overdue_invoice_count'),
    buckets: AGING_BUCKETS.map((b) => ({ uid: b.uid, label: b.label, cents: on(b.uid) })),
  };
}

export interface Bar {
  uid: string;
  label: string;
  /** Share of the tallest bucket, 0…1: the bar's height. */
  share: number;
  /** Share of the receivables balance, 0…1, for the label under the bar. */
  ofTotal: number;
}

/** Bars scaled to the largest bucket (a missing bucket draws as none); the balance is their sum. */
export function agingBars(buckets: Snapshot['buckets']): { bars: Bar[]; totalCents: number } {
  const amounts = buckets.map((b) => Math.max(0, b.cents ?? 0));
  const max = Math.max(0, ...amounts);
  const totalCents = amounts.reduce((a, b) => a + b, 0);
  return {
    totalCents,
    bars: buckets.map((b, i) => ({
      uid: b.uid,
      label: b.label,
      share: max > 0 ? amounts[i]! / max : 0,
      ofTotal: totalCents > 0 ? amounts[i]! / totalCents : 0,
    })),
  };
}

/** `from` for a series read: far enough back that the newest daily value is within one page (1000). */
export function seriesFrom(today: string, days = 400): string {
  return new Date(Date.parse(`${today}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}
