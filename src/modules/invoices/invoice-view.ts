import type { DbOrTx } from '../../platform/db/client.ts';
import { findPartiesByUids, type PartyWithContact } from '../parties/parties.service.ts';
import { toPartyView } from '../parties/parties.service.ts';
import { fieldArray, type StoredField } from './invoice-fields.ts';
import { ageDays, overdueDays } from './invoice-totals.ts';
import * as repo from './invoices.repository.ts';

export function toLineItemView(row: repo.LineItemRow) {
  return {
    uid: row.uid,
    invoice_uid: row.invoiceUid,
    context_type_uid: row.contextTypeUid,
    context_type: row.contextType,
    context_name: row.contextName,
    sku: row.sku,
    currency: row.currency,
    quantity: row.quantity,
    unit_price: row.unitPrice,
    line_total: row.lineTotal,
  };
}

export function toCommentView({ comment, actor }: repo.CommentWithActor) {
  return {
    uid: comment.uid,
    text: comment.text,
    created_at: comment.createdAt,
    last_modified_at: comment.lastModifiedAt,
    resolved_by: comment.resolvedBy,
    resolved_at: comment.resolvedAt,
    actor: { id: actor.id, fullname: actor.fullName, avatar: actor.avatarUrl, email: actor.email },
  };
}

function toIntegrationView(row: repo.IntegrationRow) {
  return {
    uid: row.uid,
    entity_uid: row.entityUid,
    integration_name: row.integrationName,
    integration_uid: row.integrationUid,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    integration_metadata: row.integrationMetadata as Record<string, unknown>,
  };
}

function partySummary(found: PartyWithContact | undefined) {
  if (!found) return null;
  const p = toPartyView(found);
  return { uid: p.uid, name: p.name, address: p.address, role: p.role, billing_contact: p.billing_contact };
}

/** The slim item of the AP list (`view=list`). */
export function toListItemView(row: repo.InvoiceRow) {
  return {
    uid: row.uid,
    status: row.status,
    invoice_number: row.invoiceNumber,
    issue_date: row.issueDate,
    due_date: row.dueDate,
    currency: row.currency,
    has_comments: row.hasComments,
    stamp_number: row.stampNumber,
    received_date: row.receivedDate,
    document_type: row.documentType,
    vendor_nit: row.vendorNit,
    vendor_name: row.vendorName,
    amount_due: row.amountDueCents,
    registration_number: row.registrationNumber,
    approved_by: row.approvedBy,
    registered_by: row.registeredBy,
    approval_date: row.approvalDate,
    registration_date: row.registrationDate,
  };
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/**
 * Full invoice views (interface 2.11) for rows of one organization, loading every relation in one
 * query per kind for the whole batch (a list page costs the same handful of queries as one invoice).
 */
export async function loadInvoiceViews(
  db: DbOrTx,
  organizationUid: string,
  rows: repo.InvoiceRow[],
  options: { includeComments: boolean },
) {
  const uids = rows.map((r) => r.uid);
  const partyUids = [
    ...new Set(
      rows.flatMap((r) => [r.clientPartyUid, r.serviceProviderPartyUid]).filter((u): u is string => !!u),
    ),
  ];
  // Sequential on purpose: inside a transaction one connection answers one query at a time.
  const lines = await repo.listLineItems(db, organizationUid, uids);
  const partyRows = await findPartiesByUids(db, organizationUid, partyUids);
  const integrations = await repo.listIntegrations(db, organizationUid, uids);
  const assignees = await repo.listAssignees(db, organizationUid, uids);
  const comments = options.includeComments ? await repo.listComments(db, organizationUid, uids) : [];
  return assembleInvoiceViews(rows, { lines, partyRows, integrations, assignees, comments }, options);
}

export interface InvoiceRelations {
  lines: repo.LineItemRow[];
  partyRows: PartyWithContact[];
  integrations: repo.IntegrationRow[];
  assignees: { invoiceUid: string; userUid: string }[];
  comments: repo.CommentWithActor[];
}

/** Builds interface 2.11 from rows and their already loaded relations (pure). */
export function assembleInvoiceViews(
  rows: repo.InvoiceRow[],
  { lines, partyRows, integrations, assignees, comments }: InvoiceRelations,
  options: { includeComments: boolean },
) {
  const linesBy = groupBy(lines, (l) => l.invoiceUid);
  const integrationsBy = groupBy(integrations, (i) => i.entityUid);
  const assigneesBy = groupBy(assignees, (a) => a.invoiceUid);
  const commentsBy = groupBy(comments, (c) => c.comment.invoiceUid);
  const partyBy = new Map(partyRows.map((p) => [p.party.uid, p]));
  const today = new Date();
  // Every property written out, no `...core(row)`: V8 gives an object built by a spread and then many
  // more properties a hidden class of its own, allocated in old space — on GET /api/invoices/{uid}
  // that made each scavenge 10–15 ms instead of ≈ 1 ms (docs/performance.md#get-invoice-and-the-garbage-collector). The money and
  // dates every view shares come first; overdue days and age are computed from today, never stored.
  return rows.map((row) => ({
    uid: row.uid,
    invoice_number: row.invoiceNumber,
    status: row.status,
    issue_date: row.issueDate,
    due_date: row.dueDate,
    currency: row.currency,
    has_comments: row.hasComments,
    overdue_days: overdueDays(row.dueDate, row.amountRemainingCents, row.status, today),
    age: ageDays(row.issueDate, today),
    organization_uid: row.organizationUid,
    invoice_type: row.invoiceType,
    collection_method: row.collectionMethod,
    paid_date: row.paidDate,
    subtotal_cents: row.subtotalCents,
    discount_cents: row.discountCents,
    tax_cents: row.taxCents,
    total: row.totalCents,
    total_cents: row.totalCents,
    pre_payment_credit_notes_cents: row.prePaymentCreditNotesCents,
    amount_due_cents: row.amountDueCents,
    amount_paid_cents: row.amountPaidCents,
    amount_remaining_cents: row.amountRemainingCents,
    invoice_link: row.invoiceLink,
    document_uid: row.documentUid,
    invoice_blueprint_uid: row.invoiceBlueprintUid,
    target_party_uid: row.targetPartyUid,
    line_items: (linesBy.get(row.uid) ?? []).map(toLineItemView),
    invoice_fields: fieldArray(row.invoiceFields as Record<string, StoredField>),
    parties: {
      client: partySummary(row.clientPartyUid ? partyBy.get(row.clientPartyUid) : undefined),
      service_provider: partySummary(
        row.serviceProviderPartyUid ? partyBy.get(row.serviceProviderPartyUid) : undefined,
      ),
    },
    integrations: (integrationsBy.get(row.uid) ?? []).map(toIntegrationView),
    invoice_notes: { invoice_memo: row.invoiceMemo, invoice_footer: row.invoiceFooter },
    // Undefined (not sent) in the lists, which carry no comments.
    comments: options.includeComments ? (commentsBy.get(row.uid) ?? []).map(toCommentView) : undefined,
    stamp_number: row.stampNumber,
    received_date: row.receivedDate,
    document_type: row.documentType,
    registration_number: row.registrationNumber,
    vendor_name: row.vendorName,
    vendor_nit: row.vendorNit,
    approved_by: row.approvedBy,
    approval_date: row.approvalDate,
    registered_by: row.registeredBy,
    registration_date: row.registrationDate,
    responsible: row.responsible,
    assignee_user_uids: (assigneesBy.get(row.uid) ?? []).map((a) => a.userUid),
    revision: row.revision,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }));
}

export type InvoiceView = ReturnType<typeof assembleInvoiceViews>[number];
