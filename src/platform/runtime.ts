import path from 'node:path';
import { copyPgliteTemplate, isFreshPgliteDir } from './db/pglite-template.ts';
import type { Config } from '../config.ts';
import { openDatabase, type Database } from './db/client.ts';
import { acquireDataDirLock, type DataDirLock } from './db/lock.ts';
import { migrate } from './db/migrate.ts';

export interface OpenedDatabase {
  database: Database;
  appliedMigrations: string[];
  close(): Promise<void>;
}

/**
 * Opens the configured database for a process: with the embedded engine it first takes the data
 * directory's lock (a second process is refused before it touches anything), then migrates.
 */
export async function openMigratedDatabase(config: Config, command: string): Promise<OpenedDatabase> {
  let lock: DataDirLock | undefined;
  if (!config.databaseUrl) lock = acquireDataDirLock(config.dataDir, command);
  try {
    const pgliteDir = config.databaseUrl ? undefined : path.join(config.dataDir, 'pglite');
    // A fresh embedded database starts from the build's migrated template, when it has one.
    if (pgliteDir && isFreshPgliteDir(pgliteDir)) copyPgliteTemplate(import.meta.url, pgliteDir);
    const database = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: pgliteDir,
      statementTimeoutMs: config.statementTimeoutMs,
      poolSize: config.databasePoolSize,
      pgliteSharedBuffersMb: config.pgliteSharedBuffersMb,
      pgliteMaxWalMb: config.pgliteMaxWalMb,
      pgliteCheckpointIntervalMs: config.pgliteCheckpointIntervalS * 1000,
      pgliteOptimizedCode: config.pgliteOptimizedCode,
    });
    const appliedMigrations = await migrate(database);
    return {
      database,
      appliedMigrations,
      close: async () => {
        await database.close();
        lock?.release();
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}
