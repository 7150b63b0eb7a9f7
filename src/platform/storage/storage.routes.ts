import path from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { App, AppDeps } from '../http/types.ts';
import { LocalObjectStorage } from './local-storage.ts';
import { receivePostUpload } from './post-upload.ts';
import { parseRange } from './byte-range.ts';
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

export function sendS3Error(
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
 * The embedded object store's S3-compatible endpoint (CONTRACT §6): downloads, `GET /storage/<bucket>/<key>`
 * with a SigV4 presigned query, as made by `ObjectStorage.presignedGetUrl`; and uploads, `POST
 * /storage/<bucket>` with a presigned POST form (`ObjectStorage.presignedPost`). Public (the signature is
 * the credential); answers S3's XML errors. Registered only when the embedded store is in use: with S3
 * configured, presigned URLs and forms point at S3 itself.
 */
export async function storageRoutes(app: App, deps: AppDeps) {
  const storage = deps.objectStorage;
  if (!(storage instanceof LocalObjectStorage)) return;

  app.get(
    `${EMBEDDED_ENDPOINT_PATH}/:bucket/*`,
    {
      schema: {
        operationId: 'downloadStorageObject',
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
          206: {
            description:
              'The requested byte range (`Range: bytes=a-b`, `bytes=a-`, `bytes=-n`), with `Content-Range`',
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
          400: XmlError,
          403: XmlError,
          404: XmlError,
          416: XmlError,
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
      let { object } = result;
      const signed = result.contentDisposition;
      const header = request.headers.range;
      const range = parseRange(Array.isArray(header) ? header.join(',') : header, object.size);
      reply.header('Accept-Ranges', 'bytes');
      if (range.kind === 'unsatisfiable') {
        object.body.destroy();
        reply.header('Content-Range', `bytes */${object.size}`);
        return sendS3Error(reply, 416, 'InvalidRange', 'The requested range is not satisfiable', result.key);
      }
      if (range.kind === 'partial') {
        // Reopened for the range: the signature was checked on the same key a moment ago.
        object.body.destroy();
        const part = await storage.getObject(result.key, range);
        if (!part)
          return sendS3Error(reply, 404, 'NoSuchKey', 'The specified key does not exist.', result.key);
        object = part;
        reply.code(206).header('Content-Range', `bytes ${range.start}-${range.end}/${part.size}`);
      }
      const length = range.kind === 'partial' ? range.end - range.start + 1 : object.size;
      return (
        reply
          .header('Content-Type', object.contentType)
          .header('Content-Length', length)
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

  await uploadRoute(app, storage);
}

/**
 * The embedded store's S3-compatible upload endpoint: `POST /storage/<bucket>`, multipart/form-data
 * with the fields of a presigned POST (`ObjectStorage.presignedPost`) and the file last, checked as S3
 * checks it (`post-upload.ts`, `post-policy.ts`). Public (the signed policy is the credential), not
 * rate limited, and answers S3's XML errors, never the API's JSON body.
 */
async function uploadRoute(app: App, storage: LocalObjectStorage) {
  // What every success answer carries, as S3's does (documentation only: the handler sets them).
  const storedHeaders = {
    Location: { type: 'string', format: 'uri', description: 'The stored object’s address' },
    ETag: { type: 'string', description: 'The stored object’s entity tag (its MD5, quoted)' },
  };
  // multipart/form-data is understood here in a scope of its own, as for the API's upload routes.
  await app.register(async (scope: App) => {
    await scope.register(multipart, { throwFileSizeLimit: false });
    scope.post(
      `${EMBEDDED_ENDPOINT_PATH}/:bucket`,
      {
        schema: {
          operationId: 'uploadStorageObject',
          tags: ['Storage'],
          summary: 'Upload an object with a presigned POST form (embedded S3-compatible endpoint)',
          description:
            'The address and fields come from a `presigned_post` (for example `POST /api/knowledge/presign`). ' +
            'Send multipart/form-data with every member of `presigned_post.fields` as a form field, then the ' +
            'file last as `file`, as to S3. The SigV4 signature over the policy, its expiry and every condition ' +
            '(bucket, key, Content-Type, content-length-range, credential, date) are checked before the file is ' +
            'read, and the size while it streams; nothing is stored unless all hold. No API key is needed. ' +
            '204 on success (or `success_action_status` 200/201). Errors are S3 XML documents: 403 ' +
            'SignatureDoesNotMatch, 403 AccessDenied ("Invalid according to Policy: …"), 400 EntityTooLarge, ' +
            '400 EntityTooSmall, 400 InvalidArgument, 400 MalformedPOSTRequest, 412 PreconditionFailed.',
          security: [],
          params: Type.Object({ bucket: Type.String({ description: 'The bucket (`remit` by default)' }) }),
          // Documents the form; the handler streams it itself (see preValidation).
          body: {
            content: {
              'multipart/form-data': {
                schema: Type.Object(
                  {
                    key: Type.Optional(Type.String()),
                    'Content-Type': Type.Optional(Type.String()),
                    Policy: Type.Optional(Type.String({ description: 'base64 JSON POST policy' })),
                    'X-Amz-Algorithm': Type.Optional(Type.String()),
                    'X-Amz-Credential': Type.Optional(Type.String()),
                    'X-Amz-Date': Type.Optional(Type.String()),
                    'X-Amz-Signature': Type.Optional(Type.String()),
                    file: Type.Optional(
                      Type.String({ contentMediaType: 'application/octet-stream', description: 'last' }),
                    ),
                  },
                  { additionalProperties: Type.String() },
                ),
              },
            },
          },
          response: {
            200: { description: 'Stored (success_action_status=200)', type: 'null', headers: storedHeaders },
            201: {
              description: 'Stored (success_action_status=201): an S3 PostResponse XML document',
              headers: storedHeaders,
              content: { 'application/xml': { schema: { type: 'string' } } },
            },
            204: { description: 'Stored; ETag and Location headers', type: 'null', headers: storedHeaders },
            400: XmlError,
            403: XmlError,
            404: XmlError,
            412: XmlError,
            500: XmlError,
            501: XmlError,
          },
        },
        config: { public: true },
        // The form is read by the handler as a stream (the file is never buffered); validation sees none.
        preValidation: async (request) => {
          request.body = {};
        },
        // Whatever fails before the handler (an unsupported Content-Type, a broken body) answers as S3.
        errorHandler: (error, request, reply) => {
          const status = (error as { statusCode?: number }).statusCode ?? 500;
          if (status >= 500) request.log.error({ err: error }, 'storage upload failed');
          const [code, s3Status, message] =
            status === 415
              ? ['PreconditionFailed', 412, 'Bucket POST must be of the enclosure-type multipart/form-data']
              : status >= 400 && status < 500
                ? [
                    'MalformedPOSTRequest',
                    400,
                    'The body of your POST request is not well-formed multipart/form-data.',
                  ]
                : ['InternalError', 500, 'We encountered an internal error. Please try again.'];
          void sendS3Error(reply, s3Status, code, message);
        },
      },
      async (request, reply) => {
        const outcome = await receivePostUpload(storage, request, request.params.bucket);
        if (!outcome.ok) {
          // The rest of the body is not read: the connection ends with the answer (as S3 does).
          if (outcome.closeConnection) reply.header('Connection', 'close');
          return sendS3Error(reply, outcome.status, outcome.code, outcome.message);
        }
        const location = `${storage.endpoint}/${storage.bucket}/${outcome.key
          .split('/')
          .map(encodeURIComponent)
          .join('/')}`;
        reply.header('ETag', `"${outcome.etag}"`).header('Location', location);
        if (outcome.successStatus === 201) {
          return reply
            .code(201)
            .header('Content-Type', 'application/xml')
            .send(
              '<?xml version="1.0" encoding="UTF-8"?>\n' +
                `<PostResponse><Location>${xmlEscape(location)}</Location><Bucket>${xmlEscape(storage.bucket)}</Bucket>` +
                `<Key>${xmlEscape(outcome.key)}</Key><ETag>"${outcome.etag}"</ETag></PostResponse>`,
            );
        }
        // No body on success (S3's default answer); the reply is untyped so that no schema serializes one.
        return (reply as FastifyReply).code(outcome.successStatus).send();
      },
    );
  });
}
