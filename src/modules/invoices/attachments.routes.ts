import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { envelope } from '../../platform/http/envelope.ts';
import { AppError } from '../../platform/http/errors.ts';
import { pageLinks, pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import { assertUrlParts } from '../../platform/http/validation.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { readUploadFormAsBody, releaseSpooledFiles } from '../../platform/storage/multipart-upload.ts';
import {
  Attachment,
  AttachmentEnvelope,
  AttachmentListEnvelope,
  AttachmentListQuery,
  AttachmentParams,
  DeletedAttachmentEnvelope,
  MAX_ATTACHMENT_BYTES,
  UploadForm,
  type UploadFormT,
} from './attachments.schemas.ts';
import * as service from './attachments.service.ts';
import { InvoiceParams } from './invoices.schemas.ts';

const BOOLEAN_TEXT: Record<string, boolean> = {
  true: true,
  '1': true,
  yes: true,
  on: true,
  false: false,
  '0': false,
  no: false,
  off: false,
};

export async function attachmentRoutes(app: App, deps: AppDeps) {
  app.addSchema(Attachment);
  const attachmentDeps = (request: FastifyRequest): service.AttachmentDeleteDeps => ({
    db: deps.database.db,
    storage: deps.objectStorage,
    urlExpiresS: deps.config.presignedUrlExpiresS,
    jobs: deps.jobs,
    onOrphan: (key, error) =>
      request.log.error({ err: error, storage_key: key }, 'attachment object left without a row'),
  });
  const tags = ['Invoices'];

  /**
   * preValidation of an upload: first the invoice (404 before a byte of the file is read), then the whole
   * form: the file is spooled, and `request.body` becomes the form's values for schema validation and
   * the idempotency hash (the file part is represented by its digest of name, type and bytes).
   */
  const readUploadForm = async (request: FastifyRequest) => {
    assertUrlParts(request);
    const { uid } = request.params as { uid: string };
    await service.assertInvoiceVisible(attachmentDeps(request), request.tenant(), uid);
    await readUploadFormAsBody(request, { maxFileBytes: MAX_ATTACHMENT_BYTES, maxFiles: 1 }, (body) => {
      const isPublic = body.is_public;
      if (typeof isPublic === 'string')
        body.is_public = BOOLEAN_TEXT[isPublic.trim().toLowerCase()] ?? isPublic;
    });
  };

  // multipart/form-data is understood by these routes only; elsewhere it stays a 415.
  await app.register(async (scope: App) => {
    await scope.register(multipart, { throwFileSizeLimit: true });
    scope.decorateRequest('spooledFiles', null);

    scope.post(
      '/api/invoices/:uid/attachments',
      {
        schema: {
          operationId: 'uploadInvoiceAttachment',
          tags,
          summary: 'Upload an attachment to an invoice (multipart/form-data)',
          description:
            'Form fields, in any order: `file` (required, at most 25 MB; 413 above), `description`, `is_public`. ' +
            'Answers 201 with the attachment and a time-limited `presigned_url`. With `Idempotency-Key`, a retry ' +
            'with the same file and fields replays the first answer; a different file → 422.',
          params: InvoiceParams,
          body: { content: { 'multipart/form-data': { schema: UploadForm } } },
          response: { 201: AttachmentEnvelope, ...errorResponses },
        },
        config: { scope: 'invoices:write', idempotency: 'deferred', errors: ['not_found'] },
        preValidation: readUploadForm,
        onResponse: releaseSpooledFiles,
        onRequestAbort: releaseSpooledFiles,
      },
      async (request, reply) => {
        const ctx = request.tenant();
        const body = request.body as UploadFormT;
        const file = request.spooledFiles?.find((f) => f.fieldname === 'file');
        if (!file)
          throw new AppError('validation_failed', 'file is required', [
            { field: 'file', message: 'is required' },
          ]);
        let attachment: service.AttachmentView;
        try {
          attachment = await service.createAttachment(attachmentDeps(request), ctx, request.params.uid, {
            path: file.path,
            filename: file.filename,
            contentType: file.contentType,
            size: file.size,
            description: body.description ?? '',
            isPublic: body.is_public ?? false,
          });
        } finally {
          await releaseSpooledFiles(request);
        }
        return reply.code(201).send(envelope(attachment, 'Attachment uploaded', 201));
      },
    );
  });

  app.get(
    '/api/invoices/:uid/attachments',
    {
      schema: {
        operationId: 'listInvoiceAttachments',
        tags,
        summary: "List an invoice's attachments, newest first (interface 4.7)",
        params: InvoiceParams,
        querystring: AttachmentListQuery,
        response: { 200: AttachmentListEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: ['not_found'] },
    },
    async (request) => {
      const page = pageRequest(request.query, 10);
      const { items, total } = await service.listAttachments(
        attachmentDeps(request),
        request.tenant(),
        request.params.uid,
        page,
      );
      const meta = pageMeta(page, total);
      return envelope(
        { items, _meta: meta, _links: pageLinks(deps.config.publicBaseUrl, request.url, meta) },
        'Attachments',
      );
    },
  );

  app.delete(
    '/api/invoices/:uid/attachments/:attachment_uid',
    {
      schema: {
        operationId: 'deleteInvoiceAttachment',
        tags,
        summary: "Delete an invoice's attachment and its stored file (admins, or the member who uploaded it)",
        description:
          'Answers 200 with the attachment as it was (no `presigned_url`). It leaves the list at once; its ' +
          'file in storage is removed by a job right after (retried until storage answers), and download ' +
          'addresses handed out earlier then answer 404. A member may delete only what they uploaded (403). ' +
          'See docs/storage.md#deleting-objects.',
        params: AttachmentParams,
        response: { 200: DeletedAttachmentEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:write', errors: ['not_found', 'forbidden'] },
    },
    async (request) =>
      envelope(
        await service.deleteAttachment(
          attachmentDeps(request),
          request.tenant(),
          request.params.uid,
          request.params.attachment_uid,
        ),
        'Attachment deleted',
      ),
  );
}
