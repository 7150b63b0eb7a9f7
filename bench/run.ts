/**
 * `npm run bench`: starts Remit (PGlite and PostgreSQL) and two reference servers as child processes
 * pinned to CPU 0, drives them with autocannon from this process (pinned to CPU 1), prints a table and
 * writes bench/results/<timestamp>.json. See bench/README.md.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupAll, cleanupStarted, errorMessage, onCleanup } from './lib/cleanup.ts';
import {
  measure,
  probe,
  type Figures,
  type HttpMethod,
  type LoadSettings,
  type RequestSpec,
} from './lib/load.ts';
import { describeMachine, gitState, round2 } from './lib/machine.ts';
import {
  createThrowawayDatabase,
  DEFAULT_ADMIN_URL,
  redactUrl,
  type ThrowawayDatabase,
} from './lib/postgres.ts';
import {
  allowedCpus,
  BenchError,
  detectPinning,
  freePort,
  indent,
  runToCompletion,
  spawnChild,
  waitForReady,
  type Child,
  type Pinning,
} from './lib/processes.ts';
import {
  renderTable,
  writeResults,
  type BenchResults,
  type ReferenceResult,
  type ScenarioResult,
  type TargetResult,
} from './lib/report.ts';
import {
  bareReferences,
  ENGINES,
  oneReadReferences,
  scenarios as allScenarios,
  type BareReferenceId,
  type Engine,
  type RemitContext,
  type Scenario,
} from './scenarios.ts';

const repoRoot = path.resolve(import.meta.dirname, '..');
const resultsDir = path.join(import.meta.dirname, 'results');

// ---------------------------------------------------------------------------------------------------
// Settings

function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) {
    throw new BenchError(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  }
  return Number(raw);
}

function listFromEnv(name: string): string[] | undefined {
  const raw = process.env[name]?.trim();
  return raw ? raw.split(',').map((s) => s.trim()) : undefined;
}

interface Settings extends LoadSettings {
  startTimeoutMs: number;
  adminUrl: string;
  scenarios: Scenario[];
}

function loadSettings(): Settings {
  const onlyIds = listFromEnv('BENCH_SCENARIOS');
  const onlyEngines = listFromEnv('BENCH_ENGINES');
  for (const engine of onlyEngines ?? []) {
    if (!ENGINES.includes(engine as Engine)) {
      throw new BenchError(`BENCH_ENGINES: unknown engine "${engine}" (known: ${ENGINES.join(', ')})`);
    }
  }
  for (const id of onlyIds ?? []) {
    if (!allScenarios.some((s) => s.id === id)) {
      throw new BenchError(
        `BENCH_SCENARIOS: unknown scenario "${id}" (known: ${allScenarios.map((s) => s.id).join(', ')})`,
      );
    }
  }
  const scenarios = allScenarios.filter(
    (s) => (!onlyIds || onlyIds.includes(s.id)) && (!onlyEngines || onlyEngines.includes(s.engine)),
  );
  if (scenarios.length === 0) throw new BenchError('no scenario selected');
  return {
    durationS: intFromEnv('BENCH_DURATION_S', 10, 1),
    warmupS: intFromEnv('BENCH_WARMUP_S', 3, 0),
    connections: intFromEnv('BENCH_CONNECTIONS', 10, 1),
    pipelining: 1,
    startTimeoutMs: intFromEnv('BENCH_START_TIMEOUT_S', 120, 1) * 1000,
    adminUrl: process.env.BENCH_DATABASE_URL?.trim() || DEFAULT_ADMIN_URL,
    scenarios,
  };
}

// ---------------------------------------------------------------------------------------------------
// Pinning: the load generator re-executes itself on its own core.

async function reexecPinned(pinning: Pinning): Promise<number> {
  const child = spawn(
    'taskset',
    [
      '-c',
      pinning.loadCpu,
      process.execPath,
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2),
    ],
    { cwd: repoRoot, stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' } },
  );
  // The pinned run does the cleanup; we only pass signals on and wait for it.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      child.kill(signal);
    });
  }
  return new Promise((resolve) => {
    child.on('error', (error) => {
      process.stderr.write(`bench: could not start the pinned run: ${error.message}\n`);
      resolve(1);
    });
    child.on('exit', (code, signal) =>
      resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)),
    );
  });
}

// ---------------------------------------------------------------------------------------------------
// Servers

const log = (message: string) => process.stderr.write(`${message}\n`);

/** Remit and the CLI get these; everything else in our environment passes through (e.g. DATABASE_POOL_SIZE). */
const REMIT_ENV: Record<string, string> = {
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_MAX: '100000000',
  RUN_WORKERS: 'false',
};

function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Never inherited: the bench decides the database, and rate limiting stays in memory.
  for (const name of ['DATABASE_URL', 'DATA_DIR', 'REDIS_URL', 'PORT', 'PUBLIC_BASE_URL', 'BENCH_PINNED']) {
    delete env[name];
  }
  return { ...env, ...extra };
}

interface Server {
  name: string;
  child: Child;
  baseUrl: string;
}

async function startServer(
  name: string,
  script: string,
  env: Record<string, string>,
  pinning: Pinning,
  settings: Settings,
  ownScript: boolean,
): Promise<Server> {
  const port = await freePort();
  const child = spawnChild({
    name,
    command: process.execPath,
    args: ['--import', 'tsx', script],
    cwd: repoRoot,
    env: childEnv({ ...env, PORT: String(port), HOST: '127.0.0.1' }),
    cpu: pinning.enabled ? pinning.serverCpu : undefined,
    stdinPipe: ownScript,
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const started = Date.now();
  await waitForReady(child, `${baseUrl}/readyz`, settings.startTimeoutMs);
  log(`  ${name} ready on :${port} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { name, child, baseUrl };
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.lines > 0) {
    log(
      `  ${server.name} wrote ${server.child.lines} line(s) of output; the last ones:\n${indent(server.child.output().split('\n').slice(-5).join('\n'))}`,
    );
  }
  await server.child.stop();
  const exit = server.child.exited;
  if (exit && exit.code !== 0 && exit.signal !== 'SIGTERM') {
    log(
      `  ${server.name} stopped with ${exit.signal ?? `exit ${String(exit.code)}`}\n${indent(server.child.output())}`,
    );
  }
}

function assertAlive(server: Server) {
  const exit = server.child.exited;
  if (exit) {
    throw new BenchError(
      `${server.name} died during the run (${exit.signal ?? `exit ${String(exit.code)}`})\n${indent(server.child.output())}`,
    );
  }
}

interface InitResult {
  organization_uid: string;
  user_uid: string;
  api_key: string;
}

async function initRemit(engine: Engine, dbEnv: Record<string, string>): Promise<InitResult> {
  const stdout = await runToCompletion({
    name: `remit init (${engine})`,
    command: process.execPath,
    args: [
      '--import',
      'tsx',
      'src/cli.ts',
      'init',
      '--org',
      'Bench',
      '--email',
      'bench@example.test',
      '--json',
    ],
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

function remitContext(engine: Engine, baseUrl: string, init: InitResult): RemitContext {
  const auth = { authorization: `Bearer ${init.api_key}` };
  return {
    engine,
    baseUrl,
    apiKey: init.api_key,
    organizationUid: init.organization_uid,
    userUid: init.user_uid,
    auth,
    api: async <T>(method: HttpMethod, route: string, body?: unknown): Promise<T> => {
      const init: RequestInit = {
        method,
        headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
        signal: AbortSignal.timeout(30_000),
      };
      if (body !== undefined) init.body = JSON.stringify(body);
      const response = await fetch(baseUrl + route, init);
      const text = await response.text();
      if (!response.ok)
        throw new BenchError(`${method} ${route} answered ${response.status}: ${text.slice(0, 300)}`);
      return (text ? JSON.parse(text) : undefined) as T;
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Measuring

async function measureChecked(
  server: Server,
  request: RequestSpec,
  expectStatus: number,
  settings: Settings,
): Promise<Figures> {
  const first = await probe(server.baseUrl, request);
  if (first.status !== expectStatus) {
    throw new BenchError(
      `${request.method} ${request.path} on ${server.name} answered ${first.status}, expected ${expectStatus}: ${first.body.toString('utf8').slice(0, 300)}`,
    );
  }
  log(
    `  ${request.method} ${request.path} on ${server.name}: warm-up ${settings.warmupS} s, run ${settings.durationS} s`,
  );
  const figures = await measure(server.baseUrl, request, settings, server.child.process.pid);
  assertAlive(server);
  log(
    `    ${figures.requests_per_s.toFixed(0)} req/s, p50 ${figures.latency_ms.p50} ms, p99 ${figures.latency_ms.p99} ms, non-2xx ${figures.status.non2xx}, errors ${figures.errors}; CPU: server ${figures.cpu.server_percent ?? '?'}%, load generator ${figures.cpu.load_generator_percent}%, cores busy ${JSON.stringify(figures.cpu.core_busy_percent)}`,
  );
  return figures;
}

function ratio(a: Figures | null, b: Figures | null | undefined): number | null {
  if (!a || !b || b.requests_per_s === 0) return null;
  return Number((a.requests_per_s / b.requests_per_s).toFixed(4));
}

async function bench(pinning: Pinning, settings: Settings): Promise<BenchResults> {
  const startedAt = new Date().toISOString();
  const loadAverageAtStart = os.loadavg().map(round2);
  const engines = ENGINES.filter((engine) => settings.scenarios.some((s) => s.engine === engine));
  const bareIds = [...new Set(settings.scenarios.map((s) => s.references.bare))];
  const oneReadIds = [...new Set(settings.scenarios.map((s) => s.references.oneRead))];

  const tmp = await mkdtemp(path.join(os.tmpdir(), 'remit-bench-'));
  onCleanup(`remove ${tmp}`, () => rm(tmp, { recursive: true, force: true }));

  let database: ThrowawayDatabase | undefined;
  const needsPostgres =
    engines.includes('postgres') || oneReadIds.some((id) => oneReadReferences[id].engine === 'postgres');
  if (needsPostgres) {
    try {
      database = await createThrowawayDatabase(settings.adminUrl);
    } catch (error) {
      throw new BenchError(
        `PostgreSQL at ${redactUrl(settings.adminUrl)} is needed (set BENCH_DATABASE_URL, or BENCH_ENGINES=pglite): ${errorMessage(error)}`,
      );
    }
    log(`PostgreSQL ${database.serverVersion}: throwaway database ${database.name}`);
  }

  const scenarioResults = new Map<string, ScenarioResult>();
  const referenceResults: ReferenceResult[] = [];
  const captured = new Map<BareReferenceId, { file: string; engine: Engine }>();
  let pglitePostgres: string | null = null;

  const failScenario = (scenario: Scenario, request: RequestSpec | undefined, error: unknown) => {
    log(`  ${scenario.id} FAILED: ${errorMessage(error)}`);
    scenarioResults.set(scenario.id, scenarioResult(scenario, request, null, errorMessage(error)));
  };

  for (const engine of engines) {
    log(`\n[${engine}]`);
    const dbEnv: Record<string, string> =
      engine === 'pglite' ? { DATA_DIR: path.join(tmp, 'remit-pglite') } : { DATABASE_URL: database!.url };
    const init = await initRemit(engine, dbEnv);
    log(`  remit init: organization ${init.organization_uid}`);

    const remit = await startServer(
      `Remit (${engine})`,
      'src/server.ts',
      { ...REMIT_ENV, ...dbEnv },
      pinning,
      settings,
      false,
    );
    const ctx = remitContext(engine, remit.baseUrl, init);

    // The bare reference serves the bytes of a real response, captured from the first Remit started.
    for (const id of bareIds) {
      if (captured.has(id)) continue;
      const request = bareReferences[id].capture(ctx);
      const answer = await probe(remit.baseUrl, request);
      if (answer.status !== 200) {
        throw new BenchError(`capturing ${request.method} ${request.path} for ${id}: HTTP ${answer.status}`);
      }
      const file = path.join(tmp, `${id}.body`);
      await writeFile(file, answer.body);
      captured.set(id, { file, engine });
      log(`  captured ${answer.body.length} bytes of ${request.method} ${request.path} for ${id}`);
    }

    for (const scenario of settings.scenarios.filter((s) => s.engine === engine)) {
      let request: RequestSpec | undefined;
      try {
        request = await scenario.prepare(ctx);
        const figures = await measureChecked(remit, request, scenario.expectStatus ?? 200, settings);
        scenarioResults.set(scenario.id, scenarioResult(scenario, request, figures));
      } catch (error) {
        if (error instanceof BenchError && remit.child.exited) throw error;
        failScenario(scenario, request, error);
      }
    }
    await stopServer(remit);

    for (const id of oneReadIds.filter((r) => oneReadReferences[r].engine === engine)) {
      const reference = oneReadReferences[id];
      const env: Record<string, string> =
        engine === 'postgres' ? { ENGINE: 'postgres', DATABASE_URL: database!.url } : { ENGINE: 'pglite' };
      const server = await startServer(
        `one-read reference (${engine})`,
        'bench/servers/one-read.ts',
        env,
        pinning,
        settings,
        true,
      );
      const info = (await (await fetch(`${server.baseUrl}/info`)).json()) as { version?: string };
      if (engine === 'pglite') pglitePostgres = info.version ?? null;
      const figures = await measureChecked(server, reference.request, 200, settings);
      referenceResults.push({
        id,
        kind: 'one-read',
        title: reference.title,
        engine,
        method: reference.request.method,
        path: reference.request.path,
        detail: info.version ?? '',
        figures,
      });
      await stopServer(server);
    }
  }

  log('\n[bare node:http]');
  for (const id of bareIds) {
    const source = captured.get(id);
    if (!source) throw new BenchError(`${id}: no response was captured`);
    const server = await startServer(
      `bare reference ${id}`,
      'bench/servers/bare-http.ts',
      { BODY_FILE: source.file },
      pinning,
      settings,
      true,
    );
    const request: RequestSpec = { method: 'GET', path: '/' };
    const figures = await measureChecked(server, request, 200, settings);
    referenceResults.push({
      id,
      kind: 'bare',
      title: bareReferences[id].title,
      engine: null,
      method: request.method,
      path: request.path,
      detail: `bytes captured from Remit on ${source.engine}`,
      figures,
    });
    await stopServer(server);
  }

  // Ratios and targets, now that every reference is measured.
  const referenceFigures = new Map(referenceResults.map((r) => [r.id, r.figures]));
  const scenariosOut = settings.scenarios.map((s) => {
    const result = scenarioResults.get(s.id) ?? scenarioResult(s, undefined, null, 'not run');
    result.ratios = {
      bare: ratio(result.figures, referenceFigures.get(s.references.bare)),
      one_read: ratio(result.figures, referenceFigures.get(s.references.oneRead)),
    };
    result.targets = (s.targets ?? []).map((t): TargetResult => {
      const value = t.against === 'bare' ? result.ratios.bare : result.ratios.one_read;
      return {
        against: t.against,
        reference_id: t.against === 'bare' ? s.references.bare : s.references.oneRead,
        min_ratio: t.minRatio,
        ratio: value,
        pass: value !== null && value >= t.minRatio,
      };
    });
    return result;
  });

  return {
    format: 1,
    started_at: startedAt,
    finished_at: new Date().toISOString(),
    git: gitState(repoRoot),
    machine: describeMachine({
      postgres: database?.versionString ?? null,
      pglitePostgres,
      loadAverageAtStart,
    }),
    settings: {
      duration_s: settings.durationS,
      warmup_s: settings.warmupS,
      connections: settings.connections,
      pipelining: settings.pipelining,
      pinning: {
        enabled: pinning.enabled,
        server_cpu: pinning.serverCpu,
        load_cpu: pinning.loadCpu,
        note: pinning.note ?? null,
        load_process_cpus: allowedCpus() ?? null,
      },
      postgres_admin_url: needsPostgres ? redactUrl(settings.adminUrl) : null,
      remit_env: REMIT_ENV,
    },
    references: referenceResults,
    scenarios: scenariosOut,
    ok: scenariosOut.every((s) => s.figures !== null),
  };
}

function scenarioResult(
  scenario: Scenario,
  request: RequestSpec | undefined,
  figures: Figures | null,
  error?: string,
): ScenarioResult {
  return {
    id: scenario.id,
    kind: 'scenario',
    title: scenario.title,
    engine: scenario.engine,
    method: request?.method ?? 'GET',
    path: request?.path ?? '',
    figures,
    ...(error ? { error } : {}),
    references: { bare: scenario.references.bare, one_read: scenario.references.oneRead },
    ratios: { bare: null, one_read: null },
    targets: [],
  };
}

// ---------------------------------------------------------------------------------------------------
// Entry point

async function main(): Promise<number> {
  const settings = loadSettings();
  const pinning = detectPinning();
  if (pinning.enabled && process.env.BENCH_PINNED !== '1') return reexecPinned(pinning);
  if (!pinning.enabled)
    log(`bench: running UNPINNED (${pinning.note ?? 'pinning off'}); figures are noisier`);

  const onSignal = (signal: NodeJS.Signals) => {
    if (cleanupStarted()) return;
    log(`\nbench: ${signal}; stopping servers and removing temporary files`);
    void cleanupAll().finally(() => process.exit(130));
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  // A closed stdout (`npm run bench | head`) must not kill the run before it cleans up.
  process.stdout.on('error', () => undefined);
  const onCrash = (error: unknown) => {
    process.stderr.write(
      `bench crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    void cleanupAll().finally(() => process.exit(1));
  };
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);

  try {
    const results = await bench(pinning, settings);
    const file = await writeResults(resultsDir, results);
    process.stdout.write(`\n${renderTable(results)}\n`);
    log(`\nresults: ${path.relative(repoRoot, file)} (and bench/results/latest.json)`);
    return results.ok ? 0 : 1;
  } finally {
    await cleanupAll();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message =
      error instanceof BenchError
        ? error.message
        : error instanceof Error
          ? (error.stack ?? error.message)
          : String(error);
    process.stderr.write(`bench failed: ${message}\n`);
    void cleanupAll().finally(() => process.exit(1));
  },
);
