import crypto from 'node:crypto';

/**
 * The secrets in emailed links (invitations, password resets, sign-in links) and session cookies: 32
 * random bytes, base64url (43 characters). Only their SHA-256 is stored, so a copy of the database
 * opens nothing.
 */
export function newSecretToken(): { token: string; tokenHash: string } {
  const token = crypto.randomBytes(32).toString('base64url');
  return { token, tokenHash: hashSecretToken(token) };
}

export function hashSecretToken(token: string): string {
  return crypto.createHash('sha256').update(token).digest('hex');
}
