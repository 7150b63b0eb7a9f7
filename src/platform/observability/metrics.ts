import type { MetricsConfig } from '../../config.ts';
import type { Database } from '../db/client.ts';

/** The outside services whose calls are timed (docs/observability.md#metrics). */
export type OutboundTarget = 'partner' | 'smtp' | 'slack' | 'llm' | 's3';
export type OutboundOutcome = 'ok' | 'error' | 'timeout';
export type JobOutcome = 'completed' | 'failed';

/**
 * What the process counts, for `GET /metrics`. One instance per app (its own prom-client registry, not
 * the library's global one), handed down through the dependencies like the database. `NO_METRICS`
 * stands in when nothing can read them, so no caller has to ask whether metrics are on.
 */
export interface Metrics {
  readonly enabled: boolean;
  /** One answered request: `route` is the route template (`/api/invoices/:uid`), never the raw URL. */
  httpRequest(method: string, route: string, statusCode: number, seconds: number): void;
  job(queue: string, outcome: JobOutcome, seconds: number): void;
  outboundCall(target: OutboundTarget, operation: string, outcome: OutboundOutcome, seconds: number): void;
  /** The Prometheus text exposition of everything above, the pool gauges and the process metrics. */
  render(): Promise<{ contentType: string; body: string }>;
}

export const NO_METRICS: Metrics = {
  enabled: false,
  httpRequest: () => undefined,
  job: () => undefined,
  outboundCall: () => undefined,
  render: () => Promise.reject(new Error('metrics are not enabled')),
};

/**
 * Metrics as configured: prom-client (loaded only here, ≈ 40 ms and 10 MB a process that exposes no
 * metrics does not pay) when a token or a metrics port lets something read them, else `NO_METRICS`.
 */
export async function createMetrics(config: MetricsConfig, database: Database): Promise<Metrics> {
  if (!config.enabled) return NO_METRICS;
  const { PromMetrics } = await import('./prom-metrics.ts');
  return new PromMetrics(database);
}

/**
 * A failed call's outcome: `timeout` for the timeout errors of each client we use (ours say so in
 * `kind` or `timedOut`, fetch's and the AWS SDK's in their name, OpenAI's in its class, sockets in
 * `ETIMEDOUT`), else `error`.
 */
export function failureOutcome(error: unknown): OutboundOutcome {
  const e = (error ?? {}) as {
    name?: unknown;
    code?: unknown;
    kind?: unknown;
    timedOut?: unknown;
    constructor?: { name?: unknown };
  };
  const named = (name: unknown) => typeof name === 'string' && /timeout/i.test(name);
  const timedOut =
    e.timedOut === true ||
    e.kind === 'timeout' ||
    e.code === 'ETIMEDOUT' ||
    named(e.name) ||
    named(e.constructor?.name);
  return timedOut ? 'timeout' : 'error';
}
