import { Type, type Static } from 'typebox';
import { DateTime, Envelope, PageLinks, PageMeta, pageQuery, Uuid } from '../../platform/http/schemas.ts';

/** Interface 2.13. */
export const Attachment = Type.Object(
  {
    uid: Uuid,
    filename: Type.String(),
    content_type: Type.String(),
    file_size: Type.Integer({ description: 'bytes' }),
    uploaded_by: Type.Integer({ description: "the uploading user's integer id" }),
    created_on: DateTime,
    description: Type.String(),
    is_public: Type.Boolean(),
    invoice_uid: Uuid,
    presigned_url: Type.String({
      description:
        'Time-limited signed download address (AWS SigV4 query signature; 15 minutes unless configured otherwise). ' +
        'Needs no API key; a fresh one is issued with every response.',
    }),
  },
  { $id: 'InvoiceAttachment', title: 'InvoiceAttachment' },
);

export const AttachmentEnvelope = Envelope(Type.Ref('InvoiceAttachment'));

/** What a delete answers: the attachment as it was, without a download address (its file is going). */
const { presigned_url: _downloadAddress, ...deletedAttachmentFields } = Attachment.properties;
export const DeletedAttachmentEnvelope = Envelope(
  Type.Object(deletedAttachmentFields, { title: 'DeletedInvoiceAttachment' }),
);

export const AttachmentParams = Type.Object({ uid: Uuid, attachment_uid: Uuid });

export const AttachmentListEnvelope = Envelope(
  Type.Object({
    items: Type.Array(Type.Ref('InvoiceAttachment')),
    _meta: PageMeta,
    _links: PageLinks,
  }),
);

export const AttachmentListQuery = Type.Object(pageQuery(10));
export type AttachmentListQueryT = Static<typeof AttachmentListQuery>;

/** Largest attachment accepted (CONTRACT §8's upload limit): 25 MiB. */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;

/**
 * The multipart form of an upload, as documented and as validated. Before validation the route reads the
 * whole form (src/platform/storage/multipart-upload.ts); the `file` member then holds a digest of the
 * file part (name, type, bytes) and the bytes themselves wait in a temporary file.
 */
export const UploadForm = Type.Object(
  {
    file: Type.String({
      contentMediaType: 'application/octet-stream',
      description: `The file (at most ${MAX_ATTACHMENT_BYTES} bytes, 25 MB). Its part's file name and Content-Type become filename and content_type.`,
    }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    is_public: Type.Optional(
      Type.Boolean({ default: false, description: 'true/false (also 1/0, yes/no, on/off)' }),
    ),
  },
  { additionalProperties: false },
);
export type UploadFormT = Static<typeof UploadForm>;
