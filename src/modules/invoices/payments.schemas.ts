import { Type, type Static } from 'typebox';
import {
  amountCents,
  dateOrDateTime,
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageLinks,
  PageMeta,
  pageQuery,
  stringEnum,
  Uuid,
} from '../../platform/http/schemas.ts';

export const PAYMENT_STATUSES = ['succeeded', 'partially_refunded', 'refunded', 'voided'] as const;

const Person = (description: string) =>
  Nullable(Type.Object({ user_uid: Uuid, full_name: Type.String() }, { description }));

export const Refund = Type.Object(
  {
    uid: Uuid,
    payment_uid: Uuid,
    invoice_uid: Uuid,
    amount_cents: Type.Integer({ description: 'cents, in the invoice currency' }),
    reason: Type.String(),
    refunded_by: Person('who recorded the refund'),
    created_at: DateTime,
  },
  { $id: 'PaymentRefund' },
);

const paymentFields = {
  uid: Uuid,
  invoice_uid: Uuid,
  amount_cents: Type.Integer({ description: 'cents, as received (refunds never change it)' }),
  currency: Type.String({ description: "the invoice's currency" }),
  paid_at: DateTime,
  recorded_by: Person('who recorded it'),
  created_at: DateTime,
  status: stringEnum(PAYMENT_STATUSES, {
    description: 'succeeded; partially_refunded or refunded once refunds were recorded; voided (a mistake)',
  }),
  amount_refunded_cents: Type.Integer({ description: 'Σ of its refunds' }),
  amount_net_cents: Type.Integer({
    description: 'what counts towards amount_paid_cents: amount − refunded, 0 when voided',
  }),
  refunds: Type.Array(Type.Ref('PaymentRefund'), { description: 'oldest first' }),
  voided_at: Nullable(DateTime),
  voided_by: Person('who voided it'),
  void_reason: Nullable(Type.String()),
};

export const Payment = Type.Object(paymentFields, { $id: 'InvoicePayment' });
export const OrganizationPayment = Type.Object(
  {
    ...paymentFields,
    invoice_number: Type.String(),
    invoice_type: Type.String({ description: 'ACCOUNTS_RECEIVABLE or ACCOUNTS_PAYABLE' }),
  },
  { $id: 'OrganizationPayment' },
);

export const PaymentsEnvelope = Envelope(Type.Object({ items: Type.Array(Type.Ref('InvoicePayment')) }));
export const PaymentListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('OrganizationPayment')), _meta: PageMeta, _links: PageLinks }),
);

export const PaymentParams = Type.Object({ uid: Uuid, payment_uid: Uuid });

const Reason = Type.String({ minLength: 1, maxLength: 1000 });

export const RefundBody = Type.Object(
  {
    amount_cents: Type.Optional(
      amountCents(1, { description: 'default: all that is left to refund of the payment' }),
    ),
    reason: Reason,
  },
  { additionalProperties: false },
);
export type RefundBodyT = Static<typeof RefundBody>;

export const VoidPaymentBody = Type.Object({ reason: Reason }, { additionalProperties: false });
export type VoidPaymentBodyT = Static<typeof VoidPaymentBody>;

export const RefundEnvelope = Envelope(
  Type.Object({
    refund: Type.Ref('PaymentRefund'),
    payment: Type.Ref('InvoicePayment'),
    invoice: Type.Ref('Invoice'),
  }),
);
export const PaymentChangeEnvelope = Envelope(
  Type.Object({ payment: Type.Ref('InvoicePayment'), invoice: Type.Ref('Invoice') }),
);

// A date (YYYY-MM-DD, that UTC day's start; as `to`, its end) or a date-time with its zone.
const bound = (description: string) => Type.Optional(dateOrDateTime({ maxLength: 40, description }));

export const ListPaymentsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  invoice_uid: Type.Optional(Uuid),
  status: Type.Optional(literals(PAYMENT_STATUSES)),
  from: bound('paid_at from, inclusive'),
  to: bound('paid_at up to, inclusive; a date includes that whole day'),
  ...pageQuery(25),
});
export type ListPaymentsQueryT = Static<typeof ListPaymentsQuery>;
