import path from 'node:path';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { App, AppDeps } from '../http/types.ts';
import { LocalObjectStorage } from './local-storage.ts';
import { contentDisposition, EMBEDDED_ENDPOINT_PATH } from './storage.ts';

const xmlEscape = (text: string) =>
  text.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

/** S3's error document: `<Error><Code>…</Code><Message>…</Message>…</Error>`. */
export function s3ErrorXml(code: string, message: string, requestId: string, key?: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${xmlEscape(code)}</Code><Message>${xmlEscape(message)}</Message>` +
    (key !== undefined ? `<Key>${xmlEscape(key)}</Key>` : '') +
    `<RequestId>${xmlEscape(requestId)}</RequestId></Error>`
  );
}

function sendS3Error(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  key?: string,
): FastifyReply {
  return reply
    .code(status)
    .header('Content-Type', 'application/xml')
    .header('Cache-Control', 'no-store')
    .send(s3ErrorXml(code, message, reply.request.id, key));
}

// A header value a client may sign into the URL (`response-content-disposition`); anything Node would
// refuse as a header falls back to our own.
const SAFE_HEADER_VALUE = /^[\x20-\x7e]{1,1024}$/;

const XmlError = {
  description: "S3's XML error document (AccessDenied, SignatureDoesNotMatch, NoSuchKey, …)",
  content: { 'application/xml': { schema: { type: 'string' } } },
};

/**
 * The embedded object store's S3-compatible download endpoint (CONTRACT §6): `GET /storage/<bucket>/<key>`
 * with a SigV4 presigned query, as made by `ObjectStorage.presignedGetUrl`. Public (the signature is the
 * credential); answers S3's XML errors. Registered only when the embedded store is in use: with S3
 * configured, presigned URLs point at S3 itself.
 */
export async function storageRoutes(app: App, deps: AppDeps) {
  const storage = deps.objectStorage;
  if (!(storage instanceof LocalObjectStorage)) return;

  app.get(
    `${EMBEDDED_ENDPOINT_PATH}/:bucket/*`,
    {
      schema: {
        tags: ['Storage'],
        summary: 'Download a stored object through a presigned URL (embedded S3-compatible endpoint)',
        description:
          'The address comes from a `presigned_url` field (for example an invoice attachment). It is an AWS ' +
          'Signature V4 query-signed URL, checked as S3 checks it: the signature covers the method, path, ' +
          'every query parameter and the Host header, and the URL stops working X-Amz-Expires seconds after ' +
          'X-Amz-Date. No API key is needed. Errors are S3 XML documents: 403 AccessDenied ("Request has ' +
          'expired"), 403 SignatureDoesNotMatch, 404 NoSuchKey.',
        security: [],
        params: Type.Object({
          bucket: Type.String({ description: 'The bucket (`remit` by default)' }),
          '*': Type.String({ description: 'The object key, percent-encoded; it may contain `/`' }),
        }),
        response: {
          200: {
            description: 'The object, with its content type and `Content-Disposition: attachment`',
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
          400: XmlError,
          403: XmlError,
          404: XmlError,
        },
      },
      config: { public: true },
    },
    async (request, reply) => {
      const result = await storage.verifyDownload({
        method: request.method,
        url: request.raw.url ?? request.url,
        headers: request.headers,
      });
      if (!result.ok) return sendS3Error(reply, result.status, result.code, result.message, result.key);
      const { object } = result;
      const signed = result.contentDisposition;
      return (
        reply
          .header('Content-Type', object.contentType)
          .header('Content-Length', object.size)
          .header(
            'Content-Disposition',
            signed && SAFE_HEADER_VALUE.test(signed)
              ? signed
              : contentDisposition(path.posix.basename(result.key)),
          )
          // Uploaded bytes are served from the API's own origin: never sniffed, never run as a page.
          .header('X-Content-Type-Options', 'nosniff')
          .header('Content-Security-Policy', "default-src 'none'; sandbox")
          .header('Cache-Control', 'private, max-age=0')
          .send(object.body)
      );
    },
  );
}
