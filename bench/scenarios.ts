/**
 * The scenario registry: what `npm run bench` measures. Add an entry to `scenarios` to measure another
 * Remit route; see bench/README.md.
 */
import type { HttpMethod, RequestSpec } from './lib/load.ts';

export type Engine = 'pglite' | 'postgres';
export const ENGINES: readonly Engine[] = ['pglite', 'postgres'];

/** What a scenario (or a capture) gets: the running Remit server of one engine and an admin's API key. */
export interface RemitContext {
  engine: Engine;
  baseUrl: string;
  apiKey: string;
  organizationUid: string;
  userUid: string;
  /** `{ authorization: 'Bearer <key>' }` */
  auth: Record<string, string>;
  /** A JSON call with the key, for seeding data; throws unless the answer is 2xx. */
  api<T = unknown>(method: HttpMethod, path: string, body?: unknown): Promise<T>;
}

/**
 * Reference 1: a bare node:http server answering the bytes of one real Remit response (captured from the
 * first Remit server the bench starts). Shows what the network path and response size alone cost.
 */
export interface BareReference {
  title: string;
  capture(ctx: RemitContext): RequestSpec;
}

/**
 * Reference 2: a minimal Fastify route doing one primary-key read (bench/servers/one-read.ts) on one
 * engine. Shows what a route that touches the database once costs.
 */
export interface OneReadReference {
  title: string;
  engine: Engine;
  request: RequestSpec;
}

export const bareReferences = {
  'bare-me': {
    title: 'bare node:http, /api/me bytes',
    capture: (ctx) => ({ method: 'GET', path: '/api/me', headers: ctx.auth }),
  },
} satisfies Record<string, BareReference>;

const oneRead = (engine: Engine): OneReadReference => ({
  title: `Fastify + 1 PK read`,
  engine,
  // A fixed, "random-ish" id among the 10,000 rows of bench_ref.
  request: { method: 'GET', path: '/ref/4242' },
});

export const oneReadReferences = {
  'one-read-pglite': oneRead('pglite'),
  'one-read-postgres': oneRead('postgres'),
} satisfies Record<string, OneReadReference>;

export type BareReferenceId = keyof typeof bareReferences;
export type OneReadReferenceId = keyof typeof oneReadReferences;
export type ReferenceKind = 'bare' | 'one-read';

/** An informational goal: this scenario's req/s at least `minRatio` × the reference's. */
export interface Target {
  against: ReferenceKind;
  minRatio: number;
}

export interface Scenario {
  /** Stable key in the results files, e.g. "me-postgres". */
  id: string;
  /** Shown in the table, e.g. "GET /api/me". */
  title: string;
  engine: Engine;
  /** The references it is compared to; the one-read reference should be of the same engine. */
  references: { bare: BareReferenceId; oneRead: OneReadReferenceId };
  /**
   * Runs once against the running Remit server before the warm-up (seed data through `ctx.api`) and
   * returns the request to hammer. Scenarios of one engine share one server, in list order.
   */
  prepare(ctx: RemitContext): RequestSpec | Promise<RequestSpec>;
  /** The status every request must answer (checked once before the run; others count as non-2xx). */
  expectStatus?: number;
  targets?: Target[];
}

const me = (engine: Engine, minRatio: number): Scenario => ({
  id: `me-${engine}`,
  title: 'GET /api/me',
  engine,
  references: { bare: 'bare-me', oneRead: `one-read-${engine}` },
  prepare: (ctx) => ({ method: 'GET', path: '/api/me', headers: ctx.auth }),
  targets: [{ against: 'one-read', minRatio }],
});

export const scenarios: Scenario[] = [me('pglite', 0.5), me('postgres', 0.6)];
