import type {
  FastifyInstance,
  FastifyBaseLogger,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../../config.ts';
import type { Database } from '../db/client.ts';
import type { Jobs } from '../jobs/jobs.ts';
import type { ObjectStorage } from '../storage/storage.ts';
import type { DiskSpaceGuard } from '../disk-space.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import type { Clients } from '../clients.ts';
import type { Metrics } from '../observability/metrics.ts';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** What the app is built from; tests build it with their own database and fakes of outside services. */
export interface AppDeps {
  config: Config;
  database: Database;
  jobs: Jobs;
  rateLimiter: RateLimiter;
  objectStorage: ObjectStorage;
  /** Seals and opens stored credentials (docs/security.md#secrets-at-rest). */
  secrets: SecretBox;
  /** Slack, text generation and mail, built once (src/platform/clients.ts). */
  clients: Clients;
  /** Refuses writes when the data directory's disk is low; built from the configuration when absent. */
  diskSpace?: DiskSpaceGuard;
  /** Request, job and outside-call metrics (docs/observability.md); none collected when absent. */
  metrics?: Metrics;
}

/** What background jobs are built from: the app's dependencies but the HTTP rate limiter. */
export type JobDeps = Omit<AppDeps, 'rateLimiter'>;

/**
 * A module's part in the app, listed once in the composition root (src/app.ts): its routes, the queues
 * it works, and anything it installs into another module's extension points before either runs.
 */
export interface AppModule {
  name: string;
  routes?: ReadonlyArray<(app: App, deps: AppDeps) => Promise<void>>;
  jobs?: (deps: JobDeps, log: FastifyBaseLogger) => Promise<void>;
  install?: () => void;
}
