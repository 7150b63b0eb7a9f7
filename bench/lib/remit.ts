/**
 * Remit as the bench runs it: compiled (`dist/`, built by scripts/build-if-stale.mjs at the start of the
 * bench), the server as `node --enable-source-maps dist/server.js` (what `npm start` runs, without npm
 * and its shell, so the spawned process is the server itself) and the CLI as `node dist/cli-main.js`.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Engine } from '../scenarios.ts';
import { BenchError, indent, runToCompletion } from './processes.ts';

export const repoRoot = path.resolve(import.meta.dirname, '..', '..');

/** Arguments of `node` for Remit's server and its CLI (relative to the repository root, the cwd). */
export const REMIT_SERVER_ARGS = ['--enable-source-maps', 'dist/server.js'];
export const REMIT_CLI_ARGS = ['dist/cli-main.js'];
/** As recorded in the results file. */
export const REMIT_SERVER_COMMAND = `node ${REMIT_SERVER_ARGS.join(' ')}`;

/**
 * `node scripts/build-if-stale.mjs`: compiles src/ to dist/ when dist/ is missing or older than a source
 * file (a no-op otherwise). Throws with tsc's output when the build fails.
 */
export function buildRemit(log: (message: string) => void): void {
  const started = Date.now();
  const stamp = path.join(repoRoot, 'dist', '.build-stamp');
  const stampTime = () => (existsSync(stamp) ? statSync(stamp).mtimeMs : 0);
  const before = stampTime();
  const result = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  if (result.error || result.status !== 0) {
    throw new BenchError(
      `building Remit failed (node scripts/build-if-stale.mjs: ${result.error?.message ?? (result.signal || `exit ${String(result.status)}`)}); the bench runs the compiled server (dist/)\n${indent(output)}`,
    );
  }
  for (const file of ['dist/server.js', 'dist/cli-main.js']) {
    if (!existsSync(path.join(repoRoot, file))) {
      throw new BenchError(`building Remit left no ${file} (node scripts/build-if-stale.mjs)`);
    }
  }
  const seconds = (Date.now() - started) / 1000;
  log(
    stampTime() === before
      ? 'Remit build: dist/ is up to date'
      : `Remit build: src/ compiled to dist/ in ${seconds.toFixed(1)} s`,
  );
}

/** Remit and the CLI get these; everything else in our environment passes through (e.g. DATABASE_POOL_SIZE). */
export const REMIT_ENV: Record<string, string> = {
  HOST: '127.0.0.1',
  // The default level: one line per request is part of what a request costs (docs/performance.md#logs).
  LOG_LEVEL: 'info',
  RATE_LIMIT_MAX: '100000000',
  RUN_WORKERS: 'false',
  // Required with DATABASE_URL (docs/security.md#secrets-at-rest); a throwaway key for a throwaway database.
  SECRET_KEY: process.env.SECRET_KEY || crypto.randomBytes(32).toString('base64'),
};

export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Never inherited: the bench decides the database, and rate limiting stays in memory.
  for (const name of ['DATABASE_URL', 'DATA_DIR', 'REDIS_URL', 'PORT', 'PUBLIC_BASE_URL', 'BENCH_PINNED']) {
    delete env[name];
  }
  return { ...env, ...extra };
}

export interface InitResult {
  organization_uid: string;
  user_uid: string;
  api_key: string;
}

/** `remit init --json`: an organization, its admin and a full-access API key. */
export async function initRemit(
  engine: Engine,
  dbEnv: Record<string, string>,
  organization = 'Bench',
  email = 'bench@example.test',
): Promise<InitResult> {
  const stdout = await runToCompletion({
    name: `remit init ${organization} (${engine})`,
    command: process.execPath,
    args: [...REMIT_CLI_ARGS, 'init', '--org', organization, '--email', email, '--json'],
    cwd: repoRoot,
    env: childEnv({ ...REMIT_ENV, ...dbEnv }),
  });
  const line = stdout.trim().split('\n').pop() ?? '';
  let parsed: Partial<InitResult>;
  try {
    parsed = JSON.parse(line) as Partial<InitResult>;
  } catch {
    throw new BenchError(`remit init (${engine}) printed no JSON: ${line.slice(0, 200)}`);
  }
  if (
    typeof parsed.api_key !== 'string' ||
    typeof parsed.organization_uid !== 'string' ||
    typeof parsed.user_uid !== 'string'
  ) {
    throw new BenchError(`remit init (${engine}) printed unexpected JSON: ${line.slice(0, 200)}`);
  }
  return { api_key: parsed.api_key, organization_uid: parsed.organization_uid, user_uid: parsed.user_uid };
}
