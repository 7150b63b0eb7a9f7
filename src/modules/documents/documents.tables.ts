import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

export const DOCUMENT_TEXT_STATUSES = ['pending', 'ready', 'none', 'failed'] as const;

/** Documents (CONTRACT §4): files kept for search and for `invoice.document_uid`. */
export const documents = pgTable(
  'documents',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    filename: text('filename').notNull(),
    documentName: text('document_name').notNull().default(''),
    contentType: text('content_type').notNull(),
    fileSize: bigint('file_size', { mode: 'number' }).notNull(),
    sha256: text('sha256').notNull(),
    storageKey: text('storage_key').notNull(),
    uploadedByUid: uuid('uploaded_by_uid'),
    /** Plain text extracted for search by the extraction job (null until then, or when there is none). */
    extractedText: text('extracted_text'),
    /** `pending` until the extraction job has run; then `ready` (text found), `none` or `failed`. */
    textStatus: text('text_status', { enum: DOCUMENT_TEXT_STATUSES }).notNull().default('pending'),
    ...timestamps,
  },
  (t) => [
    index('documents_org_updated_idx').on(t.organizationUid, t.updatedAt.desc(), t.uid.desc()),
    index('documents_filename_trgm_idx').using('gin', sql`${t.filename} gin_trgm_ops`),
    index('documents_document_name_trgm_idx').using('gin', sql`${t.documentName} gin_trgm_ops`),
  ],
);
