import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..', '..');

/**
 * A server on PostgreSQL must not load PGlite at start (its module, extensions and drizzle driver cost
 * start time; docs/performance.md). A child process imports the app with a resolve hook that reports
 * every PGlite specifier resolved; none may be.
 */
describe('PGlite is loaded only when it is the engine', () => {
  it('importing the app and the database client resolves no PGlite module', () => {
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier.startsWith('@electric-sql/pglite') || specifier === 'drizzle-orm/pglite') console.error('RESOLVED ' + specifier);
      return next(specifier, context);
    }`;
    const register = `import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));`;
    const result = spawnSync(
      process.execPath,
      [
        '--import',
        `data:text/javascript,${encodeURIComponent(register)}`,
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "await import('./src/app.ts'); await import('./src/platform/db/client.ts'); console.log('imported')",
      ],
      { cwd: root, encoding: 'utf8', timeout: 120_000 },
    );
    expect(result.stdout).toContain('imported');
    expect(result.stderr.split('\n').filter((line) => line.startsWith('RESOLVED '))).toEqual([]);
  }, 150_000);
});
