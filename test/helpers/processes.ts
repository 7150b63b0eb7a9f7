import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

/** Given to processes on PostgreSQL as SECRET_KEY (the same value test apps seal with). */
export const TEST_SECRET_KEY = 'dGVzdC1vbmx5LXNlY3JldC1rZXktMzItYnl0ZXMhISE=';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What a process or a CLI run configures itself from: `env` over quiet logs (and a key on PostgreSQL). */
export function remitEnv(env: Record<string, string>): Record<string, string> {
  // PostgreSQL needs a configured key (the embedded database generates one into DATA_DIR).
  const key: Record<string, string> =
    env.DATABASE_URL && !('SECRET_KEY' in env) ? { SECRET_KEY: TEST_SECRET_KEY } : {};
  return { LOG_LEVEL: 'warn', ...key, ...env };
}

function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of ['DATABASE_URL', 'DATA_DIR', 'PORT', 'REDIS_URL', 'SECRET_KEY', 'SECRET_KEY_PREVIOUS'])
    delete base[name];
  return { ...base, ...remitEnv(env) };
}

/**
 * How Node starts an entry point (`server` or `cli-main`): from the run's bundle, made from the sources
 * as they are (test/helpers/test-bundle.ts; never a stale dist/), as `npm start` and bin/remit.js run it.
 */
export function entryPoint(name: 'server' | 'cli-main'): string[] {
  return ['--enable-source-maps', path.join(inject('bundleDir'), `${name}.js`)];
}

/**
 * Runs the real `remit` process (the CLI, as bin/remit.js runs it) and collects its output: for what
 * only a process shows (its exit, its lock on DATA_DIR against another process).
 */
export function runCliProcess(args: string[], env: Record<string, string>): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...entryPoint('cli-main'), ...args], {
      cwd: ROOT,
      env: cleanEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `npm start`'s entry point (or `nodeArgs`) as a real process and waits for /readyz. */
export async function startServer(
  env: Record<string, string>,
  nodeArgs: string[] = entryPoint('server'),
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: cleanEnv({ PORT: String(port), HOST: '127.0.0.1', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // 'close', not 'exit': 'exit' may come before the last of its output has been read.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, port, url, output: () => output, exited };
}

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `remit worker` as a real process and waits for its ready line. */
export async function startWorker(env: Record<string, string>): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [...entryPoint('cli-main'), 'worker'], {
    cwd: ROOT,
    // Info level: the ready line is what says the worker is working the queues.
    env: cleanEnv({ LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // 'close', not 'exit': 'exit' may come before the last of its output has been read.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!output.includes('worker ready')) {
    if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`worker did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, output: () => output, exited };
}
