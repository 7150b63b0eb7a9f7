import { describe, expect, it } from 'vitest';
import {
  generateApiKey,
  hasValidChecksum,
  hashApiKey,
  KEY_LENGTH,
  keySnippet,
  LIVE_KEY_PREFIX,
} from './api-key-format.ts';

describe('api key format', () => {
  it('is the prefix, 32 base62 characters and a 6-character checksum', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^rk_live_[0-9A-Za-z]{38}$/);
    expect(key).toHaveLength(KEY_LENGTH);
    expect(hasValidChecksum(key)).toBe(true);
  });

  it('never repeats', () => {
    const keys = new Set(Array.from({ length: 2000 }, generateApiKey));
    expect(keys.size).toBe(2000);
  });

  it('rejects any single-character change', () => {
    const key = generateApiKey();
    for (let i = LIVE_KEY_PREFIX.length; i < key.length; i++) {
      const c = key[i] === 'a' ? 'b' : 'a';
      expect(hasValidChecksum(key.slice(0, i) + c + key.slice(i + 1))).toBe(false);
    }
  });

  it('rejects other shapes', () => {
    const key = generateApiKey();
    expect(hasValidChecksum(key + 'x')).toBe(false);
    expect(hasValidChecksum(key.replace('rk_live_', 'rk_test_'))).toBe(false);
    expect(hasValidChecksum('')).toBe(false);
    expect(hasValidChecksum(key.slice(0, -1) + '-')).toBe(false);
  });

  it('hashes with sha-256, keyed when a pepper is set', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey('abc', 'pepper')).not.toBe(hashApiKey('abc'));
  });

  it('shows only the prefix and the last four characters', () => {
    expect(keySnippet('WXYZ')).toBe('rk_live_...WXYZ');
  });
});
