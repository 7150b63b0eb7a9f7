import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { Envelope, errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { Type } from 'typebox';
import {
  ConfirmBody,
  ConfirmResponse,
  KnowledgeDocument,
  KnowledgeListEnvelope,
  KnowledgeListQuery,
  KnowledgeSearchEnvelope,
  KnowledgeSearchQuery,
  KnowledgeUidParams,
  PresignBody,
  PresignResponse,
} from './knowledge.schemas.ts';
import * as service from './knowledge.service.ts';

/**
 * Interface 4.2 and CONTRACT §3. Every route needs `knowledge:write`, the one knowledge scope: reading
 * a document's status is part of uploading it.
 */
export async function knowledgeRoutes(app: App, deps: AppDeps) {
  const knowledgeDeps: service.KnowledgeDeps = {
    db: deps.database.db,
    jobs: deps.jobs,
    storage: deps.objectStorage,
  };
  app.addSchema(KnowledgeDocument);
  const tags = ['Knowledge'];

  app.post(
    '/api/knowledge/presign',
    {
      schema: {
        operationId: 'presignKnowledgeUpload',
        tags,
        summary: 'Start a knowledge upload: a presigned POST form for object storage (interface 4.2 step 1)',
        description:
          'Answers `{message, data}` with `presigned_post` (`url` and `fields`), `knowledge_document_uid`, ' +
          '`s3_object_name` and `expires_in` (900). Then POST multipart/form-data to `presigned_post.url` ' +
          'with every member of `presigned_post.fields`, and the file last as `file` (at most 25 MB, of the ' +
          'presigned content_type), and confirm with `POST /api/knowledge/confirm`. See docs/knowledge.md.',
        body: PresignBody,
        response: { 200: PresignResponse, ...errorResponses },
      },
      config: { scope: 'knowledge:write' },
    },
    async (request) => {
      const ctx = request.tenant(request.body.organization_uid);
      const data = await service.presignUpload(knowledgeDeps, ctx, {
        filename: request.body.filename,
        contentType: request.body.content_type,
      });
      return { message: 'Upload presigned; POST the file to presigned_post.url, then confirm', data };
    },
  );

  app.post(
    '/api/knowledge/confirm',
    {
      schema: {
        operationId: 'confirmKnowledgeUpload',
        tags,
        summary: 'Confirm an upload and start its processing workflow (interface 4.2 step 3)',
        description:
          'Checks that the object exists, its size (at most 25 MB) and its type, then starts the workflow: ' +
          '202 `{message, data: {knowledge_document_uid, workflow_id, status: "processing"}}`. A missing ' +
          'object, an oversize one or a wrong type → 422 (the upload stays unconfirmed). Confirming again ' +
          'answers the same workflow_id (and the current status) and starts nothing.',
        body: ConfirmBody,
        response: { 202: ConfirmResponse, ...errorResponses },
      },
      config: { scope: 'knowledge:write', idempotency: 'deferred', errors: ['not_found'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const data = await service.confirmUpload(knowledgeDeps, ctx, request.body.knowledge_document_uid);
      return reply.code(202).send({
        message: data.status === 'processing' ? 'Processing started' : `Already confirmed (${data.status})`,
        data,
      });
    },
  );

  app.get(
    '/api/knowledge',
    {
      schema: {
        operationId: 'listKnowledgeDocuments',
        tags,
        summary: "List the organization's knowledge documents, newest first, with their processing status",
        description:
          'Confirmed uploads only (`processing`, `ready`, `failed`); an upload presigned but never confirmed ' +
          'is not listed. `data.items` and `data._meta`; `per_page` 1–100, default 25.',
        querystring: KnowledgeListQuery,
        response: { 200: KnowledgeListEnvelope, ...errorResponses },
      },
      config: { scope: 'knowledge:write' },
    },
    async (request) => {
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listKnowledgeDocuments(
        knowledgeDeps,
        request.tenant(request.query.organization_uid),
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Knowledge documents');
    },
  );

  app.get(
    '/api/knowledge/search',
    {
      schema: {
        operationId: 'searchKnowledge',
        tags: ['Knowledge', 'Search'],
        summary: "Full-text search of the organization's knowledge documents, best first, with snippets",
        description:
          'Searches the text extracted from the documents that finished processing (`ready`), in the ' +
          "organization's search language (organization settings `search_language`, default english): " +
          'stemmed, stop words ignored, web-search syntax (`"late fee"`, `or`, `-draft`). Best first, then ' +
          'newest. Each item has `snippet.text` (plain text) and `snippet.highlights` (offsets of the matched ' +
          'words). `data.items` and `data._meta`; `per_page` 1–50, default 10. See docs/knowledge.md.',
        querystring: KnowledgeSearchQuery,
        response: { 200: KnowledgeSearchEnvelope, ...errorResponses },
      },
      config: { scope: 'knowledge:write' },
    },
    async (request) => {
      const page = pageRequest(request.query, 10);
      const { items, total } = await service.searchKnowledge(
        knowledgeDeps,
        request.tenant(request.query.organization_uid),
        request.query.q,
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Knowledge search results');
    },
  );

  app.get(
    '/api/knowledge/:uid',
    {
      schema: {
        operationId: 'getKnowledgeDocument',
        tags,
        summary: 'Get a knowledge document: its status (presigned, processing, ready, failed) and file facts',
        params: KnowledgeUidParams,
        response: { 200: Envelope(Type.Ref('KnowledgeDocument')), ...errorResponses },
      },
      config: { scope: 'knowledge:write', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.getKnowledgeDocument(knowledgeDeps, request.tenant(), request.params.uid),
        'Knowledge document',
      ),
  );

  app.delete(
    '/api/knowledge/:uid',
    {
      schema: {
        operationId: 'deleteKnowledgeDocument',
        tags,
        summary: 'Delete a knowledge document and its stored file (admins, or the member who uploaded it)',
        description:
          'Answers 200 with the document as it was. It is gone at once from `GET /api/knowledge`, ' +
          '`GET /api/knowledge/{uid}` (404) and search; its object in storage is removed by a job right ' +
          'after (retried until storage answers). A member may delete only what they uploaded (403). ' +
          'See docs/knowledge.md#deleting-a-document.',
        params: KnowledgeUidParams,
        response: { 200: Envelope(Type.Ref('KnowledgeDocument')), ...errorResponses },
      },
      config: { scope: 'knowledge:write', errors: ['not_found', 'forbidden'] },
    },
    async (request) =>
      envelope(
        await service.deleteKnowledgeDocument(knowledgeDeps, request.tenant(), request.params.uid),
        'Knowledge document deleted',
      ),
  );
}
