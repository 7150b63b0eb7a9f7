import { and, desc, eq, ilike, ne, or, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn, PgSelect, PgTable } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../platform/db/client.ts';
import { conversations, messages } from '../conversations/conversations.tables.ts';
import { documents } from '../documents/documents.tables.ts';
import { invoices } from '../invoices/invoices.tables.ts';
import { knowledgeDocuments } from '../knowledge/knowledge.tables.ts';
import { parties } from '../parties/parties.tables.ts';
import { organizations } from '../tenancy/tenancy.tables.ts';
import { workTasks } from '../work-tasks/work-tasks.tables.ts';

/** The total as a decimal string; the same expression as the `invoices_total_text_trgm_idx` index. */
const totalText = (totalCents: AnyPgColumn) =>
  sql`(((${totalCents} / 100)::text || '.' || lpad((abs(${totalCents}) % 100)::text, 2, '0')))`;

/** `pattern` is a LIKE pattern with the user's wildcards escaped, or null in suggest mode (no filter). */
type Pattern = string | null;
const anyOf = (pattern: string, columns: (SQL | AnyPgColumn)[]) =>
  or(...columns.map((c) => ilike(c, pattern)))!;

/** Newest first by `key`, `uid` breaking ties: exactly the order of the type's recency index. */
const newestFirst = (key: AnyPgColumn, uid: AnyPgColumn) => [
  sql`${key} desc nulls last`,
  sql`${uid} desc nulls last`,
];

type Fields = Record<string, AnyPgColumn> & { uid: AnyPgColumn };
/** A selected row: each field's type, nullable unless its column is NOT NULL. */
type RowOf<F extends Fields> = {
  [K in keyof F]: F[K]['_']['notNull'] extends true ? F[K]['_']['data'] : F[K]['_']['data'] | null;
};

/**
 * One searchable type: the rows of an organization (`scope`, on the base table), the fields returned
 * (which include the recency key and `uid`), the recency key (the type's `(organization_uid, key DESC
 * NULLS LAST, uid DESC NULLS LAST)` index), and the text match of interface 4.4 rule 1 (or 4.5).
 * `key` and `match` are given the fields of the table or of a subquery over it.
 */
export interface Source<F extends Fields> {
  table: PgTable;
  fields: F;
  scope(organizationUid: string): SQL;
  key(f: NoInfer<F>): AnyPgColumn;
  match(f: NoInfer<F>, pattern: string): SQL;
}
const source = <F extends Fields>(s: Source<F>): Source<F> => s;

/** Rows the first step reads: the newest 50 per result wanted, at least 200 (a share of 2: 200). */
export const recentWindow = (limit: number) => Math.max(200, 50 * limit);
/**
 * Rows the second step covers: the newest 1,000 per result wanted, between 2,000 and 20,000 (a term in
 * 0.2 % of the rows has ≈ 2 × `limit` matches there; past some 20,000 rows, intersecting with the
 * index range stops paying and the planner drops it).
 */
export const wideWindow = (limit: number) => Math.min(20_000, Math.max(2000, 1000 * limit));

/**
 * The statements of one type's search, newest matches first. Which plan is fast depends on how many
 * rows match, which the planner can only guess (it estimates `ILIKE '%…%'` from the pattern's length,
 * not from the trigram index): walking the recency index and filtering is instant when most rows match
 * but reads the whole organization when none does; the trigram (GIN) bitmap is instant when few rows
 * match but must visit every match (of every organization) to sort them by date. So a search looks at
 * growing prefixes of the recency order, each step's plan bounded by its shape, and stops at the first
 * that holds `limit` matches (a prefix's first matches are the answer):
 *
 * 1. `first`: the newest `recentWindow(limit)` rows (a bounded walk of the recency index), filtered;
 *    beside them, in the same statement, how many of the newest `wideWindow(limit)` rows there are
 *    (and how many have a key) and the oldest key among them (the edge; an index-only walk). Broad queries end here whatever the size
 *    of the organization, and so do types where the organization has fewer rows than the first window.
 * 2. `wide(edge)`: the matches with a key at least the edge, passed as a value so the planner sees the
 *    range: it intersects the trigram bitmap with the recency index range (BitmapAnd) and visits only
 *    matches inside the window. Selective queries end here, and so does every query where the
 *    organization has fewer rows than the wide window (the edge then covers them all).
 * 3. `all`: every match through the trigram indexes, then sorted (rare terms on a large organization).
 *
 * In steps 2 and 3, `OFFSET 0` keeps the matching in a subquery the planner cannot merge with the
 * outer ORDER BY … LIMIT: it is planned for all its rows (a bitmap), never as a walk of the recency
 * index that bets on finding `limit` matches early (unbounded in step 3).
 *
 * Suggest mode (no pattern) is one walk of the recency index. The steps are separate statements: a
 * single statement would hide the edge from the planner (no range to intersect), and its estimated
 * cost would include step 3's, which for a short pattern on a large table passes PostgreSQL's
 * `jit_above_cost` (JIT compilation then costs 20–80 ms per request).
 */
export function searchQueries<F extends Fields>(
  db: DbOrTx,
  source: Source<F>,
  organizationUid: string,
  pattern: Pattern,
  limit: number,
  /** More rows to leave out: the invoice access rule for a member (invoice-access.ts). */
  visible?: SQL,
) {
  const { table, fields } = source;
  // Typed loosely inside (drizzle's builder types do not resolve over a generic selection); the rows
  // are typed by `find`.
  const select = (selection: Record<string, unknown>) =>
    db.select(selection as Fields).from(table) as unknown as PgSelect;
  // All the fields of a subquery, named as the table's (`"recent"."uid"`, …).
  const from = (subquery: unknown) => db.select().from(subquery as PgTable) as unknown as PgSelect;
  const order = (f: F) => newestFirst(source.key(f), f.uid);
  const scope = visible ? and(source.scope(organizationUid), visible)! : source.scope(organizationUid);
  if (pattern === null) {
    const newest = select(fields)
      .where(scope)
      .orderBy(...order(fields))
      .limit(limit);
    return { first: null, newest, wide: null, all: null };
  }
  const key = source.key(fields);

  // Step 1: the wide window's size and edge (one row) ⟕ the matches among the newest rows.
  const wideKeys = select({ key })
    .where(scope)
    .orderBy(...order(fields))
    .limit(wideWindow(limit))
    .as('wide_window');
  const windowKey = (wideKeys as unknown as { key: AnyPgColumn }).key;
  const probe = db
    .select({
      rows: sql<number>`count(*)::int`.as('rows'),
      keyed: sql<number>`count(${windowKey})::int`.as('keyed'),
      edge: sql<string | null>`min(${windowKey})::text`.as('edge'),
    })
    .from(wideKeys)
    .as('probe');
  const window = select(fields)
    .where(scope)
    .orderBy(...order(fields))
    .limit(recentWindow(limit))
    .as('recent');
  const windowFields = window as unknown as F;
  const found = from(window)
    .where(source.match(windowFields, pattern))
    .orderBy(...order(windowFields))
    .limit(limit)
    .as('found');
  const foundFields = found as unknown as F;
  const row = Object.fromEntries(Object.keys(fields).map((name) => [name, foundFields[name]!])) as Record<
    string,
    AnyPgColumn
  >;
  const first = (
    db.select({ rows: probe.rows, keyed: probe.keyed, edge: probe.edge, row }).from(probe) as unknown as {
      leftJoinLateral(subquery: unknown, on: SQL): PgSelect;
    }
  ).leftJoinLateral(found, sql`true`);

  // Steps 2 and 3: the matches (in the window, or all), fenced in a subquery, then sorted.
  const sorted = (where: SQL | undefined) => {
    const matches = select(fields)
      .where(where)
      // drizzle leaves out `offset 0` when given the number 0; the SQL fragment keeps the fence.
      .offset(sql`0` as unknown as number)
      .as('matches');
    return from(matches)
      .orderBy(...order(matches as unknown as F))
      .limit(limit);
  };
  const wide = (edge: string) => sorted(and(scope, sql`${key} >= ${edge}`, source.match(fields, pattern)));
  const all = sorted(and(scope, source.match(fields, pattern)));
  return { first, newest: null, wide, all };
}

async function find<F extends Fields>(
  db: DbOrTx,
  source: Source<F>,
  organizationUid: string,
  pattern: Pattern,
  limit: number,
  visible?: SQL,
): Promise<RowOf<F>[]> {
  const steps = searchQueries(db, source, organizationUid, pattern, limit, visible);
  if (steps.newest) return (await steps.newest) as RowOf<F>[];
  type First = { rows: number; keyed: number; edge: string | null; row: RowOf<F> | null };
  const first = (await steps.first) as First[];
  // No match: one row, the probe's, with the lateral side all null (drizzle gives `row: null`).
  const found = first.flatMap((r) => (r.row && r.row.uid !== null ? [r.row] : []));
  const { rows, keyed, edge } = first[0] ?? { rows: 0, keyed: 0, edge: null };
  // Enough matches, or the first window held every row of the organization.
  if (found.length >= limit || rows < recentWindow(limit)) return found;
  if (edge !== null) {
    const wide = (await steps.wide(edge)) as RowOf<F>[];
    // Enough matches, or the wide window held every row of the organization, none without a key
    // (`key >= edge` leaves those out; they come last).
    if (wide.length >= limit || (rows < wideWindow(limit) && keyed === rows)) return wide;
  }
  return (await steps.all) as RowOf<F>[];
}

// Each source: the organization filter, the match on exactly the fields of interface 4.4 rule 1 (4.5
// for the context search), the recency order of rule 2, and the type's share as the limit.

const invoiceSource = source({
  table: invoices,
  fields: {
    uid: invoices.uid,
    invoiceNumber: invoices.invoiceNumber,
    clientName: invoices.clientName,
    totalCents: invoices.totalCents,
    currency: invoices.currency,
    issueDate: invoices.issueDate,
  },
  scope: (org) => eq(invoices.organizationUid, org),
  key: (f) => f.issueDate,
  match: (f, pattern) => anyOf(pattern, [f.invoiceNumber, f.clientName, totalText(f.totalCents)]),
});

const customerSource = source({
  table: parties,
  fields: { uid: parties.uid, name: parties.name, address: parties.address, updatedAt: parties.updatedAt },
  scope: (org) => and(eq(parties.organizationUid, org), eq(parties.role, 'client'))!,
  key: (f) => f.updatedAt,
  match: (f, pattern) => anyOf(pattern, [f.name, f.address]),
});

const taskSource = source({
  table: workTasks,
  fields: {
    uid: workTasks.uid,
    title: workTasks.title,
    description: workTasks.description,
    status: workTasks.status,
    dueDate: workTasks.dueDate,
    createdAt: workTasks.createdAt,
  },
  scope: (org) => eq(workTasks.organizationUid, org),
  key: (f) => f.createdAt,
  match: (f, pattern) => anyOf(pattern, [f.title, f.description, f.status]),
});

const conversationSource = source({
  table: conversations,
  fields: {
    uid: conversations.uid,
    subject: conversations.subject,
    channel: conversations.channel,
    status: conversations.status,
    createdAt: conversations.createdAt,
  },
  scope: (org) => eq(conversations.organizationUid, org),
  key: (f) => f.createdAt,
  match: (f, pattern) => anyOf(pattern, [f.subject, f.channel, f.status]),
});

const documentSource = source({
  table: documents,
  fields: {
    uid: documents.uid,
    filename: documents.filename,
    documentName: documents.documentName,
    updatedAt: documents.updatedAt,
  },
  scope: (org) => eq(documents.organizationUid, org),
  key: (f) => f.updatedAt,
  match: (f, pattern) => anyOf(pattern, [f.filename, f.documentName]),
});

const knowledgeSource = source({
  table: knowledgeDocuments,
  fields: {
    uid: knowledgeDocuments.uid,
    filename: knowledgeDocuments.filename,
    contentType: knowledgeDocuments.contentType,
    createdAt: knowledgeDocuments.createdAt,
  },
  scope: (org) =>
    and(
      eq(knowledgeDocuments.organizationUid, org),
      // A presign never confirmed is an upload that may never happen, not a document.
      ne(knowledgeDocuments.status, 'presigned'),
    )!,
  key: (f) => f.createdAt,
  match: (f, pattern) => anyOf(pattern, [f.filename]),
});

// ---- work-task context search (interface 4.5) ----

const linkableInvoiceSource = source({
  table: invoices,
  fields: {
    uid: invoices.uid,
    invoiceNumber: invoices.invoiceNumber,
    invoiceType: invoices.invoiceType,
    clientName: invoices.clientName,
    vendorName: invoices.vendorName,
    amountDueCents: invoices.amountDueCents,
    currency: invoices.currency,
    issueDate: invoices.issueDate,
  },
  scope: (org) => eq(invoices.organizationUid, org),
  key: (f) => f.issueDate,
  match: (f, pattern) =>
    or(
      ilike(f.invoiceNumber, pattern),
      // The counterparty: the client of a receivable, the vendor of a payable.
      and(eq(f.invoiceType, 'ACCOUNTS_RECEIVABLE'), ilike(f.clientName, pattern)),
      and(eq(f.invoiceType, 'ACCOUNTS_PAYABLE'), ilike(f.vendorName, pattern)),
    )!,
});

const linkablePartySource = source({
  table: parties,
  fields: { uid: parties.uid, name: parties.name, updatedAt: parties.updatedAt },
  scope: (org) => eq(parties.organizationUid, org),
  key: (f) => f.updatedAt,
  match: (f, pattern) => ilike(f.name, pattern),
});

const linkableMessageSource = source({
  table: messages,
  fields: {
    uid: messages.uid,
    subject: messages.subject,
    fromEmail: messages.fromEmail,
    createdAt: messages.createdAt,
  },
  scope: (org) => eq(messages.organizationUid, org),
  key: (f) => f.createdAt,
  match: (f, pattern) => anyOf(pattern, [f.subject, f.fromEmail]),
});

/** Every source by name (the bench plans their statements: bench/lib/search-explain.ts). */
export const SEARCH_SOURCES = {
  invoice: invoiceSource,
  customer: customerSource,
  task: taskSource,
  conversation: conversationSource,
  document: documentSource,
  knowledge: knowledgeSource,
} as const;
export const CONTEXT_SOURCES = {
  invoice: linkableInvoiceSource,
  party: linkablePartySource,
  message: linkableMessageSource,
} as const;

export const findInvoices = (db: DbOrTx, org: string, pattern: Pattern, limit: number, visible?: SQL) =>
  find(db, invoiceSource, org, pattern, limit, visible);
export const findCustomers = (db: DbOrTx, org: string, pattern: Pattern, limit: number) =>
  find(db, customerSource, org, pattern, limit);
export const findTasks = (db: DbOrTx, org: string, pattern: Pattern, limit: number) =>
  find(db, taskSource, org, pattern, limit);
export const findConversations = (db: DbOrTx, org: string, pattern: Pattern, limit: number) =>
  find(db, conversationSource, org, pattern, limit);
export const findDocuments = (db: DbOrTx, org: string, pattern: Pattern, limit: number) =>
  find(db, documentSource, org, pattern, limit);
export const findKnowledge = (db: DbOrTx, org: string, pattern: Pattern, limit: number) =>
  find(db, knowledgeSource, org, pattern, limit);

export const findLinkableInvoices = (
  db: DbOrTx,
  org: string,
  pattern: string,
  limit: number,
  visible?: SQL,
) => find(db, linkableInvoiceSource, org, pattern, limit, visible);
export const findLinkableParties = (db: DbOrTx, org: string, pattern: string, limit: number) =>
  find(db, linkablePartySource, org, pattern, limit);
export const findLinkableMessages = (db: DbOrTx, org: string, pattern: string, limit: number) =>
  find(db, linkableMessageSource, org, pattern, limit);

// ---- extracted text (docs/knowledge.md#full-text-search) ----

/**
 * `q` as a `websearch_to_tsquery` in the organization's search language, one row to cross-join: the
 * query is computed once and probes the (organization_uid, search_vector) GIN index.
 */
const textQuery = (organizationUid: string, q: string) =>
  sql`(select websearch_to_tsquery(o.search_language::regconfig, ${q}) as query
       from ${organizations} o where o.uid = ${organizationUid}) tq`;

/**
 * Knowledge documents whose extracted text matches `q`, best first (`ts_rank_cd`, then newest): beside
 * the filename match of interface 4.4 rule 1. Only `ready` documents have a vector.
 */
export async function findKnowledgeByText(db: DbOrTx, org: string, q: string, limit: number) {
  const k = knowledgeDocuments;
  return db
    .select({ uid: k.uid, filename: k.filename, contentType: k.contentType, createdAt: k.createdAt })
    .from(k)
    .innerJoin(textQuery(org, q), sql`true`)
    .where(
      and(
        eq(k.organizationUid, org),
        eq(k.status, 'ready'),
        sql`${k}.search_vector is not null and ${k}.search_vector @@ tq.query`,
      ),
    )
    .orderBy(sql`ts_rank_cd(${k}.search_vector, tq.query, 1) desc`, desc(k.createdAt), desc(k.uid))
    .limit(limit);
}

/** Documents whose extracted text matches `q`, best first, then most recently modified. */
export async function findDocumentsByText(db: DbOrTx, org: string, q: string, limit: number) {
  const d = documents;
  return db
    .select({ uid: d.uid, filename: d.filename, documentName: d.documentName, updatedAt: d.updatedAt })
    .from(d)
    .innerJoin(textQuery(org, q), sql`true`)
    .where(
      and(eq(d.organizationUid, org), sql`${d}.search_vector is not null and ${d}.search_vector @@ tq.query`),
    )
    .orderBy(sql`ts_rank_cd(${d}.search_vector, tq.query, 1) desc`, desc(d.updatedAt), desc(d.uid))
    .limit(limit);
}
