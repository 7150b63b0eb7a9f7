import { Type, type Static } from 'typebox';
import {
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageMeta,
  Uuid,
  pageQuery,
} from '../../platform/http/schemas.ts';
import { EmailAddress } from '../email/email-accounts.schemas.ts';
import { CONVERSATION_CHANNELS, CONVERSATION_STATUSES } from './conversations.tables.ts';

export const Message = Type.Object(
  {
    uid: Uuid,
    conversation_uid: Uuid,
    direction: Type.String({ description: 'inbound or outbound' }),
    subject: Type.String(),
    from_email: Type.String(),
    to: Type.Array(Type.String()),
    body_text: Type.String(),
    message_id: Nullable(Type.String()),
    in_reply_to: Nullable(Type.String()),
    created_at: DateTime,
  },
  { $id: 'Message', title: 'Message' },
);

export const Conversation = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    subject: Type.String(),
    channel: Type.String(),
    status: Type.String(),
    party_uid: Nullable(Uuid),
    created_at: DateTime,
    updated_at: DateTime,
    messages: Type.Optional(Type.Array(Type.Ref('Message'))),
  },
  { $id: 'Conversation', title: 'Conversation' },
);

export const ConversationEnvelope = Envelope(Type.Ref('Conversation'));
export const ConversationListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('Conversation')), _meta: PageMeta }),
);
export const MessageEnvelope = Envelope(Type.Ref('Message'));

export const CreateConversationBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    subject: Type.String({ maxLength: 998 }),
    channel: literals(CONVERSATION_CHANNELS),
    status: Type.Optional(literals(CONVERSATION_STATUSES)),
    party_uid: Type.Optional(Nullable(Uuid)),
  },
  { additionalProperties: false },
);
export type CreateConversationBodyT = Static<typeof CreateConversationBody>;

const Recipients = Type.Array(EmailAddress, { minItems: 1, maxItems: 100 });

export const CreateMessageBody = Type.Object(
  {
    subject: Type.String({ maxLength: 998 }),
    from_email: EmailAddress,
    to: Recipients,
    body_text: Type.String({ maxLength: 500_000 }),
    direction: Type.Optional(
      Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { default: 'outbound' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateMessageBodyT = Static<typeof CreateMessageBody>;

export const InboundEmailBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    from_email: EmailAddress,
    to: Recipients,
    subject: Type.String({ maxLength: 998 }),
    body_text: Type.String({ maxLength: 500_000 }),
    message_id: Type.Optional(Type.String({ minLength: 1, maxLength: 998 })),
    in_reply_to: Type.Optional(
      Type.String({ minLength: 1, maxLength: 998, description: 'the In-Reply-To header' }),
    ),
  },
  { additionalProperties: false },
);
export type InboundEmailBodyT = Static<typeof InboundEmailBody>;

export const InboundEmailEnvelope = Envelope(
  Type.Object({
    conversation_uid: Uuid,
    message_uid: Uuid,
    threaded_by: Type.String({ description: 'in_reply_to, subject_and_sender or new' }),
    run_uids: Type.Array(Uuid),
  }),
);

export const ConversationUidParams = Type.Object({ conversation_uid: Uuid });
export const ListConversationsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  status: Type.Optional(literals(CONVERSATION_STATUSES)),
  party_uid: Type.Optional(Uuid),
  ...pageQuery(25),
});
