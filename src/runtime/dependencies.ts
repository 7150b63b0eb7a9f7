import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import {
  AdminSocketUnavailableError,
  listenAdminSocket,
  type AdminCommandHandler,
  type AdminSocketServer,
} from '../platform/admin-socket.ts';
import { resealStoredSecrets } from '../secrets.ts';
import { withSchemaLock } from '../platform/db/schema-lock.ts';
import { DiskSpaceGuard, StorageFullError } from '../platform/disk-space.ts';
import type { AppDeps } from '../platform/http/types.ts';
import { Jobs } from '../platform/jobs/jobs.ts';
import { registerJobs } from '../app.ts';
import { createClients } from '../platform/clients.ts';
import { createMetrics } from '../platform/observability/metrics.ts';
import { startMetricsServer, type MetricsServer } from '../platform/observability/metrics.routes.ts';
import { openMigratedDatabase, type OpenedDatabase } from '../platform/runtime.ts';
import { loadKeyring } from '../platform/secrets/keyring.ts';
import { createObjectStorage } from '../platform/storage/create-storage.ts';
import { closeTextExtraction, configureTextExtraction } from '../modules/knowledge/text-extraction.ts';
import { closeInvoicePdfRendering } from '../modules/invoices/invoice-pdf-rendering.ts';

/** What every long-running process builds the same way: the server and `remit worker`. */
export type ProcessDeps = Omit<AppDeps, 'rateLimiter'> & { diskSpace: DiskSpaceGuard };

export interface ProcessRuntime {
  deps: ProcessDeps;
  opened: OpenedDatabase;
  /**
   * From here on, job-queue errors and disk-space changes go to `log` (stderr before). Also logs what
   * the start found worth saying: a key it generated, credentials it sealed again.
   */
  useLogger(log: FastifyBaseLogger): void;
  /**
   * Declares every queue and schedule (under the schema lock: several processes may start together)
   * and, in a process that works the queues, starts fetching jobs.
   */
  startJobs(log: FastifyBaseLogger): Promise<void>;
  /** `startJobs` in two steps: the queues and schedules first (before a server listens: it enqueues)… */
  declareJobs(log: FastifyBaseLogger): Promise<void>;
  /**
   * …and the fetching once it listens: with the embedded database the first fetch of every queue (one
   * statement each, ≈ 5 ms) ran before the server answered its first request.
   */
  startWorking(): Promise<void>;
  /**
   * With METRICS_PORT set, serves GET /metrics on a listener of its own (the worker's only way to be
   * scraped; the server's when metrics stay off its API port).
   */
  serveMetricsPort(log: FastifyBaseLogger): Promise<void>;
  /**
   * With the embedded database, serves `remit` commands on DATA_DIR/admin.sock (docs/cli.md): this
   * process holds DATA_DIR, so a CLI run beside it sends its command here. Where the socket cannot be
   * served (a directory others may write, Windows) it logs why and the process runs without it.
   */
  serveAdminSocket(handler: AdminCommandHandler, log: FastifyBaseLogger): Promise<void>;
  /**
   * After the jobs have stopped: the admin socket (its running commands finish first), object storage,
   * extraction threads, the database and its lock, the metrics listener.
   */
  close(): Promise<void>;
}

/**
 * Opens everything a Remit process needs, in order: the database (the data directory's lock first on
 * the embedded engine, then migrations), the key that seals stored credentials, the disk-space guard,
 * the job queue, object storage. `works`: whether this process fetches jobs (a worker, or a server
 * with RUN_WORKERS=true); one that does not also runs neither the queue's maintenance nor its cron, so
 * it only ever enqueues. On a failure, what was opened is closed again.
 */
export async function startProcessRuntime(
  config: Config,
  options: { command: string; works: boolean },
): Promise<ProcessRuntime> {
  const opened = await openMigratedDatabase(config, options.command);
  const { database } = opened;
  let jobs: Jobs | undefined;
  try {
    // Before anything runs: a missing or wrong key stops the start with a message that says so.
    const keyring = await loadKeyring(config);
    const resealed = await resealStoredSecrets(database.db, keyring.box);
    // Collected only with METRICS_TOKEN or METRICS_PORT set; prom-client is not even loaded otherwise.
    const metrics = await createMetrics(config.metrics, database);
    let metricsServer: MetricsServer | undefined;
    let adminSocket: AdminSocketServer | undefined;
    let log: FastifyBaseLogger | undefined;
    const diskSpace = new DiskSpaceGuard(config.dataDir, config.minFreeDiskBytes, (low, freeBytes) => {
      if (!log) process.stderr.write(`disk space ${low ? 'low' : 'ok'}: ${freeBytes} bytes free\n`);
      else if (low)
        log.error(
          { free_bytes: freeBytes, min_free_bytes: config.minFreeDiskBytes },
          'disk space low: writes are refused (507) and jobs paused until space is freed',
        );
      else log.info({ free_bytes: freeBytes }, 'disk space available again: writes and jobs resume');
    });
    // Several processes may start together on a fresh database: the job queue's set-up takes turns with
    // them and with migrations (docs/operations.md).
    jobs = await withSchemaLock(database, () =>
      Jobs.start(database, {
        supervise: options.works,
        maintenanceIntervalSeconds: config.jobMaintenanceIntervalS,
        metrics,
        onError: (error) => {
          if (!log) process.stderr.write(`job queue error: ${String(error)}\n`);
          // A full disk is logged once by the guard, not once per queue poll.
          else if (!(error instanceof StorageFullError)) log.error({ err: error }, 'job queue error');
        },
        // The queue's own statements write too; with the embedded database they stop while the disk is low.
        writeGate: async () => {
          if (await diskSpace.isLow()) throw new StorageFullError(diskSpace.freeBytes);
        },
      }),
    );
    const objectStorage = await createObjectStorage(config, metrics);
    configureTextExtraction({
      threads: config.extractionThreads,
      timeoutMs: config.extractionTimeoutS * 1000,
    });
    const deps: ProcessDeps = {
      config,
      database,
      jobs,
      objectStorage,
      diskSpace,
      secrets: keyring.box,
      clients: createClients(config, metrics),
      metrics,
    };
    const declareJobs = async (jobLog: FastifyBaseLogger) => {
      await withSchemaLock(database, () => registerJobs(deps, jobLog));
    };
    const startWorking = async () => {
      if (options.works) await deps.jobs.startWorkers();
    };
    return {
      deps,
      opened,
      useLogger(next) {
        log = next;
        if (keyring.generatedFile) {
          next.warn(
            { file: keyring.generatedFile, key_id: keyring.box.currentKeyId },
            'generated the key that encrypts stored credentials; back it up with the data directory ' +
              '(without it they cannot be read), or set SECRET_KEY',
          );
        }
        if (Object.values(resealed).some((count) => count > 0)) {
          next.info(
            { ...resealed, key_id: keyring.box.currentKeyId },
            'stored credentials sealed under the current key',
          );
        }
      },
      async startJobs(jobLog) {
        await declareJobs(jobLog);
        await startWorking();
      },
      declareJobs,
      startWorking,
      async serveMetricsPort(serveLog) {
        if (config.metrics.port === undefined) return;
        const { port, host, token } = config.metrics;
        metricsServer = await startMetricsServer(metrics, { port, host, token });
        serveLog.info({ host, port: metricsServer.port }, 'metrics served at GET /metrics on their own port');
      },
      async serveAdminSocket(handler, serveLog) {
        if (config.databaseUrl) return; // on PostgreSQL the CLI connects to the database itself
        try {
          adminSocket = await listenAdminSocket(config.dataDir, handler, { log: serveLog });
        } catch (error) {
          serveLog.warn(
            { reason: error instanceof AdminSocketUnavailableError ? error.message : String(error) },
            'admin socket not served: remit commands on DATA_DIR are refused while this process runs',
          );
          return;
        }
        serveLog.info({ socket: adminSocket.path }, 'admin socket: remit commands on DATA_DIR run here');
      },
      async close() {
        await adminSocket?.close();
        await objectStorage.close();
        await closeTextExtraction();
        await closeInvoicePdfRendering();
        await opened.close(); // closes the database and releases the data directory
        await metricsServer?.close();
      },
    };
  } catch (error) {
    await jobs?.stop(0).catch(() => undefined);
    await opened.close().catch(() => undefined);
    throw error;
  }
}

/**
 * SIGTERM and SIGINT run `stop` once; the process then exits 0, or 1 if stopping failed or took longer
 * than the jobs' grace plus 15 s.
 */
export function stopOnSignals(
  log: FastifyBaseLogger,
  graceMs: number,
  stop: (signal: string) => Promise<void>,
): void {
  let stopping = false;
  const onSignal = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, graceMs + 15_000);
    force.unref();
    try {
      await stop(signal);
      log.info('stopped');
      process.exit(0);
    } catch (error) {
      log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void onSignal('SIGTERM'));
  process.on('SIGINT', () => void onSignal('SIGINT'));
}
