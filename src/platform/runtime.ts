import path from 'node:path';
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
    const database = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.databaseUrl ? undefined : path.join(config.dataDir, 'pglite'),
      statementTimeoutMs: config.statementTimeoutMs,
      poolSize: config.databasePoolSize,
      pgliteSharedBuffersMb: config.pgliteSharedBuffersMb,
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
