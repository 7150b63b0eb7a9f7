import { envelope } from '../../platform/http/envelope.ts';
import { pageLinks, pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { InvoiceParams } from './invoices.schemas.ts';
import {
  ListPaymentsQuery,
  OrganizationPayment,
  Payment,
  PaymentChangeEnvelope,
  PaymentListEnvelope,
  PaymentParams,
  PaymentsEnvelope,
  Refund,
  RefundBody,
  RefundEnvelope,
  VoidPaymentBody,
} from './payments.schemas.ts';
import * as service from './payments.service.ts';
import { moneyTargetExists } from './invoice-exists.ts';

/** Payments: an invoice's list, the organization's list, refunds and voids (docs/invoices.md). */
export async function paymentRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(Refund);
  app.addSchema(Payment);
  app.addSchema(OrganizationPayment);
  const tags = ['Invoices'];

  app.get(
    '/api/invoices/:uid/payments',
    {
      schema: {
        operationId: 'listInvoicePayments',
        tags,
        summary: "An invoice's payments, oldest first, with their refunds and voids",
        params: InvoiceParams,
        response: { 200: PaymentsEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        { items: await service.listInvoicePayments(db, request.tenant(), request.params.uid) },
        'Payments',
      ),
  );

  app.get(
    '/api/payments',
    {
      schema: {
        operationId: 'listPayments',
        tags,
        summary: "The organization's payments, newest first (filter by invoice, status, paid_at range)",
        description:
          'Members see the payments of the invoices they may see (docs/authentication.md#invoices-who-sees-what). `from`/`to` bound `paid_at`, inclusive; a date as `to` includes that whole UTC day.',
        querystring: ListPaymentsQuery,
        response: { 200: PaymentListEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: [] },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listPayments(db, ctx, request.query, page);
      const meta = pageMeta(page, total);
      return envelope(
        { items, _meta: meta, _links: pageLinks(deps.config.publicBaseUrl, request.url, meta) },
        'Payments',
      );
    },
  );

  app.post(
    '/api/invoices/:uid/payments/:payment_uid/refund',
    {
      schema: {
        operationId: 'refundInvoicePayment',
        tags,
        summary: 'Refund a payment, in full or in part (admins); a paid invoice that owes again reopens',
        params: PaymentParams,
        body: RefundBody,
        response: { 201: RefundEnvelope, ...errorResponses },
      },
      config: {
        scope: 'invoices:write',
        errors: ['forbidden', 'not_found', 'invalid_state'],
        exists: (ctx, { uid, payment_uid }) => moneyTargetExists(db, ctx, uid!, { paymentUid: payment_uid }),
      },
    },
    async (request, reply) => {
      const data = await service.refundPayment(
        db,
        deps.jobs,
        request.tenant(),
        request.params.uid,
        request.params.payment_uid,
        request.body,
      );
      return reply.code(201).send(envelope(data, 'Payment refunded', 201));
    },
  );

  app.post(
    '/api/invoices/:uid/payments/:payment_uid/void',
    {
      schema: {
        operationId: 'voidInvoicePayment',
        tags,
        summary: 'Void a payment recorded by mistake (admins); it is kept, and no longer counts as paid',
        params: PaymentParams,
        body: VoidPaymentBody,
        response: { 200: PaymentChangeEnvelope, ...errorResponses },
      },
      config: {
        scope: 'invoices:write',
        errors: ['forbidden', 'not_found', 'invalid_state'],
        exists: (ctx, { uid, payment_uid }) => moneyTargetExists(db, ctx, uid!, { paymentUid: payment_uid }),
      },
    },
    async (request) =>
      envelope(
        await service.voidPayment(
          db,
          deps.jobs,
          request.tenant(),
          request.params.uid,
          request.params.payment_uid,
          request.body,
        ),
        'Payment voided',
      ),
  );
}
