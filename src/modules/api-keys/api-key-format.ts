import crypto from 'node:crypto';
import zlib from 'node:zlib';

export const LIVE_KEY_PREFIX = 'rk_live_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
export const KEY_LENGTH = LIVE_KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH;

function base62(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function checksum(body: string): string {
  // 62^6 > 2^32, so six base62 characters hold any CRC32.
  return base62(zlib.crc32(body), CHECKSUM_LENGTH);
}

function randomBase62(length: number): string {
  // Rejection sampling keeps every character uniform (256 is not a multiple of 62).
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function generateApiKey(): string {
  const body = LIVE_KEY_PREFIX + randomBase62(RANDOM_LENGTH);
  return body + checksum(body);
}

/**
 * True when the key has the right shape and its checksum matches, so a mistyped or made-up key is
 * refused without touching the database.
 */
export function hasValidChecksum(key: string): boolean {
  if (key.length !== KEY_LENGTH || !key.startsWith(LIVE_KEY_PREFIX)) return false;
  if (!/^[0-9A-Za-z]+$/.test(key.slice(LIVE_KEY_PREFIX.length))) return false;
  const body = key.slice(0, -CHECKSUM_LENGTH);
  const given = Buffer.from(key.slice(-CHECKSUM_LENGTH));
  const expected = Buffer.from(checksum(body));
  return crypto.timingSafeEqual(given, expected);
}

export function hashApiKey(key: string, pepper?: string): string {
  return pepper
    ? crypto.createHmac('sha256', pepper).update(key).digest('hex')
    : crypto.createHash('sha256').update(key).digest('hex');
}

export function keySnippet(last4: string): string {
  return `${LIVE_KEY_PREFIX}...${last4}`;
}
