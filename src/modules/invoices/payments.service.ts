import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import { parseInstantRange } from '../../platform/http/date-range.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { changesBetween } from '../audit/audit.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import * as repo from './credits.repository.ts';
import { visibleInOrganization } from './invoice-access.ts';
import { changeInvoiceMoney } from './invoice-money.ts';
import { getInvoiceRow, invoiceEntity, invoiceParent } from './invoices.service.ts';
import { paymentView, paymentViews, toRefundView } from './payment-views.ts';
import type { ListPaymentsQueryT, RefundBodyT, VoidPaymentBodyT } from './payments.schemas.ts';

/** `GET /api/invoices/{uid}/payments`: an invoice the caller may see (404 otherwise), oldest first. */
export async function listInvoicePayments(db: Db, ctx: RequestContext, invoiceUid: string) {
  const invoice = await getInvoiceRow(db, ctx, invoiceUid);
  const rows = await repo.listInvoicePayments(db, invoice.organizationUid, invoice.uid);
  return paymentViews(
    db,
    invoice.organizationUid,
    rows.map((r) => ({ ...r, currency: invoice.currency })),
  );
}

/**
 * `GET /api/payments`: the organization's payments, newest first by `paid_at`, under the invoice rule
 * (members: the payments of the invoices they may see). `from`/`to` bound `paid_at`, inclusive; a bare
 * date as `to` includes that whole UTC day.
 */
export async function listPayments(
  db: Db,
  ctx: RequestContext,
  query: ListPaymentsQueryT,
  page: PageRequest,
) {
  const { from, until, before } = parseInstantRange(query.from, query.to);
  const { rows, total } = await repo.listOrganizationPayments(
    db,
    ctx.organizationUid,
    visibleInOrganization(db, ctx),
    {
      invoiceUid: query.invoice_uid,
      status: query.status,
      from,
      before,
      until,
    },
    page.perPage,
    offsetOf(page),
  );
  const views = await paymentViews(
    db,
    ctx.organizationUid,
    rows.map((r) => ({ ...r, currency: r.invoice.currency })),
  );
  return {
    items: views.map((view, i) => ({
      ...view,
      invoice_number: rows[i]!.invoice.invoiceNumber,
      invoice_type: rows[i]!.invoice.invoiceType,
    })),
    total,
  };
}

/** The payment's fields an audit event compares (its invoice is the event's parent). */
const paymentAuditFields = (p: repo.PaymentRow) => ({
  status: p.status,
  amountRefundedCents: p.amountRefundedCents,
  voidedAt: p.voidedAt,
  voidedByUserUid: p.voidedByUserUid,
  voidReason: p.voidReason,
});

async function lockedPayment(tx: DbOrTx, invoiceOrg: string, invoiceUid: string, paymentUid: string) {
  const payment = await repo.findPayment(tx, invoiceOrg, invoiceUid, paymentUid, { forUpdate: true });
  if (!payment) throw notFound('Payment');
  return payment;
}

/**
 * `POST /api/invoices/{uid}/payments/{payment_uid}/refund`: a refund record of (part of) the payment;
 * the payment becomes `partially_refunded` or `refunded`, the invoice's paid amount shrinks by it, and a
 * `paid` invoice that owes something again goes back to `open` (invoice-settlement.ts).
 */
export async function refundPayment(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  paymentUid: string,
  body: RefundBodyT,
) {
  const { result, invoice } = await changeInvoiceMoney(db, jobs, ctx, invoiceUid, async (tx, row) => {
    const payment = await lockedPayment(tx, row.organizationUid, row.uid, paymentUid);
    if (payment.status === 'voided') {
      throw new AppError('invalid_state', 'A voided payment cannot be refunded');
    }
    const refundable = payment.amountCents - payment.amountRefundedCents;
    if (refundable <= 0) throw new AppError('invalid_state', 'The payment is already fully refunded');
    const amount = body.amount_cents ?? refundable;
    if (amount > refundable) {
      throw validationFailed('amount_cents', `exceeds what is left to refund of the payment (${refundable})`);
    }
    const refunded = payment.amountRefundedCents + amount;
    const updated = await repo.updatePayment(tx, row.organizationUid, payment.uid, {
      amountRefundedCents: refunded,
      status: refunded === payment.amountCents ? 'refunded' : 'partially_refunded',
    });
    const refund = await repo.insertRefund(tx, {
      organizationUid: row.organizationUid,
      invoiceUid: row.uid,
      paymentUid: payment.uid,
      amountCents: amount,
      reason: body.reason,
      createdByUserUid: ctx.principal.user.uid,
    });
    const refundView = toRefundView({
      refund,
      refundedBy: { uid: ctx.principal.user.uid, fullName: ctx.principal.user.fullName },
    });
    const paymentAfter = await paymentView(tx, row.organizationUid, row.uid, payment.uid, row.currency);
    return {
      result: { refund: refundView, payment: paymentAfter },
      reason: 'payment_refunded',
      audit: [
        {
          organizationUid: row.organizationUid,
          action: 'payment.refunded',
          entityUid: payment.uid,
          parent: invoiceParent(row.uid),
          changes: {
            ...changesBetween(paymentAuditFields(payment), paymentAuditFields(updated)),
            refund: {
              before: null,
              after: { uid: refund.uid, amount_cents: amount, reason: body.reason },
            },
          },
        },
      ],
      emit: (etx, after) =>
        emitEvent(etx, jobs, ctx, 'payment.refunded', invoiceEntity(after), {
          refund: refundView,
          payment: paymentAfter,
          invoice: after,
        }),
    };
  });
  return { ...result, invoice };
}

/**
 * `POST /api/invoices/{uid}/payments/{payment_uid}/void`: a payment recorded by mistake. It stays, marked
 * `voided` with who, when and why, and no longer counts as paid. A payment with refunds is not voided
 * (money moved both ways: refund the rest instead); voiding twice is 409.
 */
export async function voidPayment(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  paymentUid: string,
  body: VoidPaymentBodyT,
) {
  const { result, invoice } = await changeInvoiceMoney(db, jobs, ctx, invoiceUid, async (tx, row) => {
    const payment = await lockedPayment(tx, row.organizationUid, row.uid, paymentUid);
    if (payment.status === 'voided') throw new AppError('invalid_state', 'The payment is already voided');
    if (payment.status !== 'succeeded') {
      throw new AppError(
        'invalid_state',
        'A payment with refunds cannot be voided; refund what is left of it instead',
      );
    }
    const updated = await repo.updatePayment(tx, row.organizationUid, payment.uid, {
      status: 'voided',
      voidedAt: new Date(),
      voidedByUserUid: ctx.principal.user.uid,
      voidReason: body.reason,
    });
    const paymentAfter = await paymentView(tx, row.organizationUid, row.uid, payment.uid, row.currency);
    return {
      result: paymentAfter,
      reason: 'payment_voided',
      audit: [
        {
          organizationUid: row.organizationUid,
          action: 'payment.voided',
          entityUid: payment.uid,
          parent: invoiceParent(row.uid),
          changes: changesBetween(paymentAuditFields(payment), paymentAuditFields(updated)),
        },
      ],
      emit: (etx, after) =>
        emitEvent(etx, jobs, ctx, 'payment.voided', invoiceEntity(after), {
          payment: paymentAfter,
          invoice: after,
        }),
    };
  });
  return { payment: result, invoice };
}
