import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { AppError } from '../../platform/http/errors.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { recordAuditEvents, type AuditEvent } from '../audit/audit.service.ts';
import { settle, type SettlementReason } from './invoice-settlement.ts';
import type { InvoiceView } from './invoice-view.ts';
import type { InvoiceInsert, InvoiceRow } from './invoices.repository.ts';
import { emitInvoiceChange, getInvoiceRow, recompute, viewOf } from './invoices.service.ts';

/**
 * Refunds, voids and credit notes undo money: an admin's call, in the invoice's organization. Checked
 * before the invoice is read too (a caller who is an admin nowhere gets 403 whatever the uid), so a
 * member learns nothing about which invoices exist.
 */
export function assertMayCorrectMoney(ctx: RequestContext, organizationUid?: string): void {
  const admin = ctx.principal.memberships.some(
    (m) => m.role === 'admin' && (organizationUid === undefined || m.organizationUid === organizationUid),
  );
  if (!admin) {
    throw new AppError('forbidden', 'Only an admin may issue credit notes, refund or void payments');
  }
}

/** What a change did inside the transaction: the derived money to set, its audit events, its event. */
export interface MoneyChange<T> {
  result: T;
  reason: SettlementReason;
  /** Stored amounts the change sets before the totals are recomputed (a credit note's amount). */
  values?: Partial<InvoiceInsert>;
  audit: AuditEvent[];
  /** The change's own webhook event, written before the invoice's (it needs the invoice after). */
  emit: (tx: DbOrTx, after: InvoiceView) => Promise<unknown>;
}

/**
 * One money change on one invoice (docs/invoices.md#payments-refunds-and-credit-notes), in one
 * transaction: the invoice's row is locked first (SELECT … FOR UPDATE), so every change to one invoice's
 * money — payments, refunds, voids, credit notes — runs one after another and each checks its limits
 * against the amounts the previous one committed; then the totals are recomputed, the status settled
 * (invoice-settlement.ts), and the audit and webhook events written, all or nothing.
 */
export async function changeInvoiceMoney<T>(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  change: (tx: DbOrTx, invoice: InvoiceRow) => Promise<MoneyChange<T>>,
): Promise<{ result: T; invoice: InvoiceView }> {
  assertMayCorrectMoney(ctx);
  return db.transaction(async (tx) => {
    const row = await getInvoiceRow(tx, ctx, invoiceUid, true);
    assertMayCorrectMoney(ctx, row.organizationUid);
    const before = await viewOf(tx, row);
    const done = await change(tx, row);
    const recomputed = await recompute(tx, row, { ...done.values, revision: row.revision + 1 });
    await recordAuditEvents(tx, ctx, done.audit);
    const { invoice } = await settle(tx, recomputed, ctx, done.reason, { before: row });
    const after = await viewOf(tx, invoice);
    await done.emit(tx, after);
    await emitInvoiceChange(tx, jobs, before, after);
    return { result: done.result, invoice: after };
  });
}
