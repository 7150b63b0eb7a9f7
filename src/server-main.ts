// The server itself; `server.ts` starts tracing (when configured) and then imports this file.
import { buildApp } from './app.ts';
import { SecretKeyError } from './platform/secrets/secret-box.ts';
import { runServedCommand } from './cli.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError } from './platform/db/lock.ts';
import { createRateLimiter } from './platform/http/rate-limit.ts';
import { startProcessRuntime, stopOnSignals } from './runtime/dependencies.ts';
import { logTracingTarget, shutdownTracing } from './platform/observability/tracing.ts';

async function main() {
  const config = loadConfig();
  const runtime = await startProcessRuntime(config, {
    command: 'remit server',
    works: config.runWorkers,
  });
  const { deps, opened } = runtime;
  let logRateLimitStore = (state: string, reason?: unknown): void => {
    process.stderr.write(`rate-limit store ${state}: ${String(reason ?? '')}\n`);
  };
  const rateLimiter = createRateLimiter({
    redisUrl: config.redisUrl,
    max: config.rateLimitMax,
    windowS: config.rateLimitWindowS,
    onStateChange: (state, reason) => logRateLimitStore(state, reason),
  });
  const appDeps = { ...deps, rateLimiter };
  const app = await buildApp(appDeps);
  runtime.useLogger(app.log);
  logRateLimitStore = (state, reason) =>
    state === 'degraded'
      ? app.log.warn({ err: reason }, 'Redis unavailable: rate limits counted in memory per instance')
      : app.log.info('Redis answers again: rate limits counted in Redis');
  // An API-only server still declares every queue and schedule, so what it enqueues has a queue.
  await runtime.declareJobs(app.log);
  if (!config.runWorkers && !config.databaseUrl) {
    app.log.warn(
      'RUN_WORKERS=false with the embedded database: no other process can open DATA_DIR, so no job ' +
        'runs until a process with RUN_WORKERS=true (or `remit worker`) starts on it',
    );
  }

  // With the embedded database, `remit` commands beside this server run here (docs/cli.md).
  await runtime.serveAdminSocket(
    (argv, io) => runServedCommand(argv, io, { config, database: deps.database }),
    app.log,
  );

  stopOnSignals(app.log, config.shutdownGraceS * 1000, async (signal) => {
    app.log.info({ signal }, 'shutting down: no new requests, finishing in-flight ones');
    // No new jobs from here on (no new sends); running ones, such as an SMTP send, get the grace.
    const jobsStopped = deps.jobs.stop(config.shutdownGraceS * 1000);
    await app.close(); // stops accepting, waits for in-flight requests
    await jobsStopped;
    await rateLimiter.close();
    await runtime.close();
    await shutdownTracing(); // sends the spans still buffered
  });

  await app.listen({ port: config.port, host: config.host });
  await runtime.startWorking();
  await runtime.serveMetricsPort(app.log);
  logTracingTarget(app.log, config.tracing);
  app.log.info(
    {
      engine: deps.database.kind,
      data_dir: config.databaseUrl ? undefined : config.dataDir,
      migrations: opened.appliedMigrations,
      works_jobs: config.runWorkers,
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
