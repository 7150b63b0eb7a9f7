import { and, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { documents } from './documents.tables.ts';

export type DocumentRow = typeof documents.$inferSelect;
export type DocumentInsert = typeof documents.$inferInsert;

export async function insertDocument(db: DbOrTx, values: DocumentInsert): Promise<DocumentRow> {
  const [row] = await db.insert(documents).values(values).returning();
  return row!;
}

/** A document of one of these organizations (the caller's), or undefined. */
export async function findDocument(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<DocumentRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(documents)
    .where(and(inArray(documents.organizationUid, organizationUids), eq(documents.uid, uid)));
  return row;
}

/** `pending` → `ready` (with the text), `none` or `failed`, only from `pending`. */
export async function recordDocumentText(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  status: 'ready' | 'none' | 'failed',
  text: string | null,
): Promise<boolean> {
  const rows = await db
    .update(documents)
    .set({ textStatus: status, extractedText: text })
    .where(
      and(
        eq(documents.organizationUid, organizationUid),
        eq(documents.uid, uid),
        eq(documents.textStatus, 'pending'),
      ),
    )
    .returning({ uid: documents.uid });
  return rows.length === 1;
}
