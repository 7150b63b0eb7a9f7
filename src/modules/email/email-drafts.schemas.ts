import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, PageMeta, pageQuery, Uuid } from '../../platform/http/schemas.ts';
import { DRAFT_STATUSES } from './email-drafts.tables.ts';
import { EmailAddress } from './email-accounts.schemas.ts';

export const MAX_ATTACHMENTS = 10;
/** The decoded size of all of a draft's attachments together. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_BODY_TEXT_CHARS = 200_000;
export const MAX_BODY_HTML_CHARS = 500_000;
/**
 * The route's body limit: 10 MB of attachments in base64 (4/3 of it) plus 1 MiB for the text, the HTML
 * and the addresses. A draft with no attachments is refused long before that by the field limits.
 */
export const DRAFT_BODY_LIMIT_BYTES = Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4 + 1024 * 1024;

const Addresses = Type.Array(EmailAddress, { maxItems: 100 });
const SingleLine = (maxLength: number) => Type.String({ maxLength, pattern: '^[^\\r\\n]*$' });

const AttachmentInput = Type.Object(
  {
    filename: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\r\\n\\\\/]*$' }),
    content_type: Type.String({
      maxLength: 255,
      pattern: '^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\\s*;[^\\r\\n]*)?$',
    }),
    data_base64: Type.String({ maxLength: Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4 + 1024 }),
  },
  { additionalProperties: false },
);

/**
 * Interface 2.10, one body for both operations (4.6): without `uid` a create (`from_account_id`
 * required), with `uid` an update of only the fields sent. `null` clears a nullable field.
 */
export const SaveDraftBody = Type.Object({
  uid: Type.Optional(Uuid),
  organization_uid: Type.Optional(Uuid),
  from_account_id: Type.Optional(Uuid),
  to: Type.Optional(Addresses),
  cc: Type.Optional(Addresses),
  bcc: Type.Optional(Addresses),
  subject: Type.Optional(SingleLine(998)),
  body_text: Type.Optional(Type.String({ maxLength: MAX_BODY_TEXT_CHARS })),
  body_html: Type.Optional(Type.String({ maxLength: MAX_BODY_HTML_CHARS })),
  attachments: Type.Optional(
    Type.Array(AttachmentInput, {
      maxItems: MAX_ATTACHMENTS,
      description: 'request only; on update the list replaces the stored one',
    }),
  ),
  context_type: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
  context_id: Type.Optional(Nullable(Uuid)),
  planned_send_at: Type.Optional(
    Nullable(
      Type.String({ format: 'date-time', description: 'when the worker sends it; now or past: at once' }),
    ),
  ),
});
export type SaveDraftBodyT = Static<typeof SaveDraftBody>;

/** The bare draft record (interface 2.1: no envelope); attachments are never returned. */
export const EmailDraft = Type.Object(
  {
    uid: Uuid,
    from_account_id: Uuid,
    from_email: Type.String(),
    to: Type.Array(Type.String()),
    cc: Type.Array(Type.String()),
    bcc: Type.Array(Type.String()),
    subject: Type.String(),
    body_text: Type.String(),
    body_html: Type.String(),
    context_type: Nullable(Type.String()),
    context_id: Nullable(Uuid),
    planned_send_at: Nullable(DateTime),
    status: Type.Union(DRAFT_STATUSES.map((s) => Type.Literal(s))),
    sent_at: Nullable(DateTime),
    error: Nullable(Type.String()),
    message_id: Nullable(Type.String({ description: 'the Message-ID header, fixed when sending starts' })),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'EmailDraft' },
);

export const UidParams = Type.Object({ uid: Uuid });

/** What the list sorts by; `-` for descending. Ties go by uid, so pages never overlap. */
export const DRAFT_SORT_FIELDS = ['updated_at', 'created_at', 'planned_send_at', 'sent_at'] as const;

export const ListDraftsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  status: Type.Optional(
    Type.String({
      maxLength: 200,
      description: `comma-separated statuses, any of ${DRAFT_STATUSES.join(', ')}`,
    }),
  ),
  context_type: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'what the email is about, e.g. `invoice`' }),
  ),
  context_id: Type.Optional(Uuid),
  q: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'case-insensitive substring of the subject or of a recipient (to, cc or bcc)',
    }),
  ),
  scheduled: Type.Optional(
    Type.Boolean({
      description:
        'true: drafts waiting for their planned_send_at (status draft with a time); false: every other email',
    }),
  ),
  sort: Type.Optional(
    Type.String({
      pattern: `^[+ -]?(${DRAFT_SORT_FIELDS.join('|')})$`,
      default: '-updated_at',
      description: 'prefix + ascending, - descending; emails without the time come last either way',
    }),
  ),
  ...pageQuery(25),
});
export type ListDraftsQueryT = Static<typeof ListDraftsQuery>;

export const EmailDraftListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('EmailDraft')), _meta: PageMeta }),
);
