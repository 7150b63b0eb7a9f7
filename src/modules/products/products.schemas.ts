import { Type, type Static } from 'typebox';
import {
  amountCents,
  Currency,
  DateTime,
  Envelope,
  PageMeta,
  pageQuery,
  Uuid,
} from '../../platform/http/schemas.ts';

const ContextType = Type.Union([Type.Literal('PRODUCT'), Type.Literal('DISCOUNT')]);

export const Product = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    sku: Type.String(),
    name: Type.String(),
    context_type: ContextType,
    unit_price: Type.Integer({ description: 'cents' }),
    currency: Type.String(),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'Product' },
);

export const CreateProductBody = Type.Object({
  organization_uid: Type.Optional(Uuid),
  sku: Type.String({ minLength: 1, maxLength: 100 }),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  context_type: ContextType,
  unit_price: amountCents(0, { description: 'cents' }),
  currency: Currency,
});
export type CreateProductBodyT = Static<typeof CreateProductBody>;

export const PatchProductBody = Type.Object({
  sku: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  context_type: Type.Optional(ContextType),
  unit_price: Type.Optional(amountCents(0)),
  currency: Type.Optional(Currency),
});
export type PatchProductBodyT = Static<typeof PatchProductBody>;

export const ListProductsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  context_type: Type.Optional(ContextType),
  ...pageQuery(25),
});

export const UidParams = Type.Object({ uid: Uuid });
export const ProductEnvelope = Envelope(Type.Ref('Product'));
export const ProductListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('Product')), _meta: PageMeta }),
);
