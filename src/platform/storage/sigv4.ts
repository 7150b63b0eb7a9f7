import crypto from 'node:crypto';

/**
 * AWS Signature Version 4, query-string form (presigned URLs), checked the way S3 checks it. The embedded
 * store's endpoint verifies the URLs the AWS SDK's presigner made for it; nothing here is specific to
 * GET, so the embedded presigned POST endpoint can reuse the key derivation and HMAC helpers.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
 */

export const ALGORITHM = 'AWS4-HMAC-SHA256';
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
/** S3 refuses presigned URLs valid for longer than 7 days. */
export const MAX_EXPIRES_S = 604_800;
/** How far in the future X-Amz-Date may be (clock skew between signer and verifier). */
export const MAX_CLOCK_SKEW_S = 900;

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export const hmac = (key: crypto.BinaryLike, data: string): Buffer =>
  crypto.createHmac('sha256', key).update(data, 'utf8').digest();

export const sha256Hex = (data: string): string =>
  crypto.createHash('sha256').update(data, 'utf8').digest('hex');

/** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"). */
export function deriveSigningKey(secret: string, date: string, region: string, service: string): Buffer {
  const kDate = hmac(`AWS4${secret}`, date);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  return hmac(kService, 'aws4_request');
}

/** RFC 3986 percent-encoding of one query name or value, as SigV4 canonicalises them. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Constant-time comparison of two lowercase hex signatures. */
export function signaturesEqual(expectedHex: string, givenHex: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(givenHex)) return false;
  const expected = Buffer.from(expectedHex, 'hex');
  const given = Buffer.from(givenHex, 'hex');
  return expected.length === given.length && crypto.timingSafeEqual(expected, given);
}

export type S3ErrorCode =
  'AccessDenied' | 'AuthorizationQueryParametersError' | 'InvalidAccessKeyId' | 'SignatureDoesNotMatch';

export interface PresignedRequest {
  method: string;
  /** The request target exactly as received: path and query, still percent-encoded. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface VerifyOptions {
  credentials: SigV4Credentials;
  region: string;
  service?: string;
  now?: Date;
}

export type VerifyResult =
  | {
      ok: true;
      /** The path as received (percent-encoded), which the signature covers. */
      rawPath: string;
      /** Every query parameter, decoded (all of them are covered by the signature). */
      params: Map<string, string>;
      expiresAt: Date;
    }
  | { ok: false; status: 400 | 403; code: S3ErrorCode; message: string };

const REQUIRED = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
] as const;

const fail = (status: 400 | 403, code: S3ErrorCode, message: string): VerifyResult => ({
  ok: false,
  status,
  code,
  message,
});
const queryError = (message: string) => fail(400, 'AuthorizationQueryParametersError', message);

/** `20260105T093000Z` → that instant, or null when it is not a real ISO 8601 basic date-time. */
function parseAmzDate(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  const roundTrips =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    date.getUTCHours() === h &&
    date.getUTCMinutes() === mi &&
    date.getUTCSeconds() === s;
  return roundTrips ? date : null;
}

function headerValue(headers: PresignedRequest['headers'], name: string): string | undefined {
  const raw = headers[name];
  if (raw === undefined) return undefined;
  const joined = Array.isArray(raw) ? raw.join(',') : raw;
  return joined.trim().replace(/\s+/g, ' ');
}

/**
 * Checks a presigned request: the parameters' form, the credential scope (our key id, our region, `s3`,
 * the X-Amz-Date day), the signature over the canonical request (method, path as received, sorted
 * canonical query without X-Amz-Signature, the signed headers, UNSIGNED-PAYLOAD), then the validity
 * window. Every failure answers as S3 would: 400 for a malformed query, 403 otherwise.
 */
export function verifyPresignedRequest(request: PresignedRequest, options: VerifyOptions): VerifyResult {
  const service = options.service ?? 's3';
  const now = options.now ?? new Date();
  const q = request.url.indexOf('?');
  const rawPath = q === -1 ? request.url : request.url.slice(0, q);
  const rawQuery = q === -1 ? '' : request.url.slice(q + 1);

  // Decode every parameter once; keep the pairs for the canonical query.
  const pairs: [string, string][] = [];
  for (const piece of rawQuery.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    try {
      const name = decodeURIComponent(eq === -1 ? piece : piece.slice(0, eq));
      const value = eq === -1 ? '' : decodeURIComponent(piece.slice(eq + 1));
      pairs.push([name, value]);
    } catch {
      return queryError('The query string is not correctly percent-encoded');
    }
  }
  if (!pairs.some(([name]) => name.startsWith('X-Amz-'))) {
    return fail(403, 'AccessDenied', 'Access Denied');
  }
  const params = new Map<string, string>();
  for (const [name, value] of pairs) {
    if (params.has(name) && name.toLowerCase().startsWith('x-amz-')) {
      return queryError(`The ${name} parameter is given more than once`);
    }
    params.set(name, value);
  }
  const missing = REQUIRED.filter((name) => !params.has(name));
  if (missing.length > 0) {
    return queryError(
      `Query-string authentication version 4 requires the ${REQUIRED.join(', ')} parameters (missing: ${missing.join(', ')})`,
    );
  }
  const get = (name: (typeof REQUIRED)[number]) => params.get(name)!;

  if (get('X-Amz-Algorithm') !== ALGORITHM) {
    return queryError(`X-Amz-Algorithm only supports "${ALGORITHM}"`);
  }
  const amzDate = get('X-Amz-Date');
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt) return queryError("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  const expiresRaw = get('X-Amz-Expires');
  if (!/^\d{1,7}$/.test(expiresRaw)) return queryError('X-Amz-Expires should be a number');
  const expires = Number(expiresRaw);
  if (expires < 1 || expires > MAX_EXPIRES_S) {
    return queryError(`X-Amz-Expires must be between 1 and ${MAX_EXPIRES_S} seconds (7 days)`);
  }

  const scopeParts = get('X-Amz-Credential').split('/');
  if (scopeParts.length !== 5) {
    return queryError(
      'Error parsing the X-Amz-Credential parameter; it must be <key id>/<date>/<region>/<service>/aws4_request',
    );
  }
  const [accessKeyId, scopeDate, scopeRegion, scopeService, terminator] = scopeParts as [
    string,
    string,
    string,
    string,
    string,
  ];
  if (scopeDate !== amzDate.slice(0, 8)) {
    return queryError('Invalid credential date: it is not the same as X-Amz-Date');
  }
  if (scopeRegion !== options.region) {
    return queryError(`The region "${scopeRegion}" is wrong; expecting "${options.region}"`);
  }
  if (scopeService !== service || terminator !== 'aws4_request') {
    return queryError(`The credential scope must end in /${service}/aws4_request`);
  }
  if (accessKeyId !== options.credentials.accessKeyId) {
    return fail(403, 'InvalidAccessKeyId', 'The access key id you provided does not exist in our records');
  }

  const signedHeaders = get('X-Amz-SignedHeaders');
  const headerNames = signedHeaders.split(';');
  const wellFormed =
    headerNames.every((h) => /^[a-z0-9-]+$/.test(h)) &&
    headerNames.every((h, i) => i === 0 || headerNames[i - 1]! < h);
  if (!wellFormed)
    return queryError('X-Amz-SignedHeaders must be lowercase header names, sorted, separated by ";"');
  if (!headerNames.includes('host')) return queryError('X-Amz-SignedHeaders must include host');

  const canonicalQuery = pairs
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonicalHeaders = headerNames
    .map((name) => `${name}:${headerValue(request.headers, name) ?? ''}\n`)
    .join('');
  const canonicalRequest = [
    request.method.toUpperCase(),
    rawPath,
    canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    UNSIGNED_PAYLOAD,
  ].join('\n');
  const scope = `${scopeDate}/${scopeRegion}/${scopeService}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = deriveSigningKey(options.credentials.secretAccessKey, scopeDate, scopeRegion, service);
  const expected = hmac(signingKey, stringToSign).toString('hex');
  if (!signaturesEqual(expected, get('X-Amz-Signature'))) {
    return fail(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  }

  const expiresAt = new Date(signedAt.getTime() + expires * 1000);
  if (now.getTime() > expiresAt.getTime()) return fail(403, 'AccessDenied', 'Request has expired');
  if (signedAt.getTime() - now.getTime() > MAX_CLOCK_SKEW_S * 1000) {
    return fail(403, 'AccessDenied', 'Request is not valid yet');
  }
  return { ok: true, rawPath, params, expiresAt };
}
