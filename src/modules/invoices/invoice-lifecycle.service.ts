import type { DbOrTx } from '../../platform/db/client.ts';
import { roleIn, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { approvalLimits, segregationOfDuties } from '../tenancy/organization-settings.service.ts';
import { assertMayApprove, invoiceReader, visibleInvoices } from './invoice-access.ts';
import {
  allowedNextStatuses,
  approvalLimitOf,
  checkTransition,
  formatCents,
  withinLimit,
  type TransitionContext,
} from './invoice-lifecycle.ts';
import * as history from './invoice-lifecycle.repository.ts';
import type { InvoiceType } from './invoice-statuses.ts';
import * as repo from './invoices.repository.ts';

/**
 * Every status change of an invoice goes through here (docs/invoices.md#lifecycle): `PUT`, creation,
 * and the moves money makes (payments, refunds, voids, credit notes) through `settle()` in
 * invoice-settlement.ts. Three steps around the write of the invoice row:
 * `checkStatusMove` (the lifecycle: 409), `statusMoveValues` (what the move sets besides the status),
 * then, on the written row, `recordStatusMove` (approval rights and limits: 403; the history row).
 */

/** Why a status changed, as the history shows it; internal callers may name their own (`refund`). */
export type StatusChangeReason = 'created' | 'update' | 'payment' | (string & {});

export interface StatusMoveOptions {
  reason: StatusChangeReason;
  /** The person's note (`status_note` on PUT and create). */
  note?: string | null | undefined;
  /** A refund or payment reversal takes a paid invoice back (invoice-lifecycle.ts REVERSALS). */
  reversal?: boolean | undefined;
}

/** A payable's statuses past its approval: created in one of them, the creator approves it. */
const PAST_APPROVAL = new Set(['approved', 'registered', 'scheduled', 'paid']);

const KIND: Record<InvoiceType, string> = { ACCOUNTS_RECEIVABLE: 'receivable', ACCOUNTS_PAYABLE: 'payable' };

/**
 * Whether `to` may follow the invoice's status (true: it changes; false: the same status, nothing to
 * do). A refused move is 409 `invalid_transition`, naming the current status and the allowed next
 * ones in the message and in `details`.
 */
export function checkStatusMove(
  row: Pick<repo.InvoiceRow, 'invoiceType' | 'status' | 'amountRemainingCents'>,
  to: string,
  options: Pick<StatusMoveOptions, 'reversal'> = {},
): boolean {
  const context: TransitionContext = {
    reversal: options.reversal ?? false,
    amountRemainingCents: row.amountRemainingCents,
  };
  const check = checkTransition(row.invoiceType, row.status, to, context);
  if (check.ok) return check.changed;
  const next = check.allowed.length > 0 ? check.allowed.join(', ') : 'none';
  const error = new AppError(
    'invalid_transition',
    `A ${KIND[row.invoiceType]} invoice cannot move from ${check.from} to ${check.to}; allowed next statuses from ${check.from}: ${next}`,
  );
  error.details = { status: check.from, requested_status: check.to, allowed_statuses: check.allowed };
  throw error;
}

/**
 * What a move sets besides the status (CONTRACT §3): who approved or registered a payable and when
 * (the caller, now); the paid date of an invoice moved to paid (`paidDate`, else now, unless it has one),
 * cleared when it leaves paid. `row.status` null: the invoice is being created.
 */
export function statusMoveValues(
  ctx: RequestContext,
  row: { invoiceType: InvoiceType; status: string | null; paidDate: Date | null },
  to: string,
  paidDate?: Date,
): Partial<repo.InvoiceInsert> {
  const type = row.invoiceType;
  const currentPaidDate = row.paidDate;
  const values: Partial<repo.InvoiceInsert> = { status: to };
  // Out of paid (a reversal, or undoing a payment marked by hand): not paid any more.
  if (row.status === 'paid' && to !== 'paid') values.paidDate = null;
  const now = new Date();
  // Created past approval (registered, scheduled, paid), the creator's approval was checked
  // (recordStatusMove) but no approval date is invented: approved_by is a move to approved.
  if (type === 'ACCOUNTS_PAYABLE' && to === 'approved') {
    Object.assign(values, { approvedBy: ctx.principal.user.id, approvalDate: now });
  }
  if (type === 'ACCOUNTS_PAYABLE' && to === 'registered') {
    Object.assign(values, { registeredBy: ctx.principal.user.id, registrationDate: now });
  }
  if (to === 'paid' && (paidDate || !currentPaidDate)) values.paidDate = paidDate ?? now;
  return values;
}

/**
 * The approval limit (docs/invoices.md#approval-limits): the caller's own limit, else their role's, in
 * the invoice's organization; an API key acts with its user's. A total over it is 403
 * `approval_limit_exceeded`.
 */
async function assertWithinApprovalLimit(
  tx: DbOrTx,
  ctx: RequestContext,
  invoice: repo.InvoiceRow,
): Promise<void> {
  const role = roleIn(ctx, invoice.organizationUid) === 'admin' ? 'admin' : 'member';
  const limit = approvalLimitOf(
    await approvalLimits(tx, invoice.organizationUid),
    ctx.principal.user.uid,
    role,
  );
  if (withinLimit(limit, invoice.totalCents)) return;
  const whose = limit.source === 'user' ? 'your own approval limit' : `the ${role} role's approval limit`;
  const error = new AppError(
    'approval_limit_exceeded',
    `The invoice's total, ${formatCents(invoice.totalCents)} ${invoice.currency}, is over ${whose} of ${formatCents(limit.limitCents!)}`,
  );
  error.details = {
    limit_cents: limit.limitCents,
    limit_source: limit.source,
    role,
    total_cents: invoice.totalCents,
    currency: invoice.currency,
  };
  throw error;
}

/** A payable's statuses that stand on its approval: it was approved at its total then. */
const STANDING_ON_APPROVAL = new Set(['approved', 'registered', 'scheduled']);

/**
 * A change that raises the total of a payable already approved (lines added or changed, tax) approves
 * the higher amount in effect: it needs the caller's approval limit to cover the new total, as an
 * approval would (403 `approval_limit_exceeded`). Lowering it, or any receivable, needs nothing.
 */
export async function assertApprovalCoversTotal(
  tx: DbOrTx,
  ctx: RequestContext,
  before: Pick<repo.InvoiceRow, 'totalCents'>,
  after: repo.InvoiceRow,
): Promise<void> {
  if (after.invoiceType !== 'ACCOUNTS_PAYABLE' || !STANDING_ON_APPROVAL.has(after.status)) return;
  if (after.totalCents <= before.totalCents) return;
  await assertWithinApprovalLimit(tx, ctx, after);
}

/**
 * Whether this status change approves a payable: a move to approved (not a reversal, which takes a
 * refunded payable back to where it was), or a creation in approved or any status past it (nothing
 * reaches registered, scheduled or paid without an approval, so creating it there is approving it).
 */
function approves(from: string | null, after: repo.InvoiceRow, options: StatusMoveOptions): boolean {
  if (after.invoiceType !== 'ACCOUNTS_PAYABLE' || options.reversal) return false;
  return from === null ? PAST_APPROVAL.has(after.status) : after.status === 'approved';
}

/**
 * The approval of a payable by the caller, the same at creation and on a move
 * (docs/invoices.md#approval-limits): an admin or its responsible user (403 `forbidden`), not the person
 * who entered it under segregation of duties (403 `forbidden`), and a total within the caller's
 * approval limit (403 `approval_limit_exceeded`).
 */
async function assertApproval(tx: DbOrTx, ctx: RequestContext, after: repo.InvoiceRow): Promise<void> {
  assertMayApprove(
    ctx,
    {
      organizationUid: after.organizationUid,
      responsible: after.responsible,
      createdByUserUid: after.enteredByUserUid ?? '',
    },
    await segregationOfDuties(tx, after.organizationUid),
  );
  await assertWithinApprovalLimit(tx, ctx, after);
}

/**
 * After the invoice row was written with its new status (`from` null: just created): a change that
 * approves a payable (`approves`) needs the caller's approval (`assertApproval`); then the history row.
 * Nothing for the same status.
 */
export async function recordStatusMove(
  tx: DbOrTx,
  ctx: RequestContext,
  from: string | null,
  after: repo.InvoiceRow,
  options: StatusMoveOptions,
): Promise<void> {
  if (from === after.status) return;
  if (approves(from, after, options)) await assertApproval(tx, ctx, after);
  await history.insertStatusChange(tx, {
    organizationUid: after.organizationUid,
    invoiceUid: after.uid,
    fromStatus: from,
    toStatus: after.status,
    reason: options.reason,
    note: options.note ?? null,
    actorType: ctx.actor.type,
    actorUid: ctx.actor.uid,
    actorUserUid: ctx.actor.userUid,
    actorName: ctx.actor.type === 'system' ? null : ctx.principal.user.fullName || null,
  });
}

function toHistoryView(row: history.StatusHistoryRow) {
  return {
    uid: row.uid,
    invoice_uid: row.invoiceUid,
    position: row.position,
    from_status: row.fromStatus,
    to_status: row.toStatus,
    reason: row.reason,
    note: row.note,
    actor: {
      type: row.actorType,
      uid: row.actorUid,
      user_uid: row.actorUserUid,
      name: row.actorName,
    },
    changed_at: row.changedAt.toISOString(),
  };
}
export type StatusHistoryView = ReturnType<typeof toHistoryView>;

/**
 * GET /api/invoices/{uid}/status-history: oldest first, for an invoice the caller may see (else 404),
 * with the statuses a `PUT` from this caller would accept next (the lifecycle; reversals out of paid
 * only for an invoice marked paid by hand that still owes something, as `checkStatusMove` without
 * `reversal`). Approval rights and limits are not anticipated: they are checked on the move (403).
 */
export async function listStatusHistory(
  db: DbOrTx,
  ctx: RequestContext,
  invoiceUid: string,
  page: PageRequest,
): Promise<{ items: StatusHistoryView[]; total: number; allowedNextStatuses: string[] }> {
  const invoice = await repo.findInvoice(db, visibleInvoices(db, invoiceReader(ctx.principal)), invoiceUid);
  if (!invoice) throw notFound('Invoice');
  const { rows, total } = await history.listStatusHistory(db, invoice.organizationUid, invoice.uid, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  const next = allowedNextStatuses(invoice.invoiceType, invoice.status, {
    reversal: false,
    amountRemainingCents: invoice.amountRemainingCents,
  });
  return { items: rows.map(toHistoryView), total, allowedNextStatuses: next };
}
