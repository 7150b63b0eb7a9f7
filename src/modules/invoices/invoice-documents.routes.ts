import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { envelope } from '../../platform/http/envelope.ts';
import { AppError } from '../../platform/http/errors.ts';
import { DateTime, Envelope, errorResponses, Nullable, Uuid } from '../../platform/http/schemas.ts';
import type { App, AppDeps, JobDeps } from '../../platform/http/types.ts';
import {
  HOSTED_PAGE_CSP,
  renderHostedInvoicePage,
  renderMissingPage,
  renderThrottledPage,
} from './invoice-hosted-page.ts';
import * as service from './invoice-documents.service.ts';
import { InvoiceParams } from './invoices.schemas.ts';

export const documentDeps = (deps: JobDeps): service.InvoiceDocumentDeps => ({
  db: deps.database.db,
  storage: deps.objectStorage,
  secrets: deps.secrets,
  publicBaseUrl: deps.config.publicBaseUrl,
});

const HostedLink = Type.Object(
  {
    url: Type.String({
      description: 'The hosted page: `<PUBLIC_BASE_URL>/i/<token>`; anyone holding it can view',
    }),
    pdf_url: Type.String({ description: 'The PDF behind the same link: `<url>/pdf`' }),
    created_at: DateTime,
    created_by_user_uid: Nullable(Uuid),
  },
  { $id: 'HostedInvoiceLink' },
);
const HostedLinkQuery = Type.Object({
  rotate: Type.Optional(
    Type.Boolean({
      description: 'true: revoke the live link and make a new one (the old address stops working at once)',
    }),
  ),
});
const RevokedBody = Type.Object({
  revoked: Type.Boolean({ description: 'Whether there was a live link to revoke' }),
});
const TokenParams = Type.Object({
  token: Type.String({ maxLength: 200, description: 'The secret part of the hosted link' }),
});

const pdfResponse = {
  description:
    'The invoice as a PDF (`Content-Type: application/pdf`), with its content version as a strong `ETag`',
  content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
};
const notModified = { description: '`If-None-Match` names the current version: nothing sent' };
const html = (description: string) => ({
  description,
  content: { 'text/html': { schema: { type: 'string' } } },
});

function sendPdf(reply: FastifyReply, pdf: service.InvoicePdf, cacheControl: string) {
  reply
    .header('ETag', service.etagOf(pdf.contentHash))
    .header('Cache-Control', cacheControl)
    .header('X-Content-Type-Options', 'nosniff');
  if (!pdf.body) return reply.code(304).send();
  return reply
    .header('Content-Type', 'application/pdf')
    .header('Content-Length', pdf.size)
    .header('Content-Disposition', `inline; filename="${pdf.filename}"`)
    .send(pdf.body);
}

const ifNoneMatch = (request: FastifyRequest) => {
  const header = request.headers['if-none-match'];
  return Array.isArray(header) ? header.join(',') : header;
};

/**
 * Invoice documents (docs/invoices.md#invoice-documents): the PDF of a receivable, and the hosted
 * invoice page — made, shown again and revoked with a key; viewed with the link alone.
 */
export async function invoiceDocumentRoutes(app: App, deps: AppDeps) {
  const docDeps = documentDeps(deps);
  service.configureInvoiceDocuments(docDeps);
  app.addSchema(HostedLink);
  const tags = ['Invoices'];

  app.get(
    '/api/invoices/:uid/pdf',
    {
      schema: {
        operationId: 'getInvoicePdf',
        tags,
        summary: 'The PDF of a receivable invoice (rendered once per version of its content)',
        description:
          'Organization details (PATCH /api/organization/{uid}/settings), client, line items, taxes, totals, payments and payment instructions. The `ETag` is the content version: any change to the invoice, its lines, payments, client or the organization details gives another; `If-None-Match` with the current one answers 304. A payable answers 409 `invalid_state`.',
        params: InvoiceParams,
        response: { 200: pdfResponse, 304: notModified, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: ['not_found', 'invalid_state'] },
    },
    async (request, reply) => {
      const pdf = await service.getInvoicePdf(
        docDeps,
        request.tenant(),
        request.params.uid,
        ifNoneMatch(request),
      );
      return sendPdf(reply, pdf, 'private, no-cache');
    },
  );

  app.post(
    '/api/invoices/:uid/hosted-link',
    {
      schema: {
        operationId: 'createHostedInvoiceLink',
        tags,
        summary: "The receivable's hosted page link: the live one (200), or a new one (201)",
        description:
          'The page at `url` shows the invoice (status, amounts, due date, lines) and its PDF to whoever has the address, without a key, until the link is revoked. One live link per invoice: calling again returns it; `rotate: true` revokes it and makes a new one.',
        params: InvoiceParams,
        querystring: HostedLinkQuery,
        response: {
          200: Envelope(Type.Ref('HostedInvoiceLink')),
          201: Envelope(Type.Ref('HostedInvoiceLink')),
          ...errorResponses,
        },
      },
      config: { scope: 'invoices:write', errors: ['not_found', 'invalid_state', 'conflict'] },
    },
    async (request, reply) => {
      const { link, created } = await service.issueHostedLink(docDeps, request.tenant(), request.params.uid, {
        rotate: request.query.rotate,
      });
      reply.header('Cache-Control', 'no-store');
      if (created) return reply.code(201).send(envelope(link, 'Hosted invoice link created', 201));
      return envelope(link, 'Hosted invoice link');
    },
  );

  app.delete(
    '/api/invoices/:uid/hosted-link',
    {
      schema: {
        operationId: 'revokeHostedInvoiceLink',
        tags,
        summary: "Revoke the receivable's hosted page link (its address then shows a not-found page)",
        params: InvoiceParams,
        response: { 200: Envelope(RevokedBody), ...errorResponses },
      },
      config: { scope: 'invoices:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request) =>
      envelope(
        await service.revokeHostedLink(docDeps, request.tenant(), request.params.uid),
        'Hosted invoice link revoked',
      ),
  );

  // ---- the public page: the link is the credential ----

  const caller = (request: FastifyRequest) => ({
    ip: request.ip,
    requestId: request.id,
    clientAddress: request.ip || null,
  });
  /** The pages' headers on top of the app's (helmet's): their own policy, never indexed or cached. */
  const pageHeaders = (reply: FastifyReply) =>
    reply
      .header('Content-Security-Policy', HOSTED_PAGE_CSP)
      .header('X-Robots-Tag', 'noindex, nofollow')
      .header('Cache-Control', 'no-store');
  /** Unknown, revoked or throttled: an HTML page, never the API's error body. */
  const missing = (reply: FastifyReply, error?: unknown) => {
    if (error instanceof AppError && error.code === 'rate_limited') {
      const retry = error.retryAfterS ?? 1;
      return pageHeaders(reply)
        .code(429)
        .header('Retry-After', retry)
        .type('text/html; charset=utf-8')
        .send(renderThrottledPage(retry));
    }
    if (error) throw error;
    return pageHeaders(reply).code(404).type('text/html; charset=utf-8').send(renderMissingPage());
  };
  // The app's onSend hook sets the API's policy on every answer; a route hook runs after it.
  const strictPolicy = {
    onSend: (
      _request: FastifyRequest,
      reply: FastifyReply,
      payload: unknown,
      done: (e: null, p: unknown) => void,
    ) => {
      reply.header('Content-Security-Policy', HOSTED_PAGE_CSP);
      done(null, payload);
    },
  };

  app.get(
    '/i/:token',
    {
      ...strictPolicy,
      schema: {
        // Pages for people, not API operations: left out of the OpenAPI document as the console's are.
        hide: true,
        operationId: 'viewHostedInvoice',
        tags,
        summary: 'The hosted invoice page (HTML; no key: the link is the credential)',
        description:
          'Organization, invoice number, status, total, paid and remaining amounts, due date, line items and a link to the PDF. An unknown or revoked link answers 404 with a page that says nothing more; many bad links from one address answer 429 for a while.',
        security: [],
        params: TokenParams,
        response: {
          200: html('The invoice page'),
          404: html('The link is unknown or revoked'),
          429: html('Too many bad links from this address'),
        },
      },
      config: { public: true, errors: ['rate_limited', 'not_found'] },
    },
    async (request, reply) => {
      let found: service.HostedInvoice | null;
      try {
        found = await service.viewHostedInvoice(docDeps, request.params.token, caller(request));
      } catch (error) {
        return missing(reply, error);
      }
      if (!found) return missing(reply);
      return pageHeaders(reply)
        .type('text/html; charset=utf-8')
        .send(renderHostedInvoicePage(found.document, `${encodeURIComponent(request.params.token)}/pdf`));
    },
  );

  app.get(
    '/i/:token/pdf',
    {
      ...strictPolicy,
      schema: {
        hide: true,
        operationId: 'downloadHostedInvoicePdf',
        tags,
        summary: "The hosted invoice's PDF (no key: the link is the credential)",
        security: [],
        params: TokenParams,
        response: {
          200: pdfResponse,
          304: notModified,
          404: html('The link is unknown or revoked'),
          429: html('Too many bad links from this address'),
        },
      },
      config: { public: true, errors: ['rate_limited', 'not_found'] },
    },
    async (request, reply) => {
      let pdf: service.InvoicePdf | null;
      try {
        pdf = await service.hostedInvoicePdf(
          docDeps,
          request.params.token,
          caller(request),
          ifNoneMatch(request),
        );
      } catch (error) {
        return missing(reply, error);
      }
      if (!pdf) return missing(reply);
      reply.header('X-Robots-Tag', 'noindex, nofollow');
      // Revalidated on every use, so a revoked link stops serving even a cached copy.
      return sendPdf(reply, pdf, 'private, no-cache');
    },
  );
}

/** For the jobs process (the collections agent renders `{hosted_invoice_url}` there). */
export function configureInvoiceDocumentJobs(deps: JobDeps): Promise<void> {
  service.configureInvoiceDocuments(documentDeps(deps));
  return Promise.resolve();
}
