import { and, desc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { invoiceAttachments } from './invoices.tables.ts';

export type AttachmentRow = typeof invoiceAttachments.$inferSelect;
export type AttachmentInsert = typeof invoiceAttachments.$inferInsert;

export async function insertAttachment(db: DbOrTx, values: AttachmentInsert): Promise<AttachmentRow> {
  const [row] = await db.insert(invoiceAttachments).values(values).returning();
  return row!;
}

const ofInvoice = (organizationUid: string, invoiceUid: string) =>
  and(eq(invoiceAttachments.organizationUid, organizationUid), eq(invoiceAttachments.invoiceUid, invoiceUid));

/** Newest first; uid breaks ties, so pages never overlap (index invoice_attachments_invoice_idx). */
export async function listAttachments(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  page: { limit: number; offset: number },
): Promise<AttachmentRow[]> {
  return db
    .select()
    .from(invoiceAttachments)
    .where(ofInvoice(organizationUid, invoiceUid))
    .orderBy(desc(invoiceAttachments.createdOn), desc(invoiceAttachments.uid))
    .limit(page.limit)
    .offset(page.offset);
}

export async function countAttachments(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(invoiceAttachments)
    .where(ofInvoice(organizationUid, invoiceUid));
  return Number(row?.n ?? 0);
}

/** One attachment of the invoice, or undefined (another invoice's attachment included). */
export async function findAttachment(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid: string,
): Promise<AttachmentRow | undefined> {
  const [row] = await db
    .select()
    .from(invoiceAttachments)
    .where(and(ofInvoice(organizationUid, invoiceUid), eq(invoiceAttachments.uid, uid)));
  return row;
}

/**
 * Deletes the attachment's row (nothing points at an attachment), returning what it was; undefined when
 * it is gone already (a concurrent delete).
 */
export async function deleteAttachment(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid: string,
): Promise<AttachmentRow | undefined> {
  const [row] = await tx
    .delete(invoiceAttachments)
    .where(and(ofInvoice(organizationUid, invoiceUid), eq(invoiceAttachments.uid, uid)))
    .returning();
  return row;
}
