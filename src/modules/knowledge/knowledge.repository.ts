import { and, asc, desc, eq, inArray, lt, ne, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../platform/db/client.ts';
import { FRAGMENT_DELIMITER, HIGHLIGHT_START, HIGHLIGHT_STOP } from '../../platform/db/text-search.ts';
import { organizations } from '../tenancy/tenancy.tables.ts';
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

/**
 * Options of `ts_headline`: our markers (text-search.ts), up to two fragments of 8 to 25 words. The
 * headline is made from the first `HEADLINE_CHARS` characters of the text: it parses the text it is
 * given, and a million characters per result would cost a second; a match past them still ranks, with
 * the snippet from the text's start.
 */
export const HEADLINE_CHARS = 100_000;
export const HEADLINE_OPTIONS =
  `StartSel=${HIGHLIGHT_START}, StopSel=${HIGHLIGHT_STOP}, MaxFragments=2, MaxWords=25, MinWords=8, ` +
  `ShortWord=2, FragmentDelimiter="${FRAGMENT_DELIMITER}"`;

/** The text a headline is made from: its start, without our marker characters. */
export const headlineSource = (text: AnyPgColumn | SQL) =>
  sql`translate(left(${text}, ${HEADLINE_CHARS}), ${HIGHLIGHT_START + HIGHLIGHT_STOP}, '')`;

/**
 * The organization's search language and `q` as a `websearch_to_tsquery` in it (one row), for a query
 * to cross-join: the query is computed once and the GIN index (organization_uid, search_vector) is
 * probed with it.
 */
export const textQuery = (organizationUid: string, q: string) =>
  sql`(select o.search_language::regconfig as config, websearch_to_tsquery(o.search_language::regconfig, ${q}) as query
       from ${organizations} o where o.uid = ${organizationUid})`;

/**
 * The knowledge documents that can be found: the organization's, processed (`ready`), with text. A
 * document's vector is null until its text is extracted, so one still `processing` never matches.
 */
const searchable = (organizationUid: string) =>
  and(
    eq(knowledgeDocuments.organizationUid, organizationUid),
    eq(knowledgeDocuments.status, 'ready'),
    sql`${knowledgeDocuments}.search_vector is not null`,
  )!;

export interface KnowledgeTextMatch {
  uid: string;
  filename: string;
  contentType: string;
  createdAt: Date;
  updatedAt: Date;
  rank: number;
  headline: string;
}

/**
 * Full-text search of an organization's knowledge (`websearch_to_tsquery` in its search language),
 * best first (`ts_rank_cd`, normalized by the document's length so a long file does not win by size
 * alone; then newest, then uid), a page of it, each with a `ts_headline` snippet (made for the page's
 * rows only), and how many match in all.
 */
export async function searchKnowledgeText(
  db: DbOrTx,
  organizationUid: string,
  q: string,
  page: { limit: number; offset: number },
): Promise<{ rows: KnowledgeTextMatch[]; total: number }> {
  const k = knowledgeDocuments;
  const where = and(searchable(organizationUid), sql`${k}.search_vector @@ tq.query`);
  const matches = sql`
    select ${k.uid} as uid, ${k.filename} as filename, ${k.contentType} as content_type,
           ${k.createdAt} as created_at, ${k.updatedAt} as updated_at,
           ts_rank_cd(${k}.search_vector, tq.query, 1)::float8 as rank
      from ${k}, ${textQuery(organizationUid, q)} tq
     where ${where}`;
  const [pageRows, counted] = await Promise.all([
    db.execute(sql`
      select m.uid, m.filename, m.content_type, m.created_at, m.updated_at, m.rank,
             ts_headline(tq.config, ${headlineSource(sql`d.extracted_text`)}, tq.query, ${HEADLINE_OPTIONS}) as headline
        from (${matches} order by rank desc, ${k.createdAt} desc, ${k.uid} desc
              limit ${page.limit} offset ${page.offset}) m
        join ${k} d on d.uid = m.uid and d.organization_uid = ${organizationUid},
             ${textQuery(organizationUid, q)} tq
       order by m.rank desc, m.created_at desc, m.uid desc`),
    db.execute(sql`select count(*)::int as n from ${k}, ${textQuery(organizationUid, q)} tq where ${where}`),
  ]);
  const rows = (pageRows as unknown as { rows: Record<string, unknown>[] }).rows.map((r) => ({
    uid: r.uid as string,
    filename: r.filename as string,
    contentType: r.content_type as string,
    createdAt: new Date(r.created_at as string),
    updatedAt: new Date(r.updated_at as string),
    rank: Number(r.rank),
    headline: r.headline as string,
  }));
  const [count] = (counted as unknown as { rows: { n: number }[] }).rows;
  return { rows, total: Number(count?.n ?? 0) };
}
