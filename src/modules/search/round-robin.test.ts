import { describe, expect, it } from 'vitest';
import { interleave, shareOf } from './round-robin.ts';

describe('round-robin spread (interface 4.4 rule 3)', () => {
  it('gives each type ceil(limit / types)', () => {
    expect(shareOf(12, 6)).toBe(2);
    expect(shareOf(12, 5)).toBe(3);
    expect(shareOf(1, 6)).toBe(1);
    expect(shareOf(50, 1)).toBe(50);
  });

  it('deals type by type and stops at the limit', () => {
    const a = ['a1', 'a2', 'a3'];
    const b = ['b1', 'b2', 'b3'];
    const c = ['c1', 'c2', 'c3'];
    // limit 5 over 3 types: share 2 each, dealt a1 b1 c1 a2 b2 (c2 would pass the limit).
    expect(interleave([a, b, c], 5)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2']);
  });

  it('never takes more than a type’s share, even when others are short', () => {
    expect(interleave([['a1', 'a2', 'a3', 'a4'], ['b1']], 4)).toEqual(['a1', 'b1', 'a2']);
  });

  it('keeps the requested type order and skips empty types', () => {
    expect(interleave([[], ['x1', 'x2'], ['y1']], 6)).toEqual(['x1', 'y1', 'x2']);
  });
});
