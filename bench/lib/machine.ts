import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MachineInfo } from './report.ts';

/** The version in an installed package's package.json (found by walking up from its entry point). */
export function packageVersion(name: string): string | null {
  try {
    let dir = path.dirname(fileURLToPath(import.meta.resolve(name)));
    for (;;) {
      try {
        const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (pkg.name === name) return pkg.version ?? null;
      } catch {
        // no package.json here; keep walking up
      }
      const parent = path.dirname(dir);
      if (parent === dir) return null;
      dir = parent;
    }
  } catch {
    return null;
  }
}

export function describeMachine(versions: {
  postgres: string | null;
  pglitePostgres: string | null;
  loadAverageAtStart: number[];
}): MachineInfo {
  const cpus = os.cpus();
  return {
    cpu_model: cpus[0]?.model.trim() ?? 'unknown',
    cpu_count: cpus.length,
    total_memory_bytes: os.totalmem(),
    node_version: process.version,
    platform: os.platform(),
    arch: os.arch(),
    kernel_release: os.release(),
    os_version: os.version(),
    postgresql_version: versions.postgres,
    pglite_package_version: packageVersion('@electric-sql/pglite'),
    pglite_postgres_version: versions.pglitePostgres,
    autocannon_version: packageVersion('autocannon'),
    load_average: { start: versions.loadAverageAtStart, end: os.loadavg().map(round2) },
  };
}

export function gitState(cwd: string): { commit: string | null; dirty: boolean | null } {
  const run = (args: string[]) => {
    const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
    return result.status === 0 ? result.stdout.trim() : null;
  };
  const commit = run(['rev-parse', 'HEAD']);
  const status = run(['status', '--porcelain']);
  return { commit, dirty: status === null ? null : status.length > 0 };
}

export const round2 = (value: number) => Number(value.toFixed(2));
