import crypto from 'node:crypto';

/**
 * The links in approval emails (docs/approval-emails.md#the-links): signed, never stored. A token is
 *
 *     base64url(JSON {v: 1, task_uid, user_uid, organization_uid, exp, jti}) "." base64url(HMAC-SHA256)
 *
 * with the HMAC keyed by a key derived (HKDF-SHA256) from each configured secret key: the first one
 * signs, every one verifies, so a rotation of SECRET_KEY (the old one kept in SECRET_KEY_PREVIOUS)
 * does not kill the links already in people's mailboxes. A derived key, not the secret key itself: the
 * secret key also seals stored credentials, and one key should serve one purpose.
 *
 * What the token proves is only "Remit made this link for this person, about this task, until exp".
 * Whether it may still be used (once: its `jti`), and whether the person may still decide (still a
 * member), is checked where it is used.
 */
export interface ApprovalLinkClaims {
  v: 1;
  task_uid: string;
  user_uid: string;
  organization_uid: string;
  /** Expiry, in seconds since the epoch. */
  exp: number;
  /** The link's own id: recorded when the link decides, so it decides once. */
  jti: string;
}

const HKDF_INFO = 'remit approval links v1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Far above a real token (≈ 340 characters): anything longer is refused before any work. */
export const MAX_TOKEN_LENGTH = 1024;

/** The HMAC keys for the configured secret keys, in the same order (the first signs). */
export function approvalLinkKeys(secretKeys: readonly { key: Buffer }[]): Buffer[] {
  return secretKeys.map(({ key }) =>
    Buffer.from(crypto.hkdfSync('sha256', key, Buffer.alloc(0), HKDF_INFO, 32)),
  );
}

const mac = (key: Buffer, payload: string) => crypto.createHmac('sha256', key).update(payload).digest();

export function signApprovalLink(claims: ApprovalLinkClaims, key: Buffer): string {
  const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  return `${payload}.${mac(key, payload).toString('base64url')}`;
}

export type ReadLink =
  | { ok: true; claims: ApprovalLinkClaims }
  /** `invalid`: not a token we made (malformed, altered, or signed with a key no longer configured). */
  | { ok: false; reason: 'invalid' }
  /** A genuine token past its `exp`: its claims still say whose and about what. */
  | { ok: false; reason: 'expired'; claims: ApprovalLinkClaims };

function claimsOf(payload: string): ApprovalLinkClaims | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!value || typeof value !== 'object') return undefined;
  const c = value as Record<string, unknown>;
  const uuid = (v: unknown) => typeof v === 'string' && UUID.test(v);
  if (c.v !== 1 || !Number.isSafeInteger(c.exp)) return undefined;
  if (![c.task_uid, c.user_uid, c.organization_uid, c.jti].every(uuid)) return undefined;
  return {
    v: 1,
    task_uid: c.task_uid as string,
    user_uid: c.user_uid as string,
    organization_uid: c.organization_uid as string,
    exp: c.exp as number,
    jti: c.jti as string,
  };
}

/** Checks the signature (against every key, in constant time each), then the shape, then the expiry. */
export function readApprovalLink(token: string, keys: readonly Buffer[], now = Date.now()): ReadLink {
  const parts = token.length <= MAX_TOKEN_LENGTH ? token.split('.') : [];
  if (parts.length !== 2) return { ok: false, reason: 'invalid' };
  const [payload, signature] = parts as [string, string];
  if (!/^[A-Za-z0-9_-]+$/.test(payload) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) {
    return { ok: false, reason: 'invalid' };
  }
  const given = Buffer.from(signature, 'base64url');
  // Every key is tried (no early exit), so the time taken says nothing about which one matched.
  let signed = false;
  for (const key of keys) {
    if (crypto.timingSafeEqual(mac(key, payload), given)) signed = true;
  }
  const claims = signed ? claimsOf(payload) : undefined;
  if (!claims) return { ok: false, reason: 'invalid' };
  if (claims.exp * 1000 <= now) return { ok: false, reason: 'expired', claims };
  return { ok: true, claims };
}

/** The page an approval email links to: it shows the request and asks; only its POST decides. */
export function approvalLinkUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/approval?token=${token}`;
}
