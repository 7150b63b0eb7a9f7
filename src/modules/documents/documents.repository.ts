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
