import { fullFormats } from 'ajv-formats/dist/formats.js';

/**
 * Dates and times the service accepts: 0001-01-01 to 9999-12-31 (UTC), on both engines. PostgreSQL has
 * no year 0 and JavaScript prints years past 9999 as `+010000-…`, so anything outside this range either
 * fails in the database (a 500) or comes back in a form no ISO 8601 client parses.
 */
export const DATE_RANGE_TEXT = 'between 0001-01-01 and 9999-12-31';

// Date.UTC maps years 0–99 to 1900–1999, so the lower bound is built explicitly.
export const MIN_INSTANT_MS = (() => {
  const d = new Date(0);
  d.setUTCFullYear(1, 0, 1);
  d.setUTCHours(0, 0, 0, 0);
  return d.getTime();
})();
export const MAX_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function inRange(text: string): boolean {
  const year = Number(text.slice(0, 4));
  if (!(year >= 1 && year <= 9999)) return false;
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  return Number.isFinite(ms) && ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS;
}

const dateFormat = fullFormats.date as { validate: (s: string) => boolean };
const dateTimeFormat = fullFormats['date-time'] as { validate: (s: string) => boolean };

/** `YYYY-MM-DD`, a real calendar day, within the range. */
export function isValidDate(text: string): boolean {
  return dateFormat.validate(text) && inRange(text);
}

/** RFC 3339 date-time with a time zone, within the range (its UTC instant too). */
export function isValidDateTime(text: string): boolean {
  return dateTimeFormat.validate(text) && inRange(text);
}
