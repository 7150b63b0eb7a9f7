import { Type, type Static } from 'typebox';
import { Envelope, Nullable, Uuid } from '../../platform/http/schemas.ts';

export const SEARCH_TYPES = ['invoice', 'customer', 'task', 'conversation', 'document', 'knowledge'] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];

export const SearchQuery = Type.Object({
  mode: Type.Optional(Type.Union([Type.Literal('search'), Type.Literal('suggest')], { default: 'search' })),
  q: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'at least 2 characters; required in search mode, ignored in suggest',
    }),
  ),
  types: Type.Optional(
    Type.String({ maxLength: 200, description: `comma-separated: ${SEARCH_TYPES.join(', ')} (default all)` }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 12 })),
  organization_uid: Type.Optional(Uuid),
});
export type SearchQueryT = Static<typeof SearchQuery>;

export const SearchItem = Type.Object({
  entity_uid: Uuid,
  entity_type: Type.String(),
  label: Type.String(),
  subtitle: Nullable(Type.String()),
});
export type SearchItemT = Static<typeof SearchItem>;
export const SearchEnvelope = Envelope(Type.Object({ data: Type.Array(SearchItem) }));

export const ContextSearchQuery = Type.Object({
  q: Type.String({ minLength: 2, maxLength: 200 }),
  entity_type: Type.Optional(
    Type.Union([Type.Literal('invoice'), Type.Literal('party'), Type.Literal('message')], {
      description: 'all three when omitted',
    }),
  ),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  organization_uid: Type.Optional(Uuid),
});
export type ContextSearchQueryT = Static<typeof ContextSearchQuery>;

export const ContextSearchEnvelope = Envelope(
  Type.Object({
    invoices: Type.Array(
      Type.Object({
        uid: Uuid,
        invoice_number: Type.String(),
        counterparty_name: Type.String(),
        amount_due_cents: Type.Integer(),
        currency: Type.String(),
      }),
    ),
    parties: Type.Array(Type.Object({ uid: Uuid, name: Type.String() })),
    messages: Type.Array(Type.Object({ uid: Uuid, subject: Type.String(), from_email: Type.String() })),
  }),
);
