import { and, asc, desc, eq, inArray, lt, ne, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { knowledgeDocuments } from './knowledge.tables.ts';

export type KnowledgeDocumentRow = typeof knowledgeDocuments.$inferSelect;
export type KnowledgeDocumentInsert = typeof knowledgeDocuments.$inferInsert;

export async function insertKnowledgeDocument(
  db: DbOrTx,
  values: KnowledgeDocumentInsert,
): Promise<KnowledgeDocumentRow> {
  const [row] = await db.insert(knowledgeDocuments).values(values).returning();
  return row!;
}

/** A document of one of these organizations (the caller's), or undefined. */
export async function findKnowledgeDocument(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<KnowledgeDocumentRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(knowledgeDocuments)
    .where(
      and(inArray(knowledgeDocuments.organizationUid, organizationUids), eq(knowledgeDocuments.uid, uid)),
    );
  return row;
}

/**
 * An organization's confirmed documents (processing, ready, failed), newest first, on the
 * (organization, created_at desc, uid desc) index. A presign never confirmed is an upload still under
 * way (or abandoned, for the sweep), not a document: it is left out, as search leaves it out.
 */
export async function listKnowledgeDocuments(
  db: DbOrTx,
  organizationUid: string,
  page: { limit: number; offset: number },
): Promise<{ rows: KnowledgeDocumentRow[]; total: number }> {
  const where = and(
    eq(knowledgeDocuments.organizationUid, organizationUid),
    ne(knowledgeDocuments.status, 'presigned'),
  );
  const [rows, [count]] = await Promise.all([
    db
      .select()
      .from(knowledgeDocuments)
      .where(where)
      .orderBy(desc(knowledgeDocuments.createdAt), desc(knowledgeDocuments.uid))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: sql<number>`count(*)::int` })
      .from(knowledgeDocuments)
      .where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

const one = (organizationUid: string, uid: string) =>
  and(eq(knowledgeDocuments.organizationUid, organizationUid), eq(knowledgeDocuments.uid, uid));

/**
 * `presigned` → `processing`, only from `presigned`: of two confirms at once, the second waits for the
 * first's row lock and then matches nothing, so exactly one starts the workflow.
 */
export async function startProcessing(
  tx: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<KnowledgeDocumentRow | undefined> {
  const [row] = await tx
    .update(knowledgeDocuments)
    .set({ status: 'processing', error: null, updatedAt: sql`now()` })
    .where(and(one(organizationUid, uid), eq(knowledgeDocuments.status, 'presigned')))
    .returning();
  return row;
}

export async function setWorkflowId(
  tx: DbOrTx,
  organizationUid: string,
  uid: string,
  workflowId: string,
): Promise<KnowledgeDocumentRow> {
  const [row] = await tx
    .update(knowledgeDocuments)
    .set({ workflowId })
    .where(one(organizationUid, uid))
    .returning();
  return row!;
}

export type ProcessingResult =
  | { status: 'ready'; fileSize: number; sha256: string; extractedText: string | null }
  | { status: 'failed'; error: string; fileSize?: number | null; sha256?: string | null };

/** `processing` → `ready` or `failed`, only from `processing` (a repeated job changes nothing). */
export async function finishProcessing(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  result: ProcessingResult,
): Promise<KnowledgeDocumentRow | undefined> {
  const values =
    result.status === 'ready'
      ? {
          status: 'ready' as const,
          fileSize: result.fileSize,
          sha256: result.sha256,
          extractedText: result.extractedText,
          error: null,
        }
      : {
          status: 'failed' as const,
          error: result.error,
          fileSize: result.fileSize ?? null,
          sha256: result.sha256 ?? null,
          extractedText: null,
        };
  const rows = await db
    .update(knowledgeDocuments)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(one(organizationUid, uid), eq(knowledgeDocuments.status, 'processing')))
    .returning();
  return rows[0];
}

/**
 * Presigns (of every organization: the sweep is the system's own work) that expired before `before`
 * and were never confirmed, oldest first (index knowledge_documents_presign_expiry_idx).
 */
export async function listExpiredPresigns(
  db: DbOrTx,
  before: Date,
  limit: number,
): Promise<Pick<KnowledgeDocumentRow, 'organizationUid' | 'uid' | 's3ObjectName'>[]> {
  return db
    .select({
      organizationUid: knowledgeDocuments.organizationUid,
      uid: knowledgeDocuments.uid,
      s3ObjectName: knowledgeDocuments.s3ObjectName,
    })
    .from(knowledgeDocuments)
    .where(and(eq(knowledgeDocuments.status, 'presigned'), lt(knowledgeDocuments.presignExpiresAt, before)))
    .orderBy(asc(knowledgeDocuments.presignExpiresAt))
    .limit(limit);
}

/** Deletes the row if it is still an unconfirmed presign (a confirm that came first wins). */
export async function deletePresign(tx: DbOrTx, organizationUid: string, uid: string): Promise<boolean> {
  const rows = await tx
    .delete(knowledgeDocuments)
    .where(and(one(organizationUid, uid), eq(knowledgeDocuments.status, 'presigned')))
    .returning({ uid: knowledgeDocuments.uid });
  return rows.length === 1;
}

/**
 * Deletes a document in any status, returning what it was (undefined when it is gone already). Nothing
 * else points at a knowledge document (search reads this table, the audit log and webhook events keep
 * its uid as text), so the delete is a real one (docs/knowledge.md#deleting-a-document).
 */
export async function deleteKnowledgeDocument(
  tx: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<KnowledgeDocumentRow | undefined> {
  const [row] = await tx.delete(knowledgeDocuments).where(one(organizationUid, uid)).returning();
  return row;
}
