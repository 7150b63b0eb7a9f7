/**
 * The scenario registry: what `npm run bench` measures. Add an entry to `allScenarios` to measure another
 * Remit route; see bench/README.md.
 */
import crypto from 'node:crypto';
import type { HttpMethod, RequestSpec } from './lib/load.ts';
import { BenchError } from './lib/processes.ts';

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
  /** Payable invoices `remit seed` has given the organization so far (0 before any dataset scenario). */
  seededInvoices: number;
  /** A read-only SQL query on the bench database (PostgreSQL only; undefined on PGlite). */
  query?: <T>(text: string, values?: unknown[]) => Promise<T[]>;
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

/** An informational goal on a latency percentile of the measured run: below `maxMs`. */
export interface LatencyTarget {
  percentile: 'p50' | 'p99';
  maxMs: number;
}

/** What the first (probe) answer showed, recorded with the figures (e.g. `total_items`). */
export type Checked = Record<string, string | number | boolean | null>;

export interface Scenario {
  /** Stable key in the results files, e.g. "me-postgres". */
  id: string;
  /** Shown in the table, e.g. "GET /api/me". */
  title: string;
  engine: Engine;
  /** Selectable as a whole in BENCH_SCENARIOS (e.g. "me", "invoices"). */
  group: string;
  /**
   * The references it is compared to (the one-read reference should be of the same engine). None:
   * no ratio columns (a single-client latency run is not comparable to a 10-connection reference).
   */
  references?: { bare: BareReferenceId; oneRead: OneReadReferenceId };
  /** Concurrent connections for this scenario; default BENCH_CONNECTIONS. */
  connections?: number;
  /**
   * The seeded dataset it needs: before it runs, `remit seed` brings the organization to this many
   * payable invoices (sizes only grow, so such scenarios run ordered by size).
   */
  dataset?: { invoices: number };
  /**
   * The same measurement at several dataset sizes shares a series (its key and a short label), for
   * the per-size curve and the scaling target.
   */
  series?: { key: string; label: string; clients: number };
  /** The p50 at the largest size at most `maxP50Ratio` × the p50 at the smallest (informational). */
  scaling?: { maxP50Ratio: number };
  /**
   * Runs once against the running Remit server before the warm-up (seed data through `ctx.api`) and
   * returns the request to hammer. Scenarios of one engine share one server, in list order.
   */
  prepare(ctx: RemitContext): RequestSpec | Promise<RequestSpec>;
  /** The status every request must answer (checked once before the run; others count as non-2xx). */
  expectStatus?: number;
  /**
   * Checks the first answer's JSON body beyond its status (throws when it is wrong) and returns what
   * it saw, recorded in the results.
   */
  verify?(body: unknown, ctx: RemitContext): Checked | Promise<Checked>;
  targets?: Target[];
  latencyTargets?: LatencyTarget[];
}

const me = (engine: Engine, minRatio: number): Scenario => ({
  id: `me-${engine}`,
  title: 'GET /api/me',
  group: 'me',
  engine,
  references: { bare: 'bare-me', oneRead: `one-read-${engine}` },
  prepare: (ctx) => ({ method: 'GET', path: '/api/me', headers: ctx.auth }),
  targets: [{ against: 'one-read', minRatio }],
});

// ---------------------------------------------------------------------------------------------------
// Invoices at several dataset sizes (PostgreSQL): the AP list and one invoice, with 1 and 16 clients.

export const DEFAULT_INVOICE_SIZES = [10_000, 100_000, 1_000_000];
export const INVOICE_CLIENTS = [1, 16] as const;
/** Parties for every size, so an incremental seed (10k → 100k → 1M) writes the rows a direct one would. */
export const SEED_PARTIES = 2000;
/** The invoice GET /api/invoices/{uid} reads: the seed's invoice number 4242 (present at every size). */
export const SAMPLE_INVOICE = 4242;
const PER_PAGE = 25;

/** 10000 → "10k", 1000000 → "1m". */
export function sizeLabel(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}m`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

/** The uid `remit seed` gives invoice number `i` of an organization: md5('<org>:invoice:<i>')::uuid. */
export function seededInvoiceUid(organizationUid: string, i: number): string {
  const h = crypto.createHash('md5').update(`${organizationUid}:invoice:${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

interface ListBody {
  items?: unknown[];
  _meta?: { page?: number; total_items?: number; total_pages?: number };
}

interface InvoiceQuery {
  key: string;
  label: string;
  /** Target with one client: p99 below this. */
  p99MaxMs: number;
  /** The page fetch keeps its p50 within 1.5× from the smallest to the largest size. */
  scales: boolean;
  request(ctx: RemitContext): RequestSpec;
  verify(body: unknown, ctx: RemitContext): Checked | Promise<Checked>;
}

function listQuery(filter: 'approved' | 'all', page: number): InvoiceQuery {
  const query = `view=list${filter === 'approved' ? '&status=approved' : ''}&sort_by=due_date`;
  return {
    key: `ap-${filter}-p${page}`,
    label: `AP list ${filter === 'approved' ? 'status=approved' : 'unfiltered'}, page ${page}`,
    p99MaxMs: filter === 'approved' ? 25 : 60,
    scales: true,
    request: (ctx) => ({
      method: 'GET',
      path: `/api/organization/${ctx.organizationUid}/ap-invoices?${query}${page > 1 ? `&page=${page}&per_page=${PER_PAGE}` : ''}`,
      headers: ctx.auth,
    }),
    async verify(raw, ctx) {
      const body = raw as ListBody;
      let expected = ctx.seededInvoices;
      if (filter === 'approved') {
        // Counted from the rows themselves, not from invoice_counts (which the answer reads).
        if (!ctx.query) throw new BenchError('the invoice scenarios need PostgreSQL');
        const [row] = await ctx.query<{ n: number }>(
          `select count(*)::int as n from invoices
            where organization_uid = $1 and invoice_type = 'ACCOUNTS_PAYABLE' and status = 'approved'`,
          [ctx.organizationUid],
        );
        expected = row?.n ?? -1;
      }
      const total = body._meta?.total_items;
      if (total !== expected) {
        throw new BenchError(`_meta.total_items is ${String(total)}, expected ${expected} (counted rows)`);
      }
      const items = body.items?.length ?? -1;
      const expectedItems = Math.min(PER_PAGE, Math.max(0, expected - (page - 1) * PER_PAGE));
      if (items !== expectedItems || body._meta?.page !== page) {
        throw new BenchError(`page ${page} answered ${items} items, expected ${expectedItems}`);
      }
      return { total_items: total, items };
    },
  };
}

const getInvoice: InvoiceQuery = {
  key: 'invoice-get',
  label: 'GET /api/invoices/{uid}',
  p99MaxMs: 5,
  scales: false,
  request: (ctx) => ({
    method: 'GET',
    path: `/api/invoices/${seededInvoiceUid(ctx.organizationUid, SAMPLE_INVOICE)}`,
    headers: ctx.auth,
  }),
  verify(raw, ctx) {
    const data = (raw as { data?: { uid?: string; invoice_type?: string; invoice_number?: string } }).data;
    const uid = seededInvoiceUid(ctx.organizationUid, SAMPLE_INVOICE);
    if (data?.uid !== uid || data.invoice_type !== 'ACCOUNTS_PAYABLE') {
      throw new BenchError(
        `GET /api/invoices/${uid} answered another invoice: ${JSON.stringify(data)?.slice(0, 200)}`,
      );
    }
    return { invoice_number: data.invoice_number ?? null };
  },
};

export const INVOICE_QUERIES: InvoiceQuery[] = [
  listQuery('approved', 1),
  listQuery('approved', 200),
  listQuery('all', 1),
  listQuery('all', 200),
  getInvoice,
];

/** Every invoice query × client count at each size, smallest size first. */
export function invoiceScenarios(sizes: number[]): Scenario[] {
  return [...sizes]
    .sort((a, b) => a - b)
    .flatMap((size) =>
      INVOICE_QUERIES.flatMap((q) =>
        INVOICE_CLIENTS.map((clients): Scenario => ({
          id: `inv-${sizeLabel(size)}-${q.key}-c${clients}`,
          title: q.label,
          group: 'invoices',
          engine: 'postgres',
          connections: clients,
          dataset: { invoices: size },
          series: { key: `${q.key}-c${clients}`, label: q.label, clients },
          prepare: (ctx) => q.request(ctx),
          verify: (body, ctx) => q.verify(body, ctx),
          // The targets are for one client; 16 clients show how it holds up under concurrency.
          ...(clients === 1
            ? {
                latencyTargets: [{ percentile: 'p99' as const, maxMs: q.p99MaxMs }],
                ...(q.scales ? { scaling: { maxP50Ratio: 1.5 } } : {}),
              }
            : {}),
        })),
      ),
    );
}

/** Every scenario, in run order per engine. */
export function allScenarios(options: { invoiceSizes: number[] }): Scenario[] {
  return [me('pglite', 0.5), me('postgres', 0.6), ...invoiceScenarios(options.invoiceSizes)];
}
