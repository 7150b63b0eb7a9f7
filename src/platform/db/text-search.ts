/** `%text%` for LIKE/ILIKE with the caller's own `%`, `_` and `\` taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The PostgreSQL text search configurations an organization may search its knowledge in: those that
 * PostgreSQL 15 and PGlite (PostgreSQL 18) both ship (PGlite's `estonian` is PostgreSQL 16's), checked by
 * the `organizations_search_language_check` constraint of migration 0032. `simple` lowercases without
 * stemming (any language, no stop words).
 */
export const SEARCH_LANGUAGES = [
  'simple',
  'arabic',
  'armenian',
  'basque',
  'catalan',
  'danish',
  'dutch',
  'english',
  'finnish',
  'french',
  'german',
  'greek',
  'hindi',
  'hungarian',
  'indonesian',
  'irish',
  'italian',
  'lithuanian',
  'nepali',
  'norwegian',
  'portuguese',
  'romanian',
  'russian',
  'serbian',
  'spanish',
  'swedish',
  'tamil',
  'turkish',
  'yiddish',
] as const;
export type SearchLanguage = (typeof SEARCH_LANGUAGES)[number];

/**
 * The markers `ts_headline` puts around a matched word: two control characters that are removed from
 * the text first, so every marker found afterwards is one of ours. They never leave the service: the
 * snippet goes out as plain text with the offsets of its highlights (no markup to escape or trust).
 */
export const HIGHLIGHT_START = '\u0002';
export const HIGHLIGHT_STOP = '\u0003';
/** Between the fragments of one snippet. */
export const FRAGMENT_DELIMITER = ' … ';

export interface Snippet {
  /** Plain text (control characters other than line breaks and tabs removed). */
  text: string;
  /** `[start, end)` offsets into `text` (UTF-16 code units, as JavaScript's `slice`) of each matched word. */
  highlights: [number, number][];
}

/** A `ts_headline` result with our markers → its plain text and the offsets of the highlights. */
export function readHeadline(headline: string): Snippet {
  let text = '';
  const highlights: [number, number][] = [];
  let start: number | null = null;
  for (const char of headline) {
    if (char === HIGHLIGHT_START) {
      start = text.length;
    } else if (char === HIGHLIGHT_STOP) {
      if (start !== null && text.length > start) highlights.push([start, text.length]);
      start = null;
    } else {
      text += char;
    }
  }
  // Whitespace runs (line breaks of the extracted text) are one space in a snippet; offsets follow.
  return collapseWhitespace(text, highlights);
}

function collapseWhitespace(text: string, highlights: [number, number][]): Snippet {
  const map: number[] = [];
  let out = '';
  for (let i = 0; i < text.length; i += 1) {
    map.push(out.length);
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (out.length > 0 && !out.endsWith(' ')) out += ' ';
    } else if (c >= ' ' || c === '\t') {
      out += c;
    }
  }
  map.push(out.length);
  const trimmed = out.trimEnd();
  const clamp = (n: number) => Math.min(n, trimmed.length);
  return {
    text: trimmed,
    highlights: highlights
      .map(([s, e]): [number, number] => [clamp(map[s]!), clamp(map[e]!)])
      .filter(([s, e]) => e > s),
  };
}
