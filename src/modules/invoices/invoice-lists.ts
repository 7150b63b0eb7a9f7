import { getTableColumns } from 'drizzle-orm';
import { and, asc, count, desc, eq, gte, ilike, inArray, lt, lte, or, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { badParameter } from '../../platform/http/errors.ts';
import { parseInstantRange } from '../../platform/http/date-range.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { containsPattern } from '../../platform/db/text-search.ts';
import { rawQuery } from '../../platform/db/client.ts';
import { statusesFor, type InvoiceType } from './invoice-statuses.ts';
import { loadInvoiceViews, toListItemView } from './invoice-view.ts';
import { invoices } from './invoices.tables.ts';
import { visibleInOrganization } from './invoice-access.ts';
import type { InvoiceRow } from './invoices.repository.ts';
import { withTextSearchIndexes } from '../../platform/db/session-role.ts';

export const SORT_KEYS = {
  due_date: invoices.dueDate,
  issue_date: invoices.issueDate,
  status: invoices.status,
  invoice_number: invoices.invoiceNumber,
  document_type: invoices.documentType,
  stamp_number: invoices.stampNumber,
  vendor_name: invoices.vendorName,
  vendor_nit: invoices.vendorNit,
  received_date: invoices.receivedDate,
  amount_due: invoices.amountDueCents,
  approved_by: invoices.approvedBy,
  approval_date: invoices.approvalDate,
  registered_by: invoices.registeredBy,
  registration_date: invoices.registrationDate,
  registration_number: invoices.registrationNumber,
  has_comments: invoices.hasComments,
} as const;
export type SortKey = keyof typeof SORT_KEYS;

export interface InvoiceListQuery {
  view?: 'list' | undefined;
  sort_by?: SortKey | undefined;
  sort_order?: 'asc' | 'desc' | undefined;
  status?: string | undefined;
  due_date?: string | undefined;
  due_date_from?: string | undefined;
  due_date_to?: string | undefined;
  issue_date?: string | undefined;
  issue_date_from?: string | undefined;
  issue_date_to?: string | undefined;
  received_date?: string | undefined;
  received_date_from?: string | undefined;
  received_date_to?: string | undefined;
  document_type?: string | undefined;
  invoice_number?: string | undefined;
  stamp_number?: string | undefined;
  vendor_nit?: string | undefined;
  vendor_name?: string | undefined;
  include_comments?: boolean | undefined;
  has_comments?: boolean | undefined;
  keyword?: string | undefined;
  client_uid?: string | undefined;
  approval_date_from?: string | undefined;
  approval_date_to?: string | undefined;
  registration_date_from?: string | undefined;
  registration_date_to?: string | undefined;
  approved_by?: string | undefined;
  registered_by?: string | undefined;
  responsible?: string | undefined;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

function instant(name: string, value: string): Date {
  const d = new Date(DATE_ONLY.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(d.getTime()))
    throw badParameter(name, 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time');
  return d;
}

type TimeColumn = typeof invoices.dueDate;

/**
 * `x` (that UTC day), `x_from` and `x_to` (inclusive; a bare date as `_to` includes that whole day).
 */
function dateConditions(column: TimeColumn, name: string, q: Record<string, string | undefined>): SQL[] {
  const out: SQL[] = [];
  const exact = q[name];
  if (exact) {
    const start = instant(name, exact);
    const day = new Date(Math.floor(start.getTime() / DAY_MS) * DAY_MS);
    out.push(gte(column, day), lt(column, new Date(day.getTime() + DAY_MS)));
  }
  const range = parseInstantRange(
    q[`${name}_from`] || undefined,
    q[`${name}_to`] || undefined,
    `${name}_from`,
  );
  if (range.from) out.push(gte(column, range.from));
  if (range.until) out.push(lte(column, range.until));
  if (range.before) out.push(lt(column, range.before));
  return out;
}

function commaList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** User filters take integer user ids or user uids, comma-separated. */
async function userIdFilter(
  db: Db,
  organizationUid: string,
  name: string,
  value: string | undefined,
): Promise<number[] | undefined> {
  const parts = commaList(value);
  if (parts.length === 0) return undefined;
  const ids: number[] = [];
  const uids: string[] = [];
  for (const part of parts) {
    if (/^\d{1,10}$/.test(part)) {
      // User ids are 32-bit integers: a larger number names no user. Sent to the integer columns as is
      // it made PostgreSQL fail ("out of range for type integer") and the list answer 500.
      if (Number(part) <= 2_147_483_647) ids.push(Number(part));
    } else if (/^[0-9a-f-]{36}$/i.test(part)) uids.push(part.toLowerCase());
    else throw badParameter(name, 'must be user ids (integers or uids), comma-separated');
  }
  if (uids.length > 0) {
    const found = await rawQuery<{ id: number }>(
      db,
      `select u.id from users u join memberships m on m.user_uid = u.uid
        where m.organization_uid = $1 and u.uid = any($2::uuid[])`,
      [organizationUid, uids],
    );
    ids.push(...found.map((f) => f.id));
  }
  return ids.length > 0 ? ids : [-1];
}

async function conditionsFor(
  db: Db,
  ctx: RequestContext,
  type: InvoiceType,
  q: InvoiceListQuery,
): Promise<SQL> {
  const conditions: (SQL | undefined)[] = [
    eq(invoices.organizationUid, ctx.organizationUid),
    eq(invoices.invoiceType, type),
  ];
  // The one access rule (invoice-access.ts): admins see every invoice; members those assigned to them.
  const visible = visibleInOrganization(db, ctx);
  if (visible) conditions.push(visible);
  const statuses = commaList(q.status);
  if (statuses.length > 0) {
    const allowed = statusesFor(type);
    const unknown = statuses.filter((s) => !allowed.includes(s));
    if (unknown.length > 0)
      throw badParameter('status', `unknown status ${unknown.join(', ')}; one of ${allowed.join(', ')}`);
    conditions.push(
      statuses.length === 1 ? eq(invoices.status, statuses[0]!) : inArray(invoices.status, statuses),
    );
  }
  const dates = q as Record<string, string | undefined>;
  conditions.push(...dateConditions(invoices.dueDate, 'due_date', dates));
  conditions.push(...dateConditions(invoices.issueDate, 'issue_date', dates));
  conditions.push(...dateConditions(invoices.receivedDate, 'received_date', dates));
  conditions.push(...dateConditions(invoices.approvalDate, 'approval_date', dates));
  conditions.push(...dateConditions(invoices.registrationDate, 'registration_date', dates));
  const text: [string | undefined, AnyPgColumn][] = [
    [q.document_type, invoices.documentType],
    [q.invoice_number, invoices.invoiceNumber],
    [q.stamp_number, invoices.stampNumber],
    [q.vendor_nit, invoices.vendorNit],
    [q.vendor_name, invoices.vendorName],
  ];
  for (const [value, column] of text)
    if (value?.trim()) conditions.push(ilike(column, containsPattern(value.trim())));
  if (q.has_comments !== undefined) conditions.push(eq(invoices.hasComments, q.has_comments));
  if (q.client_uid) conditions.push(eq(invoices.clientPartyUid, q.client_uid));
  if (q.keyword?.trim()) {
    const pattern = containsPattern(q.keyword.trim());
    conditions.push(
      or(
        ilike(invoices.invoiceNumber, pattern),
        // A receivable is found by its client's name (the party name copied onto the invoice).
        type === 'ACCOUNTS_RECEIVABLE' ? ilike(invoices.clientName, pattern) : undefined,
        ilike(invoices.vendorName, pattern),
        ilike(invoices.vendorNit, pattern),
        ilike(invoices.stampNumber, pattern),
        ilike(invoices.registrationNumber, pattern),
      ),
    );
  }
  const approvedBy = await userIdFilter(db, ctx.organizationUid, 'approved_by', q.approved_by);
  if (approvedBy) conditions.push(inArray(invoices.approvedBy, approvedBy));
  const registeredBy = await userIdFilter(db, ctx.organizationUid, 'registered_by', q.registered_by);
  if (registeredBy) conditions.push(inArray(invoices.registeredBy, registeredBy));
  const responsible = await userIdFilter(db, ctx.organizationUid, 'responsible', q.responsible);
  if (responsible) conditions.push(inArray(invoices.responsible, responsible));
  return and(...conditions)!;
}

// Query parameters that do not narrow the set of invoices.
const NOT_FILTERS = new Set([
  'view',
  'sort_by',
  'sort_order',
  'include_comments',
  'page',
  'per_page',
  'status',
]);

/**
 * Exact `total_items`. With no filter but the status (and an admin, who sees all), the trigger-kept
 * invoice_counts answer in a few row reads at any size; anything narrower is counted directly.
 */
async function countInvoices(
  db: Db,
  ctx: RequestContext,
  type: InvoiceType,
  q: InvoiceListQuery,
  where: SQL,
): Promise<number> {
  const narrowed = Object.entries(q).some(
    ([key, value]) => !NOT_FILTERS.has(key) && value !== undefined && value !== '',
  );
  if (ctx.role === 'admin' && !narrowed) {
    const statuses = commaList(q.status);
    const [row] = await rawQuery<{ total: number }>(
      db,
      `select coalesce(sum(n), 0)::bigint as total from invoice_counts
        where organization_uid = $1 and invoice_type = $2 and ($3::text[] is null or status = any($3::text[]))`,
      [ctx.organizationUid, type, statuses.length > 0 ? statuses : null],
    );
    return Number(row?.total ?? 0);
  }
  const [totals] = await db.select({ total: count() }).from(invoices).where(where);
  return Number(totals?.total ?? 0);
}

/**
 * The AP (and AR) list: one page, sorted by the chosen key with the uid as a stable tiebreak in the
 * same direction, so equal keys never swap places between pages.
 */
export async function listInvoices(
  db: Db,
  ctx: RequestContext,
  type: InvoiceType,
  q: InvoiceListQuery,
  page: PageRequest,
) {
  const textFiltered = [
    q.document_type,
    q.invoice_number,
    q.stamp_number,
    q.vendor_nit,
    q.vendor_name,
    q.keyword,
  ].some((value) => value?.trim());
  return withTextSearchIndexes(textFiltered, () => listInvoicesAs(db, ctx, type, q, page));
}

async function listInvoicesAs(
  db: Db,
  ctx: RequestContext,
  type: InvoiceType,
  q: InvoiceListQuery,
  page: PageRequest,
) {
  const where = await conditionsFor(db, ctx, type, q);
  const column = SORT_KEYS[q.sort_by ?? 'issue_date'];
  const direction = (q.sort_order ?? 'desc') === 'asc' ? asc : desc;
  const order = [direction(column), direction(invoices.uid)];
  const offset = offsetOf(page);
  let rows: InvoiceRow[];
  if (offset === 0) {
    rows = await db
      .select()
      .from(invoices)
      .where(where)
      .orderBy(...order)
      .limit(page.perPage);
  } else {
    // Deep pages, keys first (docs/performance.md#1-deep-pages-keys-first): the page's uids from the
    // sort index alone — every condition, the organization and the access rule included, stays in this
    // inner select, so an index-only scan skips `offset` entries without visiting the table — then just
    // those rows by primary key, in the same order. Page 200 costs about what page 1 does.
    const keys = db
      .select({ uid: invoices.uid })
      .from(invoices)
      .where(where)
      .orderBy(...order)
      .limit(page.perPage)
      .offset(offset)
      .as('page_keys');
    rows = await db
      .select(getTableColumns(invoices))
      .from(invoices)
      .innerJoin(keys, eq(keys.uid, invoices.uid))
      // Redundant with the keys: kept so this statement too names its organization (docs/security.md).
      .where(eq(invoices.organizationUid, ctx.organizationUid))
      .orderBy(...order);
  }
  const total = await countInvoices(db, ctx, type, q, where);
  if (q.view === 'list') return { items: rows.map(toListItemView), total };
  const items = await loadInvoiceViews(db, ctx.organizationUid, rows, {
    includeComments: q.include_comments === true,
  });
  return { items, total };
}
