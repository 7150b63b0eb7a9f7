import { describe, expect, it } from 'vitest';
import { containsPattern } from './text-search.ts';

describe('containsPattern', () => {
  it('escapes LIKE wildcards and the escape character', () => {
    expect(containsPattern('50%_off\\')).toBe('%50\\%\\_off\\\\%');
    expect(containsPattern('plain')).toBe('%plain%');
  });
});
