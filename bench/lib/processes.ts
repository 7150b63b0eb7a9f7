import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { errorMessage, onCleanup } from './cleanup.ts';

/** A failure of the bench itself (as opposed to a bug in it): reported without a stack trace. */
export class BenchError extends Error {}

/** CPU pinning: servers on one core, the load generator on another (2-core machines). */
export interface Pinning {
  enabled: boolean;
  serverCpu: string;
  loadCpu: string;
  /** Why pinning is off, when it is. */
  note?: string;
}

export function detectPinning(env: NodeJS.ProcessEnv = process.env): Pinning {
  const base = { serverCpu: '0', loadCpu: '1' };
  if (env.BENCH_NO_PIN === '1') return { ...base, enabled: false, note: 'BENCH_NO_PIN=1' };
  // The re-executed, pinned run: the parent already checked taskset (and we now see only our own core).
  if (env.BENCH_PINNED === '1') return { ...base, enabled: true };
  if (os.availableParallelism() < 2) {
    return { ...base, enabled: false, note: `only ${os.availableParallelism()} CPU available` };
  }
  const probe = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    return {
      ...base,
      enabled: false,
      note: probe.error ? `taskset not available (${probe.error.message})` : 'taskset -c 0 failed',
    };
  }
  return { ...base, enabled: true };
}

/** The CPUs this process may run on (Linux), e.g. "1" or "0-1"; undefined elsewhere. */
export function allowedCpus(): string | undefined {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    return /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1];
  } catch {
    return undefined;
  }
}

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released for the child to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port the kernel gave'));
      });
    });
  });
}

const TAIL_LINES = 40;

/** A child process whose recent output is kept for error messages. */
export class Child {
  readonly name: string;
  readonly process: ChildProcess;
  private readonly tail: string[] = [];
  /** Lines written to stdout and stderr so far. */
  lines = 0;
  private readonly exitPromise: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly stop: () => Promise<void>;

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.process = child;
    this.exitPromise = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
      child.once('error', (error) => {
        this.record(`spawn error: ${error.message}`);
        this.exitInfo ??= { code: -1, signal: null };
        resolve(this.exitInfo);
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => this.record(chunk));
    }
    this.stop = onCleanup(`stop ${name}`, () => this.terminate());
  }

  private record(chunk: string) {
    for (const line of chunk.split('\n')) {
      if (line.trim() === '') continue;
      this.lines++;
      this.tail.push(line);
      if (this.tail.length > TAIL_LINES) this.tail.shift();
    }
  }

  get exited() {
    return this.exitInfo;
  }

  output(): string {
    return this.tail.join('\n');
  }

  waitForExit() {
    return this.exitPromise;
  }

  /** SIGTERM to the child's process group, SIGKILL after `graceMs`. */
  private async terminate(graceMs = 10_000): Promise<void> {
    if (this.exitInfo || this.process.pid === undefined) return;
    const pid = this.process.pid;
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(-pid, sig); // the child leads its own group (detached)
      } catch {
        try {
          this.process.kill(sig);
        } catch {
          // already gone
        }
      }
    };
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), graceMs);
    try {
      await this.exitPromise;
    } finally {
      clearTimeout(timer);
    }
  }
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** taskset CPU list, when pinning is on. */
  cpu?: string | undefined;
  /** Keep stdin open as a pipe: our reference servers exit when it closes (the bench died). */
  stdinPipe?: boolean;
}

export function spawnChild(options: SpawnOptions): Child {
  const [command, args] = options.cpu
    ? ['taskset', ['-c', options.cpu, options.command, ...options.args]]
    : [options.command, options.args];
  const child = spawn(command, args as string[], {
    cwd: options.cwd,
    env: options.env,
    // Own process group: a Ctrl-C in the terminal reaches the bench, which then stops children in order.
    detached: true,
    stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  return new Child(options.name, child);
}

/** Runs a command to completion and returns its stdout (throws with its output when it fails). */
export async function runToCompletion(options: SpawnOptions, timeoutMs = 180_000): Promise<string> {
  const child = spawnChild(options);
  let stdout = '';
  child.process.stdout?.on('data', (chunk: string) => {
    stdout += chunk;
  });
  const timer = setTimeout(() => void child.stop(), timeoutMs);
  try {
    const { code, signal } = await child.waitForExit();
    if (code !== 0) {
      throw new BenchError(
        `${options.name} failed (${signal ?? `exit ${String(code)}`})\n${indent(child.output())}`,
      );
    }
    return stdout;
  } finally {
    clearTimeout(timer);
    await child.stop();
  }
}

/** Polls `url` until it answers 200; fails early when the child exits. */
export async function waitForReady(child: Child, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (child.exited) {
      const { code, signal } = child.exited;
      throw new BenchError(
        `${child.name} exited before it was ready (${signal ?? `exit ${String(code)}`})\n${indent(child.output())}`,
      );
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = errorMessage(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new BenchError(
    `${child.name} not ready after ${timeoutMs / 1000} s (${url}: ${last})\n${indent(child.output())}`,
  );
}

export function indent(text: string): string {
  if (text.trim() === '') return '    (no output)';
  return text
    .split('\n')
    .map((line) => `    | ${line}`)
    .join('\n');
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const value = Number(result.stdout?.trim());
    clockTicks = Number.isFinite(value) && value > 0 ? value : 100;
  }
  return clockTicks;
}

/** CPU seconds used so far by a process (Linux /proc), or null. */
function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
  } catch {
    return null;
  }
}

/** Busy and total jiffies per CPU line of /proc/stat ("cpu0", "cpu1", …). */
function coreTimes(): Map<string, { busy: number; total: number }> {
  const times = new Map<string, { busy: number; total: number }>();
  try {
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const match = /^(cpu\d+)\s+(.*)$/.exec(line);
      if (!match) continue;
      const values = match[2]!.split(/\s+/).map(Number);
      const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
      const idle = (values[3] ?? 0) + (values[4] ?? 0);
      times.set(match[1]!, { busy: total - idle, total });
    }
  } catch {
    // not Linux
  }
  return times;
}

/**
 * CPU seconds so far of the PostgreSQL backends serving `database` (Linux /proc, when PostgreSQL runs
 * on this machine and we may read its processes), by pid.
 */
function postgresBackendSeconds(database: string): Map<number, number> {
  const out = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmdline.startsWith('postgres: ')) continue;
      // "postgres: [<cluster>: ]<user> <database> <client> <state>"; the bench's database name is unique.
      if (!cmdline.replace(/\0/g, ' ').split(/\s+/).includes(database)) continue;
      const seconds = processCpuSeconds(Number(entry));
      if (seconds !== null) out.set(Number(entry), seconds);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** Where the CPU went during a measured run: the server, this load generator, and each core overall. */
export interface CpuUse {
  /** CPU time of the server process ÷ wall time (100 = one core fully used). */
  server_percent: number | null;
  /** Same for the load generator: this process (autocannon) or its wrk child, whichever ran the load. */
  load_generator_percent: number;
  /** Same for the PostgreSQL backends of the bench database (null without PostgreSQL or /proc). */
  postgres_percent: number | null;
  /**
   * Everything else that kept the cores busy (other processes, other databases' backends, interrupt
   * and network softirq time): all cores' busy time − server − load generator − bench backends.
   */
  others_percent: number | null;
  /** How busy each core was, whoever used it (others' work on the server's core shows up here). */
  core_busy_percent: Record<string, number>;
}

/**
 * CPU seconds of this process's children that have exited and been waited for (Linux: cutime + cstime
 * of /proc/self/stat), e.g. a wrk run; null elsewhere.
 */
function reapedChildrenCpuSeconds(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, cutime 16, cstime 17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / ticksPerSecond();
  } catch {
    return null;
  }
}

export function cpuSampler(serverPid: number | undefined, postgresDatabase?: string): { stop(): CpuUse } {
  const started = process.hrtime.bigint();
  const server = serverPid === undefined ? null : processCpuSeconds(serverPid);
  const self = process.cpuUsage();
  const children = reapedChildrenCpuSeconds();
  const cores = coreTimes();
  const backends = postgresDatabase ? postgresBackendSeconds(postgresDatabase) : null;
  return {
    stop() {
      const wallS = Number(process.hrtime.bigint() - started) / 1e9;
      const serverEnd = serverPid === undefined ? null : processCpuSeconds(serverPid);
      const selfUsed = process.cpuUsage(self);
      const backendsEnd = postgresDatabase ? postgresBackendSeconds(postgresDatabase) : null;
      const coreBusy: Record<string, number> = {};
      let busySeconds = 0;
      for (const [name, end] of coreTimes()) {
        const start = cores.get(name);
        if (!start || end.total === start.total) continue;
        coreBusy[name] = Math.round((100 * (end.busy - start.busy)) / (end.total - start.total));
        busySeconds += (wallS * (end.busy - start.busy)) / (end.total - start.total);
      }
      const percent = (seconds: number) => Math.round((100 * seconds) / wallS);
      const serverSeconds = server !== null && serverEnd !== null ? serverEnd - server : null;
      const childrenEnd = reapedChildrenCpuSeconds();
      // This process's own time plus that of a load generator child (wrk) that ran and exited meanwhile.
      const selfSeconds =
        (selfUsed.user + selfUsed.system) / 1e6 +
        (children !== null && childrenEnd !== null ? childrenEnd - children : 0);
      let postgresSeconds: number | null = null;
      if (backends && backendsEnd && backendsEnd.size > 0) {
        postgresSeconds = 0;
        // A backend that started during the run counts from zero.
        for (const [pid, end] of backendsEnd) postgresSeconds += end - (backends.get(pid) ?? 0);
      }
      const others =
        Object.keys(coreBusy).length > 0 && serverSeconds !== null
          ? Math.max(0, busySeconds - serverSeconds - selfSeconds - (postgresSeconds ?? 0))
          : null;
      return {
        server_percent: serverSeconds === null ? null : percent(serverSeconds),
        load_generator_percent: percent(selfSeconds),
        postgres_percent: postgresSeconds === null ? null : percent(postgresSeconds),
        others_percent: others === null ? null : percent(others),
        core_busy_percent: coreBusy,
      };
    },
  };
}
