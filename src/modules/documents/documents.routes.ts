import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { envelope } from '../../platform/http/envelope.ts';
import { AppError } from '../../platform/http/errors.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { readUploadFormAsBody, releaseSpooledFiles } from '../../platform/storage/multipart-upload.ts';
import {
  Document,
  DocumentEnvelope,
  DocumentUidParams,
  DocumentUploadForm,
  MAX_DOCUMENT_BYTES,
  type DocumentUploadFormT,
} from './documents.schemas.ts';
import * as service from './documents.service.ts';

/**
 * Documents (CONTRACT §4). Both routes need `knowledge:write`: documents are files kept for search
 * and referenced by invoices (`document_uid`), the same kind of upload as knowledge documents.
 */
export async function documentRoutes(app: App, deps: AppDeps) {
  app.addSchema(Document);
  const documentDeps = (request: FastifyRequest): service.DocumentDeps => ({
    db: deps.database.db,
    storage: deps.objectStorage,
    jobs: deps.jobs,
    urlExpiresS: deps.config.presignedUrlExpiresS,
    onOrphan: (key, error) =>
      request.log.error({ err: error, storage_key: key }, 'document object left without a row'),
  });
  const tags = ['Documents'];

  /**
   * preValidation: the whole form is read and the file spooled (413 past 25 MB); `request.body` becomes
   * the form's text fields plus a digest of the file part, for validation and the idempotency check.
   */
  const readUploadForm = async (request: FastifyRequest) => {
    await readUploadFormAsBody(request, { maxFileBytes: MAX_DOCUMENT_BYTES, maxFiles: 1 });
  };

  // multipart/form-data is understood by this route only; elsewhere it stays a 415.
  await app.register(async (scope: App) => {
    await scope.register(multipart, { throwFileSizeLimit: true });
    scope.decorateRequest('spooledFiles', null);

    scope.post(
      '/api/documents',
      {
        schema: {
          operationId: 'uploadDocument',
          tags,
          summary: 'Upload a document (multipart/form-data)',
          description:
            'Form fields, in any order: `file` (required, at most 25 MB; 413 above), `document_name` (default: the ' +
            'file name), `organization_uid` (default: your default organization). Answers 201 with the document, ' +
            'its SHA-256 and a time-limited `presigned_url`. With `Idempotency-Key`, a retry with the same file and ' +
            'fields replays the first answer; a different file → 422.',
          body: { content: { 'multipart/form-data': { schema: DocumentUploadForm } } },
          response: { 201: DocumentEnvelope, ...errorResponses },
        },
        config: { scope: 'knowledge:write', idempotency: 'deferred' },
        preValidation: readUploadForm,
        onResponse: releaseSpooledFiles,
        onRequestAbort: releaseSpooledFiles,
      },
      async (request, reply) => {
        const body = request.body as DocumentUploadFormT;
        const ctx = request.tenant(body.organization_uid);
        const file = request.spooledFiles?.find((f) => f.fieldname === 'file');
        if (!file) {
          throw new AppError('validation_failed', 'file is required', [
            { field: 'file', message: 'is required' },
          ]);
        }
        let document: service.DocumentView;
        try {
          document = await service.createDocument(documentDeps(request), ctx, {
            path: file.path,
            filename: file.filename,
            contentType: file.contentType,
            size: file.size,
            sha256: file.sha256,
            documentName: body.document_name,
          });
        } finally {
          await releaseSpooledFiles(request);
        }
        return reply.code(201).send(envelope(document, 'Document uploaded', 201));
      },
    );
  });

  app.get(
    '/api/documents/:uid',
    {
      schema: {
        operationId: 'getDocument',
        tags,
        summary: 'Get a document, with a fresh presigned download URL',
        params: DocumentUidParams,
        response: { 200: DocumentEnvelope, ...errorResponses },
      },
      config: { scope: 'knowledge:write', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.getDocument(documentDeps(request), request.tenant(), request.params.uid),
        'Document',
      ),
  );
}
