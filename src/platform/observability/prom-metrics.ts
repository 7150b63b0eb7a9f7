import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/client.ts';
import type { JobOutcome, Metrics, OutboundOutcome, OutboundTarget } from './metrics.ts';

// Jobs and outside calls run far longer than requests: an SMTP send may take up to 120 s.
const LONG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * prom-client behind `Metrics`, with a registry of its own: tests build several apps in one process,
 * and the library's global registry would refuse the second app's metrics (same names).
 */
export class PromMetrics implements Metrics {
  readonly enabled = true;
  private readonly registry = new Registry();
  private readonly requests: Histogram<'method' | 'route' | 'status_code'>;
  private readonly jobs: Histogram<'queue' | 'outcome'>;
  private readonly outbound: Histogram<'target' | 'operation' | 'outcome'>;

  constructor(database: Database) {
    const registers = [this.registry];
    // Event-loop lag, heap, RSS, GC, handles: the library's standard process metrics, unprefixed.
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Histogram({
      name: 'remit_http_request_duration_seconds',
      help: 'HTTP requests answered, by method, route template and status code',
      labelNames: ['method', 'route', 'status_code'],
      registers,
    });
    this.jobs = new Histogram({
      name: 'remit_job_duration_seconds',
      help: 'Background jobs run by this process, by queue and outcome (completed, failed)',
      labelNames: ['queue', 'outcome'],
      buckets: LONG_BUCKETS,
      registers,
    });
    this.outbound = new Histogram({
      name: 'remit_outbound_request_duration_seconds',
      help: 'Calls to outside services (partner, smtp, slack, llm, s3), by operation and outcome (ok, error, timeout)',
      labelNames: ['target', 'operation', 'outcome'],
      buckets: LONG_BUCKETS,
      registers,
    });
    const engine = database.kind;
    const poolGauge = (name: string, help: string, read: (s: ReturnType<Database['poolStats']>) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['engine'],
        registers,
        // Read when scraped: the pool's own counters are the truth, nothing to keep in step.
        collect() {
          this.set({ engine }, read(database.poolStats()));
        },
      });
    poolGauge('remit_db_pool_connections', 'Open database connections (PGlite: one session)', (s) => s.total);
    poolGauge('remit_db_pool_idle', 'Open database connections not in use', (s) => s.idle);
    poolGauge(
      'remit_db_pool_waiting',
      'Callers waiting for a database connection (PGlite: operations queued behind the running one)',
      (s) => s.waiting,
    );
    poolGauge('remit_db_pool_max', 'Most connections the pool opens', (s) => s.max);
  }

  httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.requests.observe({ method, route, status_code: statusCode }, seconds);
  }

  job(queue: string, outcome: JobOutcome, seconds: number): void {
    this.jobs.observe({ queue, outcome }, seconds);
  }

  outboundCall(target: OutboundTarget, operation: string, outcome: OutboundOutcome, seconds: number): void {
    this.outbound.observe({ target, operation, outcome }, seconds);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
