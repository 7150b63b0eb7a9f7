import { fullFormats } from 'ajv-formats/dist/formats.js';
import { badParameter } from './errors.ts';

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

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** A `from`/`to` range as bounds: `from` inclusive; `to` inclusive (`until`) or, a bare date, `before`. */
export interface InstantRange {
  from?: Date | undefined;
  /** `to` was a date-time: at or before it. */
  until?: Date | undefined;
  /** `to` was a bare date: before the next day's start (that whole UTC day included). */
  before?: Date | undefined;
}

/** A bound as an instant: a bare date is that day's start, a date-time without a zone is UTC. */
function instantOf(value: string): Date {
  if (DATE_ONLY.test(value)) return new Date(`${value}T00:00:00Z`);
  return new Date(/(z|[+-]\d\d(:?\d\d)?)$/i.test(value) ? value : `${value}Z`);
}

/**
 * The one parser of every range (`from`/`to`, `x_from`/`x_to`; already validated as a date or
 * date-time): a bare-date `from` is that day's start (UTC), a bare-date `to` that whole day, a
 * date-time without a zone is UTC; `from` later than `to` is 400 `invalid_parameter` naming the `from`
 * parameter, the same on every route.
 */
export function parseInstantRange(fromText?: string, toText?: string, fromName = 'from'): InstantRange {
  const from = fromText !== undefined ? instantOf(fromText) : undefined;
  const toDay = toText !== undefined && DATE_ONLY.test(toText);
  const to = toText !== undefined ? instantOf(toText) : undefined;
  const before = to && toDay ? new Date(to.getTime() + DAY_MS) : undefined;
  const until = to && !toDay ? to : undefined;
  const last = before ? before.getTime() - 1 : until?.getTime();
  if (from && last !== undefined && from.getTime() > last) {
    throw badParameter(fromName, `${fromName} must not be later than ${fromName.replace(/from$/, 'to')}`);
  }
  return { from, until, before };
}
