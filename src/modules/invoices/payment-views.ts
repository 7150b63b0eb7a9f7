import type { DbOrTx } from '../../platform/db/client.ts';
import * as repo from './credits.repository.ts';

/** The one payment object: what the API's payment routes answer and every payment event carries. */

const personView = (p: repo.Person) => (p?.uid ? { user_uid: p.uid, full_name: p.fullName ?? '' } : null);

export function toRefundView({ refund, refundedBy }: repo.RefundWithPerson) {
  return {
    uid: refund.uid,
    payment_uid: refund.paymentUid,
    invoice_uid: refund.invoiceUid,
    amount_cents: refund.amountCents,
    reason: refund.reason,
    refunded_by: personView(refundedBy),
    created_at: refund.createdAt.toISOString(),
  };
}
export type RefundView = ReturnType<typeof toRefundView>;

/** What a payment adds to `amount_paid_cents`. */
const netOf = (p: repo.PaymentRow) => (p.status === 'voided' ? 0 : p.amountCents - p.amountRefundedCents);

function toPaymentView(row: repo.PaymentWithPeople, currency: string, refunds: RefundView[]) {
  const { payment } = row;
  return {
    uid: payment.uid,
    invoice_uid: payment.invoiceUid,
    amount_cents: payment.amountCents,
    currency,
    paid_at: payment.paidAt.toISOString(),
    recorded_by: personView(row.recordedBy),
    created_at: payment.createdAt.toISOString(),
    status: payment.status,
    amount_refunded_cents: payment.amountRefundedCents,
    amount_net_cents: netOf(payment),
    refunds,
    voided_at: payment.voidedAt?.toISOString() ?? null,
    voided_by: personView(row.voidedBy),
    void_reason: payment.voidReason,
  };
}
export type PaymentView = ReturnType<typeof toPaymentView>;

/** The payments' views with their refunds (one query for all refunds). */
export async function paymentViews(
  db: DbOrTx,
  organizationUid: string,
  rows: (repo.PaymentWithPeople & { currency: string })[],
): Promise<PaymentView[]> {
  const refunds = await repo.listRefunds(
    db,
    organizationUid,
    rows.map((r) => r.payment.uid),
  );
  const byPayment = new Map<string, RefundView[]>();
  for (const refund of refunds) {
    const list = byPayment.get(refund.refund.paymentUid) ?? [];
    list.push(toRefundView(refund));
    byPayment.set(refund.refund.paymentUid, list);
  }
  return rows.map((r) => toPaymentView(r, r.currency, byPayment.get(r.payment.uid) ?? []));
}

/**
 * One payment as the API shows it (the lists, the refund and void answers, and every webhook event that
 * carries a payment), read again in the transaction that changed it.
 */
export async function paymentView(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid: string,
  currency: string,
) {
  const rows = await repo.listInvoicePayments(tx, organizationUid, invoiceUid);
  const row = rows.find((r) => r.payment.uid === uid)!;
  const [view] = await paymentViews(tx, organizationUid, [{ ...row, currency }]);
  return view!;
}
