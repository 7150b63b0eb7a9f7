// PGlite and its drizzle driver are loaded only when PGlite is the engine (createPglite, openDatabase):
// a server on PostgreSQL does not pay for them at start (docs/performance.md#start-and-footprint).
import v8 from 'node:v8';
import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import pg from 'pg';
import { inRequestTransaction, scopedDb } from './request-scope.ts';
import { asService, RoleScopedPool, roleScopedPglite } from './session-role.ts';
import { tracedPglite } from './pglite-tracing.ts';
import { scheduleCheckpoints, type PgliteCheckpoints } from './pglite-checkpoints.ts';
import { pgliteNotifications, postgresNotifications, type Notifications } from './notifications.ts';
import { tracingActive } from '../observability/tracing.ts';

// No schema object: queries name their tables, so platform/ needs to know no module's tables.
export type Schema = Record<string, never>;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Repositories take either the database or a transaction, so callers decide the transaction's extent. */
export type DbOrTx = Db | Tx;

export type EngineKind = 'pglite' | 'postgres';

/** Connections of the process's pool, for the metrics (docs/observability.md#metrics). */
export interface PoolStats {
  /** Open connections. */
  total: number;
  idle: number;
  /** Callers waiting for a connection (PGlite: operations queued behind the one running). */
  waiting: number;
  max: number;
}

export interface Database {
  kind: EngineKind;
  db: Db;
  /** Answers when the database does; used by /readyz. */
  ping(): Promise<void>;
  poolStats(): PoolStats;
  close(): Promise<void>;
  /** PGlite only: a dump of the data directory (test fixtures). */
  pglite?: PGlite;
  /** PGlite on a data directory only: its periodic checkpoints (pglite-checkpoints.ts). */
  checkpoints?: PgliteCheckpoints;
  pool?: pg.Pool;
  /** LISTEN/NOTIFY for caches that must forget at once (notifications.ts). */
  notifications: Notifications;
}

export interface OpenDatabaseOptions {
  databaseUrl?: string | undefined;
  /** PGlite data directory; undefined means in memory. */
  dataDir?: string | undefined;
  /** A PGlite dump to start from (tests load one migrated dump per file). */
  loadDataDir?: Blob | File | undefined;
  statementTimeoutMs: number;
  poolSize?: number;
  /** PGlite only: its shared buffers (PostgreSQL's default, 128 MB, is most of an idle process's memory). */
  pgliteSharedBuffersMb?: number;
  /** PGlite on a data directory only: a checkpoint once this much WAL was written since the last (MB). */
  pgliteMaxWalMb?: number;
  /** PGlite on a data directory only: a checkpoint this often when something was written; 0: none. */
  pgliteCheckpointIntervalMs?: number;
  /**
   * PGlite only: let V8 optimise PostgreSQL's WebAssembly as it runs (faster heavy queries, a slower
   * start and more memory). Off: its baseline code only. Process-wide, decided by the first PGlite.
   */
  pgliteOptimizedCode?: boolean;
  /**
   * An open PGlite (from `createPglite`) to use instead of opening one; the caller keeps it: `close()`
   * stops listening and leaves it open (tests hand one migrated instance from file to file).
   */
  pgliteInstance?: PGlite | undefined;
}

// int8 (counts, sums of cents) as a JS number; values stay far below 2^53 for money in cents.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

/** The WAL after which PGlite checkpoints, by default (docs/configuration.md). */
export const DEFAULT_PGLITE_MAX_WAL_MB = 64;

let wasmTieringChosen = false;

/**
 * V8 compiles PostgreSQL's WebAssembly (9 MB) first with its baseline compiler, then recompiles the
 * functions that run often with its optimising one, on background threads. At start that second pass
 * competed with the start itself for the machine's cores and held ≈ 60 MB more: an embedded start took
 * ≈ 0.6 s longer and sat at the edge of its memory goal, for queries up to a quarter faster once warm
 * (docs/performance.md#start-and-footprint). Baseline code only, unless asked for. Set before the first
 * module compiles; the flag is process-wide, so every WebAssembly module here (PDF text extraction's
 * too) runs baseline code.
 */
function chooseWasmTiering(optimized: boolean): void {
  if (wasmTieringChosen) return;
  wasmTieringChosen = true;
  if (!optimized) v8.setFlagsFromString('--liftoff-only');
}

/** An embedded PostgreSQL with Remit's extensions, on `dataDir` or in memory (from `loadDataDir`). */
export async function createPglite(
  options: Pick<
    OpenDatabaseOptions,
    'dataDir' | 'loadDataDir' | 'pgliteSharedBuffersMb' | 'pgliteOptimizedCode'
  >,
): Promise<PGlite> {
  chooseWasmTiering(options.pgliteOptimizedCode ?? false);
  // pgcrypto is not loaded: nothing of Remit's calls it (gen_random_uuid is PostgreSQL's own), and its
  // bundle (OpenSSL inside) was a fifth of the embedded engine's start. Data directories created when
  // the first migration still installed it open as before: its functions load only when called.
  const [{ PGlite }, { btree_gin }, { pg_trgm }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/btree_gin'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
  ]);
  return PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    extensions: { pg_trgm, btree_gin },
    // Shared buffers are allocated in the WebAssembly heap and touched as pages are read: PostgreSQL's
    // 128 MB default made an idle embedded server 400+ MB. The data directory's files stay in the OS page
    // cache anyway (docs/performance.md#start-and-footprint).
    ...(options.pgliteSharedBuffersMb
      ? {
          startParams: [
            ...PGlite.defaultStartParams,
            '-c',
            `shared_buffers=${Math.floor(options.pgliteSharedBuffersMb)}MB`,
          ],
        }
      : {}),
  });
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.databaseUrl) {
    const pool = new RoleScopedPool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      statement_timeout: options.statementTimeoutMs,
      // JIT compilation costs 20–80 ms on the short, index-bound statements the API runs (search at 1M
      // rows: docs/performance.md) and never pays back here.
      options: '-c jit=off',
      // A request never waits forever for a connection either.
      connectionTimeoutMillis: 10_000,
    });
    // An idle client that errors (server restart) must not crash the process…
    pool.on('error', () => undefined);
    // …nor one that is checked out (pg-pool drops its own listener then): a terminated backend then
    // fails the query in flight, which answers that request, instead of an uncaught 'error' event.
    pool.on('connect', (client) => client.on('error', () => undefined));
    const notifications = postgresNotifications({ connectionString: options.databaseUrl });
    pool.channels = notifications;
    const db = scopedDb(drizzleNodePg(pool) as unknown as Db);
    const max = options.poolSize ?? 10;
    return {
      kind: 'postgres',
      db,
      pool,
      ping: async () => {
        await pool.query('select 1');
      },
      poolStats: () => ({
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingCount,
        max,
      }),
      notifications,
      close: async () => {
        await notifications.close();
        await pool.end();
      },
    };
  }
  const raw = options.pgliteInstance ?? (await createPglite(options));
  await raw.exec(`SET statement_timeout = ${Math.floor(options.statementTimeoutMs)}`);
  // Every statement through `lite` runs as its caller's role (session-role.ts).
  const queue = { pending: 0 };
  const roleScoped = roleScopedPglite(raw, queue);
  const lite = tracingActive() ? tracedPglite(roleScoped) : roleScoped;
  const { drizzle: drizzlePglite } = await import('drizzle-orm/pglite');
  const db = scopedDb(drizzlePglite(lite) as unknown as Db);
  const notifications = pgliteNotifications(raw);
  // In memory there is nothing to replay after a crash; a handed-in instance is its owner's to manage.
  const checkpoints =
    options.dataDir && !options.pgliteInstance
      ? scheduleCheckpoints(
          {
            query: (text) => asService(() => roleScoped.query(text)),
            exec: (text) => asService(() => roleScoped.exec(text)),
            get closed() {
              return raw.closed;
            },
          },
          {
            intervalMs: options.pgliteCheckpointIntervalMs ?? 60_000,
            maxWalBytes: (options.pgliteMaxWalMb ?? DEFAULT_PGLITE_MAX_WAL_MB) * 2 ** 20,
            onError: (error) =>
              process.stderr.write(`embedded database checkpoint failed: ${String(error)}\n`),
          },
        )
      : undefined;
  return {
    kind: 'pglite',
    db,
    pglite: lite,
    ...(checkpoints ? { checkpoints } : {}),
    notifications,
    ping: async () => {
      await lite.query('select 1');
    },
    // One session: busy while anything runs, and everything else queues behind it.
    poolStats: () => ({
      total: 1,
      idle: queue.pending === 0 ? 1 : 0,
      waiting: Math.max(0, queue.pending - 1),
      max: 1,
    }),
    close: async () => {
      checkpoints?.stop();
      await notifications.close();
      if (!options.pgliteInstance && !raw.closed) await raw.close();
    },
  };
}

interface RawClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * The driver client under a drizzle database or transaction (a PoolClient inside a node-postgres
 * transaction, a PGlite Transaction inside a PGlite one). pg-boss sends its own SQL through it, so a
 * job enqueued inside our transaction commits or rolls back with the rows that need it.
 */
export function rawClientOf(dbOrTx: DbOrTx): RawClient {
  const session = (dbOrTx as unknown as { session: { client: RawClient } }).session;
  return session.client;
}

export async function rawQuery<T>(dbOrTx: DbOrTx, text: string, values?: unknown[]): Promise<T[]> {
  const client = rawClientOf(dbOrTx);
  const result = values && values.length > 0 ? await client.query(text, values) : await client.query(text);
  return result.rows as T[];
}

/**
 * A hot-path query as a named prepared statement on PostgreSQL (parsed and planned once per
 * connection); PGlite runs it as an ordinary parameterised query. Only outside transactions.
 */
export async function preparedQuery<T>(
  database: Database,
  name: string,
  text: string,
  values: unknown[],
): Promise<T[]> {
  // In a request's unit of work the statement must see (and, on PGlite, wait for) its transaction.
  if (inRequestTransaction()) return rawQuery<T>(database.db, text, values);
  if (database.pool) return (await database.pool.query({ name, text, values })).rows as T[];
  return (await database.pglite!.query(text, values)).rows as T[];
}

export { sql };
