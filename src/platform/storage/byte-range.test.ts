import { describe, expect, it } from 'vitest';
import { parseRange } from './byte-range.ts';

describe('parseRange (S3 semantics)', () => {
  it('one range: a-b, a-, -n; clipped to the object', () => {
    expect(parseRange('bytes=0-9', 100)).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(parseRange('bytes=90-', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-10', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-1000', 100)).toEqual({ kind: 'partial', start: 0, end: 99 });
    expect(parseRange('bytes=50-1000', 100)).toEqual({ kind: 'partial', start: 50, end: 99 });
  });

  it('past the end, a zero suffix, or an empty object: unsatisfiable', () => {
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-0', 0)).toEqual({ kind: 'unsatisfiable' });
  });

  it('anything else is ignored: the whole object', () => {
    for (const header of [
      undefined,
      'bytes=0-1,5-6',
      'items=0-1',
      'bytes=9-1',
      'bytes=-',
      'bytes=a-b',
      'bytes=99999999999999999999-',
    ]) {
      expect(parseRange(header, 100), String(header)).toEqual({ kind: 'whole' });
    }
  });
});
