import { describe, expect, it } from 'vitest';
import { findTooDeepJson, findUnsafeInput, MAX_JSON_DEPTH, UNSAFE_TEXT_MESSAGE } from './text-safety.ts';

/** An object or array `levels` deep, alternating, with awkward keys and strings on the way. */
function nested(levels: number): unknown {
  let value: unknown = { leaf: 'x' };
  for (let i = 1; i < levels; i++) {
    value = i % 3 === 0 ? [1, '[[{', value] : { 'a"b\\': '}]', [`k/${i}~`]: value, after: [] };
  }
  return value;
}

describe('JSON nesting', () => {
  it('the text reader and the walk name the same first array or object past the limit', () => {
    for (const levels of [1, 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 200]) {
      const value = nested(levels);
      const text = JSON.stringify(value);
      const walked = findUnsafeInput(value);
      expect(findTooDeepJson(text), `${levels} levels`).toBe(walked?.path);
      expect(walked === undefined, `${levels} levels`).toBe(levels <= MAX_JSON_DEPTH);
      if (walked) expect(walked.problem).toBe('depth');
    }
  });

  it('brackets inside strings and keys, escaped quotes and backslashes do not count', () => {
    const text = JSON.stringify({ s: '['.repeat(500), 'k"\\': '\\', t: '{"a":'.repeat(100) });
    expect(findTooDeepJson(text)).toBeUndefined();
    expect(findTooDeepJson('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBeUndefined();
    expect(findTooDeepJson('['.repeat(MAX_JSON_DEPTH + 1))).toBe('/0'.repeat(MAX_JSON_DEPTH));
  });

  it('any depth the parser accepts is walked without running out of stack', () => {
    const levels = 1_000_000;
    const value = JSON.parse('['.repeat(levels) + ']'.repeat(levels)) as unknown;
    expect(findUnsafeInput(value)?.path).toBe('/0'.repeat(MAX_JSON_DEPTH));
    expect(findTooDeepJson('{"a":'.repeat(levels))).toBe('/a'.repeat(MAX_JSON_DEPTH));
  });
});

describe('unsafe text', () => {
  it('the first NUL or lone surrogate in document order, object keys before their values', () => {
    expect(findUnsafeInput({ a: 'x', 'b\u0000': 'ok', c: { d: '\ud800' } })).toEqual({
      path: '/b\u0000',
      problem: 'text',
      message: UNSAFE_TEXT_MESSAGE,
    });
    expect(findUnsafeInput({ a: [{ 'x/y~': 'a\u0000' }], b: '\u0000' })?.path).toBe('/a/0/x~1y~0');
    expect(findUnsafeInput({ a: '😀', b: Buffer.from([0]) })).toBeUndefined();
  });
});
