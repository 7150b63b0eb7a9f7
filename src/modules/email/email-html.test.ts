import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeHtml, renderEmailHtml } from './email-html.ts';

const link = (href: string, text: string) =>
  `<a href="${href}" rel="noopener noreferrer" target="_blank">${text}</a>`;

/** Decodes the entities a browser would in an attribute value or text (named, decimal, hex). */
function decodeEntities(text: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", colon: ':' };
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);?/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return named[ref.toLowerCase()] ?? whole;
  });
}

const ALLOWED_TAG =
  /^(?:<br>|<strong>|<\/strong>|<\/a>|<a href="[^"<>]*" rel="noopener noreferrer" target="_blank">)$/;

/** Every safety property of the output; throws with the offending detail. */
function expectSafe(html: string) {
  expect(html.toLowerCase()).not.toContain('<script');
  const tags = html.match(/<[^>]*>?/g) ?? [];
  for (const tag of tags) {
    expect(tag).toMatch(ALLOWED_TAG);
    // No event handler attribute: outside quoted values, no `on…=`.
    expect(tag.replace(/"[^"]*"/g, '""')).not.toMatch(/\son[a-z]*\s*=/i);
  }
  // Nothing outside the allowed tags opens or closes one.
  expect(html.replace(/<[^>]*>/g, '')).not.toMatch(/[<>]/);
  for (const [, raw] of html.matchAll(/<a href="([^"]*)"/g)) {
    const href = decodeEntities(raw!);
    expect(href).toMatch(/^https?:\/\//);
    const normalized = href.replace(/[\s\u0000-\u001f]/g, '').toLowerCase();
    expect(normalized).not.toMatch(/^(javascript|data|vbscript):/);
    expect(['http:', 'https:']).toContain(new URL(href).protocol);
  }
  expect((html.match(/<a /g) ?? []).length).toBe((html.match(/<\/a>/g) ?? []).length);
  expect((html.match(/<strong>/g) ?? []).length).toBe((html.match(/<\/strong>/g) ?? []).length);
}

/** Fragments an attacker (or a confused template) would use, mixed with arbitrary text. */
const hostileFragment = fc.oneof(
  fc.constantFrom(
    '<script>',
    '</script>',
    '<SCRIPT src=//x>',
    '<scr<script>ipt>',
    '<img src=x onerror=alert(1)>',
    '" onmouseover="alert(1)',
    "' onfocus='alert(1)",
    ' onclick=alert(1) ',
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'java\tscript:',
    'java\nscript:',
    '&#106;avascript:',
    '&#x6A;avascript&colon;',
    'javascript&#58;',
    'data:text/html,<b>',
    'vbscript:msgbox',
    '**',
    '*',
    '[',
    ']',
    ']{',
    ']{{',
    '{',
    '}',
    '{{',
    '}}',
    'http://',
    'https://',
    'HTTPS://',
    'hTTp://',
    'a.com',
    'evil.example/x?y=1&z=2',
    '@',
    '\n',
    '\r\n',
    '\r',
    '\t',
    ' ',
    '(',
    ')',
    '.',
    ',',
    '<',
    '>',
    '&',
    '&amp;',
    '=',
    '/',
    '\\',
    '`',
    '%22',
    '\u0000',
    '\u2028',
    '[x]{javascript:alert(1)}',
    '[x]{{javascript:alert(1)}}',
    '[x]{ https://a.com}',
    '[x]{https://a.com"onmouseover=alert(1)}',
    '[x]{{a.com" onload="alert(1)}}',
    '[**x**]{https://a.com/<script>}',
  ),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
);
const hostileText = fc.array(hostileFragment, { maxLength: 40 }).map((parts) => parts.join(''));

describe('renderEmailHtml: the markup of interface 4.6', () => {
  it('bold, both link forms, bare URLs and line breaks', () => {
    expect(renderEmailHtml('Hello **world**\nline 2')).toBe('Hello <strong>world</strong><br>line 2');
    expect(renderEmailHtml('Pay [here]{https://pay.example.com/i/1} now')).toBe(
      `Pay ${link('https://pay.example.com/i/1', 'here')} now`,
    );
    expect(renderEmailHtml('Pay [here]{{pay.example.com/i/1}} now')).toBe(
      `Pay ${link('https://pay.example.com/i/1', 'here')} now`,
    );
    expect(renderEmailHtml('See https://example.com/a?b=1&c=2.')).toBe(
      `See ${link('https://example.com/a?b=1&amp;c=2', 'https://example.com/a?b=1&amp;c=2')}.`,
    );
    expect(renderEmailHtml('a\r\nb\rc\n\nd')).toBe('a<br>b<br>c<br><br>d');
  });

  it('keeps sentence punctuation and unbalanced parentheses out of bare links', () => {
    expect(renderEmailHtml('(see https://x.test/a_(b)), then https://y.test!')).toBe(
      `(see ${link('https://x.test/a_(b)', 'https://x.test/a_(b)')}), then ${link('https://y.test/', 'https://y.test')}!`,
    );
  });

  it('the {{host}} form keeps an explicit scheme, and http links are allowed', () => {
    expect(renderEmailHtml('[a]{{https://a.test/x}}')).toBe(link('https://a.test/x', 'a'));
    expect(renderEmailHtml('[a]{http://a.test/x}')).toBe(link('http://a.test/x', 'a'));
  });

  it('nests bold and links one level, either way round', () => {
    expect(renderEmailHtml('**[Pay now]{https://a.test}**')).toBe(
      `<strong>${link('https://a.test/', 'Pay now')}</strong>`,
    );
    expect(renderEmailHtml('[**b**]{{b.test}}')).toBe(link('https://b.test/', '<strong>b</strong>'));
    expect(renderEmailHtml('**see https://c.test/x**')).toBe(
      `<strong>see ${link('https://c.test/x', 'https://c.test/x')}</strong>`,
    );
  });

  it('leaves anything that is not well-formed markup as escaped text', () => {
    expect(renderEmailHtml('** not bold ** and **unclosed')).toBe('** not bold ** and **unclosed');
    expect(renderEmailHtml('[x]{javascript:alert(1)}')).toBe('[x]{javascript:alert(1)}');
    expect(renderEmailHtml('[x]{{javascript:alert(1)}}')).toBe('[x]{{javascript:alert(1)}}');
    expect(renderEmailHtml('[x]{ftp://a.test}')).toBe('[x]{ftp://a.test}');
    expect(renderEmailHtml('https:// and http://')).toBe('https:// and http://');
    expect(renderEmailHtml('[]{https://a.test}')).toBe(`[]{${link('https://a.test/', 'https://a.test')}}`);
  });

  it('escapes every piece of input HTML, including quotes inside link targets', () => {
    expect(renderEmailHtml('<script>alert("x")</script> & \'y\'')).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;',
    );
    const html = renderEmailHtml('[a]{https://a.test/"onmouseover=alert(1)}');
    expect(html).not.toContain('" onmouseover');
    expectSafe(html);
    expect(renderEmailHtml('[<b>]{https://a.test/}')).toBe(link('https://a.test/', '&lt;b&gt;'));
  });

  it('stays linear on long lines of unclosed markup', () => {
    for (const unit of ['**a ', '[', '[a]{https://', 'https://a', '(', '**[', 'http://a.test/)']) {
      const text = unit.repeat(Math.ceil(200_000 / unit.length));
      const started = performance.now();
      const html = renderEmailHtml(text);
      // Quadratic work on 200,000 characters would take minutes; linear takes milliseconds.
      expect(performance.now() - started).toBeLessThan(1500);
      expectSafe(html);
    }
  });
});

describe('renderEmailHtml: properties over hostile input', () => {
  it('never produces a script tag, an event attribute, a non-http(s) link or a stray tag', () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        expectSafe(renderEmailHtml(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('arbitrary strings (any unit) are safe too', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 })),
        (text) => {
          expectSafe(renderEmailHtml(text));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('plain text (no markup) renders to its escaped form with <br> for line breaks, and decodes back', () => {
    const plain = fc
      .array(
        fc.oneof(
          fc.string({ maxLength: 10 }),
          fc.constantFrom('<', '>', '&', '"', "'", '\n', '\r\n', '\r', '*', '{', '}', ']', 'http', ':', '//'),
        ),
        { maxLength: 30 },
      )
      .map((parts) => parts.join(''))
      .filter((text) => !/\*\*|\[|https?:\/\//i.test(text));
    fc.assert(
      fc.property(plain, (text) => {
        const html = renderEmailHtml(text);
        expect(html).toBe(escapeHtml(text).replace(/\r\n|\r|\n/g, '<br>'));
        expect(decodeEntities(html.replace(/<br>/g, '\n'))).toBe(text.replace(/\r\n?/g, '\n'));
      }),
      { numRuns: 2000 },
    );
  });

  it('escapeHtml round-trips every string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const escaped = escapeHtml(text);
        expect(escaped).not.toMatch(/[<>"']/);
        expect(decodeEntities(escaped)).toBe(text);
      }),
    );
  });
});
