import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorChain } from '../db/errors.ts';
import { AppError, type FieldError } from './errors.ts';
import type { ErrorBodyT } from './schemas.ts';

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

function fieldOf(issue: ValidationIssue, part: string | undefined): string {
  const path = (issue.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const missing = issue.params?.missingProperty;
  const extra = issue.params?.additionalProperty;
  const name = typeof missing === 'string' ? missing : typeof extra === 'string' ? extra : undefined;
  const full = [path, name].filter(Boolean).join('.');
  return full || part || 'body';
}

function describe(issue: ValidationIssue): string {
  if (typeof issue.params?.additionalProperty === 'string') return 'is not an allowed field';
  if (typeof issue.params?.missingProperty === 'string') return 'is required';
  const allowed = issue.params?.allowedValues;
  if (Array.isArray(allowed)) return `must be one of: ${allowed.join(', ')}`;
  return issue.message ?? 'is invalid';
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const key = `${e.field}\u0000${e.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export function toErrorBody(error: AppError): ErrorBodyT {
  return {
    status: 'error',
    status_code: error.statusCode,
    message: error.message,
    code: error.code,
    ...(error.errors && error.errors.length > 0 ? { errors: error.errors } : {}),
  };
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

function isConnectionFailure(error: unknown): boolean {
  for (const { message, code } of errorChain(error)) {
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET') return true;
    if (typeof message === 'string' && CONNECTION_FAILURES.some((m) => message.startsWith(m))) return true;
  }
  return false;
}

/** Maps whatever was thrown to the one error body; internal details never leave the process. */
export function normalizeError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const e = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (e.validation) {
    const part = e.validationContext;
    const errors = dedupe(
      e.validation.map((issue) => ({ field: fieldOf(issue, part), message: describe(issue) })),
    );
    const summary = errors.map((x) => `${x.field} ${x.message}`).join('; ');
    // A malformed query or path parameter is the caller's URL: 400. A body that fails validation: 422.
    return part === 'body'
      ? new AppError('validation_failed', `Invalid request body: ${summary}`, errors)
      : new AppError('invalid_parameter', `Invalid ${part ?? 'request'} parameter: ${summary}`, errors);
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_json', 'The request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'payload_too_large',
        'The request body is larger than this route allows (1 MB for most JSON bodies)',
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'Unsupported Content-Type; send application/json');
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

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const appError = normalizeError(error);
    if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: appError.code, status: appError.statusCode }, appError.message);
    return reply.code(appError.statusCode).send(toErrorBody(appError));
  });
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    return reply
      .code(404)
      .send(
        toErrorBody(
          new AppError('route_not_found', `No route ${request.method} ${request.url.split('?')[0]}`),
        ),
      );
  });
}
