import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Checked, Engine, ReferenceKind, SearchDataset } from '../scenarios.ts';
import type { ApprovalCase, ApprovalResults } from './approvals.ts';
import type { PlanCapture } from './explain.ts';
import type { SearchPlanCapture } from './search-explain.ts';
import type { Figures, HttpMethod } from './load.ts';
import type { RssGrowthMeasurement, StartMeasurement, StartupResults, StartupTarget } from './startup.ts';

export interface MeasuredBase {
  id: string;
  title: string;
  engine: Engine | null;
  method: HttpMethod;
  path: string;
  figures: Figures | null;
  /** Why there are no figures. */
  error?: string;
}

export interface ReferenceResult extends MeasuredBase {
  kind: ReferenceKind;
  /** bare: the scenario engine whose response bytes it serves; one-read: the engine's version. */
  detail: string;
}

export interface TargetResult {
  against: ReferenceKind;
  reference_id: string;
  min_ratio: number;
  ratio: number | null;
  pass: boolean;
}

export interface LatencyTargetResult {
  percentile: 'p50' | 'p99';
  max_ms: number;
  value_ms: number | null;
  pass: boolean;
}

export interface ScenarioResult extends MeasuredBase {
  kind: 'scenario';
  group: string;
  /** Concurrent connections (clients) of the run. */
  connections: number;
  /** The seeded dataset it ran on (payable invoices of the bench organization), if any. */
  dataset: { invoices: number } | null;
  /** The search scenarios' dataset (the searched organization and the other one), if any. */
  search_dataset: SearchDataset | null;
  series: { key: string; label: string; clients: number } | null;
  /** What the first answer showed (e.g. `total_items`, checked against the rows). */
  checked: Checked | null;
  references: { bare: string; one_read: string } | null;
  /** req/s of the scenario ÷ req/s of the reference. */
  ratios: { bare: number | null; one_read: number | null };
  /**
   * Against the one-read reference, measured in alternating short rounds with both servers up (the
   * machine's speed drifts between two long runs one after the other); the target reads the median.
   */
  paired?: { rounds: number; duration_s: number; ratios: number[]; median: number } | undefined;
  targets: TargetResult[];
  latency_targets: LatencyTargetResult[];
}

/** One `remit seed` of the search scenarios' organizations. */
export interface SearchSeedStep {
  organization: 'searched' | 'other';
  invoices: number;
  parties: number;
  tasks: number;
  /** Wall time of `remit seed`, and the time it reported itself. */
  seconds: number;
  remit_seconds: number;
  /** Whether the Remit server kept running beside it (null: seeded before it started, PGlite). */
  server_running: boolean | null;
}

/** A series' p50 at its largest dataset ÷ at its smallest. */
export interface ScalingResult {
  series: string;
  title: string;
  clients: number;
  from_invoices: number;
  to_invoices: number;
  from_p50_ms: number;
  to_p50_ms: number;
  ratio: number;
  max_ratio: number;
  pass: boolean;
  note: string | null;
}

export interface SeedStep {
  /** Payable invoices asked for and found afterwards. */
  invoices: number;
  payable: number;
  /** Wall time of `remit seed`, and the time it reported itself. */
  seconds: number;
  remit_seconds: number;
  /** Whether the Remit server kept running while the CLI seeded beside it. */
  server_running: boolean;
}

export interface MachineInfo {
  cpu_model: string;
  cpu_count: number;
  total_memory_bytes: number;
  node_version: string;
  platform: string;
  arch: string;
  kernel_release: string;
  os_version: string;
  postgresql_version: string | null;
  pglite_package_version: string | null;
  pglite_postgres_version: string | null;
  autocannon_version: string | null;
  /** 1/5/15-minute load averages when the bench started and ended: other work on the machine skews figures. */
  load_average: { start: number[]; end: number[] };
}

export interface BenchResults {
  /**
   * 2: scenarios with connections, datasets, latency targets; seeding, scaling and plans.
   * 3: adds the search scenarios (`search_dataset`, `search_seeding`, `search_plans`, search sizes).
   * 4: Remit runs compiled (`remit_server_command`); adds the startup group (`startup`, its settings).
   * 5: adds the approvals group (`approvals`, `approval_rounds`, `approval_burst`, `approval_hold_ms`).
   */
  format: 5;
  started_at: string;
  finished_at: string;
  git: { commit: string | null; dirty: boolean | null };
  machine: MachineInfo;
  settings: {
    duration_s: number;
    warmup_s: number;
    connections: number;
    pipelining: number;
    /** wrk (native) or autocannon (in the bench process), and why. */
    load_generator: 'wrk' | 'autocannon';
    load_generator_note: string;
    pinning: {
      enabled: boolean;
      server_cpu: string;
      load_cpu: string;
      note: string | null;
      /** What this (load generator) process was actually allowed to run on. */
      load_process_cpus: string | null;
    };
    postgres_admin_url: string | null;
    /** How Remit's server was started (the CLI: `node dist/cli-main.js`). */
    remit_server_command: string;
    remit_env: Record<string, string>;
    /** Dataset sizes of the invoice scenarios (BENCH_INVOICE_SIZES). */
    invoice_sizes: number[];
    /** Invoices of the searched organization (BENCH_SEARCH_SIZES; PGlite: BENCH_SEARCH_PGLITE_SIZE). */
    search_sizes: number[];
    /** Rows of the other organization (BENCH_SEARCH_OTHER_ROWS, BENCH_SEARCH_PGLITE_OTHER_ROWS). */
    search_other_rows: number;
    search_pglite_size: number;
    search_pglite_other_rows: number;
    /** BENCH_STARTUP_RUNS, BENCH_STARTUP_FRESH_RUNS, BENCH_RSS_REQUESTS. */
    startup_runs: number;
    startup_fresh_runs: number;
    rss_requests: number[];
    /** BENCH_APPROVAL_ROUNDS, BENCH_APPROVAL_BURST, BENCH_APPROVAL_HOLD_MS. */
    approval_rounds: number;
    approval_burst: number;
    approval_hold_ms: number;
  };
  references: ReferenceResult[];
  scenarios: ScenarioResult[];
  invoice_seeding: SeedStep[];
  scaling: ScalingResult[];
  /** EXPLAIN (ANALYZE, BUFFERS) of the invoice statements at the largest size. */
  invoice_plans: PlanCapture | null;
  search_seeding: SearchSeedStep[];
  /** EXPLAIN (ANALYZE, BUFFERS) of the search statements at the largest PostgreSQL size. */
  search_plans: SearchPlanCapture | null;
  /** Start and footprint (group `startup`), or null when not selected. */
  startup: StartupResults | null;
  /** The approval long-poll (group `approvals`), or null when not selected. */
  approvals: ApprovalResults | null;
  ok: boolean;
}

const number = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const percent = (ratio: number | null) => (ratio === null ? '–' : `${(ratio * 100).toFixed(1)}%`);
const cpuCell = (value: number | null) => (value === null ? '?' : `${value}%`);

function pad(cells: string[], widths: number[], rightAligned: boolean[]): string {
  return cells
    .map((cell, i) => (rightAligned[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
    .join('  ')
    .trimEnd();
}

interface Column<L> {
  title: string;
  right: boolean;
  cell: (line: L) => string;
}

/** A text table; a row given as a plain string array (a failure) is printed as is. */
function table<L>(columns: Column<L>[], rows: Array<{ line: L } | { failed: string[] }>): string[] {
  const cells = rows.map((r) => ('line' in r ? columns.map((c) => c.cell(r.line)) : r.failed));
  const full = cells.filter((r) => r.length === columns.length);
  const widths = columns.map((c, i) => Math.max(c.title.length, ...full.map((r) => r[i]!.length)));
  const right = columns.map((c) => c.right);
  const lines = [
    pad(
      columns.map((c) => c.title),
      widths,
      right,
    ),
    widths.map((w) => '-'.repeat(w)).join('  '),
  ];
  for (const r of cells) {
    lines.push(r.length === columns.length ? pad(r, widths, right) : r.join('  '));
  }
  return lines;
}

const cpuColumns = <L extends { f: Figures }>(): Column<L>[] => [
  { title: 'srv cpu', right: true, cell: (l) => cpuCell(l.f.cpu.server_percent) },
  { title: 'pg cpu', right: true, cell: (l) => cpuCell(l.f.cpu.postgres_percent ?? null) },
  { title: 'gen cpu', right: true, cell: (l) => `${l.f.cpu.load_generator_percent}%` },
  { title: 'others', right: true, cell: (l) => cpuCell(l.f.cpu.others_percent ?? null) },
  {
    title: 'cores busy',
    right: true,
    cell: (l) =>
      Object.values(l.f.cpu.core_busy_percent)
        .map((v) => `${v}%`)
        .join(' / '),
  },
];

/** What every scenario table shows of one run: clients, throughput, latency, its p99 targets, failures. */
const loadColumns = <L extends { s: ScenarioResult; f: Figures }>(): Column<L>[] => [
  { title: 'clients', right: true, cell: (l) => String(l.s.connections) },
  { title: 'req/s', right: true, cell: (l) => number(l.f.requests_per_s) },
  { title: 'p50 ms', right: true, cell: (l) => number(l.f.latency_ms.p50, 2) },
  { title: 'p99 ms', right: true, cell: (l) => number(l.f.latency_ms.p99, 2) },
  {
    title: 'p99 target',
    right: false,
    cell: (l) => l.s.latency_targets.map((t) => `${t.pass ? 'PASS' : 'FAIL'} < ${t.max_ms}`).join(', ') || '',
  },
  { title: 'non-2xx', right: true, cell: (l) => number(l.f.status.non2xx) },
  { title: 'errors', right: true, cell: (l) => number(l.f.errors) },
];

export function renderTable(results: BenchResults): string {
  type Ratios = { bare: number | null; one_read: number | null } | null;
  type Line = { label: string; m: MeasuredBase; f: Figures; ratios: Ratios };
  const columns: Column<Line>[] = [
    { title: '', right: false, cell: (l) => l.label },
    { title: 'name', right: false, cell: (l) => l.m.title },
    { title: 'engine', right: false, cell: (l) => l.m.engine ?? '-' },
    { title: 'req/s', right: true, cell: (l) => number(l.f.requests_per_s) },
    { title: 'p50 ms', right: true, cell: (l) => number(l.f.latency_ms.p50, 2) },
    { title: 'p99 ms', right: true, cell: (l) => number(l.f.latency_ms.p99, 2) },
    { title: 'non-2xx', right: true, cell: (l) => number(l.f.status.non2xx) },
    { title: 'errors', right: true, cell: (l) => number(l.f.errors) },
    { title: 'vs bare', right: true, cell: (l) => (l.ratios ? percent(l.ratios.bare) : '') },
    { title: 'vs 1-read', right: true, cell: (l) => (l.ratios ? percent(l.ratios.one_read) : '') },
    ...cpuColumns<Line>(),
  ];
  const plain = results.scenarios.filter((s) => !s.dataset && !s.search_dataset);
  const measured: Array<{ label: string; m: MeasuredBase; ratios: Ratios }> = [
    ...results.references.map((m) => ({ label: 'reference', m, ratios: null })),
    ...plain.map((m) => ({ label: 'scenario', m, ratios: m.references ? m.ratios : null })),
  ];
  const mainTable =
    measured.length === 0
      ? []
      : table(
          columns,
          measured.map(({ label, m, ratios }) =>
            m.figures
              ? { line: { label, m, f: m.figures, ratios } }
              : { failed: [label, m.title, m.engine ?? '-', `FAILED: ${m.error ?? 'no figures'}`] },
          ),
        );

  const { settings, machine } = results;
  const pinning = settings.pinning.enabled
    ? `servers pinned to CPU ${settings.pinning.server_cpu}, load generator on CPU ${settings.pinning.load_cpu}`
    : `NOT pinned (${settings.pinning.note ?? 'off'})`;
  return [
    `Remit bench — ${settings.duration_s} s measured after ${settings.warmup_s} s warm-up, ${settings.connections} connections unless stated, pipelining ${settings.pipelining}`,
    `${machine.cpu_model} × ${machine.cpu_count}, ${(machine.total_memory_bytes / 2 ** 30).toFixed(1)} GiB, Node ${machine.node_version}, ${machine.platform} ${machine.kernel_release}; ${pinning}`,
    `load average ${machine.load_average.start.map((v) => v.toFixed(2)).join(' ')} at start, ${machine.load_average.end.map((v) => v.toFixed(2)).join(' ')} at end (other processes compete for the same cores)`,
    `PostgreSQL: ${short(machine.postgresql_version) ?? 'not used'}; PGlite ${machine.pglite_package_version ?? '?'} (${short(machine.pglite_postgres_version) ?? '?'})`,
    '',
    ...mainTable,
    ...(mainTable.length > 0 ? [''] : []),
    ...invoiceSection(results),
    ...searchSection(results),
    ...startupSection(results),
    ...approvalsSection(results),
    ...(results.references.length + results.scenarios.length > 0
      ? [
          'srv / pg / gen cpu: CPU time of the server / of the bench database’s PostgreSQL backends / of the load',
          'generator (this process) ÷ wall time; others: every other use of the cores (other processes, interrupts);',
          'cores busy: each core overall (cpu0 / cpu1), whoever used it.',
          '',
        ]
      : []),
    ...contentionWarning(results),
    'Targets (informational):',
    ...targetLines(results),
  ].join('\n');
}

/** The invoice scenarios: one line per run, then the p50 / p99 curve of each series over the sizes. */
function invoiceSection(results: BenchResults): string[] {
  const runs = results.scenarios.filter((s) => s.dataset);
  if (runs.length === 0) return [];
  type Line = { s: ScenarioResult; f: Figures };
  const columns: Column<Line>[] = [
    { title: 'invoices', right: true, cell: (l) => number(l.s.dataset!.invoices) },
    { title: 'name', right: false, cell: (l) => l.s.title },
    ...loadColumns<Line>(),
    {
      title: 'total_items',
      right: true,
      cell: (l) => (typeof l.s.checked?.total_items === 'number' ? number(l.s.checked.total_items) : ''),
    },
    ...cpuColumns<Line>(),
  ];
  const lines = table(
    columns,
    runs.map((s) =>
      s.figures
        ? { line: { s, f: s.figures } }
        : {
            failed: [
              number(s.dataset!.invoices).padStart(9),
              s.title,
              String(s.connections),
              `FAILED: ${s.error ?? 'no figures'}`,
            ],
          },
    ),
  );

  // The curve: one row per series, one "p50 / p99" cell per size.
  const sizes = [...new Set(runs.map((s) => s.dataset!.invoices))].sort((a, b) => a - b);
  const series = [...new Set(runs.map((s) => s.series?.key ?? s.id))];
  type CurveLine = { label: string; cells: string[] };
  const curveColumns: Column<CurveLine>[] = [
    { title: 'p50 / p99 ms', right: false, cell: (l) => l.label },
    ...sizes.map((size, i) => ({ title: number(size), right: true, cell: (l: CurveLine) => l.cells[i]! })),
  ];
  const curve = table(
    curveColumns,
    series.map((key) => {
      const of = runs.filter((s) => (s.series?.key ?? s.id) === key);
      const first = of[0]!;
      return {
        line: {
          label: `${first.series?.label ?? first.title}, ${first.connections} client${first.connections === 1 ? '' : 's'}`,
          cells: sizes.map((size) => {
            const f = of.find((s) => s.dataset!.invoices === size)?.figures;
            return f ? `${f.latency_ms.p50.toFixed(2)} / ${f.latency_ms.p99.toFixed(2)}` : '–';
          }),
        },
      };
    }),
  );
  const seeding = results.invoice_seeding.map(
    (step) =>
      `  ${number(step.invoices)} payable invoices: remit seed took ${step.seconds.toFixed(1)} s${step.server_running ? ' (server running beside it)' : ''}`,
  );
  return [
    'Invoices (PostgreSQL; one seeded organization, all invoices payable; targets with 1 client):',
    ...seeding,
    '',
    ...lines,
    '',
    ...curve,
    '',
  ];
}

/** The search scenarios: one line per run (PGlite, then PostgreSQL by size), then the p50 / p99 curve. */
function searchSection(results: BenchResults): string[] {
  const runs = results.scenarios.filter((s) => s.search_dataset);
  if (runs.length === 0) return [];
  type Line = { s: ScenarioResult; f: Figures };
  const columns: Column<Line>[] = [
    { title: 'engine', right: false, cell: (l) => l.s.engine ?? '-' },
    { title: 'invoices', right: true, cell: (l) => number(l.s.search_dataset!.invoices) },
    { title: 'name', right: false, cell: (l) => l.s.title },
    ...loadColumns<Line>(),
    {
      title: 'items',
      right: true,
      cell: (l) => {
        const c = l.s.checked ?? {};
        return typeof c.items === 'number'
          ? `${c.items} (${c.invoices}/${c.customers}/${c.tasks})`
          : typeof c.invoices === 'number'
            ? `${c.invoices}/${c.parties}/${c.messages}`
            : '';
      },
    },
    ...cpuColumns<Line>(),
  ];
  const lines = table(
    columns,
    runs.map((s) =>
      s.figures
        ? { line: { s, f: s.figures } }
        : {
            failed: [
              s.engine ?? '-',
              number(s.search_dataset!.invoices).padStart(9),
              s.title,
              String(s.connections),
              `FAILED: ${s.error ?? 'no figures'}`,
            ],
          },
    ),
  );
  const postgres = runs.filter((s) => s.engine === 'postgres');
  const sizes = [...new Set(postgres.map((s) => s.search_dataset!.invoices))].sort((a, b) => a - b);
  const series = [...new Set(postgres.map((s) => s.series?.key ?? s.id))];
  type CurveLine = { label: string; cells: string[] };
  const curve =
    sizes.length < 2
      ? []
      : table(
          [
            { title: 'PostgreSQL p50 / p99 ms', right: false, cell: (l: CurveLine) => l.label },
            ...sizes.map((size, i) => ({
              title: number(size),
              right: true,
              cell: (l: CurveLine) => l.cells[i]!,
            })),
          ],
          series.map((key) => {
            const of = postgres.filter((s) => (s.series?.key ?? s.id) === key);
            const first = of[0]!;
            return {
              line: {
                label: `${first.title}, ${first.connections} client${first.connections === 1 ? '' : 's'}`,
                cells: sizes.map((size) => {
                  const f = of.find((s) => s.search_dataset!.invoices === size)?.figures;
                  return f ? `${f.latency_ms.p50.toFixed(2)} / ${f.latency_ms.p99.toFixed(2)}` : '–';
                }),
              },
            };
          }),
        );
  const seeding = results.search_seeding.map(
    (step) =>
      `  ${step.organization} organization to ${number(step.invoices)} invoices, ${number(step.parties)} parties, ${number(step.tasks)} tasks: remit seed took ${step.seconds.toFixed(1)} s${step.server_running === null ? ' (before the server started)' : step.server_running ? ' (server running beside it)' : ''}`,
  );
  return [
    'Search (the searched organization: receivable invoices, parties and tasks; another organization beside it;',
    'items = answered items (invoices/customers/tasks), or invoices/parties/messages for the context search):',
    ...seeding,
    '',
    ...lines,
    '',
    ...curve,
    ...(curve.length > 0 ? [''] : []),
  ];
}

const MIB = 2 ** 20;
const mib = (bytes: number | null) => (bytes === null ? '?' : (bytes / MIB).toFixed(1));
const seconds = (ms: number) => (ms / 1000).toFixed(2);

/** "PASS ≤ 1.00 s", "FAIL ≤ 150 MiB", "PASS ≤ 15 %" (empty without a target). */
function targetCell(t: StartupTarget | undefined): string {
  if (!t) return '';
  const limit =
    t.what === 'ready_ms' ? `${seconds(t.max)} s` : t.what === 'idle_rss_mib' ? `${t.max} MiB` : `${t.max} %`;
  return `${t.pass ? 'PASS' : 'FAIL'} ≤ ${limit}`;
}

/** Start and footprint: one line per start measurement, one per RSS-growth measurement. */
function startupSection(results: BenchResults): string[] {
  const startup = results.startup;
  if (!startup || startup.measurements.length === 0) return [];
  const starts = startup.measurements.filter((m): m is StartMeasurement => m.kind === 'start');
  const growth = startup.measurements.filter((m): m is RssGrowthMeasurement => m.kind === 'rss-growth');
  const targetOf = (m: { targets: StartupTarget[] }, what: StartupTarget['what']) =>
    m.targets.find((t) => t.what === what);
  const out = [
    `Start and footprint (${startup.server_command}; spawn → first 200 from GET /healthz, then VmRSS of the`,
    `server process once idle; median / max of the runs, targets judged on the median; MiB = 2^20 bytes):`,
    '',
  ];
  if (starts.length > 0) {
    type Line = { m: StartMeasurement };
    const columns: Column<Line>[] = [
      { title: 'measurement', right: false, cell: (l) => l.m.id },
      { title: 'engine', right: false, cell: (l) => l.m.engine },
      { title: 'runs', right: true, cell: (l) => String(l.m.runs.length) },
      {
        title: 'ready s (median / max)',
        right: true,
        cell: (l) => (l.m.ready_ms ? `${seconds(l.m.ready_ms.median)} / ${seconds(l.m.ready_ms.max)}` : '–'),
      },
      { title: 'ready target', right: false, cell: (l) => targetCell(targetOf(l.m, 'ready_ms')) },
      {
        title: 'idle RSS MiB (median / max)',
        right: true,
        cell: (l) =>
          l.m.idle_rss_mib
            ? `${l.m.idle_rss_mib.median.toFixed(1)} / ${l.m.idle_rss_mib.max.toFixed(1)}`
            : '–',
      },
      { title: 'RSS target', right: false, cell: (l) => targetCell(targetOf(l.m, 'idle_rss_mib')) },
    ];
    out.push(
      ...table(
        columns,
        starts.map((m) =>
          m.error && m.runs.length === 0
            ? { failed: [m.id, m.engine, `FAILED: ${m.error}`] }
            : { line: { m } },
        ),
      ),
    );
    for (const m of starts.filter((s) => s.error && s.runs.length > 0)) {
      out.push(`  ${m.id}: FAILED after ${m.runs.length} run(s): ${m.error}`);
    }
    out.push('');
  }
  if (growth.length > 0) {
    type Line = { m: RssGrowthMeasurement };
    const totals = startup.rss_requests;
    const columns: Column<Line>[] = [
      { title: 'measurement', right: false, cell: (l) => l.m.id },
      { title: 'engine', right: false, cell: (l) => l.m.engine },
      { title: 'clients', right: true, cell: (l) => String(l.m.connections) },
      { title: 'idle MiB', right: true, cell: (l) => mib(l.m.idle_rss_bytes) },
      ...totals.map((total) => ({
        title: `after ${number(total)}`,
        right: true,
        cell: (l: Line) => {
          const step = l.m.steps.find((s) => s.requests === total);
          return step ? mib(step.rss_bytes) : '–';
        },
      })),
      {
        title: 'growth',
        right: true,
        cell: (l) => (l.m.growth_percent === null ? '–' : `${l.m.growth_percent.toFixed(1)} %`),
      },
      { title: 'target', right: false, cell: (l) => targetCell(targetOf(l.m, 'rss_growth_percent')) },
      { title: 'peak MiB', right: true, cell: (l) => mib(l.m.peak_rss_bytes) },
      {
        title: 'req/s',
        right: true,
        cell: (l) =>
          l.m.steps.length === 0 ? '–' : l.m.steps.map((s) => number(s.figures.requests_per_s)).join(' / '),
      },
    ];
    out.push(
      ...table(
        columns,
        growth.map((m) => (m.error ? { failed: [m.id, m.engine, `FAILED: ${m.error}`] } : { line: { m } })),
      ),
      '',
    );
  }
  return out;
}

/** The approval long-poll: one line per engine and case (GET answered − PATCH answered / sent). */
function approvalsSection(results: BenchResults): string[] {
  const approvals = results.approvals;
  if (!approvals || approvals.measurements.length === 0) return [];
  type Line = { engine: Engine; c: ApprovalCase };
  const ms = (value: number) => value.toFixed(2);
  const fourCell = (spread: ApprovalCase['get_after_patch_sent_ms']) =>
    spread ? `${ms(spread.p50)} / ${ms(spread.p95)} / ${ms(spread.p99)} / ${ms(spread.max)}` : '–';
  const columns: Column<Line>[] = [
    { title: 'engine', right: false, cell: (l) => l.engine },
    { title: 'case', right: false, cell: (l) => l.c.id },
    { title: 'at once', right: true, cell: (l) => String(l.c.concurrency) },
    { title: 'samples', right: true, cell: (l) => number(l.c.samples) },
    { title: 'hold ms', right: true, cell: (l) => String(l.c.hold_ms) },
    {
      title: 'GET − PATCH answered p50 / p95 / p99 / max ms',
      right: true,
      cell: (l) => fourCell(l.c.get_after_patch_answered_ms),
    },
    {
      title: 'target',
      right: false,
      cell: (l) => `${l.c.target.pass ? 'PASS' : 'FAIL'} ≤ ${l.c.target.max_ms}`,
    },
    {
      title: 'GET − PATCH sent p50 / p95 / p99 / max ms',
      right: true,
      cell: (l) => fourCell(l.c.get_after_patch_sent_ms),
    },
    { title: 'PATCH p50 ms', right: true, cell: (l) => (l.c.patch_ms ? ms(l.c.patch_ms.p50) : '–') },
    { title: 'srv cpu', right: true, cell: (l) => cpuCell(l.c.cpu?.server_percent ?? null) },
    { title: 'pg cpu', right: true, cell: (l) => cpuCell(l.c.cpu?.postgres_percent ?? null) },
    { title: 'others', right: true, cell: (l) => cpuCell(l.c.cpu?.others_percent ?? null) },
  ];
  const rows: Array<{ line: Line } | { failed: string[] }> = [];
  const notes: string[] = [];
  for (const m of approvals.measurements) {
    if (m.error) rows.push({ failed: [m.engine, `FAILED: ${m.error}`] });
    for (const c of m.cases) {
      rows.push(
        c.error ? { failed: [m.engine, c.id, `FAILED: ${c.error}`] } : { line: { engine: m.engine, c } },
      );
    }
    if (m.calibration) {
      notes.push(
        `  ${m.engine}: a plain GET of the task took ≤ ${ms(m.calibration.plain_get_ms.max)} ms alone (p50 ${ms(m.calibration.plain_get_ms.p50)}), ${approvals.burst} at once ≤ ${ms(m.calibration.burst_plain_get_ms.max)} ms`,
      );
    }
  }
  return [
    `Approval long-poll (GET /api/work-tasks/{uid}?wait=${approvals.wait_s} held, then PATCH {action: approve}; ${number(approvals.rounds)} approvals per case`,
    `after ${approvals.warmup_rounds} warm-up rounds; each GET held ≥ ${approvals.hold_ms} ms and ≥ 2 × the slowest plain GET of its calibration;`,
    'two-processes: the GET held by the first server, the PATCH sent to a second one on the same database):',
    ...notes,
    '',
    ...table(columns, rows),
    '',
  ];
}

function targetLines(results: BenchResults): string[] {
  const targets: string[] = [];
  for (const m of results.approvals?.measurements ?? []) {
    for (const c of m.cases) {
      targets.push(
        `  ${c.target.pass ? 'PASS' : 'FAIL'}  approval long-poll on ${m.engine}, ${c.id}${c.concurrency > 1 ? ` (${c.concurrency} at once)` : ''}: p99 of GET answered − PATCH answered ${c.target.value_ms === null ? '–' : `${c.target.value_ms.toFixed(2)} ms`} (target ≤ ${c.target.max_ms} ms)`,
      );
    }
  }
  for (const m of results.startup?.measurements ?? []) {
    for (const t of m.targets) {
      const value =
        t.value === null
          ? '–'
          : t.what === 'ready_ms'
            ? `ready in ${seconds(t.value)} s`
            : t.what === 'idle_rss_mib'
              ? `idle RSS ${t.value.toFixed(1)} MiB`
              : `RSS ${t.value >= 0 ? '+' : ''}${t.value.toFixed(1)} % from ${number(results.startup!.rss_requests[0]!)} to ${number(results.startup!.rss_requests.at(-1)!)} requests`;
      targets.push(
        `  ${t.pass ? 'PASS' : 'FAIL'}  ${m.id}: ${value}${m.kind === 'start' ? `, median of ${m.runs.length}` : ''} (target ${targetCell(t).slice(5)})`,
      );
    }
  }
  for (const s of results.scenarios) {
    for (const t of s.targets) {
      targets.push(
        `  ${t.pass ? 'PASS' : 'FAIL'}  ${s.title} on ${s.engine}: ${percent(t.ratio)} of ${t.reference_id} req/s${t.against === 'one-read' && s.paired ? ` (median of ${s.paired.rounds} alternating ${s.paired.duration_s}-s rounds: ${s.paired.ratios.map(percent).join(', ')})` : ''} (target ≥ ${percent(t.min_ratio)})`,
      );
    }
  }
  for (const s of results.scenarios) {
    for (const t of s.latency_targets) {
      const where = s.dataset
        ? `, ${number(s.dataset.invoices)} invoices`
        : s.search_dataset
          ? ` on ${s.engine}, ${number(s.search_dataset.invoices)} invoices`
          : '';
      targets.push(
        `  ${t.pass ? 'PASS' : 'FAIL'}  ${s.title}, ${s.connections} client${s.connections === 1 ? '' : 's'}${where}: ${t.percentile} ${t.value_ms === null ? '–' : `${t.value_ms.toFixed(2)} ms`} (target < ${t.max_ms} ms)`,
      );
    }
  }
  for (const t of results.scaling) {
    targets.push(
      `  ${t.pass ? 'PASS' : 'FAIL'}  ${t.title}, ${t.clients} client${t.clients === 1 ? '' : 's'}: p50 ${t.to_p50_ms.toFixed(2)} ms at ${number(t.to_invoices)} vs ${t.from_p50_ms.toFixed(2)} ms at ${number(t.from_invoices)} = ${t.ratio.toFixed(2)}× (target ≤ ${t.max_ratio}×)${t.note ? ` — ${t.note}` : ''}`,
    );
  }
  return targets.length > 0 ? targets : ['  (none)'];
}

/** "PostgreSQL 15.20 (Debian …) on x86_64-pc-linux-gnu, compiled by …" → "PostgreSQL 15.20 (Debian …)" */
const short = (version: string | null) => version?.split(' on ')[0] ?? null;

/**
 * Runs during which other work competed: more than a quarter of a core used by anything but the
 * server, the load generator and the bench database's backends; without that figure, the server's
 * core much busier than the server itself (only judged without PostgreSQL, whose backends may share it).
 */
function contentionWarning(results: BenchResults): string[] {
  const { pinning } = results.settings;
  const core = `cpu${pinning.server_cpu}`;
  const suspect = [...results.references, ...results.scenarios].filter((m) => {
    const cpu = m.figures?.cpu;
    if (!cpu) return false;
    if (cpu.others_percent !== null && cpu.others_percent !== undefined) return cpu.others_percent > 25;
    if (!pinning.enabled) return false;
    const busy = cpu.core_busy_percent[core];
    if (busy === undefined || cpu.server_percent === null || m.engine === 'postgres') return false;
    return busy - cpu.server_percent > 25;
  });
  const approvalCases = (results.approvals?.measurements ?? []).flatMap((m) =>
    m.cases
      .filter((c) => (c.cpu?.others_percent ?? 0) > 25)
      .map((c) => `approvals ${c.id} on ${m.engine} (others ${c.cpu?.others_percent ?? '?'}%)`),
  );
  if (suspect.length + approvalCases.length === 0) return [];
  const name = (m: MeasuredBase) => {
    const s = m as Partial<ScenarioResult>;
    const sized = s.dataset ?? s.search_dataset;
    const size = sized ? ` @${number(sized.invoices)}` : '';
    const clients = sized ? ` ×${s.connections}` : '';
    return `${m.title}${m.engine && !s.dataset ? ` on ${m.engine}` : ''}${size}${clients} (others ${m.figures?.cpu.others_percent ?? '?'}%)`;
  };
  return [
    `WARNING: other work used the cores during ${suspect.length + approvalCases.length} run(s): ${[...suspect.map(name), ...approvalCases].join('; ')}.`,
    'Those figures are low and noisy.',
    '',
  ];
}

/** Writes `<dir>/<timestamp>.json` and `<dir>/latest.json` (via .tmp files and rename). */
export async function writeResults(dir: string, results: BenchResults): Promise<string> {
  await mkdir(dir, { recursive: true });
  // ISO 8601 with ":" replaced by "-" so the name is valid on every file system.
  const stamp = results.started_at.replace(/:/g, '-');
  const file = path.join(dir, `${stamp}.json`);
  const text = `${JSON.stringify(results, null, 2)}\n`;
  for (const target of [file, path.join(dir, 'latest.json')]) {
    await writeFile(`${target}.tmp`, text);
    await rename(`${target}.tmp`, target);
  }
  return file;
}
