import { Type, type Static } from 'typebox';
import {
  amountCents,
  DateTime,
  Envelope,
  literals,
  Nullable,
  stringEnum,
  Uuid,
} from '../../platform/http/schemas.ts';

export const CREDIT_NOTE_REASONS = [
  'duplicate',
  'fraudulent',
  'order_change',
  'product_unsatisfactory',
  'other',
] as const;

const Person = (description: string) =>
  Nullable(Type.Object({ user_uid: Uuid, full_name: Type.String() }, { description }));

export const CreditNote = Type.Object(
  {
    uid: Uuid,
    invoice_uid: Uuid,
    amount_cents: Type.Integer({ description: 'cents, in the invoice currency' }),
    currency: Type.String({ description: "the invoice's currency" }),
    reason: stringEnum(CREDIT_NOTE_REASONS),
    memo: Type.String(),
    status: stringEnum(['issued', 'void'] as const, {
      description: 'issued (counts in pre_payment_credit_notes_cents) or void',
    }),
    created_by: Person('who issued it'),
    created_at: DateTime,
    voided_at: Nullable(DateTime),
    voided_by: Person('who voided it'),
    void_reason: Nullable(Type.String()),
  },
  { $id: 'CreditNote' },
);

export const CreditNoteParams = Type.Object({ uid: Uuid, credit_note_uid: Uuid });

export const CreateCreditNoteBody = Type.Object(
  {
    amount_cents: amountCents(1, { description: 'at most the invoice’s amount_remaining_cents' }),
    reason: literals(CREDIT_NOTE_REASONS),
    memo: Type.Optional(Type.String({ maxLength: 5000 })),
  },
  { additionalProperties: false },
);
export type CreateCreditNoteBodyT = Static<typeof CreateCreditNoteBody>;

export const VoidCreditNoteBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })) },
  { additionalProperties: false, description: 'optional: no body is the same as {}' },
);
export type VoidCreditNoteBodyT = Static<typeof VoidCreditNoteBody>;

export const CreditNotesEnvelope = Envelope(Type.Object({ items: Type.Array(Type.Ref('CreditNote')) }));
export const CreditNoteChangeEnvelope = Envelope(
  Type.Object({ credit_note: Type.Ref('CreditNote'), invoice: Type.Ref('Invoice') }),
);
