import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, PageMeta, pageQuery, Uuid } from '../../platform/http/schemas.ts';

export const EmailAddress = Type.String({ format: 'email', maxLength: 254 });

/** An allow-list: the SMTP URL (it carries the password) is never served, only its host and port. */
export const EmailAccount = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    email: Type.String(),
    display_name: Type.String(),
    has_smtp_url: Type.Boolean({ description: 'false: sent through SMTP_URL, or to the outbox' }),
    smtp_host: Nullable(Type.String()),
    smtp_port: Nullable(Type.Integer()),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'EmailAccount' },
);

export const CreateEmailAccountBody = Type.Object({
  organization_uid: Type.Optional(Uuid),
  email: EmailAddress,
  display_name: Type.String({ maxLength: 255, pattern: '^[^\\r\\n]*$' }),
  smtp_url: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'smtp://user:password@host:port (STARTTLS when offered) or smtps://… (TLS)',
    }),
  ),
});
export type CreateEmailAccountBodyT = Static<typeof CreateEmailAccountBody>;

export const ListEmailAccountsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  ...pageQuery(25),
});

export const UidParams = Type.Object({ uid: Uuid });
export const EmailAccountEnvelope = Envelope(Type.Ref('EmailAccount'));
export const EmailAccountListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('EmailAccount')), _meta: PageMeta }),
);
