import { and, asc, eq, inArray, ne, sql, type SQL } from 'drizzle-orm';
import { rawQuery, type DbOrTx } from '../../platform/db/client.ts';
import { users } from '../tenancy/tenancy.tables.ts';
import {
  invoiceAssignees,
  invoiceComments,
  invoiceIntegrations,
  invoiceLineItems,
  invoicePayments,
  invoices,
} from './invoices.tables.ts';

export type InvoiceRow = typeof invoices.$inferSelect;
export type InvoiceInsert = typeof invoices.$inferInsert;
export type LineItemRow = typeof invoiceLineItems.$inferSelect;
export type IntegrationRow = typeof invoiceIntegrations.$inferSelect;
export type PaymentRow = typeof invoicePayments.$inferSelect;

export async function insertInvoice(db: DbOrTx, values: InvoiceInsert): Promise<InvoiceRow> {
  const [row] = await db.insert(invoices).values(values).returning();
  return row!;
}

/** An invoice of one of these organizations; `forUpdate` locks it for the rest of the transaction. */
/** One invoice by uid among those `visible` selects (the access rule, invoice-access.ts). */
export async function findInvoice(
  db: DbOrTx,
  visible: SQL,
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<InvoiceRow | undefined> {
  const query = db
    .select()
    .from(invoices)
    .where(and(visible, eq(invoices.uid, uid)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** One invoice of the organization, for background work (no caller whose access to check). */
export async function findInvoiceOfOrganization(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<InvoiceRow | undefined> {
  const [row] = await db
    .select()
    .from(invoices)
    .where(and(eq(invoices.organizationUid, organizationUid), eq(invoices.uid, uid)));
  return row;
}

export async function updateInvoice(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<InvoiceInsert>,
): Promise<InvoiceRow> {
  const [row] = await db
    .update(invoices)
    .set({ ...values, updatedAt: values.updatedAt ?? sql`now()` })
    .where(and(eq(invoices.organizationUid, organizationUid), eq(invoices.uid, uid)))
    .returning();
  return row!;
}

/** Replaces the invoice's assignees; returns those it had (read by the delete itself, no extra query). */
export async function replaceAssignees(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  userUids: string[],
): Promise<string[]> {
  const removed = await db
    .delete(invoiceAssignees)
    .where(
      and(eq(invoiceAssignees.organizationUid, organizationUid), eq(invoiceAssignees.invoiceUid, invoiceUid)),
    )
    .returning({ userUid: invoiceAssignees.userUid });
  if (userUids.length > 0) {
    await db
      .insert(invoiceAssignees)
      .values([...new Set(userUids)].map((userUid) => ({ organizationUid, invoiceUid, userUid })));
  }
  return removed.map((r) => r.userUid);
}

export async function listAssignees(db: DbOrTx, organizationUid: string, invoiceUids: string[]) {
  if (invoiceUids.length === 0) return [];
  // In a fixed order (the primary key's), the one the one-statement read uses (invoice-read.repository.ts).
  return db
    .select({ invoiceUid: invoiceAssignees.invoiceUid, userUid: invoiceAssignees.userUid })
    .from(invoiceAssignees)
    .where(
      and(
        eq(invoiceAssignees.organizationUid, organizationUid),
        inArray(invoiceAssignees.invoiceUid, invoiceUids),
      ),
    )
    .orderBy(asc(invoiceAssignees.invoiceUid), asc(invoiceAssignees.userUid));
}

export async function insertLineItems(
  db: DbOrTx,
  rows: (typeof invoiceLineItems.$inferInsert)[],
): Promise<LineItemRow[]> {
  if (rows.length === 0) return [];
  // Appended after the invoice's existing lines, in the order sent (callers hold the invoice's row lock).
  const first = rows[0]!;
  const [last] = await db
    .select({ position: sql<number>`coalesce(max(${invoiceLineItems.position}), 0)::int` })
    .from(invoiceLineItems)
    .where(
      and(
        eq(invoiceLineItems.organizationUid, first.organizationUid),
        eq(invoiceLineItems.invoiceUid, first.invoiceUid),
      ),
    );
  const start = Number(last?.position ?? 0);
  return db
    .insert(invoiceLineItems)
    .values(rows.map((row, i) => ({ ...row, position: start + 1 + i })))
    .returning();
}

export async function updateLineItem(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof invoiceLineItems.$inferInsert>,
): Promise<LineItemRow> {
  const [row] = await db
    .update(invoiceLineItems)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(invoiceLineItems.organizationUid, organizationUid), eq(invoiceLineItems.uid, uid)))
    .returning();
  return row!;
}

export async function listLineItems(
  db: DbOrTx,
  organizationUid: string,
  invoiceUids: string[],
): Promise<LineItemRow[]> {
  if (invoiceUids.length === 0) return [];
  return db
    .select()
    .from(invoiceLineItems)
    .where(
      and(
        eq(invoiceLineItems.organizationUid, organizationUid),
        inArray(invoiceLineItems.invoiceUid, invoiceUids),
      ),
    )
    .orderBy(asc(invoiceLineItems.position), asc(invoiceLineItems.uid));
}

/** What the invoice counts as paid: Σ (amount − refunded) of its payments not voided. */
export async function sumPayments(db: DbOrTx, organizationUid: string, invoiceUid: string): Promise<number> {
  const [row] = await db
    .select({
      total: sql<number>`coalesce(sum(${invoicePayments.amountCents} - ${invoicePayments.amountRefundedCents}), 0)::bigint`,
    })
    .from(invoicePayments)
    .where(
      and(
        eq(invoicePayments.organizationUid, organizationUid),
        eq(invoicePayments.invoiceUid, invoiceUid),
        ne(invoicePayments.status, 'voided'),
      ),
    );
  return Number(row?.total ?? 0);
}

export async function insertPayment(
  db: DbOrTx,
  values: typeof invoicePayments.$inferInsert,
): Promise<PaymentRow> {
  const [row] = await db.insert(invoicePayments).values(values).returning();
  return row!;
}

const commentColumns = {
  comment: invoiceComments,
  actor: { id: users.id, fullName: users.fullName, avatarUrl: users.avatarUrl, email: users.email },
};
export type CommentWithActor = {
  comment: typeof invoiceComments.$inferSelect;
  actor: { id: number; fullName: string; avatarUrl: string | null; email: string };
};

export async function listComments(
  db: DbOrTx,
  organizationUid: string,
  invoiceUids: string[],
): Promise<CommentWithActor[]> {
  if (invoiceUids.length === 0) return [];
  return db
    .select(commentColumns)
    .from(invoiceComments)
    .innerJoin(users, eq(users.uid, invoiceComments.authorUserUid))
    .where(
      and(
        eq(invoiceComments.organizationUid, organizationUid),
        inArray(invoiceComments.invoiceUid, invoiceUids),
      ),
    )
    .orderBy(asc(invoiceComments.createdAt), asc(invoiceComments.uid));
}

export async function findComment(db: DbOrTx, organizationUid: string, invoiceUid: string, uid: string) {
  const [row] = await db
    .select(commentColumns)
    .from(invoiceComments)
    .innerJoin(users, eq(users.uid, invoiceComments.authorUserUid))
    .where(
      and(
        eq(invoiceComments.organizationUid, organizationUid),
        eq(invoiceComments.invoiceUid, invoiceUid),
        eq(invoiceComments.uid, uid),
      ),
    );
  return row;
}

export async function insertComment(db: DbOrTx, values: typeof invoiceComments.$inferInsert) {
  const [row] = await db.insert(invoiceComments).values(values).returning();
  return row!;
}

export async function updateComment(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof invoiceComments.$inferInsert>,
) {
  await db
    .update(invoiceComments)
    .set(values)
    .where(and(eq(invoiceComments.organizationUid, organizationUid), eq(invoiceComments.uid, uid)));
}

/** `has_comments` follows whether any comment exists (comments are never deleted, so: ≥ 1). */
export async function refreshHasComments(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<void> {
  await db.execute(sql`
    update invoices set has_comments = exists (
      select 1 from invoice_comments c where c.organization_uid = ${organizationUid} and c.invoice_uid = ${invoiceUid}
    ) where organization_uid = ${organizationUid} and uid = ${invoiceUid}`);
}

export async function listIntegrations(
  db: DbOrTx,
  organizationUid: string,
  invoiceUids: string[],
): Promise<IntegrationRow[]> {
  if (invoiceUids.length === 0) return [];
  return db
    .select()
    .from(invoiceIntegrations)
    .where(
      and(
        eq(invoiceIntegrations.organizationUid, organizationUid),
        inArray(invoiceIntegrations.entityUid, invoiceUids),
      ),
    )
    .orderBy(asc(invoiceIntegrations.createdAt), asc(invoiceIntegrations.uid));
}

export async function upsertIntegration(
  db: DbOrTx,
  values: {
    organizationUid: string;
    entityUid: string;
    integrationName: string;
    integrationUid: string | null;
    integrationMetadata: Record<string, unknown>;
  },
) {
  await db
    .insert(invoiceIntegrations)
    .values(values)
    .onConflictDoUpdate({
      target: [
        invoiceIntegrations.organizationUid,
        invoiceIntegrations.entityUid,
        invoiceIntegrations.integrationName,
      ],
      set: {
        integrationUid: values.integrationUid,
        integrationMetadata: values.integrationMetadata,
        updatedAt: sql`now()`,
      },
    });
}

/**
 * Only the revision, nothing else (not even `updated_at`): the billing reconciler stamps the revision
 * it re-sent on an invoice whose state is otherwise exactly what was sent.
 */
export async function setRevision(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  revision: number,
): Promise<void> {
  await db
    .update(invoices)
    .set({ revision })
    .where(and(eq(invoices.organizationUid, organizationUid), eq(invoices.uid, uid)));
}

/** Members of the organization among these user uids, with their integer ids. */
export async function memberUsers(db: DbOrTx, organizationUid: string, userUids: string[]) {
  if (userUids.length === 0) return [];
  return rawQuery<{ uid: string; id: number }>(
    db,
    `select u.uid, u.id from users u join memberships m on m.user_uid = u.uid
      where m.organization_uid = $1 and u.uid = any($2::uuid[])`,
    [organizationUid, userUids],
  );
}
