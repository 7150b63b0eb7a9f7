import crypto from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorChain } from '../db/errors.ts';
import { AppError } from './errors.ts';
import type { ErrorBodyT } from './schemas.ts';
import { describeValidation } from './validation.ts';
import type { ErrorObject } from 'ajv';

/** The one error body; `request_id` is the request's X-Request-Id, to quote when reporting a problem. */
export function toErrorBody(error: AppError, requestId: string): ErrorBodyT {
  return {
    status: 'error',
    status_code: error.statusCode,
    message: error.message,
    code: error.code,
    request_id: requestId,
    ...(error.errors && error.errors.length > 0 ? { errors: error.errors } : {}),
    ...(error.details ? { details: error.details } : {}),
  };
}

/** Names that look like a mistyped parameter: a prefix of each other, or two edits apart. */
function closest(name: string, candidates: string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0]!;
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const current = row[j]!;
        row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
        previous = current;
      }
    }
    return row[b.length]!;
  };
  const lower = name.toLowerCase();
  return candidates.find(
    (c) => c.startsWith(lower) || lower.startsWith(c) || (lower.length > 2 && distance(lower, c) <= 2),
  );
}

function validationError(issues: ErrorObject[], part: string | undefined, allowedQuery: string[]): AppError {
  const described = describeValidation(issues, part);
  const errors = described.map(({ field, message }) => ({ field, message }));
  const unknown = described.filter((d) => d.unknownParameter !== undefined);
  if (unknown.length > 0) {
    const names = unknown.map((u) => u.unknownParameter!);
    const hints = names
      .map((n) => [n, closest(n, allowedQuery)] as const)
      .filter(([, c]) => c !== undefined)
      .map(([n, c]) => (names.length === 1 ? c! : `${c} for ${n}`));
    return new AppError(
      'unknown_parameter',
      `Unknown query parameter${names.length > 1 ? 's' : ''}: ${names.join(', ')}` +
        (hints.length > 0 ? ` (did you mean ${hints.join(', ')}?)` : '') +
        (allowedQuery.length > 0 ? `. This route accepts: ${allowedQuery.join(', ')}` : ''),
      errors,
    );
  }
  const summary = errors.map((x) => `${x.field} ${x.message}`).join('; ');
  // A malformed query or path parameter is the caller's URL: 400. A body that fails validation: 422.
  return part === 'body'
    ? new AppError('validation_failed', `Invalid request body: ${summary}`, errors)
    : new AppError('invalid_parameter', `Invalid ${part ?? 'request'} parameter: ${summary}`, errors);
}

/**
 * The PostgreSQL SQLSTATE of a driver error, also when it comes wrapped: drizzle's query builder throws a
 * DrizzleQueryError that keeps the driver's error (and its `code`) only as `cause`, so reading `code` on
 * the thrown error alone turned a statement timeout in any drizzle query into a 500 instead of a 503.
 */
function sqlStateOf(error: unknown): unknown {
  for (const e of errorChain(error)) if (e.code !== undefined) return e.code;
  return undefined;
}

const CONNECTION_FAILURES = [
  'timeout exceeded when trying to connect',
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error',
];

function isDiskFull(error: unknown): boolean {
  for (const { code } of errorChain(error)) if (code === 'ENOSPC' || code === 'storage_full') return true;
  return false;
}

function isConnectionFailure(error: unknown): boolean {
  for (const { message, code } of errorChain(error)) {
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET') return true;
    if (typeof message === 'string' && CONNECTION_FAILURES.some((m) => message.startsWith(m))) return true;
  }
  return false;
}

export interface ErrorContext {
  /** The route's body limit in bytes, for the 413 message. */
  bodyLimit?: number | undefined;
  /** The query parameters the route accepts, for "did you mean". */
  allowedQuery?: string[];
}

function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${+(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

/** Maps whatever was thrown to the one error body; internal details never leave the process. */
export function normalizeError(error: unknown, context: ErrorContext = {}): AppError {
  if (error instanceof AppError) return error;
  const e = error as FastifyError & { validation?: ErrorObject[]; validationContext?: string };
  if (e.validation) return validationError(e.validation, e.validationContext, context.allowedQuery ?? []);
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_json', 'The request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'payload_too_large',
        context.bodyLimit
          ? `The request body is larger than this route allows (${sizeText(context.bodyLimit)}; see docs/errors.md)`
          : 'The request body is larger than this route allows (see docs/errors.md)',
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('uri_too_long', 'A path parameter is longer than 100 characters');
    case 'FST_ERR_BAD_URL':
      return new AppError('bad_request', 'The request path is not a valid URL');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(
        'unsupported_media_type',
        'Unsupported Content-Type; send application/json (multipart/form-data for file uploads)',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('bad_request', 'Content-Length does not match the body');
    default:
      break;
  }
  // PostgreSQL: statement_timeout / lock_timeout / too many connections / server shutting down.
  const pgCode = sqlStateOf(error);
  if (pgCode === '57014' || pgCode === '55P03' || pgCode === '53300' || pgCode === '57P01') {
    return new AppError('service_unavailable', 'The database did not answer in time; try again');
  }
  // The disk under the database or the object store is full: PostgreSQL's disk_full, or ENOSPC.
  if (pgCode === '53100' || isDiskFull(error)) {
    return new AppError('storage_full', 'The server has no disk space left for this write; reads still work');
  }
  // The database connection itself failed (pool exhausted, backend terminated, server unreachable).
  if (isConnectionFailure(error)) {
    return new AppError('service_unavailable', 'The database is unavailable; try again');
  }
  if (e instanceof SyntaxError && (e as { statusCode?: number }).statusCode === 400) {
    return new AppError('invalid_json', 'The request body is not valid JSON');
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    if (status === 413) return new AppError('payload_too_large', 'The request body is larger than allowed');
    if (status === 415) return new AppError('unsupported_media_type', e.message);
    if (status === 404) return new AppError('not_found', 'Not found');
    return new AppError('bad_request', e.message || 'Bad request', undefined, status);
  }
  return new AppError('internal_error', 'Internal server error');
}

function errorContext(request: FastifyRequest): ErrorContext {
  const options = request.routeOptions;
  const querystring = options?.schema?.querystring as { properties?: Record<string, unknown> } | undefined;
  return {
    bodyLimit: options?.bodyLimit,
    allowedQuery: Object.keys(querystring?.properties ?? {}),
  };
}

function send(request: FastifyRequest, reply: FastifyReply, error: AppError) {
  reply.header('X-Request-Id', request.id);
  return reply.code(error.statusCode).send(toErrorBody(error, request.id));
}

/** The path patterns of every route, to tell "no such route" (404) from "not with this method" (405). */
function methodsByPath(app: FastifyInstance) {
  let compiled: { pattern: RegExp; method: string }[] | undefined;
  return (path: string): string[] => {
    compiled ??= app.routeList.map(({ method, url }) => ({
      method,
      pattern: new RegExp(
        `^${url
          .split('/')
          .map((part) =>
            part === '*'
              ? '.*'
              : part.startsWith(':')
                ? '[^/]+'
                : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
          )
          .join('/')}/?$`,
      ),
    }));
    return [...new Set(compiled.filter((r) => r.pattern.test(path)).map((r) => r.method))].sort();
  };
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const appError = normalizeError(error, errorContext(request));
    if (appError.retryAfterS !== undefined) reply.header('Retry-After', appError.retryAfterS);
    if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: appError.code, status: appError.statusCode }, appError.message);
    return send(request, reply, appError);
  });
  const allowedMethods = methodsByPath(app);
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    const allowed = allowedMethods(path);
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return send(
        request,
        reply,
        new AppError(
          'method_not_allowed',
          `${request.method} is not allowed here; use ${allowed.join(', ')}`,
        ),
      );
    }
    return send(request, reply, new AppError('route_not_found', `No route ${request.method} ${path}`));
  });
}

/** Fastify's router errors (a path parameter over 100 characters, a malformed URL) in the one body. */
export function frameworkErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  void send(request, reply, normalizeError(error));
}

/**
 * Errors Node's HTTP parser raises before there is a request (headers too large, a malformed request
 * line): answered on the raw socket in the one error body, then closed as Node would.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const appError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('headers_too_large', 'The request headers are larger than the server accepts (16 KiB)')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout', 'The request was not received in time')
        : new AppError('bad_request', 'The request is not valid HTTP');
  const requestId = crypto.randomUUID();
  const body = JSON.stringify(toErrorBody(appError, requestId));
  if (!socket.writable) {
    socket.destroy(error);
    return;
  }
  socket.end(
    `HTTP/1.1 ${appError.statusCode} ${STATUS_CODES[appError.statusCode] ?? 'Error'}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n\r\n` +
      body,
  );
}
