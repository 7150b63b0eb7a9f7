import type { components } from './schema.ts';

/** Every `code` the service answers with (docs/errors.md), from the document's `ErrorBody`. */
export type RemitErrorCode = components['schemas']['ErrorBody']['code'];

/** One problem of a request that failed validation: a parameter, a dotted body path, or `body`. */
export interface RemitFieldError {
  field: string;
  message: string;
}

/**
 * A response that is not 2xx, after any retries. `code` is the stable value to branch on;
 * `unexpected_response` when the body is not Remit's error body (a proxy's own error page, say), whose
 * text is then in `body`.
 */
export class RemitApiError extends Error {
  override readonly name = 'RemitApiError';
  readonly status: number;
  readonly code: RemitErrorCode | 'unexpected_response';
  /** Present for validation problems (`validation_failed`, `invalid_parameter`, …); empty otherwise. */
  readonly errors: RemitFieldError[];
  /** The request's `X-Request-Id`: quote it when reporting a problem (the server log carries it). */
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait (`Retry-After`), when it sent one. */
  readonly retryAfterS: number | undefined;
  readonly method: string;
  readonly url: string;
  /** The parsed error body (or its text when it is not JSON). */
  readonly body: unknown;

  constructor(init: {
    status: number;
    code: RemitErrorCode | 'unexpected_response';
    message: string;
    errors?: RemitFieldError[] | undefined;
    requestId?: string | undefined;
    retryAfterS?: number | undefined;
    method: string;
    url: string;
    body?: unknown;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.errors = init.errors ?? [];
    this.requestId = init.requestId;
    this.retryAfterS = init.retryAfterS;
    this.method = init.method;
    this.url = init.url;
    this.body = init.body;
  }

  /** From a failed response and its body as openapi-fetch parsed it (JSON when it could). */
  static fromResponse(response: Response, body: unknown, method: string): RemitApiError {
    const retryAfter = response.headers.get('retry-after');
    const common = {
      status: response.status,
      requestId: response.headers.get('x-request-id') ?? undefined,
      retryAfterS: retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined,
      method,
      url: response.url,
      body,
    };
    if (isErrorBody(body)) {
      return new RemitApiError({
        ...common,
        code: body.code,
        message: body.message,
        errors: body.errors,
        requestId: body.request_id ?? common.requestId,
      });
    }
    return new RemitApiError({
      ...common,
      code: 'unexpected_response',
      message: `HTTP ${response.status} ${response.statusText}`.trim(),
    });
  }
}

function isErrorBody(body: unknown): body is components['schemas']['ErrorBody'] {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  return b.status === 'error' && typeof b.code === 'string' && typeof b.message === 'string';
}
