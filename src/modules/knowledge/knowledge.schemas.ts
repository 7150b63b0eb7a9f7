import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, PageMeta, pageQuery, Uuid } from '../../platform/http/schemas.ts';
import { KNOWLEDGE_CONTENT_TYPES, MAX_KNOWLEDGE_BYTES } from './text-extraction.ts';

export { MAX_KNOWLEDGE_BYTES };
/** Lifetime of a presigned upload (interface §8: 900 seconds). */
export const PRESIGN_EXPIRES_S = 900;

const ContentType = Type.Union(
  [
    Type.Literal(KNOWLEDGE_CONTENT_TYPES[0]),
    Type.Literal(KNOWLEDGE_CONTENT_TYPES[1]),
    Type.Literal(KNOWLEDGE_CONTENT_TYPES[2]),
    Type.Literal(KNOWLEDGE_CONTENT_TYPES[3]),
    Type.Literal(KNOWLEDGE_CONTENT_TYPES[4]),
  ],
  { description: 'PDF, DOCX, XLSX, PNG or JPEG (interface 2.3)' },
);

const Status = (description?: string) =>
  Type.Union(
    [Type.Literal('presigned'), Type.Literal('processing'), Type.Literal('ready'), Type.Literal('failed')],
    description ? { description } : {},
  );

export const PresignBody = Type.Object(
  {
    filename: Type.String({ minLength: 1, maxLength: 255, description: "The file's name, as shown back" }),
    organization_uid: Type.Optional(Uuid),
    content_type: ContentType,
  },
  { additionalProperties: false },
);
export type PresignBodyT = Static<typeof PresignBody>;

export const ConfirmBody = Type.Object(
  {
    knowledge_document_uid: Uuid,
    organization_uid: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type ConfirmBodyT = Static<typeof ConfirmBody>;

/** Interface 2.3: `{message, data}`, "envelope-like" (no status, no status_code). */
export const PresignResponse = Type.Object({
  message: Type.String(),
  data: Type.Object({
    presigned_post: Type.Object({
      url: Type.String({ description: 'Where the form is POSTed (object storage, not the API)' }),
      fields: Type.Record(Type.String(), Type.String(), {
        description:
          'Every form field to send, before the file: key, Content-Type, the policy and signature members, ' +
          'and a security-token member with temporary credentials. Iterate it; the set is not fixed.',
      }),
    }),
    knowledge_document_uid: Uuid,
    s3_object_name: Type.String(),
    expires_in: Type.Integer({ description: 'seconds (900)' }),
  }),
});

export const ConfirmResponse = Type.Object({
  message: Type.String(),
  data: Type.Object({
    knowledge_document_uid: Uuid,
    workflow_id: Type.String(),
    status: Status('`processing` (a repeated confirm answers the current status)'),
  }),
});

/** CONTRACT §3 "knowledge after confirm". */
export const KnowledgeDocument = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    filename: Type.String(),
    content_type: Type.String(),
    file_size: Nullable(Type.Integer({ description: 'bytes; set by the workflow' })),
    sha256: Nullable(Type.String({ description: 'hex; set by the workflow' })),
    s3_object_name: Type.String(),
    status: Status(),
    workflow_id: Nullable(Type.String()),
    error: Nullable(Type.String({ description: 'why processing failed' })),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'KnowledgeDocument', title: 'KnowledgeDocument' },
);

export const KnowledgeUidParams = Type.Object({ uid: Uuid });

export const KnowledgeListQuery = Type.Object({ organization_uid: Type.Optional(Uuid), ...pageQuery(25) });

export const KnowledgeListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('KnowledgeDocument')), _meta: PageMeta }),
);

export const KnowledgeSearchQuery = Type.Object({
  q: Type.String({
    minLength: 2,
    maxLength: 200,
    description:
      'Words to find in the documents\' extracted text, in web-search syntax: `"a phrase"`, `or`, `-word`. ' +
      "Stemmed in the organization's search language (`paying` finds `pays`).",
  }),
  organization_uid: Type.Optional(Uuid),
  ...pageQuery(10, 50),
});
export type KnowledgeSearchQueryT = Static<typeof KnowledgeSearchQuery>;

export const KnowledgeSearchHit = Type.Object({
  knowledge_document_uid: Uuid,
  filename: Type.String(),
  content_type: Type.String(),
  rank: Type.Number({ description: 'Relevance (`ts_rank_cd`, higher is better); results come best first' }),
  snippet: Type.Object(
    {
      text: Type.String({
        description: 'Plain text: up to two passages of the document around the matches, joined by " … "',
      }),
      highlights: Type.Array(Type.Array(Type.Integer({ minimum: 0 }), { minItems: 2, maxItems: 2 }), {
        description:
          '`[start, end)` offsets into `text` (UTF-16 code units, as JavaScript string indexes) of each matched ' +
          'word. The text carries no markup: render it as text and mark these ranges.',
      }),
    },
    { description: 'Where the document matches' },
  ),
  created_at: DateTime,
  updated_at: DateTime,
});
export type KnowledgeSearchHitT = Static<typeof KnowledgeSearchHit>;

export const KnowledgeSearchEnvelope = Envelope(
  Type.Object({ items: Type.Array(KnowledgeSearchHit), _meta: PageMeta }),
);
