import crypto from 'node:crypto';

/**
 * Credentials at rest (docs/security.md#secrets-at-rest): AES-256-GCM from node:crypto, a random
 * 96-bit IV per value, and the value's purpose (table, column, owning row) as additional authenticated
 * data, so a ciphertext copied onto another row or column does not open. A sealed value reads
 *
 *     enc:v1:<key id>:<iv, base64url>:<ciphertext + 16-byte tag, base64url>
 *
 * The key id is the first 8 bytes (hex) of SHA-256 of the key: it names the key without revealing it,
 * and needs no configuration of its own. Written by hand rather than with a library because node:crypto
 * already is the library; this is only the envelope around it.
 */
export const SEALED_PREFIX = 'enc:v1:';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends Error {}

export interface SecretKey {
  id: string;
  key: Buffer;
}

export function keyIdOf(key: Buffer): string {
  return crypto.createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** A key as configured: 32 bytes in base64 (44 characters) or hex (64 characters). */
export function parseSecretKey(text: string, name: string): SecretKey {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
      ? Buffer.from(trimmed, 'base64')
      : undefined;
  if (!key || key.length !== KEY_BYTES) {
    throw new SecretKeyError(
      `${name} must be 32 random bytes in base64 (44 characters) or hex (64 characters); ` +
        'make one with `remit secrets generate-key` or `openssl rand -base64 32`',
    );
  }
  return { id: keyIdOf(key), key };
}

export function generateSecretKey(): string {
  return crypto.randomBytes(KEY_BYTES).toString('base64');
}

export class SecretBox {
  private readonly byId: Map<string, Buffer>;

  /** `keys[0]` seals; every key opens what was sealed under it. */
  constructor(readonly keys: readonly SecretKey[]) {
    if (keys.length === 0) throw new SecretKeyError('no secret key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  seal(plaintext: string, purpose: string): string {
    const { id, key } = this.keys[0]!;
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(purpose, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${SEALED_PREFIX}${id}:${iv.toString('base64url')}:${body.toString('base64url')}`;
  }

  /** The plaintext, or a SecretKeyError that says why not (never a wrong plaintext). */
  open(sealed: string, purpose: string): string {
    const parts = isSealed(sealed) ? sealed.slice(SEALED_PREFIX.length).split(':') : [];
    if (parts.length !== 3) throw new SecretKeyError(`${purpose}: the stored value is not a sealed secret`);
    const [id, ivText, bodyText] = parts as [string, string, string];
    const key = this.byId.get(id);
    if (!key) {
      throw new SecretKeyError(
        `${purpose} was encrypted under key ${id}, which is not configured ` +
          `(configured: ${[...this.byId.keys()].join(', ')}); set SECRET_KEY or SECRET_KEY_PREVIOUS to that key`,
      );
    }
    const iv = Buffer.from(ivText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) {
      throw new SecretKeyError(`${purpose}: the stored value is damaged`);
    }
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(Buffer.from(purpose, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(body.subarray(0, body.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SecretKeyError(
        `${purpose} does not decrypt under key ${id}: the value was altered or copied from elsewhere`,
      );
    }
  }

  /** Whether `value` needs sealing again: plaintext, or sealed under a key that is not the current one. */
  isStale(value: string): boolean {
    return !value.startsWith(`${SEALED_PREFIX}${this.currentKeyId}:`);
  }

  /**
   * `stored` sealed under the current key, or undefined when it already is. Plaintext (written before
   * encryption at rest) is sealed as it is; a value under an earlier key is opened first.
   */
  resealed(stored: string, purpose: string): string | undefined {
    if (!this.isStale(stored)) return undefined;
    return this.seal(isSealed(stored) ? this.open(stored, purpose) : stored, purpose);
  }
}

export function isSealed(value: string): boolean {
  return value.startsWith(SEALED_PREFIX);
}
