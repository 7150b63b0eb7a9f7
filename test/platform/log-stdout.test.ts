import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The process's log stream (logging.ts `stdoutLog`) batches a turn's lines and writes them
 * asynchronously; a process that exits right after logging (a failed start, `process.exit`) still
 * writes every line, whole and in order.
 */
const root = path.resolve(import.meta.dirname, '../..');

describe('stdoutLog', () => {
  it('every line is written when the process exits at once after logging, in order', () => {
    const script = `
      import { pino } from 'pino';
      import { loggerOptions, stdoutLog } from './src/platform/logging.ts';
      const log = pino(loggerOptions('info'), stdoutLog());
      for (let i = 0; i < 5000; i++) log.info({ n: i }, 'line');
      stdoutLog().write('{"msg":"written directly"}\\n');
      process.exit(3);
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(run.status, run.stderr).toBe(3);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(5001);
    const numbers = lines.slice(0, 5000).map((line) => (JSON.parse(line) as { n: number }).n);
    expect(numbers).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect(JSON.parse(lines[5000]!)).toEqual({ msg: 'written directly' });
  }, 60_000);
});
