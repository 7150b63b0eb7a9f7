import { pino, type LoggerOptions } from 'pino';
import type { Config } from '../config.ts';
import type { AdminCommandHandler } from '../platform/admin-socket.ts';
import type { Database } from '../platform/db/client.ts';
import { DataDirLockedError } from '../platform/db/lock.ts';
import { loggerOptions, stdoutLog } from '../platform/logging.ts';
import { logTracingTarget, shutdownTracing } from '../platform/observability/tracing.ts';
import { startProcessRuntime, stopOnSignals } from './dependencies.ts';

/**
 * `remit worker`: works the background job queues and serves no HTTP. It builds what the server builds
 * (database and migrations, keys, disk-space guard, job queue, object storage), declares the same
 * queues and schedules, and fetches jobs until SIGTERM or SIGINT; then it fetches no more and gives
 * the running ones SHUTDOWN_GRACE_S to finish, as the server does. Logs are the server's JSON lines.
 * On the embedded database it serves `adminCommands` on DATA_DIR/admin.sock, as the server does. With
 * OTEL_EXPORTER_OTLP_ENDPOINT set it sends traces of its jobs (cli-main.ts installs the hooks first).
 * Never returns: a signal ends the process, and a failed start throws.
 */
export async function runWorker(
  config: Config,
  options: { adminCommands?: (database: Database) => AdminCommandHandler } = {},
): Promise<void> {
  const log = pino(loggerOptions(config.logLevel) as LoggerOptions, stdoutLog());
  let runtime;
  try {
    runtime = await startProcessRuntime(config, { command: 'remit worker', works: true });
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      error.message +=
        ' With the embedded database one process owns DATA_DIR, and the server already works the ' +
        'queues itself (RUN_WORKERS=true, the default); separate worker processes need PostgreSQL ' +
        '(DATABASE_URL).';
    }
    throw error;
  }
  const { deps } = runtime;
  runtime.useLogger(log);
  await runtime.startJobs(log);
  if (options.adminCommands) await runtime.serveAdminSocket(options.adminCommands(deps.database), log);
  // A worker has no HTTP port: its job metrics are served on METRICS_PORT only (docs/observability.md).
  await runtime.serveMetricsPort(log);

  stopOnSignals(log, config.shutdownGraceS * 1000, async (signal) => {
    log.info({ signal }, 'worker stopping: no new jobs, finishing running ones');
    await deps.jobs.stop(config.shutdownGraceS * 1000);
    await runtime.close();
    await shutdownTracing(); // sends the spans still buffered
  });
  logTracingTarget(log, config.tracing);
  log.info(
    {
      engine: deps.database.kind,
      data_dir: config.databaseUrl ? undefined : config.dataDir,
      migrations: runtime.opened.appliedMigrations,
    },
    'worker ready: working the job queues',
  );
  // Until a signal ends the process.
  await new Promise<never>(() => undefined);
}
