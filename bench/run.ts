/**
 * `npm run bench`: builds Remit if stale, starts it compiled (PGlite and PostgreSQL) and two reference
 * servers as child processes pinned to CPU 0, drives them with autocannon from this process (pinned to
 * CPU 1), times Remit's start and reads its memory and how soon a held approval long-poll hears its
 * decision, prints a table and writes
 * bench/results/<timestamp>.json. See bench/README.md.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  APPROVAL_ITEMS,
  approvalResults,
  runApprovals,
  type ApprovalMeasurement,
  type ApprovalsId,
} from './lib/approvals.ts';
import { cleanupAll, cleanupStarted, errorMessage, onCleanup } from './lib/cleanup.ts';
import { capturePlans, type PlanCapture } from './lib/explain.ts';
import { captureSearchPlans, type SearchPlanCapture } from './lib/search-explain.ts';
import {
  loadGenerator,
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
  type LatencyTargetResult,
  type ReferenceResult,
  type ScalingResult,
  type ScenarioResult,
  type SearchSeedStep,
  type SeedStep,
  type TargetResult,
} from './lib/report.ts';
import {
  buildRemit,
  childEnv,
  initRemit,
  REMIT_CLI_ARGS,
  REMIT_ENV,
  REMIT_SERVER_ARGS,
  REMIT_SERVER_COMMAND,
  repoRoot,
  type InitResult,
} from './lib/remit.ts';
import {
  runStartup,
  STARTUP_GROUP,
  STARTUP_ITEMS,
  type StartupId,
  type StartupResults,
} from './lib/startup.ts';
import {
  allScenarios,
  bareReferences,
  DEFAULT_INVOICE_SIZES,
  DEFAULT_SEARCH_OTHER_ROWS,
  DEFAULT_SEARCH_PGLITE_OTHER_ROWS,
  DEFAULT_SEARCH_PGLITE_SIZE,
  DEFAULT_SEARCH_SIZES,
  ENGINES,
  oneReadReferences,
  SAMPLE_INVOICE,
  SEARCH_PLANNED,
  SEED_PARTIES,
  seededInvoiceUid,
  type BareReferenceId,
  type Checked,
  type Engine,
  type RemitContext,
  type Scenario,
  type SearchContext,
  type SearchDataset,
  type SearchOrganization,
} from './scenarios.ts';

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
  invoiceSizes: number[];
  searchSizes: number[];
  searchOtherRows: number;
  searchPgliteSize: number;
  searchPgliteOtherRows: number;
  scenarios: Scenario[];
  /** The startup group's measurements selected (BENCH_SCENARIOS, BENCH_ENGINES). */
  startup: StartupId[];
  startupRuns: number;
  startupFreshRuns: number;
  /** Requests in all at each RSS reading of the rss-growth measurements. */
  rssRequests: number[];
  /** Writes before each kill -9 of npm-start-pglite-after-kill. */
  killWrites: number;
  /** The approvals group's measurements selected (BENCH_SCENARIOS, BENCH_ENGINES), and its settings. */
  approvals: ApprovalsId[];
  approvalRounds: number;
  approvalBurst: number;
  approvalHoldMs: number;
  /** Alternating rounds of a scenario and its one-read reference (0: none), and their length. */
  pairedRounds: number;
  pairedDurationS: number;
}

/** BENCH_INVOICE_SIZES (or another list of sizes): "10000,100000" or "10k,100k,1m". */
function sizesFromEnv(name: string, fallback: number[]): number[] {
  const raw = listFromEnv(name);
  if (!raw) return fallback;
  const sizes = raw.map((value) => {
    const match = /^(\d+)([km]?)$/i.exec(value);
    const size = match ? Number(match[1]) * { '': 1, k: 1000, m: 1_000_000 }[match[2]!.toLowerCase()]! : 0;
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new BenchError(`${name}: "${value}" is not a size (e.g. 10000, 100k, 1m)`);
    }
    return size;
  });
  return [...new Set(sizes)].sort((a, b) => a - b);
}

/**
 * A BENCH_SCENARIOS entry: a scenario id, a group ("me", "invoices", "startup") or an id pattern with
 * `*`; the startup group's measurements are selected the same way.
 */
function selects(pattern: string, scenario: { id: string; group: string }): boolean {
  if (pattern === scenario.id || pattern === scenario.group) return true;
  if (!pattern.includes('*')) return false;
  const regex = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${regex}$`).test(scenario.id);
}

function loadSettings(): Settings {
  const onlyIds = listFromEnv('BENCH_SCENARIOS');
  const onlyEngines = listFromEnv('BENCH_ENGINES');
  const invoiceSizes = sizesFromEnv('BENCH_INVOICE_SIZES', DEFAULT_INVOICE_SIZES);
  const searchSizes = sizesFromEnv('BENCH_SEARCH_SIZES', DEFAULT_SEARCH_SIZES);
  const one = (name: string, fallback: number) => {
    const sizes = sizesFromEnv(name, [fallback]);
    if (sizes.length !== 1) throw new BenchError(`${name}: one size`);
    return sizes[0]!;
  };
  const searchOtherRows = one('BENCH_SEARCH_OTHER_ROWS', DEFAULT_SEARCH_OTHER_ROWS);
  const searchPgliteSize = one('BENCH_SEARCH_PGLITE_SIZE', DEFAULT_SEARCH_PGLITE_SIZE);
  const searchPgliteOtherRows = one('BENCH_SEARCH_PGLITE_OTHER_ROWS', DEFAULT_SEARCH_PGLITE_OTHER_ROWS);
  const known = allScenarios({
    invoiceSizes,
    searchSizes,
    searchOtherRows,
    searchPgliteSize,
    searchPgliteOtherRows,
  });
  for (const engine of onlyEngines ?? []) {
    if (!ENGINES.includes(engine as Engine)) {
      throw new BenchError(`BENCH_ENGINES: unknown engine "${engine}" (known: ${ENGINES.join(', ')})`);
    }
  }
  for (const pattern of onlyIds ?? []) {
    if (![...known, ...STARTUP_ITEMS, ...APPROVAL_ITEMS].some((s) => selects(pattern, s))) {
      const groups = [...new Set([...known.map((s) => s.group), STARTUP_GROUP, APPROVAL_ITEMS[0]!.group])];
      throw new BenchError(
        `BENCH_SCENARIOS: "${pattern}" selects nothing (groups: ${groups.join(', ')}; ids such as ${known
          .slice(0, 4)
          .map((s) => s.id)
          .join(', ')}; or a pattern like "inv-1m-*")`,
      );
    }
  }
  const scenarios = known.filter(
    (s) =>
      (!onlyIds || onlyIds.some((pattern) => selects(pattern, s))) &&
      (!onlyEngines || onlyEngines.includes(s.engine)),
  );
  const startup = STARTUP_ITEMS.filter(
    (item) =>
      (!onlyIds || onlyIds.some((pattern) => selects(pattern, item))) &&
      (!onlyEngines || onlyEngines.includes(item.engine)),
  ).map((item) => item.id);
  const approvals = APPROVAL_ITEMS.filter(
    (item) =>
      (!onlyIds || onlyIds.some((pattern) => selects(pattern, item))) &&
      (!onlyEngines || onlyEngines.includes(item.engine)),
  ).map((item) => item.id);
  if (scenarios.length === 0 && startup.length === 0 && approvals.length === 0) {
    throw new BenchError('no scenario selected');
  }
  const connections = intFromEnv('BENCH_CONNECTIONS', 50, 1);
  const rssRequests = sizesFromEnv('BENCH_RSS_REQUESTS', [20_000, 200_000]);
  if (rssRequests.length < 2 || rssRequests[0]! < connections) {
    throw new BenchError(
      `BENCH_RSS_REQUESTS: two or more totals (e.g. 20k,200k), the first ≥ BENCH_CONNECTIONS (${connections})`,
    );
  }
  const startupRuns = intFromEnv('BENCH_STARTUP_RUNS', 5, 1);
  return {
    durationS: intFromEnv('BENCH_DURATION_S', 10, 1),
    warmupS: intFromEnv('BENCH_WARMUP_S', 3, 0),
    connections,
    pipelining: 1,
    startTimeoutMs: intFromEnv('BENCH_START_TIMEOUT_S', 120, 1) * 1000,
    adminUrl: process.env.BENCH_DATABASE_URL?.trim() || DEFAULT_ADMIN_URL,
    invoiceSizes,
    searchSizes,
    searchOtherRows,
    searchPgliteSize,
    searchPgliteOtherRows,
    scenarios,
    startup,
    startupRuns,
    // A fresh data directory costs several seconds a start: at most 3 unless asked for more.
    startupFreshRuns: intFromEnv('BENCH_STARTUP_FRESH_RUNS', Math.min(3, startupRuns), 1),
    rssRequests,
    killWrites: intFromEnv('BENCH_KILL_WRITES', 5000, 1),
    approvals,
    approvalRounds: intFromEnv('BENCH_APPROVAL_ROUNDS', 200, 1),
    approvalBurst: intFromEnv('BENCH_APPROVAL_BURST', 20, 2),
    approvalHoldMs: intFromEnv('BENCH_APPROVAL_HOLD_MS', 20, 1),
    pairedRounds: intFromEnv('BENCH_PAIRED_ROUNDS', 5, 0),
    pairedDurationS: intFromEnv('BENCH_PAIRED_DURATION_S', 4, 1),
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

interface Server {
  name: string;
  child: Child;
  baseUrl: string;
}

/** `node` arguments that run one of the bench's own TypeScript files (the reference servers). */
const tsx = (script: string) => ['--import', 'tsx', script];

/** `args`: of `node`, e.g. REMIT_SERVER_ARGS or `tsx(script)`. */
async function startServer(
  name: string,
  args: string[],
  env: Record<string, string>,
  pinning: Pinning,
  settings: Settings,
  ownScript: boolean,
): Promise<Server> {
  const port = await freePort();
  const child = spawnChild({
    name,
    command: process.execPath,
    args,
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

function remitContext(
  engine: Engine,
  baseUrl: string,
  init: InitResult,
  query: RemitContext['query'],
): RemitContext {
  const auth = { authorization: `Bearer ${init.api_key}` };
  return {
    engine,
    baseUrl,
    apiKey: init.api_key,
    organizationUid: init.organization_uid,
    userUid: init.user_uid,
    auth,
    seededInvoices: 0,
    ...(query ? { query } : {}),
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

interface MeasureOptions {
  expectStatus: number;
  /** Overrides settings.connections. */
  connections?: number | undefined;
  /** Checks the first answer's JSON body (throws when wrong). */
  verify?: ((body: unknown) => Checked | Promise<Checked>) | undefined;
  /** The database whose PostgreSQL backends' CPU is reported apart. */
  postgresDatabase?: string | undefined;
}

async function measureChecked(
  server: Server,
  request: RequestSpec,
  settings: Settings,
  options: MeasureOptions,
): Promise<{ figures: Figures; checked: Checked | null }> {
  const first = await probe(server.baseUrl, request);
  if (first.status !== options.expectStatus) {
    throw new BenchError(
      `${request.method} ${request.path} on ${server.name} answered ${first.status}, expected ${options.expectStatus}: ${first.body.toString('utf8').slice(0, 300)}`,
    );
  }
  let checked: Checked | null = null;
  if (options.verify) {
    let body: unknown;
    try {
      body = JSON.parse(first.body.toString('utf8'));
    } catch {
      throw new BenchError(`${request.method} ${request.path} answered no JSON`);
    }
    checked = await options.verify(body);
  }
  const load = { ...settings, connections: options.connections ?? settings.connections };
  log(
    `  ${request.method} ${request.path} on ${server.name}, ${load.connections} connection(s): warm-up ${settings.warmupS} s, run ${settings.durationS} s${checked ? ` (${JSON.stringify(checked)})` : ''}`,
  );
  const figures = await measure(
    server.baseUrl,
    request,
    load,
    server.child.process.pid,
    options.postgresDatabase,
  );
  assertAlive(server);
  const { cpu } = figures;
  log(
    `    ${figures.requests_per_s.toFixed(0)} req/s, p50 ${figures.latency_ms.p50} ms, p99 ${figures.latency_ms.p99} ms, non-2xx ${figures.status.non2xx}, errors ${figures.errors}; CPU: server ${cpu.server_percent ?? '?'}%, postgres ${cpu.postgres_percent ?? '?'}%, load generator ${cpu.load_generator_percent}%, others ${cpu.others_percent ?? '?'}%, cores busy ${JSON.stringify(cpu.core_busy_percent)}`,
  );
  return { figures, checked };
}

const SEED_TIMEOUT_MS = 30 * 60_000;

/**
 * `remit seed` brings the bench organization to `invoices` payable invoices. The seed is
 * deterministic and only adds missing rows, so 10k → 100k → 1M ends with the rows a direct 1M seed
 * writes (the party count is fixed for that). PostgreSQL has no data-directory lock, so the CLI runs
 * beside the running server (which idles meanwhile); `vacuum (analyze)` and a checkpoint afterwards keep
 * autovacuum and the flush of the load out of the measured runs.
 */
async function seedInvoices(
  ctx: RemitContext,
  dbEnv: Record<string, string>,
  invoices: number,
  server: Server,
): Promise<SeedStep> {
  log(
    `  remit seed: ${invoices.toLocaleString('en-US')} payable invoices (server ${server.name} keeps running)`,
  );
  const { result, seconds } = await runSeed(dbEnv, ctx.organizationUid, {
    invoices,
    parties: SEED_PARTIES,
    tasks: 0,
    apRatio: 1,
  });
  if (result.payable !== invoices || result.invoices !== invoices) {
    throw new BenchError(
      `remit seed --invoices ${invoices} left ${String(result.payable)} payable of ${String(result.invoices)} invoices`,
    );
  }
  assertAlive(server);
  try {
    // Autovacuum would otherwise visit the freshly loaded tables during a measured run (one such run
    // here: PostgreSQL at 123 % CPU and half the req/s); the checkpoint keeps the flush out too.
    await ctx.query?.('vacuum (analyze)');
    await ctx.query?.('checkpoint');
  } catch (error) {
    log(`  (no vacuum or checkpoint after seeding: ${errorMessage(error)})`);
  }
  ctx.seededInvoices = invoices;
  log(`  seeded in ${seconds.toFixed(1)} s (remit seed reported ${result.seconds ?? '?'} s)`);
  return {
    invoices,
    payable: result.payable,
    seconds: round2(seconds),
    remit_seconds: result.seconds ?? 0,
    server_running: !server.child.exited,
  };
}

interface SeedJson {
  invoices?: number;
  payable?: number;
  receivable?: number;
  parties?: number;
  tasks?: number;
  seconds?: number;
}

/** `remit seed --json` (the CLI, beside the server on PostgreSQL), its JSON answer and wall time. */
async function runSeed(
  dbEnv: Record<string, string>,
  organizationUid: string,
  options: { invoices: number; parties: number; tasks: number; apRatio: number },
): Promise<{ result: SeedJson; seconds: number }> {
  const started = Date.now();
  const stdout = await runToCompletion(
    {
      name: `remit seed (${organizationUid}, ${options.invoices} invoices)`,
      command: process.execPath,
      args: [
        ...REMIT_CLI_ARGS,
        'seed',
        '--org',
        organizationUid,
        '--invoices',
        String(options.invoices),
        '--parties',
        String(options.parties),
        '--tasks',
        String(options.tasks),
        '--ap-ratio',
        String(options.apRatio),
        '--json',
      ],
      cwd: repoRoot,
      env: childEnv({ ...REMIT_ENV, ...dbEnv }),
    },
    SEED_TIMEOUT_MS,
  );
  const line = stdout.trim().split('\n').pop() ?? '';
  try {
    return { result: JSON.parse(line) as SeedJson, seconds: (Date.now() - started) / 1000 };
  } catch {
    throw new BenchError(`remit seed printed no JSON: ${line.slice(0, 200)}`);
  }
}

function searchOrganization(init: InitResult): SearchOrganization {
  return {
    organizationUid: init.organization_uid,
    userUid: init.user_uid,
    apiKey: init.api_key,
    auth: { authorization: `Bearer ${init.api_key}` },
  };
}

/**
 * The search scenarios' organizations: created with `remit init` (the searched one, "Search", and the
 * other one, "Search other"), the other seeded once with its rows. On PGlite this runs before the server
 * starts (the CLI cannot open a data directory the server holds).
 */
async function setUpSearch(
  engine: Engine,
  dbEnv: Record<string, string>,
  dataset: SearchDataset,
  server: Server | null,
): Promise<{ search: SearchContext; step: SearchSeedStep }> {
  const org = await initRemit(engine, dbEnv, 'Search', 'search@example.test');
  const other = await initRemit(engine, dbEnv, 'Search other', 'search-other@example.test');
  const search: SearchContext = {
    org: searchOrganization(org),
    other: searchOrganization(other),
    seeded: null,
  };
  log(
    `  search organizations: ${org.organization_uid} (searched), ${other.organization_uid} (other); remit seed: the other one, ${dataset.other.invoices.toLocaleString('en-US')} invoices, ${dataset.other.parties.toLocaleString('en-US')} parties, ${dataset.other.tasks.toLocaleString('en-US')} tasks${server ? ` (server ${server.name} keeps running)` : ''}`,
  );
  const { result, seconds } = await runSeed(dbEnv, other.organization_uid, { ...dataset.other, apRatio: 0 });
  if (result.invoices !== dataset.other.invoices || result.tasks !== dataset.other.tasks) {
    throw new BenchError(`remit seed (other organization) answered ${JSON.stringify(result)}`);
  }
  if (server) assertAlive(server);
  log(`  seeded in ${seconds.toFixed(1)} s (remit seed reported ${result.seconds ?? '?'} s)`);
  const step: SearchSeedStep = {
    organization: 'other',
    invoices: dataset.other.invoices,
    parties: dataset.other.parties,
    tasks: dataset.other.tasks,
    seconds: round2(seconds),
    remit_seconds: result.seconds ?? 0,
    server_running: server ? !server.child.exited : null,
  };
  return { search, step };
}

/**
 * `remit seed` brings the searched organization to the dataset's size (receivable invoices: numbers
 * `INV-…`; parties; tasks). Deterministic and additive, like the invoice seeding; a checkpoint follows
 * on PostgreSQL.
 */
async function seedSearch(
  search: SearchContext,
  query: RemitContext['query'],
  dbEnv: Record<string, string>,
  dataset: SearchDataset,
  server: Server | null,
): Promise<SearchSeedStep> {
  const org = search.org.organizationUid;
  log(
    `  remit seed: searched organization, ${dataset.invoices.toLocaleString('en-US')} invoices, ${dataset.parties.toLocaleString('en-US')} parties, ${dataset.tasks.toLocaleString('en-US')} tasks${server ? ` (server ${server.name} keeps running)` : ''}`,
  );
  const { result, seconds } = await runSeed(dbEnv, org, { ...dataset, apRatio: 0 });
  if (
    result.invoices !== dataset.invoices ||
    result.receivable !== dataset.invoices ||
    result.tasks !== dataset.tasks
  ) {
    throw new BenchError(`remit seed (searched organization) answered ${JSON.stringify(result)}`);
  }
  if (server) assertAlive(server);
  try {
    await query?.('vacuum (analyze)');
    await query?.('checkpoint');
  } catch (error) {
    log(`  (no vacuum or checkpoint after seeding: ${errorMessage(error)})`);
  }
  search.seeded = dataset;
  log(`  seeded in ${seconds.toFixed(1)} s (remit seed reported ${result.seconds ?? '?'} s)`);
  return {
    organization: 'searched',
    invoices: dataset.invoices,
    parties: dataset.parties,
    tasks: dataset.tasks,
    seconds: round2(seconds),
    remit_seconds: result.seconds ?? 0,
    server_running: server ? !server.child.exited : null,
  };
}

function ratio(a: Figures | null, b: Figures | null | undefined): number | null {
  if (!a || !b || b.requests_per_s === 0) return null;
  return Number((a.requests_per_s / b.requests_per_s).toFixed(4));
}

async function bench(pinning: Pinning, settings: Settings): Promise<BenchResults> {
  const startedAt = new Date().toISOString();
  const loadAverageAtStart = os.loadavg().map(round2);
  const approvalItems = APPROVAL_ITEMS.filter((item) => settings.approvals.includes(item.id));
  const engines = ENGINES.filter(
    (engine) =>
      settings.scenarios.some((s) => s.engine === engine) || approvalItems.some((a) => a.engine === engine),
  );
  const referenced = settings.scenarios.flatMap((s) => (s.references ? [s.references] : []));
  const bareIds = [...new Set(referenced.map((r) => r.bare))];
  const oneReadIds = [...new Set(referenced.map((r) => r.oneRead))];

  const tmp = await mkdtemp(path.join(os.tmpdir(), 'remit-bench-'));
  onCleanup(`remove ${tmp}`, () => rm(tmp, { recursive: true, force: true }));

  // Start and footprint first: alone on the machine, before the load scenarios' long runs.
  let startup: StartupResults | null = null;
  if (settings.startup.length > 0) {
    startup = await runStartup({
      selected: settings.startup,
      runs: settings.startupRuns,
      freshRuns: settings.startupFreshRuns,
      rssRequests: settings.rssRequests,
      killWrites: settings.killWrites,
      connections: settings.connections,
      pinning,
      startTimeoutMs: settings.startTimeoutMs,
      adminUrl: settings.adminUrl,
      tmp,
      log,
    });
  }

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
  const scenarioRequests = new Map<string, RequestSpec>();
  const referenceResults: ReferenceResult[] = [];
  const seeding: SeedStep[] = [];
  const searchSeeding: SearchSeedStep[] = [];
  let plans: PlanCapture | null = null;
  let searchPlans: SearchPlanCapture | null = null;
  const captured = new Map<BareReferenceId, { file: string; engine: Engine }>();
  let pglitePostgres: string | null = null;
  const approvalMeasurements: ApprovalMeasurement[] = [];

  const failScenario = (scenario: Scenario, request: RequestSpec | undefined, error: unknown) => {
    log(`  ${scenario.id} FAILED: ${errorMessage(error)}`);
    scenarioResults.set(
      scenario.id,
      scenarioResult(scenario, settings, request, null, null, errorMessage(error)),
    );
  };

  for (const engine of engines) {
    log(`\n[${engine}]`);
    const dbEnv: Record<string, string> =
      engine === 'pglite' ? { DATA_DIR: path.join(tmp, 'remit-pglite') } : { DATABASE_URL: database!.url };
    const init = await initRemit(engine, dbEnv);
    log(`  remit init: organization ${init.organization_uid}`);
    // Datasets only grow: scenarios without one first, then the invoice datasets, then the search ones,
    // each by size (stable otherwise).
    const rank = (s: Scenario) => (s.searchDataset ? 2 : s.dataset ? 1 : 0);
    const size = (s: Scenario) => s.dataset?.invoices ?? s.searchDataset?.invoices ?? 0;
    const ofEngine = settings.scenarios
      .filter((s) => s.engine === engine)
      .sort((a, b) => rank(a) - rank(b) || size(a) - size(b));

    // PGlite: the search data is seeded before the server holds the data directory (one size only).
    let search: SearchContext | undefined;
    const pgliteSearch =
      engine === 'pglite' ? ofEngine.find((s) => s.searchDataset)?.searchDataset : undefined;
    if (pgliteSearch) {
      if (ofEngine.some((s) => s.searchDataset && s.searchDataset.invoices !== pgliteSearch.invoices)) {
        throw new BenchError('PGlite runs the search scenarios at one size');
      }
      const setUp = await setUpSearch(engine, dbEnv, pgliteSearch, null);
      searchSeeding.push(setUp.step);
      search = setUp.search;
      searchSeeding.push(await seedSearch(search, undefined, dbEnv, pgliteSearch, null));
    }

    const remit = await startServer(
      `Remit (${engine})`,
      REMIT_SERVER_ARGS,
      { ...REMIT_ENV, ...dbEnv },
      pinning,
      settings,
      false,
    );
    // Read-only SQL for the scenarios' checks (PostgreSQL), on one connection of its own.
    let query: RemitContext['query'];
    if (engine === 'postgres') {
      const pool = new pg.Pool({ connectionString: database!.url, max: 1 });
      pool.on('error', () => undefined);
      onCleanup('close the check connection', () => pool.end());
      query = async <T>(text: string, values?: unknown[]) => (await pool.query(text, values)).rows as T[];
    }
    const ctx = remitContext(engine, remit.baseUrl, init, query);
    if (search) ctx.search = search;
    const postgresDatabase = engine === 'postgres' ? database!.name : undefined;

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

    // The approval long-poll first, on the fresh server, before any load scenario's dataset.
    const approvalItem = approvalItems.find((item) => item.engine === engine);
    if (approvalItem) {
      const asApprovalServer = (server: Server) => ({
        name: server.name,
        baseUrl: server.baseUrl,
        pid: server.child.process.pid,
        assertAlive: () => assertAlive(server),
      });
      approvalMeasurements.push(
        await runApprovals(approvalItem, {
          engine,
          main: asApprovalServer(remit),
          apiKey: init.api_key,
          // Cross-process: a second server on the same database (RUN_WORKERS=false like the first).
          ...(engine === 'postgres'
            ? {
                startSecond: async () => {
                  const second = await startServer(
                    `Remit (${engine}, second process)`,
                    REMIT_SERVER_ARGS,
                    { ...REMIT_ENV, ...dbEnv, RUN_WORKERS: 'false' },
                    pinning,
                    settings,
                    false,
                  );
                  return { ...asApprovalServer(second), stop: () => stopServer(second) };
                },
              }
            : {}),
          postgresDatabase,
          rounds: settings.approvalRounds,
          burst: settings.approvalBurst,
          holdMs: settings.approvalHoldMs,
          log,
        }),
      );
    }

    for (const scenario of ofEngine) {
      let request: RequestSpec | undefined;
      if (scenario.dataset && scenario.dataset.invoices > ctx.seededInvoices) {
        if (engine !== 'postgres') throw new BenchError(`${scenario.id}: datasets need PostgreSQL`);
        seeding.push(await seedInvoices(ctx, dbEnv, scenario.dataset.invoices, remit));
      }
      const wanted = scenario.searchDataset;
      if (wanted && wanted.invoices > (ctx.search?.seeded?.invoices ?? 0)) {
        if (engine !== 'postgres')
          throw new BenchError(`${scenario.id}: PGlite is seeded before its server starts`);
        if (!ctx.search) {
          const setUp = await setUpSearch(engine, dbEnv, wanted, remit);
          searchSeeding.push(setUp.step);
          ctx.search = setUp.search;
        }
        searchSeeding.push(await seedSearch(ctx.search, ctx.query, dbEnv, wanted, remit));
      }
      try {
        request = await scenario.prepare(ctx);
        const verify = scenario.verify;
        const { figures, checked } = await measureChecked(remit, request, settings, {
          expectStatus: scenario.expectStatus ?? 200,
          connections: scenario.connections,
          verify: verify ? (body) => verify(body, ctx) : undefined,
          postgresDatabase,
        });
        scenarioResults.set(scenario.id, scenarioResult(scenario, settings, request, figures, checked));
        scenarioRequests.set(scenario.id, request);
      } catch (error) {
        if (error instanceof BenchError && remit.child.exited) throw error;
        failScenario(scenario, request, error);
      }
    }
    // Against its one-read reference, a scenario is also measured in alternating short rounds, both
    // servers up: the machine's speed drifts between two long runs made one after the other.
    const paired = ofEngine.filter(
      (s) =>
        settings.pairedRounds > 0 &&
        s.references &&
        oneReadReferences[s.references.oneRead].engine === engine &&
        scenarioRequests.has(s.id),
    );
    for (const id of new Set(paired.map((s) => s.references!.oneRead))) {
      const reference = oneReadReferences[id];
      const server = await startServer(
        `one-read reference (${engine}, paired rounds)`,
        tsx('bench/servers/one-read.ts'),
        engine === 'postgres' ? { ENGINE: 'postgres', DATABASE_URL: database!.url } : { ENGINE: 'pglite' },
        pinning,
        settings,
        true,
      );
      const round = { ...settings, durationS: settings.pairedDurationS, warmupS: 1 };
      for (const scenario of paired.filter((s) => s.references!.oneRead === id)) {
        const ratios: number[] = [];
        for (let r = 0; r < settings.pairedRounds; r++) {
          const mine = await measureChecked(remit, scenarioRequests.get(scenario.id)!, round, {
            expectStatus: scenario.expectStatus ?? 200,
            connections: scenario.connections,
            postgresDatabase,
          });
          const theirs = await measureChecked(server, reference.request, round, {
            expectStatus: 200,
            connections: scenario.connections,
            postgresDatabase,
          });
          const value = ratio(mine.figures, theirs.figures);
          if (value !== null) ratios.push(value);
        }
        const sorted = [...ratios].sort((a, b) => a - b);
        const result = scenarioResults.get(scenario.id)!;
        if (sorted.length > 0)
          result.paired = {
            rounds: sorted.length,
            duration_s: settings.pairedDurationS,
            ratios,
            median: sorted[Math.floor((sorted.length - 1) / 2)]!,
          };
      }
      await stopServer(server);
    }

    // The statements behind the invoice scenarios, planned and run on the largest dataset.
    if (engine === 'postgres' && ctx.seededInvoices > 0) {
      try {
        log(`  EXPLAIN (ANALYZE, BUFFERS) at ${ctx.seededInvoices.toLocaleString('en-US')} invoices`);
        plans = await capturePlans(
          database!.url,
          ctx.organizationUid,
          seededInvoiceUid(ctx.organizationUid, SAMPLE_INVOICE),
          ctx.seededInvoices,
        );
      } catch (error) {
        log(`  could not capture the plans: ${errorMessage(error)}`);
      }
    }
    // The statements behind the search scenarios, on the largest dataset.
    if (engine === 'postgres' && ctx.search?.seeded) {
      try {
        log(
          `  EXPLAIN (ANALYZE, BUFFERS) of the search statements at ${ctx.search.seeded.invoices.toLocaleString('en-US')} invoices`,
        );
        searchPlans = await captureSearchPlans(database!.url, ctx.search.org.organizationUid, SEARCH_PLANNED);
      } catch (error) {
        log(`  could not capture the search plans: ${errorMessage(error)}`);
      }
    }
    await stopServer(remit);

    for (const id of oneReadIds.filter((r) => oneReadReferences[r].engine === engine)) {
      const reference = oneReadReferences[id];
      const env: Record<string, string> =
        engine === 'postgres' ? { ENGINE: 'postgres', DATABASE_URL: database!.url } : { ENGINE: 'pglite' };
      const server = await startServer(
        `one-read reference (${engine})`,
        tsx('bench/servers/one-read.ts'),
        env,
        pinning,
        settings,
        true,
      );
      const info = (await (await fetch(`${server.baseUrl}/info`)).json()) as { version?: string };
      if (engine === 'pglite') pglitePostgres = info.version ?? null;
      const { figures } = await measureChecked(server, reference.request, settings, {
        expectStatus: 200,
        postgresDatabase: engine === 'postgres' ? database!.name : undefined,
      });
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

  if (bareIds.length > 0) log('\n[bare node:http]');
  for (const id of bareIds) {
    const source = captured.get(id);
    if (!source) throw new BenchError(`${id}: no response was captured`);
    const server = await startServer(
      `bare reference ${id}`,
      tsx('bench/servers/bare-http.ts'),
      { BODY_FILE: source.file },
      pinning,
      settings,
      true,
    );
    const request: RequestSpec = { method: 'GET', path: '/' };
    const { figures } = await measureChecked(server, request, settings, { expectStatus: 200 });
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
    const result = scenarioResults.get(s.id) ?? scenarioResult(s, settings, undefined, null, null, 'not run');
    const references = s.references;
    if (references) {
      result.ratios = {
        bare: ratio(result.figures, referenceFigures.get(references.bare)),
        one_read: ratio(result.figures, referenceFigures.get(references.oneRead)),
      };
      result.targets = (s.targets ?? []).map((t): TargetResult => {
        const value =
          t.against === 'bare' ? result.ratios.bare : (result.paired?.median ?? result.ratios.one_read);
        return {
          against: t.against,
          reference_id: t.against === 'bare' ? references.bare : references.oneRead,
          min_ratio: t.minRatio,
          ratio: value,
          pass: value !== null && value >= t.minRatio,
        };
      });
    }
    result.latency_targets = (s.latencyTargets ?? []).map((t): LatencyTargetResult => {
      const value = result.figures ? result.figures.latency_ms[t.percentile] : null;
      return {
        percentile: t.percentile,
        max_ms: t.maxMs,
        value_ms: value,
        pass: value !== null && value < t.maxMs,
      };
    });
    return result;
  });

  const approvals =
    approvalItems.length === 0
      ? null
      : approvalResults(approvalMeasurements, {
          rounds: settings.approvalRounds,
          burst: settings.approvalBurst,
          holdMs: settings.approvalHoldMs,
        });

  return {
    format: 5,
    started_at: startedAt,
    finished_at: new Date().toISOString(),
    git: gitState(repoRoot),
    machine: describeMachine({
      postgres: database?.versionString ?? startup?.postgres_version ?? null,
      pglitePostgres,
      loadAverageAtStart,
    }),
    settings: {
      duration_s: settings.durationS,
      warmup_s: settings.warmupS,
      connections: settings.connections,
      pipelining: settings.pipelining,
      load_generator: loadGenerator().generator,
      load_generator_note: loadGenerator().note,
      pinning: {
        enabled: pinning.enabled,
        server_cpu: pinning.serverCpu,
        load_cpu: pinning.loadCpu,
        note: pinning.note ?? null,
        load_process_cpus: allowedCpus() ?? null,
      },
      postgres_admin_url: needsPostgres || startup?.postgres_version ? redactUrl(settings.adminUrl) : null,
      remit_server_command: REMIT_SERVER_COMMAND,
      remit_env: REMIT_ENV,
      invoice_sizes: settings.invoiceSizes,
      search_sizes: settings.searchSizes,
      search_other_rows: settings.searchOtherRows,
      search_pglite_size: settings.searchPgliteSize,
      search_pglite_other_rows: settings.searchPgliteOtherRows,
      startup_runs: settings.startupRuns,
      startup_fresh_runs: settings.startupFreshRuns,
      rss_requests: settings.rssRequests,
      approval_rounds: settings.approvalRounds,
      approval_burst: settings.approvalBurst,
      approval_hold_ms: settings.approvalHoldMs,
    },
    references: referenceResults,
    scenarios: scenariosOut,
    invoice_seeding: seeding,
    scaling: scalingResults(settings.scenarios, scenariosOut),
    invoice_plans: plans,
    search_seeding: searchSeeding,
    search_plans: searchPlans,
    startup,
    approvals,
    ok: scenariosOut.every((s) => s.figures !== null) && (startup?.ok ?? true) && (approvals?.ok ?? true),
  };
}

/** The invoices of the dataset a scenario runs on (the searched organization's, for search), or 0. */
const datasetSize = (s: Scenario) => s.dataset?.invoices ?? s.searchDataset?.invoices ?? 0;

/** For each series with a scaling target: p50 at the largest dataset ÷ p50 at the smallest. */
function scalingResults(scenarios: Scenario[], results: ScenarioResult[]): ScalingResult[] {
  const out: ScalingResult[] = [];
  const bySeries = new Map<string, Array<{ scenario: Scenario; result: ScenarioResult }>>();
  for (const scenario of scenarios) {
    if (!scenario.scaling || !scenario.series || !datasetSize(scenario)) continue;
    const result = results.find((r) => r.id === scenario.id);
    if (!result?.figures) continue;
    const list = bySeries.get(scenario.series.key) ?? [];
    list.push({ scenario, result });
    bySeries.set(scenario.series.key, list);
  }
  for (const [key, list] of bySeries) {
    if (list.length < 2) continue;
    list.sort((a, b) => datasetSize(a.scenario) - datasetSize(b.scenario));
    const from = list[0]!;
    const to = list[list.length - 1]!;
    const fromP50 = from.result.figures!.latency_ms.p50;
    const toP50 = to.result.figures!.latency_ms.p50;
    const value = Number((toP50 / fromP50).toFixed(3));
    const maxRatio = to.scenario.scaling!.maxP50Ratio;
    const empty = from.result.checked?.items === 0;
    out.push({
      series: key,
      title: to.scenario.series!.label,
      clients: to.scenario.series!.clients,
      from_invoices: datasetSize(from.scenario),
      to_invoices: datasetSize(to.scenario),
      from_p50_ms: fromP50,
      to_p50_ms: toP50,
      ratio: value,
      max_ratio: maxRatio,
      pass: value <= maxRatio,
      note: empty
        ? `the page is past the last one at ${datasetSize(from.scenario).toLocaleString('en-US')} (0 items): not the same work`
        : null,
    });
  }
  return out;
}

function scenarioResult(
  scenario: Scenario,
  settings: Settings,
  request: RequestSpec | undefined,
  figures: Figures | null,
  checked: Checked | null,
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
    group: scenario.group,
    connections: scenario.connections ?? settings.connections,
    dataset: scenario.dataset ?? null,
    search_dataset: scenario.searchDataset ?? null,
    series: scenario.series ?? null,
    checked,
    references: scenario.references
      ? { bare: scenario.references.bare, one_read: scenario.references.oneRead }
      : null,
    ratios: { bare: null, one_read: null },
    targets: [],
    latency_targets: [],
  };
}

// ---------------------------------------------------------------------------------------------------
// Entry point

async function main(): Promise<number> {
  const settings = loadSettings();
  const pinning = detectPinning();
  // Remit runs compiled: build it once, before the pinned run (on every core) if there is one.
  if (process.env.BENCH_PINNED !== '1') buildRemit(log);
  if (pinning.enabled && process.env.BENCH_PINNED !== '1') return reexecPinned(pinning);
  if (!pinning.enabled)
    log(`bench: running UNPINNED (${pinning.note ?? 'pinning off'}); figures are noisier`);
  const generator = loadGenerator();
  log(`bench: load generator ${generator.generator} (${generator.note})`);

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
