import { describe, expect, it } from 'vitest';
import { formatAgo, formatDate, formatDateTime, formatMoney } from './format.ts';

describe('money in the invoice currency, in the reader locale', () => {
  it('formats cents exactly', () => {
    expect(formatMoney(123_450, 'EUR', 'en-US')).toBe('€1,234.50');
    expect(formatMoney(123_450, 'EUR', 'de-DE')).toBe('1.234,50\u00a0€');
    expect(formatMoney(-500, 'usd', 'en-US')).toBe('-$5.00');
    // The largest exact integer: dividing by 100 as a float would round it; the decimal string does not.
    expect(formatMoney(Number.MAX_SAFE_INTEGER, 'USD', 'en-US')).toBe('$90,071,992,547,409.91');
  });

  it('keeps a fraction a currency without decimals would hide, and survives an unknown code', () => {
    expect(formatMoney(123_400, 'JPY', 'en-US')).toBe('¥1,234');
    expect(formatMoney(1_050, 'JPY', 'en-US')).toBe('¥10.50');
    expect(formatMoney(1_050, 'XYZ1', 'en-US')).toBe('10.50 XYZ1');
  });
});

describe('times in the reader time zone', () => {
  it('an instant moves into the zone; a calendar date does not', () => {
    expect(formatDateTime('2026-11-26T23:30:00Z', 'en-US', 'Europe/Berlin')).toBe('Nov 27, 2026, 12:30 AM');
    expect(formatDateTime('2026-11-26T23:30:00Z', 'en-US', 'America/New_York')).toBe('Nov 26, 2026, 6:30 PM');
    expect(formatDate('2026-11-26', 'en-US')).toBe('Nov 26, 2026');
  });

  it('says how long ago', () => {
    const now = Date.parse('2026-11-26T12:00:00Z');
    expect(formatAgo('2026-11-26T11:59:30Z', now, 'en')).toBe('now');
    expect(formatAgo('2026-11-26T11:55:00Z', now, 'en')).toBe('5 minutes ago');
    expect(formatAgo('2026-11-25T12:00:00Z', now, 'en')).toBe('yesterday');
  });
});
