// A knowledge document as the API answers it; in a file of its own so that the processing job
// (knowledge-processing.ts), which the service imports, can show it too without an import cycle.
import type { KnowledgeDocumentRow } from './knowledge.repository.ts';

export interface KnowledgeDocumentView {
  uid: string;
  organization_uid: string;
  filename: string;
  content_type: string;
  file_size: number | null;
  sha256: string | null;
  s3_object_name: string;
  status: KnowledgeDocumentRow['status'];
  workflow_id: string | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

export function toKnowledgeView(row: KnowledgeDocumentRow): KnowledgeDocumentView {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    filename: row.filename,
    content_type: row.contentType,
    file_size: row.fileSize === null ? null : Number(row.fileSize),
    sha256: row.sha256,
    s3_object_name: row.s3ObjectName,
    status: row.status,
    workflow_id: row.workflowId,
    error: row.error,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
