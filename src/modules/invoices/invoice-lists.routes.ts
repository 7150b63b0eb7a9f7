import { Type } from 'typebox';
import { pageLinks, pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { dateOrDateTime, errorResponses, PageLinks, PageMeta, Uuid } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { listInvoices, SORT_KEYS, type InvoiceListQuery } from './invoice-lists.ts';
import type { InvoiceType } from './invoice-statuses.ts';

const text = (description: string) => Type.Optional(Type.String({ maxLength: 200, description }));
// A date (YYYY-MM-DD, a real calendar day) or an RFC 3339 date-time with its zone, checked here: the
// filter code reads the value with `new Date`, which rolls 2026-02-30 over into March and takes "10" for
// a date in 2001, so a bad date answered 200 with a wrong filter instead of 400.
const when = (description: string) => Type.Optional(dateOrDateTime({ maxLength: 40, description }));

const ListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
  view: Type.Optional(
    Type.Literal('list', { description: 'list: the slim item; omitted: the full invoice' }),
  ),
  sort_by: Type.Optional(
    Type.Union(
      Object.keys(SORT_KEYS).map((k) => Type.Literal(k)),
      { default: 'issue_date' },
    ),
  ),
  sort_order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  status: text('comma-separated statuses'),
  due_date: when('that UTC day'),
  due_date_from: when('inclusive'),
  due_date_to: when('inclusive'),
  issue_date: when('that UTC day'),
  issue_date_from: when('inclusive'),
  issue_date_to: when('inclusive'),
  received_date: when('that UTC day'),
  received_date_from: when('inclusive'),
  received_date_to: when('inclusive'),
  document_type: text('case-insensitive substring'),
  invoice_number: text('case-insensitive substring'),
  stamp_number: text('case-insensitive substring'),
  vendor_nit: text('case-insensitive substring'),
  vendor_name: text('case-insensitive substring'),
  include_comments: Type.Optional(Type.Boolean({ default: false, description: 'ignored with view=list' })),
  has_comments: Type.Optional(Type.Boolean()),
  keyword: text(
    'substring of invoice number, vendor name, vendor NIT, stamp number or registration number; on receivables also the client name',
  ),
  client_uid: Type.Optional(Uuid),
  approval_date_from: when('inclusive'),
  approval_date_to: when('inclusive'),
  registration_date_from: when('inclusive'),
  registration_date_to: when('inclusive'),
  approved_by: text('user ids or uids, comma-separated'),
  registered_by: text('user ids or uids, comma-separated'),
  responsible: text('user ids or uids, comma-separated'),
});

const ListResponse = Type.Object({
  status: Type.Literal('success'),
  status_code: Type.Integer(),
  message: Type.String(),
  items: Type.Array(Type.Union([Type.Ref('InvoiceListItem'), Type.Ref('Invoice')])),
  _meta: PageMeta,
  _links: PageLinks,
});

export async function invoiceListRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const route = (path: string, type: InvoiceType, operationId: string, summary: string) =>
    app.get(
      path,
      {
        schema: {
          operationId,
          tags: ['Invoices'],
          summary,
          description:
            'Admins see every invoice of the organization; members only those they are assigned to or responsible for. `items`, `_meta` and `_links` are at the top level.',
          params: Type.Object({ organization_uid: Uuid }),
          querystring: ListQuery,
          response: { 200: ListResponse, ...errorResponses },
        },
        config: { scope: 'invoices:read' },
      },
      async (request) => {
        const ctx = request.tenant(request.params.organization_uid);
        const page = pageRequest(request.query, 25);
        const { items, total } = await listInvoices(db, ctx, type, request.query as InvoiceListQuery, page);
        const meta = pageMeta(page, total);
        return {
          status: 'success' as const,
          status_code: 200,
          message: type === 'ACCOUNTS_PAYABLE' ? 'Payable invoices' : 'Receivable invoices',
          items,
          _meta: meta,
          _links: pageLinks(deps.config.publicBaseUrl, request.url, meta),
        };
      },
    );
  route(
    '/api/organization/:organization_uid/ap-invoices',
    'ACCOUNTS_PAYABLE',
    'listApInvoices',
    'List payable invoices',
  );
  route(
    '/api/organization/:organization_uid/ar-invoices',
    'ACCOUNTS_RECEIVABLE',
    'listArInvoices',
    'List receivable invoices',
  );
}
