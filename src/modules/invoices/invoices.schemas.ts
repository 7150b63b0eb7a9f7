import { Type, type Static } from 'typebox';
import {
  amountCents,
  Currency,
  DateTime,
  Envelope,
  Nullable,
  PageLinks,
  PageMeta,
  Uuid,
  dateOrDateTime,
  pageQuery,
  stringEnum,
} from '../../platform/http/schemas.ts';
import { PAYABLE_STATUSES, RECEIVABLE_STATUSES } from './invoice-statuses.ts';

const ContextType = Type.Union([Type.Literal('PRODUCT'), Type.Literal('DISCOUNT')]);
const InvoiceTypeSchema = Type.Union([Type.Literal('ACCOUNTS_RECEIVABLE'), Type.Literal('ACCOUNTS_PAYABLE')]);
const CollectionMethod = Type.Union([Type.Literal('charge_automatically'), Type.Literal('send_invoice')]);
/** A date (`2026-03-05`, read as midnight UTC) or a date-time with a time zone. */
export const DateOrDateTime = dateOrDateTime({
  description: 'YYYY-MM-DD or an ISO 8601 date-time with time zone',
});
/** Every invoice status: receivable (draft … uncollectible) and payable (received … rejected). */
const InvoiceStatus = stringEnum([...new Set([...RECEIVABLE_STATUSES, ...PAYABLE_STATUSES])], {
  description:
    'receivable: draft, open, paid, void, uncollectible; payable: received, in_review, approved, registered, scheduled, paid, rejected, void (docs/invoices.md#lifecycle)',
});
const Cents = amountCents(0);

export const LineItem = Type.Object(
  {
    uid: Uuid,
    invoice_uid: Uuid,
    context_type_uid: Uuid,
    context_type: ContextType,
    context_name: Type.String(),
    sku: Type.String(),
    currency: Type.String(),
    quantity: Type.Integer(),
    unit_price: Type.Integer(),
    line_total: Type.Integer(),
  },
  { $id: 'LineItem' },
);

const PartySummary = Type.Object({
  uid: Uuid,
  name: Type.String(),
  address: Type.String(),
  role: Type.String(),
  billing_contact: Nullable(Type.Ref('BillingContact')),
});

export const Comment = Type.Object(
  {
    uid: Uuid,
    text: Type.String(),
    created_at: DateTime,
    last_modified_at: DateTime,
    resolved_by: Nullable(Type.Integer()),
    resolved_at: Nullable(DateTime),
    actor: Type.Object({
      id: Type.Integer(),
      fullname: Type.String(),
      avatar: Nullable(Type.String()),
      email: Type.String(),
    }),
  },
  { $id: 'InvoiceComment' },
);

const Integration = Type.Object({
  uid: Uuid,
  entity_uid: Uuid,
  integration_name: Type.String(),
  integration_uid: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime,
  integration_metadata: Type.Object({}, { additionalProperties: true }),
});

const FieldValue = Type.Object({ type: Type.String(), original_type: Type.String(), value: Type.Unknown() });

/** Interface 2.11, every field, plus the AP/registration fields and bookkeeping. */
export const Invoice = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    invoice_number: Type.String(),
    invoice_type: InvoiceTypeSchema,
    status: InvoiceStatus,
    collection_method: CollectionMethod,
    issue_date: Nullable(DateTime),
    due_date: Nullable(DateTime),
    paid_date: Nullable(DateTime),
    subtotal_cents: Type.Integer(),
    discount_cents: Type.Integer(),
    tax_cents: Type.Integer(),
    total: Type.Integer({ description: 'Same as total_cents' }),
    total_cents: Type.Integer(),
    pre_payment_credit_notes_cents: Type.Integer(),
    amount_due_cents: Type.Integer(),
    amount_paid_cents: Type.Integer(),
    amount_remaining_cents: Type.Integer(),
    overdue_days: Type.Integer(),
    age: Type.Integer(),
    currency: Type.String(),
    invoice_link: Nullable(Type.String()),
    document_uid: Nullable(Uuid),
    invoice_blueprint_uid: Nullable(Uuid),
    target_party_uid: Nullable(Uuid),
    has_comments: Type.Boolean(),
    line_items: Type.Array(Type.Ref('LineItem')),
    invoice_fields: Type.Array(Type.Object({ key: Type.String(), value: FieldValue })),
    parties: Type.Object({ client: Nullable(PartySummary), service_provider: Nullable(PartySummary) }),
    integrations: Type.Array(Integration),
    invoice_notes: Type.Object({ invoice_memo: Type.String(), invoice_footer: Type.String() }),
    comments: Type.Optional(Type.Array(Type.Ref('InvoiceComment'))),
    stamp_number: Nullable(Type.String()),
    received_date: Nullable(DateTime),
    document_type: Nullable(Type.String()),
    registration_number: Nullable(Type.String()),
    vendor_name: Type.String(),
    vendor_nit: Type.String(),
    approved_by: Nullable(Type.Integer()),
    approval_date: Nullable(DateTime),
    registered_by: Nullable(Type.Integer()),
    registration_date: Nullable(DateTime),
    responsible: Nullable(Type.Integer()),
    assignee_user_uids: Type.Array(Uuid),
    revision: Type.Integer(),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'Invoice' },
);

/** The AP list's `view=list` item: exactly the slim fields of interface 2.11. */
export const InvoiceListItem = Type.Object(
  {
    uid: Uuid,
    status: InvoiceStatus,
    invoice_number: Type.String(),
    issue_date: Nullable(DateTime),
    due_date: Nullable(DateTime),
    currency: Type.String(),
    has_comments: Type.Boolean(),
    stamp_number: Nullable(Type.String()),
    received_date: Nullable(DateTime),
    document_type: Nullable(Type.String()),
    vendor_nit: Type.String(),
    vendor_name: Type.String(),
    amount_due: Type.Integer({ description: 'cents' }),
    registration_number: Nullable(Type.String()),
    approved_by: Nullable(Type.Integer()),
    registered_by: Nullable(Type.Integer()),
    approval_date: Nullable(DateTime),
    registration_date: Nullable(DateTime),
  },
  { $id: 'InvoiceListItem', additionalProperties: false },
);

const LineItemInput = Type.Object({
  context_type: ContextType,
  sku: Type.String({ minLength: 1, maxLength: 100 }),
  quantity: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
  unit_price: Type.Optional(amountCents(0)),
  currency: Type.Optional(Currency),
});
export type LineItemInputT = Static<typeof LineItemInput>;

const LineItemUpdate = Type.Object({
  uid: Uuid,
  context_type: Type.Optional(ContextType),
  sku: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  quantity: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
  unit_price: Type.Optional(amountCents(0)),
  currency: Type.Optional(Currency),
});
export type LineItemUpdateT = Static<typeof LineItemUpdate>;

export const LineItemsBody = Type.Union([
  LineItemInput,
  Type.Array(LineItemInput, { minItems: 1, maxItems: 100 }),
]);
export const LineItemsUpdateBody = Type.Union([
  LineItemUpdate,
  Type.Array(LineItemUpdate, { minItems: 1, maxItems: 100 }),
]);

const InvoiceNotesInput = Type.Object({
  invoice_memo: Type.Optional(Type.String({ maxLength: 10_000 })),
  invoice_footer: Type.Optional(Type.String({ maxLength: 10_000 })),
});
const FieldsInput = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 200 });

/** Why the status changes, kept in the invoice's status history (sent with `status`). */
const StatusNote = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: "Why the status changes; kept in the invoice's status history. Only with `status`",
});

export const CreateInvoiceBody = Type.Object({
  organization_uid: Type.Optional(Uuid),
  invoice_type: InvoiceTypeSchema,
  invoice_number: Type.String({ minLength: 1, maxLength: 100 }),
  status: Type.Optional(Type.String({ maxLength: 32 })),
  collection_method: Type.Optional(CollectionMethod),
  currency: Currency,
  issue_date: Type.Optional(Nullable(DateOrDateTime)),
  due_date: Type.Optional(Nullable(DateOrDateTime)),
  client_party_uid: Type.Optional(Nullable(Uuid)),
  service_provider_party_uid: Type.Optional(Nullable(Uuid)),
  target_party_uid: Type.Optional(Nullable(Uuid)),
  document_uid: Type.Optional(Nullable(Uuid)),
  invoice_blueprint_uid: Type.Optional(Nullable(Uuid)),
  invoice_link: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  line_items: Type.Optional(Type.Array(LineItemInput, { maxItems: 100 })),
  tax_cents: Type.Optional(Cents),
  pre_payment_credit_notes_cents: Type.Optional(Cents),
  invoice_notes: Type.Optional(InvoiceNotesInput),
  invoice_fields: Type.Optional(FieldsInput),
  stamp_number: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  received_date: Type.Optional(Nullable(DateOrDateTime)),
  document_type: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  registration_number: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  assignee_user_uids: Type.Optional(Type.Array(Uuid, { maxItems: 50 })),
  responsible_user_uid: Type.Optional(Nullable(Uuid)),
  status_note: Type.Optional(StatusNote),
});
export type CreateInvoiceBodyT = Static<typeof CreateInvoiceBody>;

/** Interface 4.7's fields, plus the other editable ones; only what is sent changes. */
export const UpdateInvoiceBody = Type.Object({
  target_party_uid: Type.Optional(Nullable(Uuid)),
  document_uid: Type.Optional(Nullable(Uuid)),
  invoice_blueprint_uid: Type.Optional(Nullable(Uuid)),
  invoice_number: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  status: Type.Optional(Type.String({ maxLength: 32 })),
  collection_method: Type.Optional(CollectionMethod),
  issue_date: Type.Optional(Nullable(DateOrDateTime)),
  due_date: Type.Optional(Nullable(DateOrDateTime)),
  paid_date: Type.Optional(Nullable(DateOrDateTime)),
  currency: Type.Optional(Currency),
  invoice_fields: Type.Optional(FieldsInput),
  tax_cents: Type.Optional(Cents),
  pre_payment_credit_notes_cents: Type.Optional(Cents),
  invoice_notes: Type.Optional(InvoiceNotesInput),
  invoice_link: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  client_party_uid: Type.Optional(Nullable(Uuid)),
  service_provider_party_uid: Type.Optional(Nullable(Uuid)),
  stamp_number: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  received_date: Type.Optional(Nullable(DateOrDateTime)),
  document_type: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  registration_number: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  assignee_user_uids: Type.Optional(Type.Array(Uuid, { maxItems: 50 })),
  responsible_user_uid: Type.Optional(Nullable(Uuid)),
  status_note: Type.Optional(StatusNote),
});
export type UpdateInvoiceBodyT = Static<typeof UpdateInvoiceBody>;

export const CommentBody = Type.Object({ text: Type.String({ minLength: 1, maxLength: 10_000 }) });
export const PatchCommentBody = Type.Object({
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000 })),
  resolved: Type.Optional(Type.Boolean()),
});
export const PaymentBody = Type.Object({
  amount_cents: amountCents(1),
  paid_at: Type.Optional(DateOrDateTime),
});

export const InvoiceParams = Type.Object({ uid: Uuid });
export const CommentParams = Type.Object({ uid: Uuid, comment_uid: Uuid });
export const InvoiceEnvelope = Envelope(Type.Ref('Invoice'));
export const LineItemsEnvelope = Envelope(
  Type.Union([Type.Ref('LineItem'), Type.Array(Type.Ref('LineItem'))]),
);
export const CommentEnvelope = Envelope(Type.Ref('InvoiceComment'));

/** One status change of an invoice (docs/invoices.md#status-history). */
export const StatusChange = Type.Object(
  {
    uid: Uuid,
    invoice_uid: Uuid,
    position: Type.Integer({ description: '1, 2, … in the order of the changes' }),
    from_status: Nullable(Type.String({ description: 'null: the invoice was created in to_status' })),
    to_status: Type.String(),
    reason: Type.String({
      description:
        'what made the change: `created`, `update` (PUT), `payment` (a payment settled it), or what an internal caller names (e.g. `refund`)',
    }),
    note: Nullable(Type.String()),
    actor: Type.Object({
      type: stringEnum(['user', 'api_key', 'agent_run', 'system'] as const),
      uid: Nullable(Uuid),
      user_uid: Nullable(Type.String({ description: 'the person behind the key or run, when known' })),
      name: Nullable(Type.String({ description: "the person's name when the change was made" })),
    }),
    changed_at: DateTime,
  },
  { $id: 'InvoiceStatusChange' },
);
export const StatusHistoryQuery = Type.Object(pageQuery(25));
export const StatusHistoryEnvelope = Envelope(
  Type.Object({
    items: Type.Array(Type.Ref('InvoiceStatusChange')),
    allowed_next_statuses: Type.Array(Type.String(), {
      description:
        'the statuses a PUT from this caller may move the invoice to now (docs/invoices.md#lifecycle); a move to approved may still be refused by approval rights or limits (403)',
    }),
    _meta: PageMeta,
    _links: PageLinks,
  }),
);
