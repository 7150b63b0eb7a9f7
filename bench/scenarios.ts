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
  /** The search scenarios' two organizations, once set up. */
  search?: SearchContext;
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
   * The search scenarios' dataset: their own organization and another one (see `searchScenarios`),
   * seeded before the scenario runs (sizes only grow).
   */
  searchDataset?: SearchDataset;
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

/**
 * `GET /api/invoices/{uid}` with the one-read reference's connections (BENCH_CONNECTIONS, default 50),
 * so their req/s compare (target: at least 40 % of the reference).
 */
const invoiceGetAgainstReference = (size: number): Scenario => ({
  id: `inv-${sizeLabel(size)}-invoice-get-as-ref`,
  title: `${getInvoice.label} (as the reference)`,
  group: 'invoices',
  engine: 'postgres',
  dataset: { invoices: size },
  references: { bare: 'bare-me', oneRead: 'one-read-postgres' },
  prepare: (ctx) => getInvoice.request(ctx),
  verify: (body, ctx) => getInvoice.verify(body, ctx),
  targets: [{ against: 'one-read', minRatio: 0.4 }],
});

/** Every invoice query × client count at each size, smallest size first. */
export function invoiceScenarios(sizes: number[]): Scenario[] {
  return [...sizes]
    .sort((a, b) => a - b)
    .flatMap((size) => [
      ...INVOICE_QUERIES.flatMap((q) =>
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
      invoiceGetAgainstReference(size),
    ]);
}

/** Every scenario, in run order per engine. */
export function allScenarios(options: {
  invoiceSizes: number[];
  searchSizes: number[];
  searchOtherRows: number;
  searchPgliteSize: number;
  searchPgliteOtherRows: number;
}): Scenario[] {
  return [
    me('pglite', 0.8),
    me('postgres', 0.8),
    ...invoiceScenarios(options.invoiceSizes),
    ...searchScenarios({
      sizes: options.searchSizes,
      otherRows: options.searchOtherRows,
      pgliteSize: options.searchPgliteSize,
      pgliteOtherRows: options.searchPgliteOtherRows,
    }),
  ];
}

// ---------------------------------------------------------------------------------------------------
// Search (GET /api/search, GET /api/work-tasks/context-search) on a large organization beside another.

/**
 * What `remit seed` gives the search scenarios: their own organization (`invoices` receivable invoices,
 * `parties` parties, `tasks` work tasks) and, once before the first size, another organization with
 * `other` rows, whose matches the trigram indexes also return and the organization filter must drop.
 */
export interface SearchDataset {
  invoices: number;
  parties: number;
  tasks: number;
  other: { invoices: number; parties: number; tasks: number };
}

/** PostgreSQL sizes: invoices of the searched organization (parties and tasks: a fifth of that each). */
export const DEFAULT_SEARCH_SIZES = [10_000, 1_000_000];
/** PGlite runs one, smaller size (seeded before its server starts; see bench/README.md). */
export const DEFAULT_SEARCH_PGLITE_SIZE = 10_000;
export const SEARCH_CLIENTS = [1, 16] as const;
/** The seed's rare word (`SEED_RARE_WORD`: ≈ 0.2 % of party names, invoice customers, task descriptions). */
export const SEARCH_RARE = 'zephyr';
/** In every seeded receivable's number (`INV-…`) and every seeded task's description ("… open invoices"). */
export const SEARCH_COMMON = 'inv';
export const SEARCH_LIMIT = 12;
/** GET /api/search's default types: all six, so each type's share of 12 is 2. */
export const SEARCH_TYPES = ['invoice', 'customer', 'task', 'conversation', 'document', 'knowledge'];
export const CONTEXT_PER_PAGE = 10;

/** Rows of the other organization: 1,000,000 next to PostgreSQL's sizes, 100,000 next to PGlite's. */
export const DEFAULT_SEARCH_OTHER_ROWS = 1_000_000;
export const DEFAULT_SEARCH_PGLITE_OTHER_ROWS = 100_000;

/** Parties and tasks a fifth of the invoices each; the other organization's rows 60 / 20 / 20 %. */
export function searchDataset(invoices: number, otherRows: number): SearchDataset {
  const fifth = Math.round(otherRows / 5);
  return {
    invoices,
    parties: Math.max(2, Math.round(invoices / 5)),
    tasks: Math.round(invoices / 5),
    other: { invoices: otherRows - 2 * fifth, parties: Math.max(2, fifth), tasks: fifth },
  };
}

/** One organization of the search scenarios: its admin's key (from `remit init`). */
export interface SearchOrganization {
  organizationUid: string;
  userUid: string;
  apiKey: string;
  auth: Record<string, string>;
}

export interface SearchContext {
  /** The searched organization. */
  org: SearchOrganization;
  /** The other organization: none of its rows may be answered. */
  other: SearchOrganization;
  /** What is seeded so far. */
  seeded: SearchDataset | null;
}

interface SearchItem {
  entity_uid: string;
  entity_type: string;
  label: string;
  subtitle: string | null;
}

type Query = <T>(text: string, values?: unknown[]) => Promise<T[]>;

const totalText = `((total_cents / 100)::text || '.' || lpad((abs(total_cents) % 100)::text, 2, '0'))`;

/**
 * Interface 4.4 written out in plain SQL, independently of Remit's statements: each type's first
 * `share` matches (all rows in suggest mode), newest first. The plan does not matter here.
 */
const EXPECTED_SEARCH: Record<string, string> = {
  invoice: `select uid from invoices where organization_uid = $1
     and ($2::text is null or invoice_number ilike $2 or client_name ilike $2 or ${totalText} ilike $2)
     order by issue_date desc nulls last, uid desc limit $3`,
  customer: `select uid from parties where organization_uid = $1 and role = 'client'
     and ($2::text is null or name ilike $2 or address ilike $2) order by updated_at desc, uid desc limit $3`,
  task: `select uid from work_tasks where organization_uid = $1
     and ($2::text is null or title ilike $2 or description ilike $2 or status ilike $2)
     order by created_at desc, uid desc limit $3`,
  conversation: `select uid from conversations where organization_uid = $1
     and ($2::text is null or subject ilike $2 or channel ilike $2 or status ilike $2)
     order by created_at desc, uid desc limit $3`,
  document: `select uid from documents where organization_uid = $1
     and ($2::text is null or filename ilike $2 or document_name ilike $2) order by updated_at desc, uid desc limit $3`,
  knowledge: `select uid from knowledge_documents where organization_uid = $1 and status <> 'presigned'
     and ($2::text is null or filename ilike $2) order by created_at desc, uid desc limit $3`,
};

/** Interface 4.5, the same way. */
const EXPECTED_CONTEXT: Record<string, string> = {
  invoices: `select uid from invoices where organization_uid = $1
     and (invoice_number ilike $2 or (invoice_type = 'ACCOUNTS_RECEIVABLE' and client_name ilike $2)
          or (invoice_type = 'ACCOUNTS_PAYABLE' and vendor_name ilike $2))
     order by issue_date desc nulls last, uid desc limit $3`,
  parties: `select uid from parties where organization_uid = $1 and name ilike $2
     order by updated_at desc, uid desc limit $3`,
  messages: `select uid from messages where organization_uid = $1 and (subject ilike $2 or from_email ilike $2)
     order by created_at desc, uid desc limit $3`,
};

const TABLE_OF: Record<string, string> = {
  invoice: 'invoices',
  customer: 'parties',
  task: 'work_tasks',
  conversation: 'conversations',
  document: 'documents',
  knowledge: 'knowledge_documents',
  invoices: 'invoices',
  parties: 'parties',
  messages: 'messages',
};

/** Throws unless none of `uids` is a row of another organization than `organizationUid`. */
async function assertOwnRows(query: Query, organizationUid: string, byKind: Record<string, string[]>) {
  for (const [kind, uids] of Object.entries(byKind)) {
    if (uids.length === 0) continue;
    const [row] = await query<{ own: number; foreign: number }>(
      `select count(*) filter (where organization_uid = $1)::int as own,
              count(*) filter (where organization_uid <> $1)::int as foreign
         from ${TABLE_OF[kind]} where uid = any($2::uuid[])`,
      [organizationUid, uids],
    );
    if (row?.foreign !== 0 || row.own !== uids.length) {
      throw new BenchError(
        `${kind}: ${row?.foreign ?? '?'} of the ${uids.length} answered rows belong to another organization (${row?.own ?? '?'} to this one)`,
      );
    }
  }
}

/** The same request as the other organization's admin: its answer must share no row with ours. */
async function assertDisjoint(ctx: RemitContext, request: RequestSpec, uids: string[]) {
  const other = ctx.search!.other;
  const response = await fetch(ctx.baseUrl + request.path, {
    headers: other.auth,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new BenchError(`the other organization's ${request.path}: HTTP ${response.status}`);
  const shared = uids.filter((uid) => text.includes(uid));
  if (shared.length > 0) {
    throw new BenchError(`the other organization's answer holds ${shared.length} of our rows: ${shared[0]}`);
  }
}

const sameList = (what: string, got: string[], expected: string[]) => {
  if (got.length !== expected.length || got.some((uid, i) => uid !== expected[i])) {
    throw new BenchError(
      `${what}: answered ${JSON.stringify(got)}, expected ${JSON.stringify(expected)} (interface 4.4/4.5 in plain SQL)`,
    );
  }
};

async function verifySearch(raw: unknown, ctx: RemitContext, q: string | null, request: RequestSpec) {
  const items = (raw as { data?: { data?: SearchItem[] } }).data?.data;
  if (!Array.isArray(items)) throw new BenchError(`no data.data in ${JSON.stringify(raw).slice(0, 200)}`);
  if (items.length === 0) throw new BenchError('the search answered no items');
  const share = Math.ceil(SEARCH_LIMIT / SEARCH_TYPES.length);
  const byType: Record<string, string[]> = Object.fromEntries(SEARCH_TYPES.map((t) => [t, []]));
  for (const item of items) {
    const list = byType[item.entity_type];
    if (!list) throw new BenchError(`unknown entity_type ${item.entity_type}`);
    list.push(item.entity_uid);
  }
  if (items.length > SEARCH_LIMIT) throw new BenchError(`${items.length} items, over the limit`);
  const org = ctx.search!.org.organizationUid;
  if (ctx.query) {
    const pattern = q === null ? null : `%${q}%`;
    for (const type of SEARCH_TYPES) {
      const expected = await ctx.query<{ uid: string }>(EXPECTED_SEARCH[type]!, [org, pattern, share]);
      sameList(
        `${type} items`,
        byType[type]!,
        expected.map((r) => r.uid),
      );
    }
    await assertOwnRows(ctx.query, org, byType);
  } else if (q !== null) {
    // PGlite (its data directory is the server's): the labels at least must show the match.
    for (const item of items.filter((i) => i.entity_type === 'invoice' || i.entity_type === 'customer')) {
      if (!`${item.label} ${item.subtitle ?? ''}`.toLowerCase().includes(q)) {
        throw new BenchError(
          `${item.entity_type} ${item.label} (${item.subtitle ?? ''}) does not show "${q}"`,
        );
      }
    }
  }
  await assertDisjoint(
    ctx,
    request,
    items.map((i) => i.entity_uid),
  );
  return {
    items: items.length,
    invoices: byType.invoice!.length,
    customers: byType.customer!.length,
    tasks: byType.task!.length,
    expected_checked: ctx.query ? 'exact (SQL)' : 'labels only',
  };
}

async function verifyContext(raw: unknown, ctx: RemitContext, q: string, request: RequestSpec) {
  const data = (raw as { data?: Record<string, Array<{ uid: string }>> }).data;
  if (!data?.invoices || !data.parties || !data.messages) {
    throw new BenchError(`no invoices/parties/messages in ${JSON.stringify(raw).slice(0, 200)}`);
  }
  const byKind: Record<string, string[]> = {
    invoices: data.invoices.map((r) => r.uid),
    parties: data.parties.map((r) => r.uid),
    messages: data.messages.map((r) => r.uid),
  };
  if (byKind.invoices!.length + byKind.parties!.length === 0) throw new BenchError('no invoices or parties');
  const org = ctx.search!.org.organizationUid;
  if (ctx.query) {
    for (const [kind, sqlText] of Object.entries(EXPECTED_CONTEXT)) {
      const expected = await ctx.query<{ uid: string }>(sqlText, [org, `%${q}%`, CONTEXT_PER_PAGE]);
      sameList(
        kind,
        byKind[kind]!,
        expected.map((r) => r.uid),
      );
    }
    await assertOwnRows(ctx.query, org, byKind);
  }
  await assertDisjoint(ctx, request, Object.values(byKind).flat());
  return {
    invoices: byKind.invoices!.length,
    parties: byKind.parties!.length,
    messages: byKind.messages!.length,
    expected_checked: ctx.query ? 'exact (SQL)' : 'shape only',
  };
}

interface SearchQuerySpec {
  key: string;
  label: string;
  /** Target with one client on PostgreSQL: p99 below this. */
  p99MaxMs?: number;
  /** Its p50 at the largest size at most this many times its p50 at the smallest. */
  maxP50Ratio?: number;
  path: string;
  verify(body: unknown, ctx: RemitContext, request: RequestSpec): Checked | Promise<Checked>;
}

export const SEARCH_QUERIES: SearchQuerySpec[] = [
  {
    key: 'selective',
    label: `search q=${SEARCH_RARE} (≈ 0.2 % of rows), all types`,
    p99MaxMs: 50,
    maxP50Ratio: 2,
    path: `/api/search?q=${SEARCH_RARE}&limit=${SEARCH_LIMIT}`,
    verify: (body, ctx, request) => verifySearch(body, ctx, SEARCH_RARE, request),
  },
  {
    key: 'broad',
    label: `search q=${SEARCH_COMMON} (most rows), all types`,
    p99MaxMs: 300,
    path: `/api/search?q=${SEARCH_COMMON}&limit=${SEARCH_LIMIT}`,
    verify: (body, ctx, request) => verifySearch(body, ctx, SEARCH_COMMON, request),
  },
  {
    key: 'suggest',
    label: 'search mode=suggest, all types',
    path: `/api/search?mode=suggest&limit=${SEARCH_LIMIT}`,
    verify: (body, ctx, request) => verifySearch(body, ctx, null, request),
  },
  {
    key: 'context',
    label: `context-search q=${SEARCH_RARE}`,
    path: `/api/work-tasks/context-search?q=${SEARCH_RARE}`,
    verify: (body, ctx, request) => verifyContext(body, ctx, SEARCH_RARE, request),
  },
];

/** The searches whose statements are planned (EXPLAIN) after the largest PostgreSQL size. */
export const SEARCH_PLANNED = [
  { label: 'selective', q: SEARCH_RARE, share: 2, perPage: CONTEXT_PER_PAGE },
  { label: 'broad', q: SEARCH_COMMON, share: 2, perPage: CONTEXT_PER_PAGE },
  { label: 'suggest', q: null, share: 2, perPage: CONTEXT_PER_PAGE },
];

/** Every search query × client count at each size (PostgreSQL) and at the PGlite size. */
export function searchScenarios(options: {
  sizes: number[];
  otherRows: number;
  pgliteSize: number;
  pgliteOtherRows: number;
}): Scenario[] {
  const runs: Array<{ engine: Engine; size: number; other: number }> = [
    { engine: 'pglite', size: options.pgliteSize, other: options.pgliteOtherRows },
    ...[...options.sizes]
      .sort((a, b) => a - b)
      .map((size) => ({ engine: 'postgres' as const, size, other: options.otherRows })),
  ];
  return runs.flatMap(({ engine, size, other }) =>
    SEARCH_QUERIES.flatMap((q) =>
      SEARCH_CLIENTS.map((clients): Scenario => {
        const request = (ctx: RemitContext): RequestSpec => {
          if (!ctx.search) throw new BenchError('the search organizations are not set up');
          return { method: 'GET', path: q.path, headers: ctx.search.org.auth };
        };
        const targeted = engine === 'postgres' && clients === 1;
        return {
          id: `search-${engine === 'pglite' ? 'pglite-' : ''}${sizeLabel(size)}-${q.key}-c${clients}`,
          title: q.label,
          group: 'search',
          engine,
          connections: clients,
          searchDataset: searchDataset(size, other),
          series: { key: `search-${engine}-${q.key}-c${clients}`, label: q.label, clients },
          prepare: request,
          verify: (body, ctx) => q.verify(body, ctx, request(ctx)),
          ...(targeted && q.p99MaxMs
            ? { latencyTargets: [{ percentile: 'p99' as const, maxMs: q.p99MaxMs }] }
            : {}),
          ...(targeted && q.maxP50Ratio ? { scaling: { maxP50Ratio: q.maxP50Ratio } } : {}),
        };
      }),
    ),
  );
}
