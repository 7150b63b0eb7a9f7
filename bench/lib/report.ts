import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Engine, ReferenceKind } from '../scenarios.ts';
import type { Figures, HttpMethod } from './load.ts';

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

export interface ScenarioResult extends MeasuredBase {
  kind: 'scenario';
  references: { bare: string; one_read: string };
  /** req/s of the scenario ÷ req/s of the reference. */
  ratios: { bare: number | null; one_read: number | null };
  targets: TargetResult[];
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
  format: 1;
  started_at: string;
  finished_at: string;
  git: { commit: string | null; dirty: boolean | null };
  machine: MachineInfo;
  settings: {
    duration_s: number;
    warmup_s: number;
    connections: number;
    pipelining: number;
    pinning: {
      enabled: boolean;
      server_cpu: string;
      load_cpu: string;
      note: string | null;
      /** What this (load generator) process was actually allowed to run on. */
      load_process_cpus: string | null;
    };
    postgres_admin_url: string | null;
    remit_env: Record<string, string>;
  };
  references: ReferenceResult[];
  scenarios: ScenarioResult[];
  ok: boolean;
}

const number = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const percent = (ratio: number | null) => (ratio === null ? '–' : `${(ratio * 100).toFixed(1)}%`);

function pad(cells: string[], widths: number[], rightAligned: boolean[]): string {
  return cells
    .map((cell, i) => (rightAligned[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
    .join('  ')
    .trimEnd();
}

export function renderTable(results: BenchResults): string {
  type Ratios = { bare: number | null; one_read: number | null } | null;
  type Line = { label: string; m: MeasuredBase; f: Figures; ratios: Ratios };
  const columns: Array<{ title: string; right: boolean; cell: (line: Line) => string }> = [
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
    {
      title: 'srv cpu',
      right: true,
      cell: (l) => (l.f.cpu.server_percent === null ? '?' : `${l.f.cpu.server_percent}%`),
    },
    { title: 'gen cpu', right: true, cell: (l) => `${l.f.cpu.load_generator_percent}%` },
    {
      title: 'cores busy',
      right: true,
      cell: (l) =>
        Object.values(l.f.cpu.core_busy_percent)
          .map((v) => `${v}%`)
          .join(' / '),
    },
  ];
  const header = columns.map((c) => c.title);
  const right = columns.map((c) => c.right);
  const measured: Array<{ label: string; m: MeasuredBase; ratios: Ratios }> = [
    ...results.references.map((m) => ({ label: 'reference', m, ratios: null })),
    ...results.scenarios.map((m) => ({ label: 'scenario', m, ratios: m.ratios })),
  ];
  const rows = measured.map(({ label, m, ratios }) =>
    m.figures
      ? columns.map((c) => c.cell({ label, m, f: m.figures!, ratios }))
      : [label, m.title, m.engine ?? '-', `FAILED: ${m.error ?? 'no figures'}`],
  );
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.filter((r) => r.length === columns.length).map((r) => r[i]!.length)),
  );
  const lines = [pad(header, widths, right), widths.map((w) => '-'.repeat(w)).join('  ')];
  for (const r of rows) {
    lines.push(
      r.length === columns.length ? pad(r, widths, right) : pad(r, widths, [false, false, false, false]),
    );
  }

  const targets: string[] = [];
  for (const s of results.scenarios) {
    for (const t of s.targets) {
      targets.push(
        `  ${t.pass ? 'PASS' : 'FAIL'}  ${s.title} on ${s.engine}: ${percent(t.ratio)} of ${t.reference_id} req/s (target ≥ ${percent(t.min_ratio)})`,
      );
    }
  }
  const { settings, machine } = results;
  const pinning = settings.pinning.enabled
    ? `servers pinned to CPU ${settings.pinning.server_cpu}, load generator on CPU ${settings.pinning.load_cpu}`
    : `NOT pinned (${settings.pinning.note ?? 'off'})`;
  return [
    `Remit bench — ${settings.duration_s} s measured after ${settings.warmup_s} s warm-up, ${settings.connections} connections, pipelining ${settings.pipelining}`,
    `${machine.cpu_model} × ${machine.cpu_count}, ${(machine.total_memory_bytes / 2 ** 30).toFixed(1)} GiB, Node ${machine.node_version}, ${machine.platform} ${machine.kernel_release}; ${pinning}`,
    `load average ${machine.load_average.start.map((v) => v.toFixed(2)).join(' ')} at start, ${machine.load_average.end.map((v) => v.toFixed(2)).join(' ')} at end (other processes compete for the same cores)`,
    `PostgreSQL: ${short(machine.postgresql_version) ?? 'not used'}; PGlite ${machine.pglite_package_version ?? '?'} (${short(machine.pglite_postgres_version) ?? '?'})`,
    '',
    ...lines,
    '',
    'srv cpu / gen cpu: CPU time of the server / of the load generator (this process) ÷ wall time; cores busy:',
    'each core overall (cpu0 / cpu1), whoever used it — well above srv cpu on the server core means other work competed.',
    '',
    ...contentionWarning(results),
    'Targets (informational):',
    ...(targets.length > 0 ? targets : ['  (none)']),
  ].join('\n');
}

/** "PostgreSQL 15.20 (Debian …) on x86_64-pc-linux-gnu, compiled by …" → "PostgreSQL 15.20 (Debian …)" */
const short = (version: string | null) => version?.split(' on ')[0] ?? null;

/**
 * Runs where the server's core was much busier than the server itself: other processes competed (for
 * PostgreSQL runs its unpinned backends count too, so only runs without PostgreSQL are judged).
 */
function contentionWarning(results: BenchResults): string[] {
  const { pinning } = results.settings;
  if (!pinning.enabled) return [];
  const core = `cpu${pinning.server_cpu}`;
  const suspect = [...results.references, ...results.scenarios].filter((m) => {
    const cpu = m.figures?.cpu;
    const busy = cpu?.core_busy_percent[core];
    if (!cpu || busy === undefined || cpu.server_percent === null || m.engine === 'postgres') return false;
    return busy - cpu.server_percent > 25;
  });
  if (suspect.length === 0) return [];
  return [
    `WARNING: other processes used the server's core (${core}) during ${suspect.length} run(s)`,
    `(${suspect.map((m) => `${m.title}${m.engine ? ` on ${m.engine}` : ''}`).join('; ')}): those figures are low and noisy.`,
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
