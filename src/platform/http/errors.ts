/**
 * The closed set of error codes the service answers with. Every status ≥ 400 carries one of them in the
 * one error body (docs/errors.md lists them with their meaning).
 */
export const ERROR_CODES = {
  bad_request: 400,
  invalid_json: 400,
  invalid_parameter: 400,
  invalid_token: 400,
  unknown_parameter: 400,
  unauthorized: 401,
  invalid_credentials: 401,
  second_factor_missing: 401,
  invalid_signature: 401,
  forbidden: 403,
  not_a_member: 403,
  missing_scope: 403,
  csrf_failed: 403,
  second_factor_required: 403,
  not_an_approver: 403,
  initiator_cannot_approve: 403,
  session_required: 403,
  approval_limit_exceeded: 403,
  not_found: 404,
  route_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  already_exists: 409,
  already_resolved: 409,
  already_approved: 409,
  approval_expired: 409,
  approval_changed: 409,
  invalid_state: 409,
  run_claimed: 409,
  claim_mismatch: 409,
  idempotency_key_in_use: 409,
  sync_in_progress: 409,
  invalid_transition: 409,
  party_archived: 409,
  token_used: 409,
  token_expired: 410,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  validation_failed: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  storage_full: 507,
  bad_gateway: 502,
  service_unavailable: 503,
  gateway_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly statusCode: number;
  /** Sent as `Retry-After` (seconds) with the error (throttled sign-in attempts). */
  retryAfterS?: number;
  /** Machine-readable facts about the refusal, sent as `details` (a refused status move names the allowed ones). */
  details?: Record<string, unknown>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors?: FieldError[],
    statusCode?: number,
  ) {
    super(message);
    this.name = 'AppError';
    this.statusCode = statusCode ?? ERROR_CODES[code];
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
export const forbidden = (message: string) => new AppError('forbidden', message);
export const conflict = (message: string, code: ErrorCode = 'conflict') => new AppError(code, message);
export const validationFailed = (field: string, message: string) =>
  new AppError('validation_failed', message, [{ field, message }]);
export const badParameter = (field: string, message: string) =>
  new AppError('invalid_parameter', message, [{ field, message }]);
