import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { openDatabase, rawQuery } from '../../src/platform/db/client.ts';

// The embedded database's shared buffers are most of an idle process's memory
// (docs/performance.md#start-and-footprint): they are set, and configurable.
describe('PGlite shared buffers', () => {
  it('default 16 MB, PGLITE_SHARED_BUFFERS_MB to change it, refused when not a size', () => {
    expect(loadConfig({}).pgliteSharedBuffersMb).toBe(16);
    expect(loadConfig({ PGLITE_SHARED_BUFFERS_MB: '64' }).pgliteSharedBuffersMb).toBe(64);
    expect(() => loadConfig({ PGLITE_SHARED_BUFFERS_MB: '16MB' })).toThrow(ConfigError);
    expect(() => loadConfig({ PGLITE_SHARED_BUFFERS_MB: '0' })).toThrow(ConfigError);
  });

  it('the embedded engine starts with them', async () => {
    const database = await openDatabase({ statementTimeoutMs: 10_000, pgliteSharedBuffersMb: 24 });
    try {
      const [row] = await rawQuery<{ shared_buffers: string }>(database.db, 'show shared_buffers');
      expect(row!.shared_buffers).toBe('24MB');
    } finally {
      await database.close();
    }
  });
});
