import { ALGORITHM, deriveSigningKey, hmac, signaturesEqual, type SigV4Credentials } from './sigv4.ts';
import { assertValidKey } from './storage.ts';

/**
 * Browser-based uploads to S3 (POST Object with a SigV4-signed POST policy), checked the way S3 checks
 * them. The embedded store's `POST /storage/<bucket>` endpoint uses this to accept the uploads that the
 * AWS SDK's `createPresignedPost` signed for it, so a client cannot tell it from S3.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-authentication-HTTPPOST.html
 */

/** The largest object one POST may create (S3's limit); a policy without content-length-range gets it. */
export const MAX_POST_OBJECT_BYTES = 5 * 1024 ** 3;
/** S3 refuses POST forms whose fields before the file add up to more than this. */
export const MAX_POST_PRE_DATA_BYTES = 20 * 1024;

/** Fields S3 never requires a policy condition for (the `x-ignore-` prefix is also exempt). */
const UNCONDITIONED = new Set(['file', 'policy', 'x-amz-signature']);

export type PostErrorStatus = 400 | 403 | 404 | 412 | 501;

export interface PostError {
  ok: false;
  status: PostErrorStatus;
  code: string;
  message: string;
}

export interface AcceptedPost {
  ok: true;
  key: string;
  /** The `Content-Type` form field, stored as the object's type (S3's default when absent). */
  contentType: string;
  /** The policy's content-length-range, inclusive; the file's size is checked while it streams. */
  minBytes: number;
  maxBytes: number;
  successStatus: 200 | 201 | 204;
  expiresAt: Date;
}

export type PostVerifyResult = AcceptedPost | PostError;

export interface PostVerifyOptions {
  credentials: SigV4Credentials;
  region: string;
  /** The bucket named by the request's path (it must be ours; the caller checks that). */
  bucket: string;
  now?: Date;
}

const error = (status: PostErrorStatus, code: string, message: string): PostError => ({
  ok: false,
  status,
  code,
  message,
});
const invalidArgument = (message: string) => error(400, 'InvalidArgument', message);
const invalidPolicy = (message: string) => error(400, 'InvalidPolicyDocument', `Invalid Policy: ${message}`);
const policyRefused = (message: string) =>
  error(403, 'AccessDenied', `Invalid according to Policy: ${message}`);

/** `20260105T093000Z` → that instant, or null. */
function parseAmzDate(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return null;
  const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}`;
  const date = new Date(`${iso}Z`);
  // Round-tripping rules out dates that do not exist (2026-02-30).
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(iso) ? date : null;
}

type Condition =
  | { kind: 'eq'; field: string; value: string; raw: unknown }
  | { kind: 'starts-with'; field: string; value: string; raw: unknown }
  | { kind: 'range'; min: number; max: number; raw: unknown };

/** One entry of the policy's `conditions`, or a description of what is wrong with it. */
function parseCondition(raw: unknown): Condition | string {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const entries = Object.entries(raw as Record<string, unknown>);
    if (entries.length !== 1 || typeof entries[0]![1] !== 'string') {
      return 'an object condition must have exactly one string member';
    }
    const [field, value] = entries[0] as [string, string];
    return { kind: 'eq', field: field.toLowerCase(), value, raw };
  }
  if (!Array.isArray(raw) || raw.length !== 3) return 'a condition must be an object or a 3-element array';
  const [op, a, b] = raw as [unknown, unknown, unknown];
  const opName = typeof op === 'string' ? op.toLowerCase() : '';
  if (opName === 'content-length-range') {
    const min = Number(a);
    const max = Number(b);
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || max < min) {
      return 'content-length-range needs two whole numbers, min <= max';
    }
    return { kind: 'range', min, max, raw };
  }
  if (opName !== 'eq' && opName !== 'starts-with') return `unknown condition operator ${JSON.stringify(op)}`;
  if (typeof a !== 'string' || !a.startsWith('$') || a.length < 2 || typeof b !== 'string') {
    return `the ${opName} condition needs "$field" and a string`;
  }
  return { kind: opName, field: a.slice(1).toLowerCase(), value: b, raw };
}

/**
 * Checks a POST form's fields (names lower-cased, as S3 matches them case-insensitively) before a byte
 * of the file is read: the SigV4 credential and the signature over the base64 policy (constant-time),
 * the policy's expiry, every condition, and that every field is covered by a condition. What only the
 * file can tell (its size against content-length-range) is returned for the caller to enforce while
 * it streams.
 */
export function verifyPostForm(
  fields: ReadonlyMap<string, string>,
  options: PostVerifyOptions,
): PostVerifyResult {
  const now = options.now ?? new Date();
  const policyB64 = fields.get('policy');
  if (policyB64 === undefined) return error(403, 'AccessDenied', 'Access Denied');
  const key = fields.get('key');
  if (key === undefined) {
    return invalidArgument(
      "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.",
    );
  }
  if (fields.get('x-amz-algorithm') !== ALGORITHM) {
    return invalidArgument(`Only the ${ALGORITHM} algorithm is supported (x-amz-algorithm)`);
  }
  const signature = fields.get('x-amz-signature');
  if (signature === undefined) {
    return invalidArgument("Bucket POST must contain a field named 'x-amz-signature'");
  }
  const amzDate = fields.get('x-amz-date') ?? '';
  if (!parseAmzDate(amzDate)) {
    return invalidArgument("x-amz-date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  }
  const scope = (fields.get('x-amz-credential') ?? '').split('/');
  if (scope.length !== 5 || scope[4] !== 'aws4_request' || scope[3] !== 's3') {
    return invalidArgument('x-amz-credential must be <key id>/<date>/<region>/s3/aws4_request');
  }
  const [accessKeyId, scopeDate, scopeRegion] = scope as [string, string, string, string, string];
  if (scopeDate !== amzDate.slice(0, 8)) {
    return invalidArgument('The date in x-amz-credential is not the date of x-amz-date');
  }
  if (scopeRegion !== options.region) {
    return invalidArgument(`The region "${scopeRegion}" is wrong; expecting "${options.region}"`);
  }
  if (accessKeyId !== options.credentials.accessKeyId) {
    return error(
      403,
      'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.',
    );
  }
  const signingKey = deriveSigningKey(options.credentials.secretAccessKey, scopeDate, scopeRegion, 's3');
  const expected = hmac(signingKey, policyB64).toString('hex');
  if (!signaturesEqual(expected, signature)) {
    return error(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  }
  // The embedded store's credentials are long-lived: it never issues session tokens, so one can only
  // belong to someone else's credentials.
  if (fields.has('x-amz-security-token')) {
    return error(400, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
  }

  let policy: unknown;
  try {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(policyB64)) throw new Error('not base64');
    policy = JSON.parse(Buffer.from(policyB64, 'base64').toString('utf8'));
  } catch {
    return invalidPolicy('Invalid JSON.');
  }
  const { expiration, conditions } = (policy ?? {}) as { expiration?: unknown; conditions?: unknown };
  if (typeof expiration !== 'string') return invalidPolicy('Policy missing expiration.');
  const expiresAt = new Date(expiration);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(expiration) || Number.isNaN(expiresAt.getTime())) {
    return invalidPolicy(`Invalid 'expiration' value: '${expiration}'`);
  }
  if (!Array.isArray(conditions)) return invalidPolicy('Policy missing conditions.');
  if (now.getTime() > expiresAt.getTime())
    return error(403, 'AccessDenied', 'Invalid according to Policy: Policy expired.');

  const covered = new Set<string>();
  let range: { min: number; max: number } | undefined;
  for (const raw of conditions) {
    const condition = parseCondition(raw);
    if (typeof condition === 'string') return invalidPolicy(condition);
    if (condition.kind === 'range') {
      range = { min: condition.min, max: condition.max };
      continue;
    }
    covered.add(condition.field);
    // The bucket is the one the request is addressed to, and the form's own if it names one.
    const values =
      condition.field === 'bucket'
        ? [options.bucket, ...(fields.has('bucket') ? [fields.get('bucket')!] : [])]
        : [fields.get(condition.field) ?? ''];
    const holds = values.every((v) =>
      condition.kind === 'eq' ? v === condition.value : v.startsWith(condition.value),
    );
    if (!holds) return policyRefused(`Policy Condition failed: ${JSON.stringify(condition.raw)}`);
  }
  const extra = [...fields.keys()].filter(
    (name) => !UNCONDITIONED.has(name) && !name.startsWith('x-ignore-') && !covered.has(name),
  );
  if (extra.length > 0) return policyRefused(`Extra input fields: ${extra.join(', ')}`);

  try {
    assertValidKey(key);
  } catch {
    return invalidArgument('The object key is not valid');
  }
  if (fields.has('success_action_redirect') || fields.has('redirect')) {
    return error(501, 'NotImplemented', 'success_action_redirect is not supported by the embedded store');
  }
  const statusField = fields.get('success_action_status');
  const successStatus = statusField === '200' ? 200 : statusField === '201' ? 201 : 204;
  return {
    ok: true,
    key,
    contentType: fields.get('content-type') ?? 'binary/octet-stream',
    minBytes: range?.min ?? 0,
    maxBytes: Math.min(range?.max ?? MAX_POST_OBJECT_BYTES, MAX_POST_OBJECT_BYTES),
    successStatus,
    expiresAt,
  };
}
