import { spawn, spawnSync } from 'node:child_process';
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

// ---------------------------------------------------------------------------------------------------
// wrk: the native load generator, used for timed runs when it is installed

/**
 * Which generator drives the timed runs: wrk (a native program, `apt-get install wrk`) when it is on the
 * PATH, else autocannon (JavaScript, in this process). BENCH_LOAD=autocannon forces autocannon.
 * autocannon in Node needs about as much CPU per request as a light route of the server, so on a
 * 2-core machine it, not the server, sets the pace of cheap routes: ratios between two routes come out
 * too close to 1. wrk costs a fraction of that and agrees with a measurement from outside.
 */
export type LoadGenerator = 'wrk' | 'autocannon';

let chosenGenerator: { generator: LoadGenerator; note: string } | undefined;

export function loadGenerator(env: NodeJS.ProcessEnv = process.env): {
  generator: LoadGenerator;
  note: string;
} {
  if (chosenGenerator) return chosenGenerator;
  if (env.BENCH_LOAD === 'autocannon') {
    chosenGenerator = { generator: 'autocannon', note: 'BENCH_LOAD=autocannon' };
  } else {
    const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
    const version = `${probe.stdout ?? ''}${probe.stderr ?? ''}`.split('\n')[0]?.trim() ?? '';
    if (probe.error) {
      if (env.BENCH_LOAD === 'wrk')
        throw new Error(`BENCH_LOAD=wrk but wrk cannot run: ${probe.error.message}`);
      chosenGenerator = {
        generator: 'autocannon',
        note: 'wrk not installed (apt-get install wrk): autocannon in the bench process, ratios of cheap routes read high',
      };
    } else {
      chosenGenerator = { generator: 'wrk', note: version || 'wrk' };
    }
  }
  return chosenGenerator;
}

/** "123.45us" / "1.20ms" / "2.00s" → ms. */
function wrkMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm'];
  return Number((value * scale).toFixed(3));
}

/** The figures wrk prints with --latency (its percentiles come from an exact-enough HDR histogram). */
export function parseWrk(
  output: string,
): Omit<Figures, 'cpu' | 'throughput_bytes_per_s'> & { bytes: number } {
  const line = (pattern: RegExp) => pattern.exec(output);
  const latency = line(/^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)/m);
  const percentile = (p: string) => {
    const match = new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(output);
    return match ? wrkMs(match[1]!) : Number.NaN;
  };
  const done = line(/^\s*(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)(B|KB|MB|GB) read/m);
  const rate = line(/^Requests\/sec:\s*([\d.]+)/m);
  if (!latency || !done || !rate) throw new Error(`wrk's output not understood:\n${output}`);
  const non2xx = Number(line(/Non-2xx or 3xx responses:\s*(\d+)/)?.[1] ?? 0);
  const socket = line(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  const units = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 } as const;
  const total = Number(done[1]);
  return {
    requests_per_s: Number(Number(rate[1]).toFixed(1)),
    requests_total: total,
    duration_s: Number((wrkMs(`${done[2]}${done[3]}`) / 1000).toFixed(2)),
    latency_ms: {
      avg: wrkMs(latency[1]!),
      p50: percentile('50'),
      p90: percentile('90'),
      p99: percentile('99'),
      max: wrkMs(latency[3]!),
    },
    // wrk counts every answer that is not 2xx or 3xx together.
    status: { '2xx': total - non2xx, non2xx, '4xx': non2xx, '5xx': 0 },
    errors: socket ? Number(socket[1]) + Number(socket[2]) + Number(socket[3]) : 0,
    timeouts: socket ? Number(socket[4]) : 0,
    bytes: Number(done[4]) * units[done[5] as keyof typeof units],
  };
}

/**
 * One wrk run (one thread: it runs where this process may run, i.e. the load core when pinned). The
 * body of a non-GET goes through a small Lua script.
 */
async function fireWrk(baseUrl: string, request: RequestSpec, settings: LoadSettings, durationS: number) {
  const args = ['-t1', `-c${settings.connections}`, `-d${durationS}s`, '--latency', '--timeout', '10s'];
  for (const [name, value] of Object.entries(request.headers ?? {})) args.push('-H', `${name}: ${value}`);
  if (request.method !== 'GET' || request.body !== undefined) {
    const lua = `wrk.method = ${JSON.stringify(request.method)}\nwrk.body = ${JSON.stringify(request.body ?? '')}\n`;
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/bench-wrk-`);
    writeFileSync(`${dir}/request.lua`, lua);
    args.push('-s', `${dir}/request.lua`);
  }
  args.push(baseUrl + request.path);
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stopOnCleanup = onCleanup('stop wrk', async () => void child.kill('SIGINT'));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0) throw new Error(`wrk exited with ${String(code)}:\n${output}`);
    return parseWrk(output);
  } finally {
    await stopOnCleanup();
  }
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
  if (loadGenerator().generator === 'wrk') {
    if (settings.warmupS > 0) await fireWrk(baseUrl, request, settings, settings.warmupS);
    const sampler = cpuSampler(serverPid, postgresDatabase);
    const { bytes, ...figures } = await fireWrk(baseUrl, request, settings, settings.durationS);
    const cpu = sampler.stop();
    return { ...figures, throughput_bytes_per_s: Math.round(bytes / figures.duration_s), cpu };
  }
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
