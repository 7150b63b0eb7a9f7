import { envelope } from '../../platform/http/envelope.ts';
import { BODY_LIMITS } from '../../platform/http/route-rules.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { billingOptionsOf } from '../billing/billing.service.ts';
import {
  Comment,
  CommentBody,
  CommentEnvelope,
  CommentParams,
  CreateInvoiceBody,
  Invoice,
  InvoiceEnvelope,
  InvoiceListItem,
  InvoiceParams,
  LineItem,
  LineItemsBody,
  LineItemsEnvelope,
  LineItemsUpdateBody,
  PatchCommentBody,
  PaymentBody,
  StatusChange,
  StatusHistoryEnvelope,
  StatusHistoryQuery,
  UpdateInvoiceBody,
} from './invoices.schemas.ts';
import * as service from './invoices.service.ts';
import { commentExists, invoiceExists } from './invoice-exists.ts';
import { listStatusHistory } from './invoice-lifecycle.service.ts';
import { pageLinks, pageMeta, pageRequest } from '../../platform/http/pagination.ts';

export async function invoiceRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(LineItem);
  app.addSchema(Comment);
  app.addSchema(Invoice);
  app.addSchema(InvoiceListItem);
  app.addSchema(StatusChange);
  const tags = ['Invoices'];
  const read = { scope: 'invoices:read' as const };
  const write = { scope: 'invoices:write' as const };

  app.post(
    '/api/invoices',
    {
      schema: {
        operationId: 'createInvoice',
        tags,
        summary: 'Create a receivable or payable invoice (with line items resolved from the catalog)',
        description:
          'Any status of the invoice type may be given (default draft or received); it starts the status history. A payable created approved counts against the caller’s approval limit (403 `approval_limit_exceeded`).',
        body: CreateInvoiceBody,
        response: { 201: InvoiceEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        ...write,
        errors: ['already_exists', 'forbidden', 'approval_limit_exceeded', 'party_archived'],
      },
    },
    async (request, reply) => {
      const invoice = await service.createInvoice(
        db,
        deps.jobs,
        request.tenant(request.body.organization_uid),
        request.body,
      );
      return reply.code(201).send(envelope(invoice, 'Invoice created', 201));
    },
  );

  app.get(
    '/api/invoices/:uid',
    {
      schema: {
        operationId: 'getInvoice',
        tags,
        summary: 'Get an invoice (interface 2.11)',
        params: InvoiceParams,
        response: { 200: InvoiceEnvelope, ...errorResponses },
      },
      config: { ...read, errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.readInvoice(deps.database, request.tenant(), request.params.uid, app.invoiceViewCache),
        'Invoice',
      ),
  );

  app.put(
    '/api/invoices/:uid',
    {
      schema: {
        operationId: 'updateInvoice',
        tags,
        summary: 'Update an invoice (partial), applied once the billing partner accepted it',
        description:
          'Only the sent fields change. A `status` must be one the invoice’s lifecycle allows next (409 `invalid_transition` names them; docs/invoices.md#lifecycle); approving a payable needs the right to and a total within the caller’s approval limit (403 `forbidden`, `approval_limit_exceeded`). With a billing integration configured, the update is sent to the partner first and applied only once it accepted: a partner failure answers 502, no answer within 5 s answers 504, and the invoice stays exactly as it was (the same update may be sent again at once). Another update of the same invoice while one is with the partner answers 409 `sync_in_progress`; an invoice changed meanwhile (a payment) answers 409 `conflict`.',
        params: InvoiceParams,
        body: UpdateInvoiceBody,
        response: { 200: InvoiceEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        ...write,
        exists: (ctx, { uid }) => invoiceExists(db, ctx, uid!),
        errors: [
          'forbidden',
          'approval_limit_exceeded',
          'not_found',
          'conflict',
          'invalid_state',
          'already_exists',
          'invalid_transition',
          'sync_in_progress',
          'party_archived',
          'bad_gateway',
          'gateway_timeout',
        ],
      },
    },
    async (request) =>
      envelope(
        await service.updateInvoice(
          db,
          deps.jobs,
          billingOptionsOf(deps),
          request.tenant(),
          request.params.uid,
          request.body,
        ),
        'Invoice updated',
      ),
  );

  app.post(
    '/api/invoices/:uid/line_items',
    {
      schema: {
        operationId: 'createInvoiceLineItems',
        tags,
        summary: 'Add one line item (object) or a batch of up to 100 (array); all or nothing',
        params: InvoiceParams,
        body: LineItemsBody,
        response: { 200: LineItemsEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        ...write,
        errors: ['not_found', 'approval_limit_exceeded'],
        exists: (ctx, { uid }) => invoiceExists(db, ctx, uid!),
      },
    },
    async (request) => {
      const body = request.body;
      const batch = Array.isArray(body);
      const items = await service.addLineItems(
        db,
        deps.jobs,
        request.tenant(),
        request.params.uid,
        Array.isArray(body) ? body : [body],
      );
      return envelope(batch ? items : items[0]!, batch ? 'Line items created' : 'Line item created');
    },
  );

  app.put(
    '/api/invoices/:uid/line_items',
    {
      schema: {
        operationId: 'updateInvoiceLineItems',
        tags,
        summary: 'Update one line item (object) or a batch (array), each by uid; all or nothing',
        params: InvoiceParams,
        body: LineItemsUpdateBody,
        response: { 200: LineItemsEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        ...write,
        errors: ['not_found', 'approval_limit_exceeded'],
        exists: (ctx, { uid }) => invoiceExists(db, ctx, uid!),
      },
    },
    async (request) => {
      const body = request.body;
      const batch = Array.isArray(body);
      const items = await service.updateLineItems(
        db,
        deps.jobs,
        request.tenant(),
        request.params.uid,
        Array.isArray(body) ? body : [body],
      );
      return envelope(batch ? items : items[0]!, batch ? 'Line items updated' : 'Line item updated');
    },
  );

  app.post(
    '/api/invoices/:uid/comments',
    {
      schema: {
        operationId: 'createInvoiceComment',
        tags,
        summary: 'Comment on an invoice',
        params: InvoiceParams,
        body: CommentBody,
        response: { 201: CommentEnvelope, ...errorResponses },
      },
      config: { ...write, errors: ['not_found'], exists: (ctx, { uid }) => invoiceExists(db, ctx, uid!) },
    },
    async (request, reply) => {
      const comment = await service.addComment(
        db,
        deps.jobs,
        request.tenant(),
        request.params.uid,
        request.body.text,
      );
      return reply.code(201).send(envelope(comment, 'Comment created', 201));
    },
  );

  app.patch(
    '/api/invoices/:uid/comments/:comment_uid',
    {
      schema: {
        operationId: 'updateInvoiceComment',
        tags,
        summary: 'Edit (author only) or resolve/reopen a comment',
        params: CommentParams,
        body: PatchCommentBody,
        response: { 200: CommentEnvelope, ...errorResponses },
      },
      config: {
        ...write,
        errors: ['forbidden', 'not_found'],
        exists: (ctx, { uid, comment_uid }) => commentExists(db, ctx, uid!, comment_uid!),
      },
    },
    async (request) =>
      envelope(
        await service.patchComment(
          db,
          deps.jobs,
          request.tenant(),
          request.params.uid,
          request.params.comment_uid,
          request.body,
        ),
        'Comment updated',
      ),
  );

  app.get(
    '/api/invoices/:uid/status-history',
    {
      schema: {
        operationId: 'listInvoiceStatusHistory',
        tags,
        summary: "An invoice's status changes, oldest first: who, when, from, to, why and the note",
        params: InvoiceParams,
        querystring: StatusHistoryQuery,
        response: { 200: StatusHistoryEnvelope, ...errorResponses },
      },
      config: { ...read, errors: ['not_found'] },
    },
    async (request) => {
      const page = pageRequest(request.query, 25);
      const { items, total, allowedNextStatuses } = await listStatusHistory(
        db,
        request.tenant(),
        request.params.uid,
        page,
      );
      const meta = pageMeta(page, total);
      return envelope(
        {
          items,
          allowed_next_statuses: allowedNextStatuses,
          _meta: meta,
          _links: pageLinks(deps.config.publicBaseUrl, request.url, meta),
        },
        'Status history',
      );
    },
  );

  app.post(
    '/api/invoices/:uid/payments',
    {
      schema: {
        operationId: 'createInvoicePayment',
        tags,
        summary: 'Record a payment; settling the remainder moves the invoice to paid',
        params: InvoiceParams,
        body: PaymentBody,
        response: { 201: InvoiceEnvelope, ...errorResponses },
      },
      config: {
        ...write,
        errors: ['not_found', 'invalid_state'],
        exists: (ctx, { uid }) => invoiceExists(db, ctx, uid!),
      },
    },
    async (request, reply) => {
      const invoice = await service.addPayment(
        db,
        deps.jobs,
        request.tenant(),
        request.params.uid,
        request.body,
      );
      return reply.code(201).send(envelope(invoice, 'Payment recorded', 201));
    },
  );
}
