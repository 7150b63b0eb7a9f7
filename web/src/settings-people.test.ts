import { describe, expect, it } from 'vitest';
import {
  describeUserAgent,
  formatDay,
  groupSecret,
  keyStatus,
  passwordProblem,
  qrPath,
  totpCodeOf,
} from './settings-people.ts';

describe('the password rules, said before the API is asked', () => {
  it('12 to 256 characters (counted as characters, not UTF-16 units), not the email address', () => {
    expect(passwordProblem('short one', 'ada@acme.test')).toBe(
      'The new password needs at least 12 characters.',
    );
    expect(passwordProblem('🐈'.repeat(11), 'ada@acme.test')).toMatch(/at least 12/);
    expect(passwordProblem('🐈'.repeat(12), 'ada@acme.test')).toBeUndefined();
    expect(passwordProblem('x'.repeat(257), 'ada@acme.test')).toMatch(/at most 256/);
    expect(passwordProblem(' ADA@acme.test ', 'ada@acme.test')).toMatch(/not be your email/);
    expect(passwordProblem('analytical engine 1843', 'ada@acme.test')).toBeUndefined();
  });
});

describe('the second factor', () => {
  it('reads a secret out in groups of four', () => {
    expect(groupSecret('JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP')).toBe('JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP');
    expect(groupSecret('ABCDEF')).toBe('ABCD EF');
  });

  it('takes a code with the spaces apps show, and only six digits', () => {
    expect(totpCodeOf('123 456')).toBe('123456');
    expect(totpCodeOf(' 123-456 ')).toBe('123456');
    expect(totpCodeOf('12345')).toBeUndefined();
    expect(totpCodeOf('12345a')).toBeUndefined();
  });

  it('draws each dark module as a square, inside the quiet zone', () => {
    const dark = new Set(['0,0', '1,2']);
    expect(qrPath(3, (r, c) => dark.has(`${r},${c}`), 4)).toBe('M4 4h1v1h-1zM6 5h1v1h-1z');
    expect(qrPath(2, () => false)).toBe('');
  });
});

describe('sessions: the browser in words', () => {
  it('names the browser, its major version and the system', () => {
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      ),
    ).toBe('Chrome 131 on macOS');
    expect(
      describeUserAgent('Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0'),
    ).toBe('Firefox 133 on Windows');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.70',
      ),
    ).toBe('Edge 131 on Windows');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari 18 on iPhone');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.6778.85 Safari/537.36',
      ),
    ).toBe('Headless Chrome 131 on Linux');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
      ),
    ).toBe('Chrome 131 on Android');
  });

  it('shows a program as it names itself, and says when nothing is known', () => {
    expect(describeUserAgent('curl/8.5.0')).toBe('curl/8.5.0');
    expect(describeUserAgent('x'.repeat(80))).toHaveLength(60);
    expect(describeUserAgent(null)).toBe('Unknown browser');
    expect(describeUserAgent('  ')).toBe('Unknown browser');
  });
});

describe('a key’s expiry day', () => {
  it('is the day in the reader’s time zone', () => {
    expect(formatDay('2026-12-26T23:30:00Z', 'en-US', 'Europe/Berlin')).toBe('Dec 27, 2026');
    expect(formatDay('2026-12-26T23:30:00Z', 'en-US', 'America/New_York')).toBe('Dec 26, 2026');
  });
});

describe('a key’s status', () => {
  const now = Date.parse('2026-11-26T12:00:00Z');
  it('revoked wins; expired once expires_at has passed; else active', () => {
    expect(keyStatus({ revoked_at: null, expires_at: null }, now)).toBe('active');
    expect(keyStatus({ revoked_at: null, expires_at: '2026-11-27T00:00:00Z' }, now)).toBe('active');
    expect(keyStatus({ revoked_at: null, expires_at: '2026-11-26T12:00:00Z' }, now)).toBe('expired');
    expect(keyStatus({ revoked_at: '2026-11-01T00:00:00Z', expires_at: '2026-11-02T00:00:00Z' }, now)).toBe(
      'revoked',
    );
  });
});
