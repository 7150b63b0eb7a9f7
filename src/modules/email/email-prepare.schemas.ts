import { Type, type Static } from 'typebox';
import { Envelope, Uuid } from '../../platform/http/schemas.ts';
import { CONTEXT_TYPES } from './email-fields.ts';

const ContextTypeSchema = Type.Enum([...CONTEXT_TYPES], {
  description: 'The kind of entity the email is about; only `invoice` today',
});

/** Interface 2.9, request. */
export const PrepareEmailBody = Type.Object({
  context_type: ContextTypeSchema,
  context_uid: Uuid,
  mode: Type.Optional(
    Type.Union([Type.Literal('template'), Type.Literal('inference')], {
      default: 'template',
      description:
        'template (default): replace {token} placeholders; inference: compose with the text generator',
    }),
  ),
  subject: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: 'Template mode: required, may hold {token} placeholders. Inference mode: the fallback',
    }),
  ),
  body_text: Type.Optional(
    Type.String({
      maxLength: 200_000,
      description: 'Template mode: required, may hold {token} placeholders. Inference mode: the fallback',
    }),
  ),
  prompt_hint: Type.Optional(Type.String({ maxLength: 4000, description: 'Inference mode: guidance' })),
});
export type PrepareEmailBodyT = Static<typeof PrepareEmailBody>;

const TokenErrorSchema = Type.Object({
  token: Type.String({ description: 'The token as written, braces included; `{inference}` for generation' }),
  message: Type.String(),
});

/** Interface 2.9, response: the bare object, no envelope (interface 2.1). */
export const PreparedEmail = Type.Object(
  {
    subject: Type.String(),
    body_text: Type.String(),
    body_html: Type.String({
      description: 'Built from body_text by the rules of interface 4.6; input is escaped',
    }),
    mode: Type.Union([Type.Literal('template'), Type.Literal('inference')]),
    errors: Type.Array(TokenErrorSchema),
  },
  { $id: 'PreparedEmail' },
);
export type PreparedEmailT = Static<typeof PreparedEmail>;

export const EmailFieldsQuery = Type.Object({ context_type: ContextTypeSchema });

const EmailFieldSchema = Type.Object({
  token: Type.String({ description: 'The placeholder as written, e.g. `{invoice_number}`' }),
  description: Type.String(),
  example: Type.String(),
});

export const EmailFieldsEnvelope = Envelope(Type.Object({ items: Type.Array(EmailFieldSchema) }));
