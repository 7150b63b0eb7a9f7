import type { DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { changesBetween, recordAuditEvent } from '../audit/audit.service.ts';
import * as repo from './invoices.repository.ts';

/** What moved an invoice's money, and so possibly its status (the status history's reason). */
export type SettlementReason =
  'payment_recorded' | 'payment_refunded' | 'payment_voided' | 'credit_note_created' | 'credit_note_voided';

export interface Settlement {
  invoice: repo.InvoiceRow;
  /** The automatic move, when there was one. */
  moved: { from: string; to: string; reason: SettlementReason } | null;
}

/** Statuses money changes never move an invoice out of (they take no payment or credit note). */
const UNSETTLED = new Set(['draft', 'void', 'rejected']);

/**
 * Where a paid invoice goes back to when it owes something again (a refund, a voided payment or credit
 * note): a receivable to `open`; a payable to the furthest step it had reached before it was paid, as
 * its own fields record it (registered, else approved, else received).
 */
export function reopenedStatus(invoice: repo.InvoiceRow): string {
  if (invoice.invoiceType === 'ACCOUNTS_RECEIVABLE') return 'open';
  if (invoice.registrationDate) return 'registered';
  if (invoice.approvalDate) return 'approved';
  return 'received';
}

/**
 * The one automatic status move of money (docs/invoices.md#payments-refunds-and-credit-notes), called
 * in the transaction of the change, under the invoice's row lock, after its amounts were recomputed:
 * nothing left to pay → `paid` (with `paid_date`, the settling payment's `paid_at` or now); a `paid`
 * invoice that owes something again → back to `open` (payables: see reopenedStatus), `paid_date`
 * cleared. A move records `invoice.status_changed` with every field that changed since `before` (the
 * row before the whole change, so the amounts show too). Every status move that is not a person's
 * choice goes through here: the one place for a status history to hook in.
 */
export async function settle(
  tx: DbOrTx,
  invoice: repo.InvoiceRow,
  ctx: RequestContext,
  reason: SettlementReason,
  options: { before: repo.InvoiceRow; paidAt?: Date | undefined },
): Promise<Settlement> {
  let values: Partial<repo.InvoiceInsert> | undefined;
  if (
    invoice.amountRemainingCents <= 0 &&
    !UNSETTLED.has(invoice.status) &&
    // A settling payment dates an invoice already marked paid by hand (as before); nothing else re-dates it.
    (invoice.status !== 'paid' || options.paidAt)
  ) {
    values = { status: 'paid', paidDate: options.paidAt ?? new Date() };
  } else if (invoice.amountRemainingCents > 0 && invoice.status === 'paid') {
    values = { status: reopenedStatus(invoice), paidDate: null };
  }
  if (!values) return { invoice, moved: null };
  const updated = await repo.updateInvoice(tx, invoice.organizationUid, invoice.uid, values);
  if (updated.status === invoice.status) return { invoice: updated, moved: null };
  await recordAuditEvent(tx, ctx, {
    organizationUid: updated.organizationUid,
    action: 'invoice.status_changed',
    entityUid: updated.uid,
    changes: changesBetween(options.before, updated, { omit: ['revision', 'has_comments'] }),
  });
  return { invoice: updated, moved: { from: invoice.status, to: updated.status, reason } };
}
