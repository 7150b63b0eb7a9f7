/**
 * The `startup` group of `npm run bench` (issue 17): how fast the compiled server is ready and how much
 * memory it holds, idle and under load. See bench/README.md ("Start and footprint").
 *
 * - `start-*`: time from spawning `node --enable-source-maps dist/server.js` (`npm-start-*`: `npm start`) to its first 200 from
 *   `GET /readyz` (polled every 5 ms), then the server process's resident memory (VmRSS) once idle.
 * - `rss-growth-*`: VmRSS (once idle) after 20,000 and after 200,000 requests of `GET /api/me` on one
 *   server.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Engine } from '../scenarios.ts';
import { errorMessage } from './cleanup.ts';
import { measureAmount, probe, type Figures, type RequestSpec } from './load.ts';
import { createThrowawayDatabase, redactUrl, type ThrowawayDatabase } from './postgres.ts';
import { BenchError, freePort, indent, spawnChild, type Child, type Pinning } from './processes.ts';
import {
  childEnv,
  initRemit,
  REMIT_ENV,
  REMIT_SERVER_ARGS,
  REMIT_SERVER_COMMAND,
  repoRoot,
} from './remit.ts';

export const STARTUP_GROUP = 'startup';

export type StartupId =
  | 'start-postgres-migrated'
  | 'start-postgres-migrated-workers'
  | 'start-pglite-restart'
  | 'start-pglite-fresh'
  | 'npm-start-postgres-migrated'
  | 'npm-start-pglite-restart'
  | 'npm-start-pglite-fresh'
  | 'npm-start-pglite-after-kill'
  | 'rss-growth-postgres'
  | 'rss-growth-pglite';

interface StartupItem {
  id: StartupId;
  group: typeof STARTUP_GROUP;
  engine: Engine;
  title: string;
  kind: 'start' | 'rss-growth';
  /** How the server is started: `node … dist/server.js` itself, or `npm start` as a user types it. */
  via: 'node' | 'npm';
}

const startupItem = (
  id: StartupId,
  engine: Engine,
  title: string,
  kind: StartupItem['kind'],
  via: StartupItem['via'] = 'node',
): StartupItem => ({
  id,
  group: STARTUP_GROUP,
  engine,
  title,
  kind,
  via,
});

/** Every measurement of the group, in the order they run (selectable by id, pattern or "startup"). */
export const STARTUP_ITEMS: readonly StartupItem[] = [
  startupItem('start-postgres-migrated', 'postgres', 'start, PostgreSQL, migrations applied', 'start'),
  startupItem(
    'start-postgres-migrated-workers',
    'postgres',
    'start, PostgreSQL, migrations applied, RUN_WORKERS=true',
    'start',
  ),
  startupItem('start-pglite-restart', 'pglite', 'start, PGlite, existing data directory', 'start'),
  startupItem('start-pglite-fresh', 'pglite', 'start, PGlite, fresh data directory', 'start'),
  startupItem(
    'npm-start-postgres-migrated',
    'postgres',
    '`npm start`, PostgreSQL, migrations applied',
    'start',
    'npm',
  ),
  startupItem(
    'npm-start-pglite-restart',
    'pglite',
    '`npm start`, PGlite, existing data directory',
    'start',
    'npm',
  ),
  startupItem(
    'npm-start-pglite-fresh',
    'pglite',
    '`npm start`, PGlite, fresh data directory',
    'start',
    'npm',
  ),
  startupItem(
    'npm-start-pglite-after-kill',
    'pglite',
    '`npm start`, PGlite, after writes and kill -9',
    'start',
    'npm',
  ),
  startupItem('rss-growth-postgres', 'postgres', 'RSS under GET /api/me, PostgreSQL', 'rss-growth'),
  startupItem('rss-growth-pglite', 'pglite', 'RSS under GET /api/me, PGlite', 'rss-growth'),
];

/** Targets of issue 17 (ready time in ms, idle RSS in MiB, growth in %). */
const TARGETS: Record<StartupId, { readyMs?: number; idleRssMib?: number; growthPercent?: number }> = {
  'start-postgres-migrated': { readyMs: 1000, idleRssMib: 150 },
  'start-postgres-migrated-workers': { readyMs: 1000, idleRssMib: 150 },
  'start-pglite-restart': { readyMs: 2000, idleRssMib: 300 },
  'start-pglite-fresh': { readyMs: 5000, idleRssMib: 300 },
  'npm-start-postgres-migrated': { readyMs: 1000, idleRssMib: 150 },
  'npm-start-pglite-restart': { readyMs: 2000, idleRssMib: 300 },
  'npm-start-pglite-fresh': { readyMs: 5000, idleRssMib: 300 },
  'npm-start-pglite-after-kill': { readyMs: 2000, idleRssMib: 300 },
  'rss-growth-postgres': { growthPercent: 15 },
  'rss-growth-pglite': { growthPercent: 15 },
};

/** How often /readyz is asked while a server starts, and how long one ask may take. */
const POLL_INTERVAL_MS = 5;
const POLL_TIMEOUT_MS = 250;
/** Idle: at least this long after ready, then until VmRSS varies ≤ 1 % over 1 s (at most the cap). */
const IDLE_MIN_MS = 2_000;
const IDLE_MAX_MS = 10_000;
const IDLE_SAMPLE_MS = 250;
const IDLE_STABLE_SAMPLES = 5;
const MIB = 2 ** 20;

// ---------------------------------------------------------------------------------------------------
// Results

export interface StartupTarget {
  /** What is judged: the median ready time (ms), the median idle RSS (MiB), the RSS growth (%). */
  what: 'ready_ms' | 'idle_rss_mib' | 'rss_growth_percent';
  max: number;
  value: number | null;
  pass: boolean;
}

export interface StartRun {
  /** Spawn (of node, or of `npm start`) → first 200 from GET /readyz. */
  ready_ms: number;
  /**
   * CPU seconds used to get there (user + system; with `npm start`, npm's too
   * too): much less sensitive than ready_ms to other work on the machine.
   */
  ready_cpu_s: number | null;
  /** VmRSS of the server process once idle, its peak so far (VmHWM), and when it was read. */
  idle_rss_bytes: number | null;
  peak_rss_bytes: number | null;
  idle_after_ms: number;
  /** SIGTERM → exit, and how it exited. */
  stop_ms: number;
  exit: string;
}

export interface Spread {
  median: number;
  max: number;
}

export interface StartMeasurement {
  id: StartupId;
  kind: 'start';
  title: string;
  engine: Engine;
  run_workers: boolean;
  /** The untimed start before the timed ones (migrations, or the data directory's creation). */
  prepared_by: string;
  runs: StartRun[];
  ready_ms: Spread | null;
  idle_rss_mib: Spread | null;
  targets: StartupTarget[];
  error?: string;
}

export interface RssGrowthMeasurement {
  id: StartupId;
  kind: 'rss-growth';
  title: string;
  engine: Engine;
  method: 'GET';
  path: string;
  connections: number;
  /** VmRSS once idle after the start, before any request. */
  idle_rss_bytes: number | null;
  /** Requests in all after each batch, VmRSS once idle after it and the peak so far, the batch's figures. */
  steps: Array<{
    requests: number;
    rss_bytes: number | null;
    peak_rss_bytes: number | null;
    figures: Figures;
  }>;
  /** Peak VmRSS (VmHWM) at the end. */
  peak_rss_bytes: number | null;
  /** (RSS after the last batch − RSS after the first) ÷ RSS after the first, in %. */
  growth_percent: number | null;
  targets: StartupTarget[];
  error?: string;
}

export type StartupMeasurementResult = StartMeasurement | RssGrowthMeasurement;

export interface StartupResults {
  server_command: string;
  /** BENCH_STARTUP_RUNS (timed starts per measurement) and the runs of the fresh data directory. */
  runs: number;
  fresh_runs: number;
  /** Requests in all after each RSS reading (BENCH_RSS_REQUESTS). */
  rss_requests: number[];
  /** Targets are judged on the median of the runs; max is shown beside it. */
  judged_on: 'median';
  postgres_version: string | null;
  measurements: StartupMeasurementResult[];
  ok: boolean;
}

// ---------------------------------------------------------------------------------------------------
// Measuring one start

/** VmRSS and VmHWM of a process in bytes (Linux /proc), or nulls. */
export function readRss(pid: number): { rss: number | null; peak: number | null } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => {
      const match = new RegExp(`^${field}:\\s*(\\d+)\\s*kB`, 'm').exec(status);
      return match ? Number(match[1]) * 1024 : null;
    };
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { rss: null, peak: null };
  }
}

/** The status of one GET (null: no answer within the timeout, refused, reset). */
function getStatus(url: string, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const request = http.get(url, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      resolve(response.statusCode ?? null);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(null));
    // After a response this changes nothing (the promise is settled); without one, it ends the wait.
    request.on('close', () => resolve(null));
  });
}

interface Started {
  child: Child;
  baseUrl: string;
  pid: number;
  readyMs: number;
  /** CPU seconds (user + system) spent to ready: the server's, plus npm's and its finished children's. */
  readyCpuS: number | null;
}

/** utime + stime (and with `children`, cutime + cstime of waited-for children) of a process, in ticks. */
function cpuTicks(pid: number, children: boolean): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return fields[11]! + fields[12]! + (children ? fields[13]! + fields[14]! : 0);
  } catch {
    return null;
  }
}
/** Linux's USER_HZ: /proc/<pid>/stat counts in hundredths of a second. */
const TICKS_PER_S = 100;

interface StartContext {
  pinning: Pinning;
  startTimeoutMs: number;
  log: (message: string) => void;
}

/** The pid of a descendant of `pid` running dist/server.js (`npm start` → sh → node), if any. */
const SERVER_ENTRIES = ['scripts/start.mjs', 'dist/server.js'];

function serverDescendant(pid: number): number | undefined {
  const children = (parent: number): number[] => {
    try {
      return readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8')
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  };
  const queue = children(pid);
  while (queue.length > 0) {
    const candidate = queue.shift()!;
    try {
      const cmdline = readFileSync(`/proc/${candidate}/cmdline`, 'utf8').split('\0');
      // node itself, not the `sh -c "node … scripts/start.mjs"` npm runs it through (the script
      // imports the server into its own process; `dist/server.js` when run directly).
      const isNode = path.basename(cmdline[0] ?? '').startsWith('node');
      if (isNode && cmdline.some((arg) => SERVER_ENTRIES.includes(arg))) return candidate;
    } catch {
      // gone meanwhile
    }
    queue.push(...children(candidate));
  }
  return undefined;
}

/**
 * Spawns the compiled server (pinned like the others) and times it to its first 200 from /readyz
 * (the database answers, migrations are applied). `via: 'npm'` spawns `npm start` as a user types it:
 * npm itself, then scripts/start.mjs (the build check and the server in one process); the pid measured is then the server's, found
 * among npm's descendants.
 */
async function startTimed(
  name: string,
  env: Record<string, string>,
  ctx: StartContext,
  via: 'node' | 'npm' = 'node',
): Promise<Started> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const url = `${baseUrl}/readyz`;
  const childEnvironment = childEnv({ ...REMIT_ENV, ...env, PORT: String(port), HOST: '127.0.0.1' });
  const started = performance.now();
  // taskset (when pinning) execs node: the pid is the server's own.
  const child = spawnChild({
    name,
    command: via === 'npm' ? 'npm' : process.execPath,
    args: via === 'npm' ? ['start', '--silent'] : REMIT_SERVER_ARGS,
    cwd: repoRoot,
    env: childEnvironment,
    cpu: ctx.pinning.enabled ? ctx.pinning.serverCpu : undefined,
  });
  const pid = child.process.pid;
  for (;;) {
    if (child.exited || pid === undefined) {
      const exit = child.exited;
      throw new BenchError(
        `${name} exited before it was ready (${exit?.signal ?? `exit ${String(exit?.code)}`})\n${indent(child.output())}`,
      );
    }
    if (performance.now() - started > ctx.startTimeoutMs) {
      await child.stop();
      throw new BenchError(
        `${name} not ready after ${ctx.startTimeoutMs / 1000} s (${url})\n${indent(child.output())}`,
      );
    }
    if ((await getStatus(url, POLL_TIMEOUT_MS)) === 200) break;
    await sleep(POLL_INTERVAL_MS);
  }
  const readyMs = performance.now() - started;
  if (via === 'npm') {
    const server = pid === undefined ? undefined : serverDescendant(pid);
    if (server === undefined) {
      await child.stop();
      throw new BenchError(
        `${name}: no node process running ${SERVER_ENTRIES.join(' or ')} under npm (pid ${pid})`,
      );
    }
    const serverTicks = cpuTicks(server, true);
    const npmTicks = pid === undefined ? null : cpuTicks(pid, true);
    const readyCpuS =
      serverTicks === null || npmTicks === null ? null : (serverTicks + npmTicks) / TICKS_PER_S;
    return { child, baseUrl, pid: server, readyMs, readyCpuS };
  }
  const ticks = pid === undefined ? null : cpuTicks(pid, true);
  // The RSS read must be the server's: make sure the pid is node running dist/server.js, not a wrapper.
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (!cmdline.some((arg) => arg.endsWith('dist/server.js'))) {
      await child.stop();
      throw new BenchError(`${name}: pid ${pid} runs "${cmdline.join(' ').trim()}", not the server`);
    }
  } catch (error) {
    if (error instanceof BenchError) throw error;
    // no /proc: RSS is not read either
  }
  return { child, baseUrl, pid, readyMs, readyCpuS: ticks === null ? null : ticks / TICKS_PER_S };
}

/** Waits until the server idles (≥ 2 s after ready, then VmRSS steady within 1 % over 1 s; ≤ 10 s). */
async function idleRss(
  pid: number,
  readyAt: number,
): Promise<{ rss: number | null; peak: number | null; afterMs: number }> {
  const wait = IDLE_MIN_MS - (performance.now() - readyAt);
  if (wait > 0) await sleep(wait);
  const samples: number[] = [];
  let last = readRss(pid);
  while (last.rss !== null) {
    samples.push(last.rss);
    const recent = samples.slice(-IDLE_STABLE_SAMPLES);
    const steady =
      recent.length === IDLE_STABLE_SAMPLES && Math.max(...recent) - Math.min(...recent) <= 0.01 * recent[0]!;
    if (steady || performance.now() - readyAt >= IDLE_MAX_MS) break;
    await sleep(IDLE_SAMPLE_MS);
    last = readRss(pid);
  }
  return { ...last, afterMs: Math.round(performance.now() - readyAt) };
}

/** SIGTERM, wait for the exit; how long it took and how it ended. */
async function stopTimed(child: Child): Promise<{ ms: number; exit: string }> {
  const started = performance.now();
  await child.stop();
  const exit = child.exited;
  return {
    ms: Math.round(performance.now() - started),
    exit: exit?.signal ?? `exit ${String(exit?.code)}`,
  };
}

/** One timed start: ready time, idle RSS, stop. */
async function oneStart(
  name: string,
  env: Record<string, string>,
  ctx: StartContext,
  via: 'node' | 'npm',
): Promise<StartRun> {
  const started = await startTimed(name, env, ctx, via);
  const readyAt = performance.now();
  try {
    const idle = await idleRss(started.pid, readyAt);
    if (started.child.exited) {
      throw new BenchError(`${name} died while idle\n${indent(started.child.output())}`);
    }
    const stop = await stopTimed(started.child);
    // npm itself ends by the signal it forwarded to the server.
    if (stop.exit !== 'exit 0' && !(via === 'npm' && stop.exit === 'SIGTERM')) {
      ctx.log(`    ${name} stopped with ${stop.exit}\n${indent(started.child.output())}`);
    }
    return {
      ready_ms: round1(started.readyMs),
      ready_cpu_s: started.readyCpuS,
      idle_rss_bytes: idle.rss,
      peak_rss_bytes: idle.peak,
      idle_after_ms: idle.afterMs,
      stop_ms: stop.ms,
      exit: stop.exit,
    };
  } finally {
    await started.child.stop();
  }
}

/**
 * A server on `env`'s data directory, `writes` parties created through the API (8 at a time), then
 * SIGKILL: the next start finds whatever the embedded database had not checkpointed.
 */
async function writeThenKill(
  name: string,
  env: Record<string, string>,
  apiKey: string,
  writes: number,
  ctx: StartContext,
): Promise<{ ms: number }> {
  const started = await startTimed(name, env, ctx);
  try {
    const began = performance.now();
    let next = 0;
    const writer = async () => {
      while (next < writes) {
        const n = next++;
        const response = await fetch(`${started.baseUrl}/api/parties`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            name: `Killed party ${n} ${'n'.repeat(200)}`,
            role: 'client',
            address: `${n} Crash Street ${'a'.repeat(300)}`,
          }),
        });
        const body = await response.text();
        if (response.status !== 201 && response.status !== 200) {
          throw new BenchError(
            `${name}: POST /api/parties answered ${response.status}: ${body.slice(0, 200)}`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, writer));
    const ms = performance.now() - began;
    started.child.process.kill('SIGKILL');
    await started.child.waitForExit();
    return { ms };
  } finally {
    await started.child.stop();
  }
}

/** An untimed start and stop (migrations, data directory creation, a warm file cache). */
async function prepareByStart(name: string, env: Record<string, string>, ctx: StartContext): Promise<void> {
  const started = await startTimed(`${name} (preparing start)`, env, ctx);
  const stop = await stopTimed(started.child);
  ctx.log(
    `  ${name}: preparing start ready in ${fmtMs(started.readyMs)}, stopped in ${stop.ms} ms (${stop.exit})`,
  );
  if (stop.exit !== 'exit 0') {
    throw new BenchError(
      `${name}: the preparing start stopped with ${stop.exit}\n${indent(started.child.output())}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------
// The group

export interface StartupOptions {
  selected: readonly StartupId[];
  runs: number;
  freshRuns: number;
  /** Requests in all at each RSS reading: [20000, 200000]. */
  rssRequests: number[];
  /** Writes before each kill -9 of `npm-start-pglite-after-kill`. */
  killWrites: number;
  connections: number;
  pinning: Pinning;
  startTimeoutMs: number;
  adminUrl: string;
  /** A temp directory the caller removes. */
  tmp: string;
  log: (message: string) => void;
}

export async function runStartup(options: StartupOptions): Promise<StartupResults> {
  const { log } = options;
  const ctx: StartContext = { pinning: options.pinning, startTimeoutMs: options.startTimeoutMs, log };
  const selected = STARTUP_ITEMS.filter((candidate) => options.selected.includes(candidate.id));
  log(`\n[startup] ${REMIT_SERVER_COMMAND}; ${options.runs} timed start(s) per measurement`);

  let database: ThrowawayDatabase | undefined;
  if (selected.some((candidate) => candidate.engine === 'postgres')) {
    try {
      database = await createThrowawayDatabase(options.adminUrl);
    } catch (error) {
      throw new BenchError(
        `PostgreSQL at ${redactUrl(options.adminUrl)} is needed (set BENCH_DATABASE_URL, or BENCH_ENGINES=pglite): ${errorMessage(error)}`,
      );
    }
    log(`  PostgreSQL ${database.serverVersion}: throwaway database ${database.name} (startup only)`);
  }

  const root = path.join(options.tmp, 'startup');
  await mkdir(root, { recursive: true });
  const postgresEnv: Record<string, string> = database ? { DATABASE_URL: database.url } : {};
  const restartDir = path.join(root, 'pglite-restart');
  const pgliteEnv = { DATA_DIR: restartDir };
  let postgresReady = false;
  let pgliteReady = false;
  /** Migrates the throwaway database / creates the PGlite data directory, once. */
  const prepare = async (engine: Engine) => {
    if (engine === 'postgres' && !postgresReady) {
      await prepareByStart('Remit (postgres)', postgresEnv, ctx);
      postgresReady = true;
    }
    if (engine === 'pglite' && !pgliteReady) {
      await prepareByStart('Remit (pglite)', pgliteEnv, ctx);
      pgliteReady = true;
    }
  };

  const measurements: StartupMeasurementResult[] = [];
  try {
    for (const item of selected) {
      log(`  ${item.id}: ${item.title}`);
      if (item.kind === 'start') {
        measurements.push(await measureStarts(item, ctx, options, { prepare, postgresEnv, pgliteEnv, root }));
      } else {
        measurements.push(
          await measureRssGrowth(item, ctx, options, {
            prepare,
            env: item.engine === 'postgres' ? postgresEnv : pgliteEnv,
          }),
        );
      }
    }
  } finally {
    await database?.drop();
  }
  return {
    server_command: REMIT_SERVER_COMMAND,
    runs: options.runs,
    fresh_runs: options.freshRuns,
    rss_requests: options.rssRequests,
    judged_on: 'median',
    postgres_version: database?.versionString ?? null,
    measurements,
    ok: measurements.every((m) => !m.error),
  };
}

async function measureStarts(
  item: StartupItem,
  ctx: StartContext,
  options: StartupOptions,
  env: {
    prepare: (engine: Engine) => Promise<void>;
    postgresEnv: Record<string, string>;
    pgliteEnv: Record<string, string>;
    root: string;
  },
): Promise<StartMeasurement> {
  const fresh = item.id === 'start-pglite-fresh' || item.id === 'npm-start-pglite-fresh';
  const afterKill = item.id === 'npm-start-pglite-after-kill';
  // `npm start` as a user types it: nothing but the database set, so the server works the queues too
  // (RUN_WORKERS defaults to true).
  const workers = item.id === 'start-postgres-migrated-workers' || item.via === 'npm';
  const result: StartMeasurement = {
    id: item.id,
    kind: 'start',
    title: item.title,
    engine: item.engine,
    run_workers: workers,
    prepared_by: fresh
      ? 'nothing: a new empty DATA_DIR for each start'
      : afterKill
        ? `before each start: a server on the data directory, ${options.killWrites} writes (POST /api/parties), kill -9`
        : item.engine === 'postgres'
          ? 'one untimed start and stop on the throwaway database (migrations, job queue schema)'
          : 'one untimed start and stop on the data directory (created, migrated)',
    runs: [],
    ready_ms: null,
    idle_rss_mib: null,
    targets: [],
  };
  const runs = fresh ? options.freshRuns : options.runs;
  try {
    if (!fresh && !afterKill) await env.prepare(item.engine);
    const killedEnv = { DATA_DIR: path.join(env.root, `${item.id}-data`) };
    const key = afterKill ? (await initRemit('pglite', killedEnv, 'Killed')).api_key : undefined;
    for (let i = 1; i <= runs; i++) {
      let runEnv: Record<string, string>;
      if (fresh) {
        const dir = path.join(env.root, `${item.id}-${i}`);
        if (existsSync(dir)) throw new BenchError(`${dir} exists already`);
        runEnv = { DATA_DIR: dir };
      } else if (afterKill) {
        const wal = await writeThenKill(
          `Remit (${item.id} #${i}, writing)`,
          killedEnv,
          key!,
          options.killWrites,
          ctx,
        );
        ctx.log(`    #${i}: ${options.killWrites} writes in ${fmtMs(wal.ms)}, then kill -9`);
        runEnv = killedEnv;
      } else {
        runEnv = item.engine === 'postgres' ? env.postgresEnv : env.pgliteEnv;
      }
      if (workers) runEnv = { ...runEnv, RUN_WORKERS: 'true' };
      const run = await oneStart(`Remit (${item.id} #${i})`, runEnv, ctx, item.via);
      result.runs.push(run);
      ctx.log(
        `    #${i}: ready in ${fmtMs(run.ready_ms)} (CPU ${run.ready_cpu_s ?? '?'} s), idle RSS ${fmtMib(run.idle_rss_bytes)} (after ${(run.idle_after_ms / 1000).toFixed(1)} s; peak ${fmtMib(run.peak_rss_bytes)}), stopped in ${run.stop_ms} ms`,
      );
    }
  } catch (error) {
    result.error = errorMessage(error);
    ctx.log(`  ${item.id} FAILED: ${result.error}`);
  }
  if (result.runs.length > 0) {
    result.ready_ms = spread(result.runs.map((r) => r.ready_ms));
    const rss = result.runs.map((r) => r.idle_rss_bytes);
    result.idle_rss_mib = rss.every((v) => v !== null)
      ? spread(rss.map((v) => Number((v / MIB).toFixed(1))))
      : null;
  }
  const targets = TARGETS[item.id];
  if (targets.readyMs !== undefined) {
    result.targets.push(target('ready_ms', targets.readyMs, result.ready_ms?.median ?? null));
  }
  if (targets.idleRssMib !== undefined) {
    result.targets.push(target('idle_rss_mib', targets.idleRssMib, result.idle_rss_mib?.median ?? null));
  }
  return result;
}

async function measureRssGrowth(
  item: StartupItem,
  ctx: StartContext,
  options: StartupOptions,
  env: { prepare: (engine: Engine) => Promise<void>; env: Record<string, string> },
): Promise<RssGrowthMeasurement> {
  const request: RequestSpec = { method: 'GET', path: '/api/me' };
  const result: RssGrowthMeasurement = {
    id: item.id,
    kind: 'rss-growth',
    title: item.title,
    engine: item.engine,
    method: 'GET',
    path: request.path,
    connections: options.connections,
    idle_rss_bytes: null,
    steps: [],
    peak_rss_bytes: null,
    growth_percent: null,
    targets: [],
  };
  let server: Started | undefined;
  try {
    await env.prepare(item.engine);
    // Before the server starts: a PGlite data directory is locked while a server uses it.
    const init = await initRemit(item.engine, env.env, 'Footprint', `footprint-${item.engine}@example.test`);
    request.headers = { authorization: `Bearer ${init.api_key}` };
    server = await startTimed(`Remit (${item.id})`, env.env, ctx);
    const idle = await idleRss(server.pid, performance.now());
    result.idle_rss_bytes = idle.rss;
    const first = await probe(server.baseUrl, request);
    if (first.status !== 200) {
      throw new BenchError(
        `GET /api/me answered ${first.status}: ${first.body.toString('utf8').slice(0, 300)}`,
      );
    }
    let done = 0;
    for (const total of options.rssRequests) {
      const batch = total - done;
      const figures = await measureAmount(
        server.baseUrl,
        request,
        { connections: options.connections, pipelining: 1 },
        batch,
        server.pid,
      );
      done = total;
      if (server.child.exited) {
        throw new BenchError(`${server.child.name} died under load\n${indent(server.child.output())}`);
      }
      // Read once idle, as after a start: a reading taken at once depends on where the GC stands.
      const { rss, peak } = await idleRss(server.pid, performance.now());
      result.steps.push({ requests: total, rss_bytes: rss, peak_rss_bytes: peak, figures });
      ctx.log(
        `    ${total.toLocaleString('en-US')} requests: RSS ${fmtMib(rss)} (${figures.requests_per_s.toFixed(0)} req/s, non-2xx ${figures.status.non2xx}, errors ${figures.errors})`,
      );
      if (figures.status.non2xx > 0 || figures.errors > 0) {
        throw new BenchError(
          `GET /api/me: ${figures.status.non2xx} non-2xx answers and ${figures.errors} errors in ${batch.toLocaleString('en-US')} requests`,
        );
      }
    }
    result.peak_rss_bytes = readRss(server.pid).peak;
    const from = result.steps[0]?.rss_bytes;
    const to = result.steps.at(-1)?.rss_bytes;
    if (result.steps.length >= 2 && from && to) {
      result.growth_percent = Number(((100 * (to - from)) / from).toFixed(1));
    }
    const stop = await stopTimed(server.child);
    if (stop.exit !== 'exit 0') ctx.log(`    ${server.child.name} stopped with ${stop.exit}`);
  } catch (error) {
    result.error = errorMessage(error);
    ctx.log(`  ${item.id} FAILED: ${result.error}`);
  } finally {
    await server?.child.stop();
  }
  const targets = TARGETS[item.id];
  if (targets.growthPercent !== undefined) {
    result.targets.push(target('rss_growth_percent', targets.growthPercent, result.growth_percent));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Helpers

function target(what: StartupTarget['what'], max: number, value: number | null): StartupTarget {
  return { what, max, value, pass: value !== null && value <= max };
}

function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  const median =
    sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return { median: round1(median), max: round1(sorted[sorted.length - 1]!) };
}

const round1 = (value: number) => Number(value.toFixed(1));
const fmtMs = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const fmtMib = (bytes: number | null) => (bytes === null ? '?' : `${(bytes / MIB).toFixed(1)} MiB`);
