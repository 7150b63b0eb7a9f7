import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { loggerOptions } from '../../src/platform/logging.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Database, Db } from '../../src/platform/db/client.ts';
import { Jobs } from '../../src/platform/jobs/jobs.ts';
import { buildApp, registerJobs } from '../../src/app.ts';
import { createClients } from '../../src/platform/clients.ts';
import { MemoryRateLimiter, type RateLimiter } from '../../src/platform/http/rate-limit.ts';
import { createObjectStorage } from '../../src/platform/storage/create-storage.ts';
import { createMetrics } from '../../src/platform/observability/metrics.ts';
import type { App, AppDeps } from '../../src/platform/http/types.ts';
import { parseSecretKey, SecretBox } from '../../src/platform/secrets/secret-box.ts';
import { openTestDatabase } from './test-database.ts';
import { TEST_SECRET_KEY } from './processes.ts';
import { recordRoutes } from './route-records.ts';

export interface TestApp {
  app: App;
  deps: AppDeps;
  db: Db;
  database: Database;
  config: Config;
  /** This file's PostgreSQL database (postgres engine only), for a second app instance on it. */
  databaseUrl?: string | undefined;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  rateLimiter?: RateLimiter;
  /** Start job workers (off by default: most tests only check what was enqueued). */
  workers?: boolean;
  /** Log at this level into `logStream` (tests that read the logs); off otherwise. */
  logStream?: { write(line: string): void };
  /** Extra routes or hooks a test needs, registered before the app is ready. */
  beforeReady?: (app: App, deps: AppDeps) => void;
  /** A console build of the test's own to serve at /app (default: web/dist, whatever is built there). */
  consoleDir?: string;
}

/** The real app over a fresh, migrated database of its own. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const testDb = await openTestDatabase({
    dumpPath: inject('pgliteDump'),
    templateName: inject('templateName'),
  });
  const { database } = testDb;
  // A data directory of its own (the embedded object store lives in it), removed on close.
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'remit-test-data-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  // Collected only when the test's environment sets METRICS_TOKEN or METRICS_PORT, as in the server.
  const metrics = await createMetrics(config.metrics, database);
  const jobs = await Jobs.start(database, { supervise: false, pollIntervalSeconds: 0.5, metrics });
  const rateLimiter =
    options.rateLimiter ?? new MemoryRateLimiter(config.rateLimitMax, config.rateLimitWindowS * 1000);
  const objectStorage = await createObjectStorage(config, metrics);
  const secrets = new SecretBox([parseSecretKey(TEST_SECRET_KEY, 'test key')]);
  const deps: AppDeps = {
    config,
    database,
    jobs,
    rateLimiter,
    objectStorage,
    secrets,
    clients: createClients(config, metrics),
    metrics,
  };
  const app = await buildApp(deps, {
    logger: options.logStream ? loggerOptions('trace', options.logStream) : false,
    ...(options.consoleDir ? { consoleDir: options.consoleDir } : {}),
  });
  options.beforeReady?.(app, deps);
  // What every route answers is recorded for the end-of-run checks (test/helpers/route-records.ts).
  recordRoutes(app, inject('routeRecordsDir'));
  await registerJobs(deps, app.log);
  if (options.workers) await jobs.startWorkers();
  await app.ready();
  return {
    app,
    deps,
    db: database.db,
    database,
    config,
    databaseUrl: testDb.url,
    close: async () => {
      await app.close();
      await jobs.stop();
      await rateLimiter.close();
      await objectStorage.close();
      await testDb.drop();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface SecondInstanceOptions {
  /** Its own rate limiter unless one is given (instances share nothing in memory). */
  rateLimiter?: RateLimiter;
  /**
   * Settings of its own, e.g. a short outbound timeout for the tests that make a partner hang, so the
   * first instance can keep generous ones for every call that must succeed.
   */
  config?: Partial<Config>;
}

/**
 * Another instance of the service over the same database (as a second process would be), with its own
 * rate limiter unless one is given.
 */
export async function secondInstance(
  first: TestApp,
  options: SecondInstanceOptions = {},
): Promise<{ app: App; close(): Promise<void> }> {
  const rateLimiter =
    options.rateLimiter ??
    new MemoryRateLimiter(first.config.rateLimitMax, first.config.rateLimitWindowS * 1000);
  const config = { ...first.config, ...options.config };
  // Its own clients when its configuration differs (a shorter model or Slack timeout, another SMTP).
  const clients = options.config ? createClients(config, first.deps.metrics) : first.deps.clients;
  const app = await buildApp({ ...first.deps, config, rateLimiter, clients }, { logger: false });
  recordRoutes(app, inject('routeRecordsDir'));
  await app.ready();
  return {
    app,
    close: async () => {
      await app.close();
      await rateLimiter.close();
    },
  };
}
