/**
 * The HTML body of a prepared email (interface 4.6), built from its final plain text.
 *
 * Markup understood, line by line:
 * - `**x**` → `<strong>x</strong>` (x neither starts nor ends with whitespace);
 * - `[Text]{https://host/…}` → a link to that address (http or https only);
 * - `[Text]{{host/…}}` → a link to `https://host/…`;
 * - a bare `http://…` or `https://…` address → a link to itself;
 * - every line break (`\n`, `\r\n`, `\r`) → `<br>`.
 *
 * Safety: the text is never trusted. Every character that is not part of recognised markup is
 * HTML-escaped, the only tags produced are `<strong>`, `<a>` and `<br>`, and an `href` is only ever the
 * serialisation of a parsed `URL` whose protocol is `http:` or `https:`, escaped and double-quoted. So no
 * input can open a tag, add an attribute or produce a `javascript:` (or any other scheme's) link.
 *
 * The scanner is hand-written and linear in the input: a regular expression for `**…**` or `[…]{…}`
 * backtracks quadratically on long lines full of unclosed openers, and the text is caller-controlled.
 */

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for use in element content and in double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** Characters that end an address: whitespace, markup delimiters and anything that cannot be in a URL. */
const URL_STOP = /[\s<>"'`{}[\]*\\^|]/;
/** Punctuation that ends a sentence rather than an address when it trails a bare URL. */
const TRAILING_PUNCTUATION = /[.,;:!?]/;

/** The parsed address when it is a well-formed http(s) URL with a host, else undefined. */
function safeHref(candidate: string): string | undefined {
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return undefined;
  return url.href;
}

function anchor(href: string, innerHtml: string): string {
  return `<a href="${escapeHtml(href)}" rel="noopener noreferrer" target="_blank">${innerHtml}</a>`;
}

/** End (exclusive) of an address starting at `from`: the first stop character or the end of the line. */
function addressEnd(line: string, from: number): number {
  let end = from;
  while (end < line.length && !URL_STOP.test(line[end]!)) end++;
  return end;
}

function startsWithScheme(line: string, at: number): boolean {
  const head = line.slice(at, at + 8).toLowerCase();
  return head.startsWith('http://') || head.startsWith('https://');
}

/** A bare URL at `at`: its end without trailing sentence punctuation or an unbalanced `)`. */
function bareUrlEnd(line: string, at: number): number {
  let end = addressEnd(line, at);
  let opened = 0;
  let closed = 0;
  for (let k = at; k < end; k++) {
    if (line[k] === '(') opened++;
    else if (line[k] === ')') closed++;
  }
  for (;;) {
    const last = line[end - 1]!;
    if (TRAILING_PUNCTUATION.test(last)) {
      end--;
    } else if (last === ')' && closed > opened) {
      end--;
      closed--;
    } else {
      return end;
    }
  }
}

interface LinkMatch {
  end: number;
  text: string;
  href: string;
}

/**
 * `[Text]{https://…}` or `[Text]{{host…}}` starting at `at` (a `[`). Link text holds no brackets, so a
 * failed attempt scans at most to the next bracket.
 */
function matchLink(line: string, at: number): LinkMatch | undefined {
  let close = at + 1;
  while (close < line.length && line[close] !== '[' && line[close] !== ']') close++;
  if (line[close] !== ']' || close === at + 1 || line[close + 1] !== '{') return undefined;
  const text = line.slice(at + 1, close);
  const double = line[close + 2] === '{';
  const from = close + (double ? 3 : 2);
  const end = addressEnd(line, from);
  const target = line.slice(from, end);
  if (target === '') return undefined;
  const closing = double ? '}}' : '}';
  if (line.slice(end, end + closing.length) !== closing) return undefined;
  let href: string | undefined;
  if (double) {
    href = safeHref(startsWithScheme(target, 0) ? target : `https://${target}`);
  } else if (startsWithScheme(target, 0)) {
    href = safeHref(target);
  }
  return href === undefined ? undefined : { end: end + closing.length, text, href };
}

interface InlineOptions {
  bold: boolean;
  links: boolean;
}

/** What the scanner produces for each piece: HTML for `body_html`, plain text for `body_text`. */
interface Output {
  text(raw: string): string;
  strong(inner: string): string;
  link(href: string, inner: string, rawText: string): string;
  bareLink(href: string, raw: string): string;
}

const HTML: Output = {
  text: escapeHtml,
  strong: (inner) => `<strong>${inner}</strong>`,
  link: (href, inner) => anchor(href, inner),
  bareLink: (href, raw) => anchor(href, escapeHtml(raw)),
};

/** Markup taken out: bold as its words, a link as "Text (address)", everything else as written. */
const PLAIN: Output = {
  text: (raw) => raw,
  strong: (inner) => inner,
  link: (href, inner) => (inner === href ? href : `${inner} (${href})`),
  bareLink: (_href, raw) => raw,
};

/** One line (no line breaks), through `output`. */
function renderInline(line: string, options: InlineOptions, output: Output = HTML): string {
  let out = '';
  let plainFrom = 0;
  // Once a search for a closing `**` found none, no later `**` can close either: skip further searches.
  let boldPossible = options.bold;
  const flush = (until: number) => {
    if (until > plainFrom) out += output.text(line.slice(plainFrom, until));
  };
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (boldPossible && c === '*' && line[i + 1] === '*') {
      const close = line.indexOf('**', i + 3);
      if (close === -1) {
        boldPossible = false;
      } else {
        const inner = line.slice(i + 2, close);
        if (!/^\s/.test(inner) && !/\s$/.test(inner)) {
          flush(i);
          out += output.strong(renderInline(inner, { bold: false, links: options.links }, output));
          i = close + 2;
          plainFrom = i;
          continue;
        }
      }
      i += 2;
      continue;
    }
    if (options.links && c === '[') {
      const link = matchLink(line, i);
      if (link) {
        flush(i);
        out += output.link(
          link.href,
          renderInline(link.text, { bold: options.bold, links: false }, output),
          link.text,
        );
        i = link.end;
        plainFrom = i;
        continue;
      }
    }
    if (options.links && (c === 'h' || c === 'H') && startsWithScheme(line, i)) {
      const end = bareUrlEnd(line, i);
      const raw = line.slice(i, end);
      const href = safeHref(raw);
      if (href !== undefined) {
        flush(i);
        out += output.bareLink(href, raw);
        i = end;
        plainFrom = i;
        continue;
      }
      // Not a usable address: skip past it so its characters are not scanned again.
      i = Math.max(end, i + 1);
      continue;
    }
    i++;
  }
  flush(line.length);
  return out;
}

/** The `body_html` of interface 4.6 for a plain-text body. */
export function renderEmailHtml(text: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => renderInline(line, { bold: true, links: true }))
    .join('<br>');
}

/**
 * The same text with its markup taken out, for the plain-text part of a composed email: `**x**` → `x`,
 * `[Text]{https://…}` → `Text (https://…)`; line breaks kept. (A generated body is written with markup
 * so that `body_html` can render it; the text part a mail client shows must not show `**`.)
 */
export function renderEmailPlainText(text: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => renderInline(line, { bold: true, links: true }, PLAIN))
    .join('\n');
}
