import { useState } from 'react';
import { RemitApiError } from '../api.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import { formatDate, formatMoney } from '../format.ts';
import {
  agingBars,
  seriesFrom,
  SNAPSHOT_METRICS,
  snapshotOf,
  type SeriesPoint,
  type Snapshot,
  type SnapshotMetric,
} from '../metrics-view.ts';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import '../tables.css';
import './metrics.css';

/**
 * Receivables metrics: the newest day's DSO, overdue amount and count, and the aging buckets, as the
 * preset job computed them (docs/metrics.md). Read only; values come from the metric series routes.
 */
export default function MetricsPage() {
  const { client, organization } = useSignedIn();
  const org = organization.organization_uid;
  const [attempt, setAttempt] = useState(0);
  useDocumentTitle('Metrics');
  const today = new Date().toISOString().slice(0, 10);
  const data = useResource(`metrics:${org}:${today}:${attempt}`, async () => {
    const read = async (uid: SnapshotMetric): Promise<[SnapshotMetric, SeriesPoint[]]> => {
      try {
        const { data } = await client.GET('/api/metrics/{metric_uid}/values', {
          params: {
            path: { metric_uid: uid },
            query: {
              organization_uid: org,
              entity_uid: org,
              time_unit: 'day',
              from: seriesFrom(today),
              per_page: 1000,
            },
          },
        });
        return [uid, data.items];
      } catch (error) {
        // A preset that is not installed (or was given another uid) simply has no values.
        if (error instanceof RemitApiError && error.code === 'not_found') return [uid, []];
        throw error;
      }
    };
    const [series, invoices] = await Promise.all([
      Promise.all(SNAPSHOT_METRICS.map(read)),
      client.GET('/api/organization/{organization_uid}/ar-invoices', {
        params: { path: { organization_uid: org }, query: { per_page: 1 } },
      }),
    ]);
    return {
      snapshot: snapshotOf(Object.fromEntries(series)),
      // Metric values carry no currency: they are in the organization's invoice currency, read here
      // from its newest receivable invoice (docs/console.md#metrics).
      currency: invoices.items[0]?.currency ?? null,
    };
  });

  return (
    <div className="page page-wide metrics">
      <h1>Receivables metrics</h1>
      {data.status === 'loading' && <Loading label="Loading the metrics…" />}
      {data.status === 'error' && (
        <Problem
          title="The metrics could not be loaded"
          message={data.message}
          onRetry={() => setAttempt((n) => n + 1)}
        />
      )}
      {data.status === 'ready' && !data.data.snapshot && (
        <Empty title="No metric values yet.">
          <p>
            Remit computes DSO, the overdue amount and the aging buckets when they are first read, again
            shortly after invoices and payments change, and every night for the day that ended. None show
            while the preset metrics are paused. An administrator can compute them with{' '}
            <code>POST /api/metrics/compute</code> or <code>remit metrics compute --org {org}</code>.
          </p>
        </Empty>
      )}
      {data.status === 'ready' && data.data.snapshot && (
        <Figures snapshot={data.data.snapshot} currency={data.data.currency} />
      )}
    </div>
  );
}

function Figures({ snapshot, currency }: { snapshot: Snapshot; currency: string | null }) {
  const money = (cents: number | null) =>
    cents === null ? 'Not computed' : currency ? formatMoney(cents, currency) : formatPlainCents(cents);
  const number = (value: number | null, options?: Intl.NumberFormatOptions) =>
    value === null ? 'Not computed' : new Intl.NumberFormat(undefined, options).format(value);
  const { bars, totalCents } = agingBars(snapshot.buckets);
  const missingBucket = snapshot.buckets.some((b) => b.cents === null);
  return (
    <>
      <p className="metrics-as-of">
        As of the end of <strong>{formatDate(snapshot.asOf)}</strong> (UTC), computed from the invoices.
      </p>
      <dl className="metric-cards">
        <div className="metric-card">
          <dt>DSO (countback)</dt>
          <dd data-testid="metric-dso">
            {snapshot.dso === null
              ? 'Not computed'
              : `${number(snapshot.dso, { maximumFractionDigits: 2 })} days`}
          </dd>
        </div>
        <div className="metric-card">
          <dt>Overdue amount</dt>
          <dd data-testid="metric-overdue-amount">{money(snapshot.overdueCents)}</dd>
        </div>
        <div className="metric-card">
          <dt>Overdue invoices</dt>
          <dd data-testid="metric-overdue-count">{number(snapshot.overdueCount)}</dd>
        </div>
      </dl>

      <section aria-labelledby="aging-title" className="aging">
        <h2 id="aging-title">Aging of receivables</h2>
        <p className="muted">
          What clients owe, by days past due. Receivables balance:{' '}
          <strong data-testid="metric-balance">{missingBucket ? 'Not computed' : money(totalCents)}</strong>
        </p>
        {/* The table below says the same in words; the chart is a picture of it. */}
        <svg
          className="aging-chart"
          viewBox="0 0 500 220"
          role="presentation"
          aria-hidden="true"
          focusable="false"
        >
          <line className="axis" x1="0" y1="180" x2="500" y2="180" />
          {bars.map((bar, i) => {
            const height = Math.max(bar.share * 160, bar.share > 0 ? 2 : 0);
            const x = i * 100 + 18;
            return (
              <g key={bar.uid} className={i === 0 ? 'bar bar-current' : 'bar bar-due'}>
                <rect x={x} y={180 - height} width="64" height={height} rx="3" />
                <text x={x + 32} y="200" textAnchor="middle" className="bar-label">
                  {bar.label}
                </text>
                <text x={x + 32} y={Math.max(12, 180 - height - 6)} textAnchor="middle" className="bar-share">
                  {Math.round(bar.ofTotal * 100)}%
                </text>
              </g>
            );
          })}
        </svg>
        <div className="table-scroll" tabIndex={0} role="region" aria-label="Aging buckets">
          <table className="table" data-testid="aging-table">
            <caption className="visually-hidden">Receivables by days past due</caption>
            <thead>
              <tr>
                <th scope="col">Days past due</th>
                <th scope="col" className="numeric">
                  Amount
                </th>
                <th scope="col" className="numeric">
                  Share
                </th>
              </tr>
            </thead>
            <tbody>
              {snapshot.buckets.map((bucket, i) => (
                <tr key={bucket.uid} data-bucket={bucket.uid}>
                  <th scope="row">{bucket.label}</th>
                  <td className="numeric">{money(bucket.cents)}</td>
                  <td className="numeric">
                    {bucket.cents === null
                      ? '—'
                      : new Intl.NumberFormat(undefined, { style: 'percent' }).format(bars[i]!.ofTotal)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}

/** With no invoice to take a currency from, an amount is still shown, as a plain decimal. */
function formatPlainCents(cents: number): string {
  return new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(
    cents / 100,
  );
}
