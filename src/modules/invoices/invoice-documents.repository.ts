import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { hostedInvoiceLinks, invoiceDocuments } from './invoice-documents.tables.ts';

export type InvoiceDocumentRow = typeof invoiceDocuments.$inferSelect;
export type HostedLinkRow = typeof hostedInvoiceLinks.$inferSelect;

// ---- the rendered PDFs ----

export async function findDocument(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<InvoiceDocumentRow | undefined> {
  const [row] = await db
    .select()
    .from(invoiceDocuments)
    .where(
      and(eq(invoiceDocuments.organizationUid, organizationUid), eq(invoiceDocuments.invoiceUid, invoiceUid)),
    );
  return row;
}

/**
 * Records a rendering as the invoice's latest and returns the storage key it replaced (null when none,
 * or when it was the same key). Two renderings of one content version store the same key.
 */
export async function saveDocument(
  db: DbOrTx,
  values: {
    organizationUid: string;
    invoiceUid: string;
    contentHash: string;
    storageKey: string;
    byteSize: number;
  },
): Promise<string | null> {
  const before = await db
    .select({ storageKey: invoiceDocuments.storageKey })
    .from(invoiceDocuments)
    .where(
      and(
        eq(invoiceDocuments.organizationUid, values.organizationUid),
        eq(invoiceDocuments.invoiceUid, values.invoiceUid),
      ),
    )
    .for('update');
  await db
    .insert(invoiceDocuments)
    .values(values)
    .onConflictDoUpdate({
      target: [invoiceDocuments.organizationUid, invoiceDocuments.invoiceUid],
      set: {
        contentHash: values.contentHash,
        storageKey: values.storageKey,
        byteSize: values.byteSize,
        renderedAt: sql`now()`,
      },
    });
  const replaced = before[0]?.storageKey;
  return replaced && replaced !== values.storageKey ? replaced : null;
}

// ---- the hosted links ----

const liveOf = (organizationUid: string, invoiceUid: string) =>
  and(
    eq(hostedInvoiceLinks.organizationUid, organizationUid),
    eq(hostedInvoiceLinks.invoiceUid, invoiceUid),
    isNull(hostedInvoiceLinks.revokedAt),
  );

export async function findLiveLink(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<HostedLinkRow | undefined> {
  const [row] = await db.select().from(hostedInvoiceLinks).where(liveOf(organizationUid, invoiceUid));
  return row;
}

/** Inserts a live link; undefined when the invoice already has one (the unique partial index). */
export async function insertLink(
  db: DbOrTx,
  values: {
    organizationUid: string;
    invoiceUid: string;
    tokenHash: string;
    tokenSealed: string;
    createdByUserUid: string;
  },
): Promise<HostedLinkRow | undefined> {
  const [row] = await db
    .insert(hostedInvoiceLinks)
    .values(values)
    .onConflictDoNothing({
      target: [hostedInvoiceLinks.organizationUid, hostedInvoiceLinks.invoiceUid],
      where: sql`${hostedInvoiceLinks.revokedAt} IS NULL`,
    })
    .returning();
  return row;
}

export async function revokeLiveLink(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  userUid: string,
): Promise<HostedLinkRow | undefined> {
  const [row] = await db
    .update(hostedInvoiceLinks)
    .set({ revokedAt: sql`now()`, revokedByUserUid: userUid })
    .where(liveOf(organizationUid, invoiceUid))
    .returning();
  return row;
}

/**
 * The link a presented token names, by the token's hash alone (unique index), live or revoked. The
 * public page knows no organization before this read: the caller runs it as the service.
 */
export async function findLinkByTokenHash(db: DbOrTx, tokenHash: string): Promise<HostedLinkRow | undefined> {
  const [row] = await db.select().from(hostedInvoiceLinks).where(eq(hostedInvoiceLinks.tokenHash, tokenHash));
  return row;
}

/** Notes a view of the page, at most once a minute per link (a busy page writes little). */
export async function touchLink(db: DbOrTx, organizationUid: string, uid: string): Promise<void> {
  await db
    .update(hostedInvoiceLinks)
    .set({ lastViewedAt: sql`now()` })
    .where(
      and(
        eq(hostedInvoiceLinks.organizationUid, organizationUid),
        eq(hostedInvoiceLinks.uid, uid),
        sql`(${hostedInvoiceLinks.lastViewedAt} IS NULL OR ${hostedInvoiceLinks.lastViewedAt} < now() - interval '1 minute')`,
      ),
    );
}
