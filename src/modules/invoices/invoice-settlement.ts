import type { DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { changesBetween, recordAuditEvent } from '../audit/audit.service.ts';
import { takesPayments } from './invoice-lifecycle.ts';
import { checkStatusMove, recordStatusMove, statusMoveValues } from './invoice-lifecycle.service.ts';
import * as repo from './invoices.repository.ts';

/** What moved an invoice's money, and so possibly its status (the status history's reason). */
export type SettlementReason =
  'payment' | 'payment_refunded' | 'payment_voided' | 'credit_note_created' | 'credit_note_voided';

export interface Settlement {
  invoice: repo.InvoiceRow;
  /** The automatic move, when there was one. */
  moved: { from: string; to: string; reason: SettlementReason } | null;
}

/**
 * Where a paid invoice goes back to when it owes something again (a refund, a voided payment or credit
 * note): a receivable to `open`; a payable to the furthest step it had reached before it was paid, as
 * its own fields record it (registered, else approved: the lifecycle pays a payable only once approved).
 */
export function reopenedStatus(invoice: repo.InvoiceRow): string {
  if (invoice.invoiceType === 'ACCOUNTS_RECEIVABLE') return 'open';
  return invoice.registrationDate ? 'registered' : 'approved';
}

/**
 * The one automatic status move of money (docs/invoices.md#payments-refunds-and-credit-notes), called
 * in the transaction of the change, under the invoice's row lock, after its amounts were recomputed:
 * nothing left to pay → `paid` (with `paid_date`, the settling payment's `paid_at` or now), if the
 * lifecycle lets it be paid; a `paid` invoice that owes something again → back (a reversal: see
 * reopenedStatus), `paid_date` cleared. Both are status moves like any other (invoice-lifecycle.service.ts):
 * checked against the lifecycle and written to the status history with `reason`; a move records
 * `invoice.status_changed` in the audit log with every field that changed since `before` (the row before
 * the whole change, so the amounts show too).
 */
export async function settle(
  tx: DbOrTx,
  invoice: repo.InvoiceRow,
  ctx: RequestContext,
  reason: SettlementReason,
  options: { before: repo.InvoiceRow; paidAt?: Date | undefined },
): Promise<Settlement> {
  let to: string | null = null;
  let values: Partial<repo.InvoiceInsert> | undefined;
  if (invoice.amountRemainingCents <= 0 && invoice.status === 'paid') {
    // A settling payment dates an invoice already marked paid by hand (as before); nothing else re-dates it.
    if (options.paidAt) values = { paidDate: options.paidAt };
  } else if (invoice.amountRemainingCents <= 0 && takesPayments(invoice.invoiceType, invoice.status)) {
    to = 'paid';
    checkStatusMove(invoice, to);
    values = statusMoveValues(ctx, invoice, to, options.paidAt);
  } else if (invoice.amountRemainingCents > 0 && invoice.status === 'paid') {
    to = reopenedStatus(invoice);
    checkStatusMove(invoice, to, { reversal: true });
    // A reversal: only the status and the paid date (who approved or registered a payable stays).
    values = { status: to, paidDate: null };
  }
  if (!values) return { invoice, moved: null };
  const updated = await repo.updateInvoice(tx, invoice.organizationUid, invoice.uid, values);
  if (!to || updated.status === invoice.status) return { invoice: updated, moved: null };
  await recordStatusMove(tx, ctx, invoice.status, updated, { reason, reversal: to !== 'paid' });
  await recordAuditEvent(tx, ctx, {
    organizationUid: updated.organizationUid,
    action: 'invoice.status_changed',
    entityUid: updated.uid,
    changes: changesBetween(options.before, updated, { omit: ['revision', 'has_comments'] }),
  });
  return { invoice: updated, moved: { from: invoice.status, to: updated.status, reason } };
}
