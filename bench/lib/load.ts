import autocannon from 'autocannon';
import { onCleanup } from './cleanup.ts';
import { cpuSampler, type CpuUse } from './processes.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One HTTP request, hammered for the length of a run. */
export interface RequestSpec {
  method: HttpMethod;
  /** Path and query, e.g. "/api/me". */
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadSettings {
  durationS: number;
  warmupS: number;
  connections: number;
  pipelining: number;
}

/** One measured run, in the units the table and the results file use. */
export interface Figures {
  requests_per_s: number;
  requests_total: number;
  duration_s: number;
  latency_ms: { avg: number; p50: number; p90: number; p99: number; max: number };
  status: { '2xx': number; non2xx: number; '4xx': number; '5xx': number };
  errors: number;
  timeouts: number;
  throughput_bytes_per_s: number;
  cpu: CpuUse;
}

/** Per-request response times in ms (autocannon's own histogram has 1 ms resolution; ours is exact). */
class Latencies {
  private values = new Float64Array(1 << 16);
  private count = 0;

  add(ms: number) {
    if (this.count === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.count++] = ms;
  }

  summary(): Figures['latency_ms'] {
    const sorted = this.values.slice(0, this.count).sort();
    const at = (q: number) =>
      sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    let sum = 0;
    for (const v of sorted) sum += v;
    const round = (v: number) => Number(v.toFixed(3));
    return {
      avg: round(sorted.length === 0 ? 0 : sum / sorted.length),
      p50: round(at(0.5)),
      p90: round(at(0.9)),
      p99: round(at(0.99)),
      max: round(sorted.length === 0 ? 0 : sorted[sorted.length - 1]!),
    };
  }
}

/** How long a run lasts: seconds, or a number of requests (autocannon's `amount`). */
type RunLength = { durationS: number } | { amount: number };

async function fire(
  baseUrl: string,
  request: RequestSpec,
  settings: LoadSettings,
  length: RunLength,
  latencies?: Latencies,
): Promise<autocannon.Result> {
  const options: autocannon.Options = {
    url: baseUrl + request.path,
    method: request.method,
    headers: request.headers ?? {},
    connections: settings.connections,
    pipelining: settings.pipelining,
    timeout: 10,
    ...('amount' in length ? { amount: length.amount } : { duration: length.durationS }),
  };
  if (request.body !== undefined) options.body = request.body;
  // The instance is stopped if the bench is interrupted mid-run.
  let instance: autocannon.Instance | undefined;
  const result = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(options, (error: unknown, value: autocannon.Result) => {
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve(value);
    });
    if (latencies) {
      instance.on('response', (_client, _status, _bytes, responseTime) => latencies.add(responseTime));
    }
  });
  const stopOnCleanup = onCleanup('stop load generator', async () => instance?.stop());
  try {
    return await result;
  } finally {
    // Removes the step without stopping anything (the run is over).
    instance = undefined;
    await stopOnCleanup();
  }
}

function toFigures(result: autocannon.Result, latencies: Latencies, cpu: CpuUse): Figures {
  const round = (value: number, digits = 2) => Number(value.toFixed(digits));
  return {
    requests_per_s: round(result.requests.average, 1),
    requests_total: result.requests.total,
    duration_s: round(result.duration, 2),
    latency_ms: latencies.summary(),
    status: {
      '2xx': result['2xx'],
      non2xx: result.non2xx,
      '4xx': result['4xx'],
      '5xx': result['5xx'],
    },
    errors: result.errors,
    timeouts: result.timeouts,
    throughput_bytes_per_s: Math.round(result.throughput.average),
    cpu,
  };
}

/**
 * Warm-up (figures discarded), then the measured run. `postgresDatabase`: the database whose backends'
 * CPU time is reported apart (PostgreSQL on this machine).
 */
export async function measure(
  baseUrl: string,
  request: RequestSpec,
  settings: LoadSettings,
  serverPid: number | undefined,
  postgresDatabase?: string,
): Promise<Figures> {
  if (settings.warmupS > 0) await fire(baseUrl, request, settings, { durationS: settings.warmupS });
  const latencies = new Latencies();
  const sampler = cpuSampler(serverPid, postgresDatabase);
  const result = await fire(baseUrl, request, settings, { durationS: settings.durationS }, latencies);
  return toFigures(result, latencies, sampler.stop());
}

/** Exactly `amount` requests (autocannon's `amount`), no warm-up: e.g. to read memory after N requests. */
export async function measureAmount(
  baseUrl: string,
  request: RequestSpec,
  settings: Pick<LoadSettings, 'connections' | 'pipelining'>,
  amount: number,
  serverPid: number | undefined,
): Promise<Figures> {
  const latencies = new Latencies();
  const sampler = cpuSampler(serverPid);
  const result = await fire(
    baseUrl,
    request,
    { ...settings, durationS: 0, warmupS: 0 },
    { amount },
    latencies,
  );
  return toFigures(result, latencies, sampler.stop());
}

/** One request, to check the route answers as expected before it is hammered. */
export async function probe(
  baseUrl: string,
  request: RequestSpec,
): Promise<{ status: number; contentType: string | null; body: Buffer }> {
  const init: RequestInit = {
    method: request.method,
    headers: request.headers ?? {},
    signal: AbortSignal.timeout(10_000),
  };
  if (request.body !== undefined) init.body = request.body;
  const response = await fetch(baseUrl + request.path, init);
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, contentType: response.headers.get('content-type'), body };
}
