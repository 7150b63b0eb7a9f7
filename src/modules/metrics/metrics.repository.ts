import { and, asc, count, eq, gte, inArray, isNotNull, lt, lte, max, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../platform/db/client.ts';
import { invoicePayments, invoices } from '../invoices/invoices.tables.ts';
import { parties } from '../parties/parties.tables.ts';
import { memberships, organizations } from '../tenancy/tenancy.tables.ts';
import type { ReceivableInvoice } from './metric-formulas.ts';
import { metricDefinitions, metricPresetStates, metricValues } from './metrics.tables.ts';

export type DefinitionRow = typeof metricDefinitions.$inferSelect;
export type ValueRow = typeof metricValues.$inferSelect;
type ContextType = DefinitionRow['contextType'];
type TimeUnit = ValueRow['timeUnit'];

/** A value with the definition fields its view copies (name, period, value type, storage unit). */
export interface ValueWithDefinition {
  value: ValueRow;
  definition: Pick<DefinitionRow, 'name' | 'periodDefinition' | 'valueType' | 'storageUnit'>;
}

// ---- definitions ----

export async function insertDefinition(
  db: DbOrTx,
  values: typeof metricDefinitions.$inferInsert,
): Promise<DefinitionRow> {
  const [row] = await db.insert(metricDefinitions).values(values).returning();
  return row!;
}

export async function findDefinition(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<DefinitionRow | undefined> {
  const [row] = await db
    .select()
    .from(metricDefinitions)
    .where(and(eq(metricDefinitions.organizationUid, organizationUid), eq(metricDefinitions.uid, uid)));
  return row;
}

export async function updateDefinition(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<Pick<DefinitionRow, 'name' | 'description' | 'formula' | 'isActive'>>,
): Promise<DefinitionRow | undefined> {
  const [row] = await db
    .update(metricDefinitions)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(metricDefinitions.organizationUid, organizationUid), eq(metricDefinitions.uid, uid)))
    .returning();
  return row;
}

export async function listDefinitions(
  db: DbOrTx,
  organizationUid: string,
  options: {
    contextType?: ContextType | undefined;
    isActive?: boolean | undefined;
    limit: number;
    offset: number;
  },
): Promise<{ rows: DefinitionRow[]; total: number }> {
  const conditions: (SQL | undefined)[] = [eq(metricDefinitions.organizationUid, organizationUid)];
  if (options.contextType) conditions.push(eq(metricDefinitions.contextType, options.contextType));
  if (options.isActive !== undefined) conditions.push(eq(metricDefinitions.isActive, options.isActive));
  const where = and(...conditions);
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(metricDefinitions)
      .where(where)
      .orderBy(asc(metricDefinitions.createdAt), asc(metricDefinitions.uid))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(metricDefinitions).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

/** Inserts the definitions whose uid is still free in the organization; the uids it inserted. */
export async function insertDefinitionsIfAbsent(
  db: DbOrTx,
  rows: (typeof metricDefinitions.$inferInsert)[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await db
    .insert(metricDefinitions)
    .values(rows)
    .onConflictDoNothing({ target: [metricDefinitions.organizationUid, metricDefinitions.uid] })
    .returning({ uid: metricDefinitions.uid });
  return inserted.map((r) => r.uid);
}

export async function findDefinitionsByUids(
  db: DbOrTx,
  organizationUid: string,
  uids: string[],
): Promise<DefinitionRow[]> {
  if (uids.length === 0) return [];
  return db
    .select()
    .from(metricDefinitions)
    .where(and(eq(metricDefinitions.organizationUid, organizationUid), inArray(metricDefinitions.uid, uids)));
}

/** Active definitions that name a preset formula: what the daily job computes. */
export async function listActivePresetDefinitions(
  db: DbOrTx,
  organizationUid: string,
): Promise<DefinitionRow[]> {
  return db
    .select()
    .from(metricDefinitions)
    .where(
      and(
        eq(metricDefinitions.organizationUid, organizationUid),
        isNotNull(metricDefinitions.preset),
        eq(metricDefinitions.isActive, true),
      ),
    )
    .orderBy(asc(metricDefinitions.uid));
}

/** Every organization with at least one active preset definition (the daily job's work list). */
export async function organizationsWithActivePresets(db: DbOrTx): Promise<string[]> {
  const rows = await db
    .selectDistinct({ organizationUid: metricDefinitions.organizationUid })
    .from(metricDefinitions)
    .where(and(isNotNull(metricDefinitions.preset), eq(metricDefinitions.isActive, true)))
    .orderBy(asc(metricDefinitions.organizationUid));
  return rows.map((r) => r.organizationUid);
}

export async function organizationExists(db: DbOrTx, organizationUid: string): Promise<boolean> {
  const [row] = await db
    .select({ uid: organizations.uid })
    .from(organizations)
    .where(eq(organizations.uid, organizationUid));
  return row !== undefined;
}

// ---- values ----

const selectValueWithDefinition = (db: DbOrTx) =>
  db
    .select({
      value: metricValues,
      definition: {
        name: metricDefinitions.name,
        periodDefinition: metricDefinitions.periodDefinition,
        valueType: metricDefinitions.valueType,
        storageUnit: metricDefinitions.storageUnit,
      },
    })
    .from(metricValues)
    .innerJoin(
      metricDefinitions,
      and(
        eq(metricDefinitions.organizationUid, metricValues.organizationUid),
        eq(metricDefinitions.uid, metricValues.metricUid),
      ),
    );

export async function insertValue(db: DbOrTx, values: typeof metricValues.$inferInsert): Promise<ValueRow> {
  const [row] = await db.insert(metricValues).values(values).returning();
  return row!;
}

export async function findValue(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<ValueWithDefinition | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await selectValueWithDefinition(db).where(
    and(inArray(metricValues.organizationUid, organizationUids), eq(metricValues.uid, uid)),
  );
  return row;
}

export async function updateValue(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<Pick<ValueRow, 'value' | 'metadata' | 'timezone'>>,
): Promise<void> {
  await db
    .update(metricValues)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(metricValues.organizationUid, organizationUid), eq(metricValues.uid, uid)));
}

export async function listValues(
  db: DbOrTx,
  organizationUid: string,
  metricUid: string,
  options: {
    entityUid?: string | undefined;
    timeUnit?: TimeUnit | undefined;
    from?: string | undefined;
    to?: string | undefined;
    limit: number;
    offset: number;
  },
): Promise<{ rows: ValueWithDefinition[]; total: number }> {
  const conditions: (SQL | undefined)[] = [
    eq(metricValues.organizationUid, organizationUid),
    eq(metricValues.metricUid, metricUid),
  ];
  if (options.entityUid) conditions.push(eq(metricValues.entityUid, options.entityUid));
  if (options.timeUnit) conditions.push(eq(metricValues.timeUnit, options.timeUnit));
  if (options.from) conditions.push(gte(metricValues.metricDate, options.from));
  if (options.to) conditions.push(lte(metricValues.metricDate, options.to));
  const where = and(...conditions);
  const [rows, totals] = await Promise.all([
    selectValueWithDefinition(db)
      .where(where)
      .orderBy(
        asc(metricValues.metricDate),
        asc(metricValues.entityUid),
        asc(metricValues.timeUnit),
        asc(metricValues.uid),
      )
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(metricValues).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

/**
 * Whether the entity a value is about exists in the organization: the organization itself, one of its
 * parties, or one of its members.
 */
export async function entityExists(
  db: DbOrTx,
  organizationUid: string,
  contextType: ContextType,
  entityUid: string,
): Promise<boolean> {
  if (contextType === 'ORGANIZATION') {
    return entityUid === organizationUid && (await organizationExists(db, organizationUid));
  }
  if (contextType === 'PARTY') {
    const [row] = await db
      .select({ uid: parties.uid })
      .from(parties)
      .where(and(eq(parties.organizationUid, organizationUid), eq(parties.uid, entityUid)));
    return row !== undefined;
  }
  const [row] = await db
    .select({ uid: memberships.userUid })
    .from(memberships)
    .where(and(eq(memberships.organizationUid, organizationUid), eq(memberships.userUid, entityUid)));
  return row !== undefined;
}

/**
 * Writes preset snapshot values: the job owns these series, so a value already stored for the same
 * (entity, metric, time unit, date) is replaced, which makes a re-run idempotent.
 */
export async function upsertValues(db: DbOrTx, rows: (typeof metricValues.$inferInsert)[]): Promise<number> {
  let written = 0;
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await db
      .insert(metricValues)
      .values(chunk)
      .onConflictDoUpdate({
        target: [
          metricValues.organizationUid,
          metricValues.entityUid,
          metricValues.metricUid,
          metricValues.timeUnit,
          metricValues.metricDate,
        ],
        set: {
          value: sql`excluded.value`,
          metadata: sql`excluded.metadata`,
          timezone: sql`excluded.timezone`,
          updatedAt: sql`now()`,
        },
      });
    written += chunk.length;
  }
  return written;
}

// ---- preset inputs (read from the invoices tables; see docs/metrics.md) ----

const RECEIVABLE_STATUSES = ['open', 'paid'];
/** The UTC calendar day of a timestamp column, `YYYY-MM-DD`. */
const utcDay = <T extends string | null = string>(column: SQL | AnyPgColumn) =>
  sql<T>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD')`;

/** Start of a UTC day as a timestamptz parameter. */
const startOf = (day: string) => sql`${`${day}T00:00:00Z`}::timestamptz`;

/**
 * The receivable invoices that may be outstanding at the end of `endDay` or of `beginningDay`: issued
 * by `endDay`, and not a paid invoice settled by `beginningDay`. Each with its payments made by
 * `endDay`.
 */
export async function loadReceivableInvoices(
  db: DbOrTx,
  organizationUid: string,
  window: { beginningDay: string; endDay: string; dayAfterEnd: string; dayAfterBeginning: string },
): Promise<ReceivableInvoice[]> {
  const settled = sql`coalesce(${invoices.paidDate}, ${invoices.updatedAt})`;
  const candidate = and(
    eq(invoices.organizationUid, organizationUid),
    eq(invoices.invoiceType, 'ACCOUNTS_RECEIVABLE'),
    inArray(invoices.status, RECEIVABLE_STATUSES),
    isNotNull(invoices.issueDate),
    sql`${invoices.issueDate} < ${startOf(window.dayAfterEnd)}`,
    sql`not (${invoices.status} = 'paid' and ${settled} < ${startOf(window.dayAfterBeginning)})`,
  );
  const rows = await db
    .select({
      uid: invoices.uid,
      clientPartyUid: invoices.clientPartyUid,
      status: invoices.status,
      issuedOn: utcDay<string>(invoices.issueDate),
      dueOn: utcDay<string | null>(invoices.dueDate),
      settledOn: utcDay<string>(settled),
      amountDueCents: invoices.amountDueCents,
    })
    .from(invoices)
    .where(candidate);
  if (rows.length === 0) return [];
  const payments = await db
    .select({
      invoiceUid: invoicePayments.invoiceUid,
      paidOn: utcDay<string>(invoicePayments.paidAt),
      // Net of refunds, dated with the payment; a voided payment (a mistake) never happened.
      amountCents: sql<number>`${invoicePayments.amountCents} - ${invoicePayments.amountRefundedCents}`,
    })
    .from(invoicePayments)
    .innerJoin(
      invoices,
      and(
        eq(invoices.organizationUid, invoicePayments.organizationUid),
        eq(invoices.uid, invoicePayments.invoiceUid),
      ),
    )
    .where(
      and(
        eq(invoicePayments.organizationUid, organizationUid),
        sql`${invoicePayments.status} <> 'voided'`,
        sql`${invoicePayments.paidAt} < ${startOf(window.dayAfterEnd)}`,
        candidate,
      ),
    );
  const byInvoice = new Map<string, ReceivableInvoice['payments']>();
  for (const p of payments) {
    const list = byInvoice.get(p.invoiceUid) ?? [];
    list.push({ paidOn: p.paidOn, amountCents: Number(p.amountCents) });
    byInvoice.set(p.invoiceUid, list);
  }
  return rows.map((r) => ({
    uid: r.uid,
    clientPartyUid: r.clientPartyUid,
    issuedOn: r.issuedOn,
    dueOn: r.dueOn,
    amountDueCents: Number(r.amountDueCents),
    settledOn: r.status === 'paid' ? r.settledOn : null,
    payments: byInvoice.get(r.uid) ?? [],
  }));
}

/**
 * Credit sales per client and month: Σ amount_due_cents of receivable invoices issued from `fromDay` up
 * to `endDay`, grouped by client party (null: none) and `YYYY-MM` (UTC).
 */
export async function loadMonthlySales(
  db: DbOrTx,
  organizationUid: string,
  range: { fromDay: string; dayAfterEnd: string },
): Promise<{ clientPartyUid: string | null; month: string; salesCents: number }[]> {
  const month = sql<string>`to_char(${invoices.issueDate} at time zone 'UTC', 'YYYY-MM')`;
  const rows = await db
    .select({
      clientPartyUid: invoices.clientPartyUid,
      month,
      salesCents: sql<string>`sum(${invoices.amountDueCents})`,
    })
    .from(invoices)
    .where(
      and(
        eq(invoices.organizationUid, organizationUid),
        eq(invoices.invoiceType, 'ACCOUNTS_RECEIVABLE'),
        inArray(invoices.status, RECEIVABLE_STATUSES),
        sql`${invoices.issueDate} >= ${startOf(range.fromDay)}`,
        sql`${invoices.issueDate} < ${startOf(range.dayAfterEnd)}`,
      ),
    )
    .groupBy(invoices.clientPartyUid, month);
  return rows.map((r) => ({
    clientPartyUid: r.clientPartyUid,
    month: r.month,
    salesCents: Number(r.salesCents),
  }));
}

/** Clients with at least one receivable invoice issued by `endDay`: the entities of PARTY presets. */
export async function listBilledClients(
  db: DbOrTx,
  organizationUid: string,
  dayAfterEnd: string,
): Promise<string[]> {
  const rows = await db
    .selectDistinct({ uid: invoices.clientPartyUid })
    .from(invoices)
    .where(
      and(
        eq(invoices.organizationUid, organizationUid),
        eq(invoices.invoiceType, 'ACCOUNTS_RECEIVABLE'),
        inArray(invoices.status, RECEIVABLE_STATUSES),
        isNotNull(invoices.clientPartyUid),
        sql`${invoices.issueDate} < ${startOf(dayAfterEnd)}`,
      ),
    )
    .orderBy(asc(invoices.clientPartyUid));
  return rows.map((r) => r.uid!);
}

// ---- when preset values need work (metric_preset_states; docs/metrics.md) ----

/**
 * Whether a refresh of the organization's presets is already asked for (set less than `maxAgeSeconds`
 * ago) and not yet started. When it is, the row is share-locked until the caller's transaction ends:
 * the refresh job clears the request with an UPDATE, which waits for every such lock, so a change
 * that relied on the pending refresh has committed before the refresh reads the invoices. Share locks
 * do not conflict with each other, so concurrent changes never wait on one another here.
 */
export async function holdPendingRefresh(
  tx: DbOrTx,
  organizationUid: string,
  maxAgeSeconds: number,
): Promise<boolean> {
  const rows = await tx
    .select({ organizationUid: metricPresetStates.organizationUid })
    .from(metricPresetStates)
    .where(
      and(
        eq(metricPresetStates.organizationUid, organizationUid),
        sql`${metricPresetStates.refreshRequestedAt} > now() - make_interval(secs => ${maxAgeSeconds})`,
      ),
    )
    .for('share');
  return rows.length > 0;
}

/**
 * Asks for a refresh unless one is already asked for (and younger than `maxAgeSeconds`: an older one
 * is presumed lost and asked for again). True when this call asked, so its caller enqueues the job.
 * The row stays locked until the caller's transaction ends, whichever way it went.
 */
export async function requestRefresh(
  tx: DbOrTx,
  organizationUid: string,
  maxAgeSeconds: number,
): Promise<boolean> {
  const rows = await tx
    .insert(metricPresetStates)
    .values({ organizationUid, refreshRequestedAt: sql`now()` })
    .onConflictDoUpdate({
      target: metricPresetStates.organizationUid,
      set: { refreshRequestedAt: sql`now()`, updatedAt: sql`now()` },
      setWhere: sql`${metricPresetStates.refreshRequestedAt} is null or ${metricPresetStates.refreshRequestedAt} <= now() - make_interval(secs => ${maxAgeSeconds})`,
    })
    .returning({ organizationUid: metricPresetStates.organizationUid });
  return rows.length > 0;
}

/** The refresh has started: later changes ask for another one. Waits for changes that relied on it. */
export async function clearRefreshRequest(db: DbOrTx, organizationUid: string): Promise<void> {
  await db
    .update(metricPresetStates)
    .set({ refreshRequestedAt: null, updatedAt: sql`now()` })
    .where(
      and(
        eq(metricPresetStates.organizationUid, organizationUid),
        isNotNull(metricPresetStates.refreshRequestedAt),
      ),
    );
}

export async function findPresetState(
  db: DbOrTx,
  organizationUid: string,
): Promise<typeof metricPresetStates.$inferSelect | undefined> {
  const [row] = await db
    .select()
    .from(metricPresetStates)
    .where(eq(metricPresetStates.organizationUid, organizationUid));
  return row;
}

/** Moves the daily job's mark forward (never back). */
export async function advanceComputedThrough(
  db: DbOrTx,
  organizationUid: string,
  day: string,
): Promise<void> {
  await db
    .insert(metricPresetStates)
    .values({ organizationUid, computedThrough: day })
    .onConflictDoUpdate({
      target: metricPresetStates.organizationUid,
      set: {
        computedThrough: sql`greatest(${metricPresetStates.computedThrough}, excluded.computed_through)`,
        updatedAt: sql`now()`,
      },
    });
}

/** The latest day before `beforeDay` with a stored value of any preset definition; null when none. */
export async function latestPresetValueDay(
  db: DbOrTx,
  organizationUid: string,
  beforeDay: string,
): Promise<string | null> {
  const [row] = await db
    .select({ day: max(metricValues.metricDate) })
    .from(metricValues)
    .innerJoin(
      metricDefinitions,
      and(
        eq(metricDefinitions.organizationUid, metricValues.organizationUid),
        eq(metricDefinitions.uid, metricValues.metricUid),
      ),
    )
    .where(
      and(
        eq(metricValues.organizationUid, organizationUid),
        isNotNull(metricDefinitions.preset),
        eq(metricValues.timeUnit, 'day'),
        lt(metricValues.metricDate, beforeDay),
      ),
    );
  return row?.day ?? null;
}

/** Whether the metric has a `day` value stored for that day (for the entity, or any entity). */
export async function hasDayValue(
  db: DbOrTx,
  organizationUid: string,
  metricUid: string,
  day: string,
  entityUid?: string,
): Promise<boolean> {
  const [row] = await db
    .select({ uid: metricValues.uid })
    .from(metricValues)
    .where(
      and(
        eq(metricValues.organizationUid, organizationUid),
        eq(metricValues.metricUid, metricUid),
        entityUid === undefined ? undefined : eq(metricValues.entityUid, entityUid),
        eq(metricValues.timeUnit, 'day'),
        eq(metricValues.metricDate, day),
      ),
    )
    .limit(1);
  return row !== undefined;
}
