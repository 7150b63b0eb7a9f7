/**
 * Money and time for a person: amounts in the invoice's currency in the browser's locale, instants in
 * the browser's time zone. `locale` and `timeZone` are parameters for the tests; the pages leave them out.
 */

const moneyFormats = new Map<string, Intl.NumberFormat | null>();

function moneyFormat(currency: string, locale: string | undefined, keepCents: boolean) {
  const key = `${locale ?? ''}|${currency}|${keepCents}`;
  if (!moneyFormats.has(key)) {
    try {
      moneyFormats.set(
        key,
        new Intl.NumberFormat(locale, {
          style: 'currency',
          currency,
          ...(keepCents ? { minimumFractionDigits: 2, maximumFractionDigits: 2 } : {}),
        }),
      );
    } catch {
      // Not an ISO 4217 code Intl knows.
      moneyFormats.set(key, null);
    }
  }
  return moneyFormats.get(key)!;
}

/**
 * An amount in cents (every `*_cents` field is hundredths of the currency) as `$1,234.50` or
 * `1.234,50 €`. A currency written without decimals (JPY) keeps that style unless it would hide a
 * fraction, as the service's own emails do (src/modules/email/email-tokens.ts).
 */
export function formatMoney(cents: number, currency: string, locale?: string): string {
  const code = currency.toUpperCase();
  const digits = String(Math.abs(Math.trunc(cents))).padStart(3, '0');
  const fraction = digits.slice(-2);
  const decimal = `${cents < 0 ? '-' : ''}${digits.slice(0, -2)}.${fraction}`;
  const plain = moneyFormat(code, locale, false);
  if (!plain) return `${decimal} ${code}`;
  const hidesFraction = fraction !== '00' && plain.resolvedOptions().maximumFractionDigits! < 2;
  const format = hidesFraction ? moneyFormat(code, locale, true)! : plain;
  // A decimal string is formatted exactly (Intl.NumberFormat v3): no float rounding on large amounts.
  return format.format(decimal as unknown as number);
}

/** An instant (ISO 8601) as a date and time in the person's time zone: `Nov 26, 2026, 9:41 AM`. */
export function formatDateTime(iso: string, locale?: string, timeZone?: string): string {
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', timeZone }).format(
    new Date(iso),
  );
}

/**
 * A calendar date (`YYYY-MM-DD`, a due date) as written in the person's locale. It names a day, not an
 * instant, so it is not moved into their time zone (that could show the day before).
 */
export function formatDate(day: string, locale?: string): string {
  const [y, m, d] = day.slice(0, 10).split('-').map(Number);
  if (!y || !m || !d) return day;
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone: 'UTC' }).format(
    new Date(Date.UTC(y, m - 1, d)),
  );
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400],
  ['month', 30 * 86_400],
  ['week', 7 * 86_400],
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
];

/** `5 minutes ago`, `yesterday`, `just now`: how long ago `iso` was, seen from `now`. */
export function formatAgo(iso: string, now: number = Date.now(), locale?: string): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const format = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size) return format.format(Math.trunc(seconds / size), unit);
  }
  return format.format(0, 'second');
}
