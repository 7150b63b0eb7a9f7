import type { Database, Db, DbOrTx } from '../../platform/db/client.ts';
import { isInvoiceAssignedTo, readInvoiceView } from './invoice-read.repository.ts';
import type { InvoiceViewCache } from './invoice-view-cache.ts';
import { isUniqueViolation } from '../../platform/db/errors.ts';
import { memberOrganizationUids, roleIn, type RequestContext } from '../../platform/http/context.ts';
import { invoiceReader, mayRead, visibleInvoices } from './invoice-access.ts';
import {
  assertApprovalCoversTotal,
  checkStatusMove,
  recordStatusMove,
  statusMoveValues,
} from './invoice-lifecycle.service.ts';
import { statusesTakingPayments, takesPayments } from './invoice-lifecycle.ts';
import { paymentView } from './payment-views.ts';
import { AppError, notFound, type FieldError } from '../../platform/http/errors.ts';
import { findPartiesByUids } from '../parties/parties.service.ts';
import { findProductsBySku } from '../products/products.service.ts';
import * as billing from '../billing/billing.service.ts';
import { mergeFields, type StoredField } from './invoice-fields.ts';
import { defaultStatus, statusesFor, type InvoiceType } from './invoice-statuses.ts';
import { computeTotals, lineTotal, MAX_AMOUNT_CENTS, totalsInRange } from './invoice-totals.ts';
import { loadInvoiceViews, toCommentView, toLineItemView, type InvoiceView } from './invoice-view.ts';
import * as repo from './invoices.repository.ts';
import { settle } from './invoice-settlement.ts';
import { hasIssuedCreditNotes } from './credits.repository.ts';
import {
  changesBetween,
  hasChanges,
  recordAuditEvents,
  type AuditEvent,
  type AuditOrigin,
} from '../audit/audit.service.ts';
import type {
  CreateInvoiceBodyT,
  LineItemInputT,
  LineItemUpdateT,
  UpdateInvoiceBodyT,
} from './invoices.schemas.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { markMetricsStale } from '../metrics/metrics.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';

/** `2026-03-05` is midnight UTC; a date-time keeps its instant. */
export function toInstant(value: string | null | undefined): Date | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  return new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
}

function invalid(errors: FieldError[]): AppError {
  return new AppError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
}

function checkStatus(type: InvoiceType, status: string, field = 'status'): void {
  const allowed = statusesFor(type);
  if (!allowed.includes(status)) {
    throw invalid([{ field, message: `must be one of ${allowed.join(', ')} for ${type} invoices` }]);
  }
}

/** A uid given → the invoice, if the caller may see it (invoice-access.ts), or 404. */
export async function getInvoiceRow(db: DbOrTx, ctx: RequestContext, uid: string, forUpdate = false) {
  const row = await repo.findInvoice(db, visibleInvoices(db, invoiceReader(ctx.principal)), uid, {
    forUpdate,
  });
  if (!row) throw notFound('Invoice');
  return row;
}

export async function viewOf(db: DbOrTx, row: repo.InvoiceRow): Promise<InvoiceView> {
  const [view] = await loadInvoiceViews(db, row.organizationUid, [row], { includeComments: true });
  return view!;
}

// ---- webhook events (docs/webhooks.md#event-types): in the transaction of the change they report ----

/**
 * Bookkeeping every write moves, and the billing partner's record (reported by `invoice.synced`):
 * not a change of the invoice in itself.
 */
const VIEW_NOISE = new Set(['revision', 'updated_at', 'integrations']);

/** The fields of GET's answer that differ between two views of one invoice, in the view's order. */
function changedFields(before: InvoiceView, after: InvoiceView): string[] {
  const was = before as Record<string, unknown>;
  return Object.entries(after as Record<string, unknown>)
    .filter(([key, value]) => !VIEW_NOISE.has(key) && JSON.stringify(value) !== JSON.stringify(was[key]))
    .map(([key]) => key);
}

export const invoiceEntity = (view: InvoiceView) => ({
  type: 'invoice',
  uid: view.uid,
  organizationUid: view.organization_uid,
});

/**
 * `invoice.updated` when the change altered what `GET /api/invoices/{uid}` answers (nothing for an
 * update that sent the same values), and `invoice.status_changed` after it when the status moved.
 */
export async function emitInvoiceChange(
  tx: DbOrTx,
  jobs: Jobs,
  before: InvoiceView,
  after: InvoiceView,
): Promise<void> {
  const changed = changedFields(before, after);
  if (changed.length === 0) return;
  await noteReceivablesChange(tx, jobs, after);
  const org = { organizationUid: after.organization_uid };
  await emitEvent(tx, jobs, org, 'invoice.updated', invoiceEntity(after), {
    invoice: after,
    changed_fields: changed,
  });
  if (before.status !== after.status) {
    await emitEvent(tx, jobs, org, 'invoice.status_changed', invoiceEntity(after), {
      invoice: after,
      previous_status: before.status,
      status: after.status,
    });
  }
}

/** A receivable changed: the preset receivables metrics are recomputed shortly (docs/metrics.md). */
async function noteReceivablesChange(tx: DbOrTx, jobs: Jobs, invoice: InvoiceView): Promise<void> {
  if (invoice.invoice_type === 'ACCOUNTS_RECEIVABLE') {
    await markMetricsStale(tx, jobs, invoice.organization_uid);
  }
}

interface ResolvedLine {
  contextTypeUid: string;
  contextType: 'PRODUCT' | 'DISCOUNT';
  contextName: string;
  sku: string;
  currency: string;
  quantity: number;
  unitPrice: number;
}

/**
 * Resolves SKUs in the organization's catalog. Every problem of every item is collected and the whole
 * batch refused (422) so nothing is half-written.
 */
async function resolveLines(
  db: DbOrTx,
  organizationUid: string,
  invoiceCurrency: string,
  items: { index: number; prefix: string; input: Partial<LineItemInputT>; base?: ResolvedLine }[],
): Promise<ResolvedLine[]> {
  const skus = [...new Set(items.map((i) => i.input.sku).filter((s): s is string => !!s))];
  const products = new Map((await findProductsBySku(db, organizationUid, skus)).map((p) => [p.sku, p]));
  const errors: FieldError[] = [];
  const out: ResolvedLine[] = [];
  for (const { prefix, input, base } of items) {
    // On an update, sending the line's own SKU again is not a change: re-resolving it used to reset an
    // overridden unit_price to the catalog price although the caller never sent a price.
    const skuChanged = input.sku !== undefined && input.sku !== base?.sku;
    const sku = input.sku ?? base?.sku;
    const product = skuChanged ? products.get(input.sku!) : undefined;
    if (skuChanged && !product) {
      errors.push({
        field: `${prefix}sku`,
        message: `unknown SKU "${input.sku}" in this organization's catalog`,
      });
      continue;
    }
    // The kind follows the SKU: a new SKU brings its product's kind, an unchanged one keeps the line's.
    // (The line's old kind used to win over a new SKU's, so moving a line to a SKU of the other kind
    // was refused unless context_type was sent too; and sending context_type alone could turn a
    // PRODUCT line into a DISCOUNT while it still pointed at the same product.)
    const expectedType = product?.contextType ?? base?.contextType;
    const contextType = input.context_type ?? expectedType;
    if (expectedType && contextType !== expectedType) {
      errors.push({
        field: `${prefix}context_type`,
        message: `SKU "${sku}" is a ${expectedType}, not a ${contextType}`,
      });
      continue;
    }
    const currency = (input.currency ?? base?.currency ?? invoiceCurrency).toUpperCase();
    if (currency !== invoiceCurrency) {
      errors.push({
        field: `${prefix}currency`,
        message: `must be the invoice's currency (${invoiceCurrency})`,
      });
      continue;
    }
    // A catalog price is in the product's currency: copying a EUR price onto a USD line silently
    // bills the wrong amount, so a price in another currency must be given explicitly.
    if (product && input.unit_price === undefined && product.currency !== currency) {
      errors.push({
        field: `${prefix}unit_price`,
        message: `SKU "${sku}" is priced in ${product.currency}; send unit_price in ${currency}`,
      });
      continue;
    }
    const quantity = input.quantity ?? base?.quantity ?? 1;
    // A new SKU brings its catalog price unless the caller sets one.
    const unitPrice = input.unit_price ?? (product ? product.unitPrice : base!.unitPrice);
    if (lineTotal(quantity, unitPrice) > MAX_AMOUNT_CENTS) {
      errors.push({
        field: `${prefix}quantity`,
        message: `quantity × unit_price must not exceed ${MAX_AMOUNT_CENTS} cents`,
      });
      continue;
    }
    out.push({
      contextTypeUid: product?.uid ?? base!.contextTypeUid,
      contextType: contextType!,
      contextName: product?.name ?? base!.contextName,
      sku: sku!,
      currency,
      quantity,
      unitPrice,
    });
  }
  if (errors.length > 0) throw invalid(errors);
  return out;
}

function lineValues(organizationUid: string, invoiceUid: string, line: ResolvedLine) {
  return { organizationUid, invoiceUid, ...line, lineTotal: lineTotal(line.quantity, line.unitPrice) };
}

// ---- audit events (docs/audit-log.md): written in the transaction of the change they record ----

/** Bookkeeping that changes with every write (or follows from comments), not a change of its own. */
const INVOICE_NOISE = ['revision', 'has_comments'];
/**
 * A payment's event names its invoice as its parent; a new payment's refund and void columns (migration
 * 0030) say nothing yet.
 */
const PAYMENT_NOISE = [
  'invoice_uid',
  'status',
  'amount_refunded_cents',
  'voided_at',
  'voided_by_user_uid',
  'void_reason',
];
/** A line item's event names its invoice as its parent. */
const LINE_NOISE = ['invoice_uid'];

export const invoiceParent = (invoiceUid: string) => ({ type: 'invoice' as const, uid: invoiceUid });

function lineItemCreated(line: repo.LineItemRow): AuditEvent {
  return {
    organizationUid: line.organizationUid,
    action: 'line_item.created',
    entityUid: line.uid,
    parent: invoiceParent(line.invoiceUid),
    changes: changesBetween(null, toLineItemView(line), { omit: LINE_NOISE }),
  };
}

interface AssigneeChange {
  before: string[];
  after: string[];
}

/**
 * The event of an invoice update: `invoice.approved` when it moved to approved, `invoice.status_changed`
 * for any other move, else `invoice.updated`; none when nothing changed.
 */
async function recordInvoiceUpdate(
  tx: DbOrTx,
  origin: AuditOrigin,
  before: repo.InvoiceRow,
  after: repo.InvoiceRow,
  assignees: AssigneeChange | undefined,
): Promise<void> {
  const changes = changesBetween(
    { ...before, ...(assignees ? { assigneeUserUids: [...assignees.before].sort() } : {}) },
    { ...after, ...(assignees ? { assigneeUserUids: [...new Set(assignees.after)].sort() } : {}) },
    { omit: INVOICE_NOISE },
  );
  if (!hasChanges(changes)) return;
  const action =
    before.status === after.status
      ? 'invoice.updated'
      : after.status === 'approved'
        ? 'invoice.approved'
        : 'invoice.status_changed';
  await recordAuditEvents(tx, origin, [
    { organizationUid: after.organizationUid, action, entityUid: after.uid, changes },
  ]);
}

/** Recomputes the derived money after a change to lines, tax, credit notes or payments. */
export async function recompute(tx: DbOrTx, row: repo.InvoiceRow, extra: Partial<repo.InvoiceInsert> = {}) {
  const lines = await repo.listLineItems(tx, row.organizationUid, [row.uid]);
  const paid = await repo.sumPayments(tx, row.organizationUid, row.uid);
  const t = computeTotals({
    lines: lines.map((l) => ({ context_type: l.contextType, line_total: l.lineTotal })),
    taxCents: extra.taxCents ?? row.taxCents,
    prePaymentCreditNotesCents: extra.prePaymentCreditNotesCents ?? row.prePaymentCreditNotesCents,
    paidCents: paid,
  });
  if (!totalsInRange(t)) {
    throw invalid([
      { field: 'body', message: `the invoice's amounts would exceed ${MAX_AMOUNT_CENTS} cents` },
    ]);
  }
  // An invoice never owes the other side: discounts past the products would make a receivable that
  // stays open owing the client money. A credit note is how money is owed back. Checked when the total
  // moves, so money moves on an invoice stored before this rule are not refused.
  if (t.total_cents < 0 && t.total_cents !== row.totalCents) {
    throw invalid([
      {
        field: 'line_items',
        message: `would make the total negative (${t.total_cents} cents); to owe the ${row.invoiceType === 'ACCOUNTS_RECEIVABLE' ? 'client' : 'vendor'} money, issue a credit note`,
      },
    ]);
  }
  return repo.updateInvoice(tx, row.organizationUid, row.uid, {
    ...extra,
    subtotalCents: t.subtotal_cents,
    discountCents: t.discount_cents,
    totalCents: t.total_cents,
    amountDueCents: t.amount_due_cents,
    amountPaidCents: t.amount_paid_cents,
    amountRemainingCents: t.amount_remaining_cents,
  });
}

/**
 * The parties an invoice is given, checked (422 for one that does not exist, 409 `party_archived` for an
 * archived one) and copied for sorting and search. `current` are the invoice's parties before an update:
 * a party it already names stays allowed after being archived (invoices keep their archived parties).
 */
async function partyCopies(
  tx: DbOrTx,
  organizationUid: string,
  client?: string | null,
  provider?: string | null,
  current: { client: string | null; provider: string | null } = { client: null, provider: null },
) {
  const wanted = [client, provider].filter((u): u is string => !!u);
  const found = new Map(
    (await findPartiesByUids(tx, organizationUid, wanted)).map((p) => [p.party.uid, p.party]),
  );
  const errors: FieldError[] = [];
  if (client && !found.has(client))
    errors.push({ field: 'client_party_uid', message: 'no such party in this organization' });
  if (provider && !found.has(provider)) {
    errors.push({ field: 'service_provider_party_uid', message: 'no such party in this organization' });
  }
  if (errors.length > 0) throw invalid(errors);
  const archived = (
    [
      ['client_party_uid', client, current.client],
      ['service_provider_party_uid', provider, current.provider],
    ] as const
  ).find(([, uid, before]) => uid && uid !== before && found.get(uid)!.archivedAt !== null);
  if (archived) {
    const [field, uid] = archived;
    throw new AppError(
      'party_archived',
      `Party "${found.get(uid!)!.name}" is archived (${field}); unarchive it to use it on an invoice`,
    );
  }
  const out: Partial<repo.InvoiceInsert> = {};
  if (client !== undefined) {
    out.clientPartyUid = client;
    out.clientName = client ? found.get(client)!.name : '';
  }
  if (provider !== undefined) {
    out.serviceProviderPartyUid = provider;
    out.vendorName = provider ? found.get(provider)!.name : '';
    out.vendorNit = provider ? (found.get(provider)!.taxId ?? '') : '';
  }
  return out;
}

/**
 * `target_party_uid` need not name a party (the interface leaves it open, and it is stored as given),
 * but when it names an archived party of the organization, an invoice may not be moved to it: 409
 * `party_archived`, as for the client and the service provider. The invoice's current one stays allowed.
 */
async function refuseArchivedTarget(
  tx: DbOrTx,
  organizationUid: string,
  target: string | null | undefined,
  current: string | null,
) {
  if (!target || target === current) return;
  const [found] = await findPartiesByUids(tx, organizationUid, [target]);
  if (found && found.party.archivedAt !== null) {
    throw new AppError(
      'party_archived',
      `Party "${found.party.name}" is archived (target_party_uid); unarchive it to use it on an invoice`,
    );
  }
}

async function userIds(tx: DbOrTx, organizationUid: string, uids: string[], field: string) {
  const found = await repo.memberUsers(tx, organizationUid, uids);
  const known = new Map(found.map((u) => [u.uid, u.id]));
  const missing = uids.filter((u) => !known.has(u));
  if (missing.length > 0)
    throw invalid([{ field, message: `not members of this organization: ${missing.join(', ')}` }]);
  return known;
}

function duplicateNumber(error: unknown, number: string | undefined): never {
  if (isUniqueViolation(error, 'invoices_org_ar_number_key')) {
    throw new AppError('already_exists', `Receivable invoice number "${number}" is already used`, [
      { field: 'invoice_number', message: 'already used by another receivable invoice' },
    ]);
  }
  throw error;
}

export async function createInvoice(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  body: CreateInvoiceBodyT,
): Promise<InvoiceView> {
  const type = body.invoice_type;
  const status = body.status ?? defaultStatus(type);
  checkStatus(type, status);
  const currency = body.currency.toUpperCase();
  const org = ctx.organizationUid;
  try {
    return await db.transaction(async (tx) => {
      const copies = await partyCopies(
        tx,
        org,
        body.client_party_uid ?? null,
        body.service_provider_party_uid ?? null,
      );
      await refuseArchivedTarget(tx, org, body.target_party_uid, null);
      const assignees = body.assignee_user_uids ?? [];
      await userIds(tx, org, assignees, 'assignee_user_uids');
      const responsible = body.responsible_user_uid
        ? (await userIds(tx, org, [body.responsible_user_uid], 'responsible_user_uid')).get(
            body.responsible_user_uid,
          )
        : null;
      const lines = await resolveLines(
        tx,
        org,
        currency,
        (body.line_items ?? []).map((input, index) => ({ index, prefix: `line_items[${index}].`, input })),
      );
      const row = await repo.insertInvoice(tx, {
        organizationUid: org,
        invoiceType: type,
        enteredByUserUid: ctx.principal.user.uid,
        invoiceNumber: body.invoice_number.trim(),
        status,
        collectionMethod: body.collection_method ?? 'send_invoice',
        currency,
        issueDate: toInstant(body.issue_date) ?? null,
        dueDate: toInstant(body.due_date) ?? null,
        targetPartyUid: body.target_party_uid ?? null,
        documentUid: body.document_uid ?? null,
        invoiceBlueprintUid: body.invoice_blueprint_uid ?? null,
        invoiceLink: body.invoice_link ?? null,
        taxCents: body.tax_cents ?? 0,
        prePaymentCreditNotesCents: body.pre_payment_credit_notes_cents ?? 0,
        invoiceMemo: body.invoice_notes?.invoice_memo ?? '',
        invoiceFooter: body.invoice_notes?.invoice_footer ?? '',
        invoiceFields: mergeFields({}, body.invoice_fields ?? {}, { nullRemoves: false }),
        stampNumber: body.stamp_number ?? null,
        receivedDate: toInstant(body.received_date) ?? null,
        documentType: body.document_type ?? null,
        registrationNumber: body.registration_number ?? null,
        responsible: responsible ?? null,
        ...copies,
        // Created approved or registered: by the caller, now. Created already paid: the paid date is
        // now, as when PUT moves an invoice to paid (it used to stay null here, so the same status
        // carried a paid_date or not depending on the route).
        ...statusMoveValues(ctx, { invoiceType: type, status: null, paidDate: null }, status),
      });
      const inserted = await repo.insertLineItems(
        tx,
        lines.map((l) => lineValues(org, row.uid, l)),
      );
      await repo.replaceAssignees(tx, org, row.uid, assignees);
      const updated = await recompute(tx, row);
      // Any status may be given at creation; the history starts here (from null), and a payable created
      // approved or past it is approved by its creator, with the same checks as the move (403).
      await recordStatusMove(tx, ctx, null, updated, { reason: 'created', note: body.status_note });
      await recordAuditEvents(tx, ctx, [
        {
          organizationUid: org,
          action: 'invoice.created',
          entityUid: row.uid,
          changes: changesBetween(
            null,
            { ...updated, assigneeUserUids: [...new Set(assignees)].sort() },
            { omit: INVOICE_NOISE },
          ),
        },
        ...inserted.map(lineItemCreated),
      ]);
      const view = await viewOf(tx, updated);
      // In this transaction: the event (and its deliveries) exist exactly when the invoice does.
      await emitEvent(tx, jobs, ctx, 'invoice.created', invoiceEntity(view), { invoice: view });
      await noteReceivablesChange(tx, jobs, view);
      return view;
    });
  } catch (error) {
    duplicateNumber(error, body.invoice_number);
  }
}

export async function getInvoice(db: Db, ctx: RequestContext, uid: string): Promise<InvoiceView> {
  return viewOf(db, await getInvoiceRow(db, ctx, uid));
}

/**
 * GET /api/invoices/{uid}: the same view as getInvoice, read in one prepared statement, or held from
 * this server's last read of it while nothing it reads has changed (invoice-view-cache.ts).
 */
export async function readInvoice(
  database: Database,
  ctx: RequestContext,
  uid: string,
  cache?: InvoiceViewCache | null,
): Promise<InvoiceView> {
  let held = cache?.get(uid);
  const wasHeld = held !== undefined;
  if (!held) {
    const readAt = cache?.mark();
    const found = await readInvoiceView(database, memberOrganizationUids(ctx), uid);
    if (found) {
      held = {
        view: found.view,
        organizationUid: found.row.organizationUid,
        responsible: found.row.responsible,
        assigneeUids: found.assigneeUids,
      };
      if (readAt) cache!.set(uid, readAt, held);
    }
  }
  const reader = invoiceReader(ctx.principal);
  if (!held) throw notFound('Invoice');
  if (wasHeld && reader.memberOrganizationUids.includes(held.organizationUid)) {
    // A member's access to a held view is read from the database, never from the held copy: another
    // process's unassignment may not have reached this one's cache yet (the held view keeps the body,
    // never the answer to "may this caller see it"). An admin sees every invoice of the organization.
    if (!(await isInvoiceAssignedTo(database, held.organizationUid, uid, ctx.principal.user))) {
      throw notFound('Invoice');
    }
    return held.view;
  }
  // The same rule as every other path, checked on the row just read (with its assignees).
  if (!mayRead(reader, held, held.assigneeUids)) throw notFound('Invoice');
  return held.view;
}

/**
 * The payable controls (docs/authentication.md): who is responsible or assigned is an admin's decision —
 * else a member could make themselves responsible and then approve. (Who may approve, and up to what
 * amount, is checked with the move itself: invoice-lifecycle.service.ts.)
 */
function checkPayableControls(ctx: RequestContext, row: repo.InvoiceRow, body: UpdateInvoiceBodyT): void {
  const role = roleIn(ctx, row.organizationUid);
  if (
    role !== 'admin' &&
    (body.responsible_user_uid !== undefined || body.assignee_user_uids !== undefined)
  ) {
    throw new AppError(
      'forbidden',
      'Only an admin may change who is responsible for or assigned to a payable',
    );
  }
}

/** Applies an interface 4.7 partial update and computes what changes with it. */
async function applyUpdate(
  tx: DbOrTx,
  ctx: RequestContext,
  row: repo.InvoiceRow,
  body: UpdateInvoiceBodyT,
  stamp: { revision?: number; updatedAt?: Date } = {},
): Promise<{ updated: repo.InvoiceRow; assignees: AssigneeChange | undefined }> {
  const org = row.organizationUid;
  const values: Partial<repo.InvoiceInsert> = {};
  const set = <K extends keyof repo.InvoiceInsert>(key: K, value: repo.InvoiceInsert[K] | undefined) => {
    if (value !== undefined) values[key] = value;
  };
  if (row.invoiceType === 'ACCOUNTS_PAYABLE') checkPayableControls(ctx, row, body);
  if (body.status_note !== undefined && body.status === undefined) {
    throw invalid([{ field: 'status_note', message: 'is the note of a status change: send it with status' }]);
  }
  // The lifecycle (409 for a move it does not allow); the same status is no move at all. Who approved or
  // registered a payable, and when, is recorded from the caller (CONTRACT §3).
  let moved = false;
  if (body.status !== undefined) {
    checkStatus(row.invoiceType, body.status);
    moved = checkStatusMove(row, body.status);
    if (moved) Object.assign(values, statusMoveValues(ctx, row, body.status));
  }
  set('invoiceNumber', body.invoice_number?.trim());
  set('collectionMethod', body.collection_method);
  set('issueDate', toInstant(body.issue_date));
  set('dueDate', toInstant(body.due_date));
  set('paidDate', toInstant(body.paid_date));
  set('receivedDate', toInstant(body.received_date));
  await refuseArchivedTarget(tx, org, body.target_party_uid, row.targetPartyUid);
  set('targetPartyUid', body.target_party_uid);
  set('documentUid', body.document_uid);
  set('invoiceBlueprintUid', body.invoice_blueprint_uid);
  set('invoiceLink', body.invoice_link);
  set('stampNumber', body.stamp_number);
  set('documentType', body.document_type);
  set('registrationNumber', body.registration_number);
  set('taxCents', body.tax_cents);
  set('prePaymentCreditNotesCents', body.pre_payment_credit_notes_cents);
  if (
    body.pre_payment_credit_notes_cents !== undefined &&
    body.pre_payment_credit_notes_cents !== row.prePaymentCreditNotesCents &&
    (await hasIssuedCreditNotes(tx, org, row.uid))
  ) {
    // With credit notes the amount is theirs (credit-notes.service.ts): set by hand it would drift from them.
    throw new AppError(
      'invalid_state',
      'pre_payment_credit_notes_cents follows the invoice’s credit notes: issue or void a credit note instead',
    );
  }
  set('invoiceMemo', body.invoice_notes?.invoice_memo);
  set('invoiceFooter', body.invoice_notes?.invoice_footer);
  if (body.currency !== undefined) {
    const currency = body.currency.toUpperCase();
    const lines = await repo.listLineItems(tx, org, [row.uid]);
    if (currency !== row.currency && lines.length > 0) {
      throw invalid([
        { field: 'currency', message: 'cannot change while the invoice has line items in another currency' },
      ]);
    }
    values.currency = currency;
  }
  if (body.invoice_fields !== undefined) {
    values.invoiceFields = mergeFields(
      row.invoiceFields as Record<string, StoredField>,
      body.invoice_fields,
      { nullRemoves: true },
    );
  }
  Object.assign(
    values,
    await partyCopies(tx, org, body.client_party_uid, body.service_provider_party_uid, {
      client: row.clientPartyUid,
      provider: row.serviceProviderPartyUid,
    }),
  );
  if (body.responsible_user_uid !== undefined) {
    values.responsible = body.responsible_user_uid
      ? (await userIds(tx, org, [body.responsible_user_uid], 'responsible_user_uid')).get(
          body.responsible_user_uid,
        )!
      : null;
  }
  let assignees: AssigneeChange | undefined;
  if (body.assignee_user_uids !== undefined) {
    await userIds(tx, org, body.assignee_user_uids, 'assignee_user_uids');
    const before = await repo.replaceAssignees(tx, org, row.uid, body.assignee_user_uids);
    assignees = { before, after: body.assignee_user_uids };
  }
  values.revision = stamp.revision ?? row.revision + 1;
  if (stamp.updatedAt) values.updatedAt = stamp.updatedAt;
  const updated = await recompute(tx, row, values);
  // On the written row: approval rights and limits on its final total, and the history row.
  if (moved)
    await recordStatusMove(tx, ctx, row.status, updated, { reason: 'update', note: body.status_note });
  else await assertApprovalCoversTotal(tx, ctx, row, updated);
  return { updated, assignees };
}

/**
 * PUT /api/invoices/{uid}: a partial update. With a billing integration it is applied only once the
 * partner accepted it, and no transaction is held across the call (CONTRACT §6): a short transaction
 * prepares the update (validated, the view to send computed and rolled back) and commits its intent;
 * the partner is called; a second short transaction applies it if the invoice is still as prepared.
 * A partner failure or timeout changes nothing (502/504), and the same update may be sent again at once.
 */
export async function updateInvoice(
  db: Db,
  jobs: Jobs,
  billingOptions: billing.BillingOptions,
  ctx: RequestContext,
  uid: string,
  body: UpdateInvoiceBodyT,
): Promise<InvoiceView> {
  const current = await getInvoiceRow(db, ctx, uid);
  const integration = await billing.findBillingIntegration(db, current.organizationUid);
  if (!integration) {
    try {
      return await db.transaction(async (tx) => {
        const row = await getInvoiceRow(tx, ctx, uid, true);
        const before = await viewOf(tx, row);
        const { updated, assignees } = await applyUpdate(tx, ctx, row, body);
        await recordInvoiceUpdate(tx, ctx, row, updated, assignees);
        const after = await viewOf(tx, updated);
        await emitInvoiceChange(tx, jobs, before, after);
        return after;
      });
    } catch (error) {
      duplicateNumber(error, body.invoice_number);
    }
  }
  let prepared: { intent: billing.SyncIntent; preview: PreparedUpdate };
  try {
    prepared = await db.transaction(async (tx) => {
      const row = await getInvoiceRow(tx, ctx, uid, true);
      const revision = await billing.reserveSyncRevision(tx, row, billingOptions);
      const preview = await prepareUpdate(tx, ctx, row, body, revision);
      return { intent: await billing.openSyncIntent(tx, row, revision), preview };
    });
  } catch (error) {
    duplicateNumber(error, body.invoice_number);
  }
  const { intent, preview } = prepared;
  let response: { status: number; body: string };
  try {
    response = await billing.sendSync(integration, preview.view, intent, billingOptions);
  } catch (error) {
    await billing.noteSyncFailure(db, jobs, intent, error);
    throw error;
  }
  try {
    return await db.transaction(async (tx) => {
      const row = await getInvoiceRow(tx, ctx, uid, true);
      if (row.revision !== intent.baseRevision || !(await billing.isStillInProgress(tx, intent))) {
        throw new AppError(
          'conflict',
          'The invoice changed while its update was with the billing partner; send it again',
        );
      }
      const before = await viewOf(tx, row);
      // The same update on the same invoice, stamped as the partner saw it (revision, updated_at).
      const { updated, assignees } = await applyUpdate(tx, ctx, row, body, {
        revision: intent.revision,
        updatedAt: preview.row.updatedAt,
      });
      await billing.confirmSync(tx, integration, intent, response);
      // Recorded here, with the change that commits: the preview before the partner call rolled back.
      await recordInvoiceUpdate(tx, ctx, row, updated, assignees);
      const after = await viewOf(tx, updated);
      await emitInvoiceChange(tx, jobs, before, after);
      await billing.emitSynced(tx, jobs, intent, after);
      return after;
    });
  } catch (error) {
    // The partner holds a state we did not commit: pending, so the reconciler sends it ours.
    await billing.noteSyncFailure(db, jobs, intent, error);
    duplicateNumber(error, body.invoice_number);
  }
}

interface PreparedUpdate {
  row: repo.InvoiceRow;
  view: InvoiceView;
}

class UpdatePrepared extends Error {
  constructor(readonly prepared: PreparedUpdate) {
    super('prepared');
  }
}

/**
 * The update applied in a savepoint that is then rolled back: it is validated (422s, a duplicate
 * number) and yields the exact view the partner is sent, and nothing of it stays.
 */
async function prepareUpdate(
  tx: DbOrTx,
  ctx: RequestContext,
  row: repo.InvoiceRow,
  body: UpdateInvoiceBodyT,
  revision: number,
): Promise<PreparedUpdate> {
  try {
    await tx.transaction(async (savepoint) => {
      const { updated } = await applyUpdate(savepoint, ctx, row, body, { revision });
      throw new UpdatePrepared({ row: updated, view: await viewOf(savepoint, updated) });
    });
  } catch (error) {
    if (error instanceof UpdatePrepared) return error.prepared;
    throw error;
  }
  throw new Error('unreachable: the preview savepoint always rolls back');
}

/** What the billing reconciler sends: the committed invoice, as GET shows it. */
export const invoiceViewForSync = (tx: DbOrTx, row: repo.InvoiceRow) => viewOf(tx, row);

export async function addLineItems(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  items: LineItemInputT[],
) {
  return db.transaction(async (tx) => {
    const row = await getInvoiceRow(tx, ctx, invoiceUid, true);
    const before = await viewOf(tx, row);
    const lines = await resolveLines(
      tx,
      row.organizationUid,
      row.currency,
      items.map((input, index) => ({ index, prefix: items.length > 1 ? `[${index}].` : '', input })),
    );
    const inserted = await repo.insertLineItems(
      tx,
      lines.map((l) => lineValues(row.organizationUid, row.uid, l)),
    );
    const updated = await recompute(tx, row, { revision: row.revision + 1 });
    await assertApprovalCoversTotal(tx, ctx, row, updated);
    await recordAuditEvents(tx, ctx, inserted.map(lineItemCreated));
    await emitInvoiceChange(tx, jobs, before, await viewOf(tx, updated));
    return inserted.map(toLineItemView);
  });
}

export async function updateLineItems(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  items: LineItemUpdateT[],
) {
  return db.transaction(async (tx) => {
    const row = await getInvoiceRow(tx, ctx, invoiceUid, true);
    const before = await viewOf(tx, row);
    const existing = new Map(
      (await repo.listLineItems(tx, row.organizationUid, [row.uid])).map((l) => [l.uid, l]),
    );
    const missing = items
      .map((item, index) => ({ item, index }))
      .filter(({ item }) => !existing.has(item.uid))
      .map(({ item, index }) => ({
        field: `${items.length > 1 ? `[${index}].` : ''}uid`,
        message: `no line item ${item.uid} on this invoice`,
      }));
    // One line twice in a batch: both entries were resolved from the stored line and the second
    // silently overwrote the first, while the response still showed both. Refused instead.
    const seen = new Set<string>();
    items.forEach((item, index) => {
      if (seen.has(item.uid)) {
        missing.push({ field: `[${index}].uid`, message: `line item ${item.uid} appears more than once` });
      }
      seen.add(item.uid);
    });
    if (missing.length > 0) throw invalid(missing);
    const resolved = await resolveLines(
      tx,
      row.organizationUid,
      row.currency,
      items.map((input, index) => {
        const base = existing.get(input.uid)!;
        return {
          index,
          prefix: items.length > 1 ? `[${index}].` : '',
          input,
          base: {
            contextTypeUid: base.contextTypeUid,
            contextType: base.contextType,
            contextName: base.contextName,
            sku: base.sku,
            currency: base.currency,
            quantity: base.quantity,
            unitPrice: base.unitPrice,
          },
        };
      }),
    );
    const updated = [];
    for (let i = 0; i < items.length; i++) {
      const line = resolved[i]!;
      updated.push(
        await repo.updateLineItem(tx, row.organizationUid, items[i]!.uid, {
          ...line,
          lineTotal: lineTotal(line.quantity, line.unitPrice),
        }),
      );
    }
    const recomputed = await recompute(tx, row, { revision: row.revision + 1 });
    await assertApprovalCoversTotal(tx, ctx, row, recomputed);
    const events: AuditEvent[] = [];
    for (const line of updated) {
      const changes = changesBetween(toLineItemView(existing.get(line.uid)!), toLineItemView(line), {
        omit: LINE_NOISE,
      });
      if (!hasChanges(changes)) continue;
      events.push({
        organizationUid: line.organizationUid,
        action: 'line_item.updated',
        entityUid: line.uid,
        parent: invoiceParent(line.invoiceUid),
        changes,
      });
    }
    await recordAuditEvents(tx, ctx, events);
    await emitInvoiceChange(tx, jobs, before, await viewOf(tx, recomputed));
    return updated.map(toLineItemView);
  });
}

export async function addComment(db: Db, jobs: Jobs, ctx: RequestContext, invoiceUid: string, text: string) {
  return db.transaction(async (tx) => {
    // Locked: the views before and after must not take in another writer's change.
    const row = await getInvoiceRow(tx, ctx, invoiceUid, true);
    const before = await viewOf(tx, row);
    const comment = await repo.insertComment(tx, {
      organizationUid: row.organizationUid,
      invoiceUid: row.uid,
      authorUserUid: ctx.principal.user.uid,
      text,
    });
    await repo.refreshHasComments(tx, row.organizationUid, row.uid);
    // A comment now exists: what refreshHasComments just wrote.
    await emitInvoiceChange(tx, jobs, before, await viewOf(tx, { ...row, hasComments: true }));
    return toCommentView((await repo.findComment(tx, row.organizationUid, row.uid, comment.uid))!);
  });
}

export async function patchComment(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  commentUid: string,
  body: { text?: string | undefined; resolved?: boolean | undefined },
) {
  return db.transaction(async (tx) => {
    const row = await getInvoiceRow(tx, ctx, invoiceUid, true);
    const found = await repo.findComment(tx, row.organizationUid, row.uid, commentUid);
    if (!found) throw notFound('Comment');
    if (body.text !== undefined && found.comment.authorUserUid !== ctx.principal.user.uid) {
      throw new AppError('forbidden', 'Only the author can edit a comment');
    }
    const values: Record<string, unknown> = {};
    if (body.text !== undefined) Object.assign(values, { text: body.text, lastModifiedAt: new Date() });
    if (body.resolved === true && !found.comment.resolvedAt) {
      Object.assign(values, { resolvedBy: ctx.principal.user.id, resolvedAt: new Date() });
    }
    if (body.resolved === false) Object.assign(values, { resolvedBy: null, resolvedAt: null });
    if (Object.keys(values).length > 0) {
      const before = await viewOf(tx, row);
      await repo.updateComment(tx, row.organizationUid, commentUid, values);
      await emitInvoiceChange(tx, jobs, before, await viewOf(tx, row));
    }
    return toCommentView((await repo.findComment(tx, row.organizationUid, row.uid, commentUid))!);
  });
}

/** Records a payment; one that settles the remaining amount moves the invoice to `paid` (settle()). */
export async function addPayment(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  body: { amount_cents: number; paid_at?: string | undefined },
) {
  return db.transaction(async (tx) => {
    const row = await getInvoiceRow(tx, ctx, invoiceUid, true);
    // The lifecycle: only an invoice a settling payment may move to paid takes one (a payable once
    // approved), or one already paid.
    if (!takesPayments(row.invoiceType, row.status)) {
      throw new AppError(
        'invalid_state',
        `A ${row.status} invoice cannot take payments; ${row.invoiceType === 'ACCOUNTS_PAYABLE' ? 'payables' : 'receivables'} take them in ${statusesTakingPayments(row.invoiceType).join(', ')}`,
      );
    }
    if (body.amount_cents > row.amountRemainingCents) {
      throw invalid([
        { field: 'amount_cents', message: `exceeds the amount remaining (${row.amountRemainingCents})` },
      ]);
    }
    const before = await viewOf(tx, row);
    const paidAt = toInstant(body.paid_at) ?? new Date();
    const payment = await repo.insertPayment(tx, {
      organizationUid: row.organizationUid,
      invoiceUid: row.uid,
      amountCents: body.amount_cents,
      paidAt,
      createdByUserUid: ctx.principal.user.uid,
    });
    const recomputed = await recompute(tx, row, { revision: row.revision + 1 });
    await recordAuditEvents(tx, ctx, [
      {
        organizationUid: row.organizationUid,
        action: 'payment.recorded',
        entityUid: payment.uid,
        parent: invoiceParent(row.uid),
        changes: changesBetween(null, payment, { omit: PAYMENT_NOISE }),
      },
    ]);
    // Settled: the invoice's own move to paid is an event of its own (invoice-settlement.ts).
    const { invoice: updated } = await settle(tx, recomputed, ctx, 'payment', {
      before: row,
      paidAt,
    });
    const after = await viewOf(tx, updated);
    // The payment first, then what it did to the invoice (its amounts, and a move to paid).
    await emitEvent(tx, jobs, ctx, 'payment.recorded', invoiceEntity(after), {
      payment: await paymentView(tx, row.organizationUid, row.uid, payment.uid, row.currency),
      invoice: after,
    });
    await emitInvoiceChange(tx, jobs, before, after);
    return after;
  });
}
