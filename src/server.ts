// First: with OTEL_EXPORTER_OTLP_ENDPOINT set, tracing must hook `http` and `pg` before they load.
import './platform/observability/tracing-preload.ts';
import { buildApp } from './app.ts';
import { loadKeyring } from './platform/secrets/keyring.ts';
import { SecretKeyError } from './platform/secrets/secret-box.ts';
import { resealStoredSecrets } from './secrets.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError } from './platform/db/lock.ts';
import { withSchemaLock } from './platform/db/schema-lock.ts';
import { DiskSpaceGuard, StorageFullError } from './platform/disk-space.ts';
import { Jobs } from './platform/jobs/jobs.ts';
import { registerJobs } from './platform/jobs/registry.ts';
import { createRateLimiter } from './platform/http/rate-limit.ts';
import { openMigratedDatabase } from './platform/runtime.ts';
import { createObjectStorage } from './platform/storage/create-storage.ts';
import { createMetrics } from './platform/observability/metrics.ts';
import { startMetricsServer, type MetricsServer } from './platform/observability/metrics.routes.ts';
import { shutdownTracing } from './platform/observability/tracing.ts';

async function main() {
  const config = loadConfig();
  const opened = await openMigratedDatabase(config, 'remit server');
  const { database } = opened;
  // Before anything serves: a missing or wrong key stops the start with a message that says so.
  const keyring = await loadKeyring(config);
  const resealed = await resealStoredSecrets(database.db, keyring.box);
  const metrics = await createMetrics(config.metrics, database);
  let onJobError = (error: unknown): void => {
    process.stderr.write(`job queue error: ${String(error)}\n`);
  };
  // Several processes may start together on a fresh database: the job queue's set-up takes turns with
  // them and with migrations (docs/operations.md).
  let logDiskSpace = (low: boolean, freeBytes: number): void => {
    process.stderr.write(`disk space ${low ? 'low' : 'ok'}: ${freeBytes} bytes free\n`);
  };
  const diskSpace = new DiskSpaceGuard(config.dataDir, config.minFreeDiskBytes, (low, free) =>
    logDiskSpace(low, free),
  );
  const jobs = await withSchemaLock(database, () =>
    Jobs.start(database, {
      metrics,
      onError: (error) => onJobError(error),
      // The queue's own statements write too; with the embedded database they stop while the disk is low.
      writeGate: async () => {
        if (await diskSpace.isLow()) throw new StorageFullError(diskSpace.freeBytes);
      },
    }),
  );
  let logRateLimitStore = (state: string, reason?: unknown): void => {
    process.stderr.write(`rate-limit store ${state}: ${String(reason ?? '')}\n`);
  };
  const rateLimiter = createRateLimiter({
    redisUrl: config.redisUrl,
    max: config.rateLimitMax,
    windowS: config.rateLimitWindowS,
    onStateChange: (state, reason) => logRateLimitStore(state, reason),
  });
  const objectStorage = await createObjectStorage(config, metrics);
  const deps = {
    config,
    database,
    jobs,
    rateLimiter,
    objectStorage,
    diskSpace,
    secrets: keyring.box,
    metrics,
  };
  const app = await buildApp(deps);
  if (keyring.generatedFile) {
    app.log.warn(
      { file: keyring.generatedFile, key_id: keyring.box.currentKeyId },
      'generated the key that encrypts stored credentials; back it up with the data directory ' +
        '(without it they cannot be read), or set SECRET_KEY',
    );
  }
  if (resealed.billing_secrets + resealed.smtp_urls > 0) {
    app.log.info(
      { ...resealed, key_id: keyring.box.currentKeyId },
      'stored credentials sealed under the current key',
    );
  }
  // A full disk is logged once by the guard, not once per queue poll.
  onJobError = (error) => {
    if (!(error instanceof StorageFullError)) app.log.error({ err: error }, 'job queue error');
  };
  logDiskSpace = (low, freeBytes) =>
    low
      ? app.log.error(
          { free_bytes: freeBytes, min_free_bytes: config.minFreeDiskBytes },
          'disk space low: writes are refused (507) and jobs paused until space is freed',
        )
      : app.log.info({ free_bytes: freeBytes }, 'disk space available again: writes and jobs resume');
  logRateLimitStore = (state, reason) =>
    state === 'degraded'
      ? app.log.warn({ err: reason }, 'Redis unavailable: rate limits counted in memory per instance')
      : app.log.info('Redis answers again: rate limits counted in Redis');
  await withSchemaLock(database, () => registerJobs(deps, app.log));
  if (config.runWorkers) await jobs.startWorkers();

  let metricsServer: MetricsServer | undefined;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: no new requests, finishing in-flight ones');
    const graceMs = config.shutdownGraceS * 1000;
    const force = setTimeout(() => {
      app.log.error('shutdown took too long; exiting');
      process.exit(1);
    }, graceMs + 15_000);
    force.unref();
    try {
      // No new jobs from here on (no new sends); running ones, such as an SMTP send, get the grace.
      const jobsStopped = jobs.stop(graceMs);
      await app.close(); // stops accepting, waits for in-flight requests
      await jobsStopped;
      await rateLimiter.close();
      await objectStorage.close();
      await opened.close(); // closes the database and releases the data directory
      await metricsServer?.close();
      await shutdownTracing(); // sends the spans still buffered
      app.log.info('stopped');
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  if (config.metrics.port !== undefined) {
    const { port, host, token } = config.metrics;
    metricsServer = await startMetricsServer(metrics, { port, host, token });
    app.log.info({ host, port: metricsServer.port }, 'metrics served at GET /metrics on their own port');
  }
  if (config.tracing) {
    app.log.info(
      // The receiver's origin only: a URL may carry credentials.
      { receiver: new URL(config.tracing.url).origin, service: config.tracing.serviceName },
      'tracing: spans sent over OTLP/HTTP',
    );
    if (config.tracing.protocolNote) app.log.warn(config.tracing.protocolNote);
  }
  app.log.info(
    {
      engine: database.kind,
      data_dir: config.databaseUrl ? undefined : config.dataDir,
      migrations: opened.appliedMigrations,
    },
    'Remit is serving',
  );
}

main().catch((error: unknown) => {
  if (
    error instanceof DataDirLockedError ||
    error instanceof ConfigError ||
    error instanceof SecretKeyError
  ) {
    process.stderr.write(`remit: ${error.message}\n`);
  } else {
    process.stderr.write(
      `remit: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
