import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

export const KNOWLEDGE_STATUSES = ['presigned', 'processing', 'ready', 'failed'] as const;
export type KnowledgeStatus = (typeof KNOWLEDGE_STATUSES)[number];

/**
 * Knowledge uploads and their documents (interface 2.3, CONTRACT §3): a row is written at presign
 * (`presigned`, with the expiry after which the sweep deletes the object), moved to `processing` by
 * confirm and to `ready` or `failed` by the workflow.
 */
export const knowledgeDocuments = pgTable(
  'knowledge_documents',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(),
    fileSize: bigint('file_size', { mode: 'number' }),
    sha256: text('sha256'),
    s3ObjectName: text('s3_object_name').notNull(),
    status: text('status', { enum: KNOWLEDGE_STATUSES }).notNull().default('presigned'),
    workflowId: text('workflow_id'),
    error: text('error'),
    /** Plain text extracted for search (none for images). */
    extractedText: text('extracted_text'),
    presignExpiresAt: timestamp('presign_expires_at', { withTimezone: true }),
    createdByUid: uuid('created_by_uid'),
    ...timestamps,
  },
  (t) => [
    index('knowledge_documents_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
    index('knowledge_documents_presign_expiry_idx')
      .on(t.presignExpiresAt)
      .where(sql`status = 'presigned'`),
    index('knowledge_documents_filename_trgm_idx').using('gin', sql`${t.filename} gin_trgm_ops`),
  ],
);
