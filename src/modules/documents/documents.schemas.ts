import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, Uuid } from '../../platform/http/schemas.ts';

/** Largest document (the upload limit of interface §8 and of attachments): 25 MB. */
export const MAX_DOCUMENT_BYTES = 25 * 1024 * 1024;

/** CONTRACT §4: a stored file, for search and for `invoice.document_uid`. */
export const Document = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    filename: Type.String(),
    document_name: Type.String(),
    content_type: Type.String(),
    file_size: Type.Integer({ description: 'bytes' }),
    sha256: Type.String({ description: 'hex SHA-256 of the bytes' }),
    uploaded_by_uid: Nullable(Uuid),
    created_at: DateTime,
    updated_at: DateTime,
    presigned_url: Type.String({
      description:
        'Time-limited signed download address (AWS SigV4 query signature; 15 minutes unless configured otherwise). ' +
        'Needs no API key; a fresh one is issued with every response.',
    }),
  },
  { $id: 'Document', title: 'Document' },
);

export const DocumentEnvelope = Envelope(Type.Ref('Document'));
export const DocumentUidParams = Type.Object({ uid: Uuid });

/**
 * The multipart form, as documented and as validated: the route reads the whole form first
 * (src/platform/storage/multipart-upload.ts); `file` then holds a digest of the file part (name, type,
 * bytes) and the bytes wait in a temporary file.
 */
export const DocumentUploadForm = Type.Object(
  {
    file: Type.String({
      contentMediaType: 'application/octet-stream',
      description: `The file (at most ${MAX_DOCUMENT_BYTES} bytes, 25 MB). Its part's file name and Content-Type become filename and content_type.`,
    }),
    document_name: Type.Optional(
      Type.String({ maxLength: 255, description: 'A name for people and search (default: the file name)' }),
    ),
    organization_uid: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type DocumentUploadFormT = Static<typeof DocumentUploadForm>;
