import { and, asc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { invoiceStatusHistory } from './invoices.tables.ts';

export type StatusHistoryRow = typeof invoiceStatusHistory.$inferSelect;
export type StatusHistoryInsert = Omit<typeof invoiceStatusHistory.$inferInsert, 'position' | 'uid'>;

/**
 * Appends one status change to the invoice's history, after its last one. Callers hold the invoice's
 * row lock (or just inserted it), so two changes never take the same position.
 */
export async function insertStatusChange(db: DbOrTx, values: StatusHistoryInsert): Promise<StatusHistoryRow> {
  const [row] = await db
    .insert(invoiceStatusHistory)
    .values({
      ...values,
      position: sql`(select coalesce(max(h.position), 0) + 1 from invoice_status_history h
                      where h.organization_uid = ${values.organizationUid} and h.invoice_uid = ${values.invoiceUid})`,
    })
    .returning();
  return row!;
}

/** One page of an invoice's status history, oldest first, with the total. */
export async function listStatusHistory(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  page: { limit: number; offset: number },
): Promise<{ rows: StatusHistoryRow[]; total: number }> {
  const where = and(
    eq(invoiceStatusHistory.organizationUid, organizationUid),
    eq(invoiceStatusHistory.invoiceUid, invoiceUid),
  );
  const rows = await db
    .select()
    .from(invoiceStatusHistory)
    .where(where)
    .orderBy(asc(invoiceStatusHistory.position))
    .limit(page.limit)
    .offset(page.offset);
  const [total] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(invoiceStatusHistory)
    .where(where);
  return { rows, total: Number(total?.n ?? 0) };
}
