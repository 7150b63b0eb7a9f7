import { describe, expect, it } from 'vitest';
import {
  containsPattern,
  FRAGMENT_DELIMITER,
  HIGHLIGHT_START,
  HIGHLIGHT_STOP,
  readHeadline,
} from './text-search.ts';

describe('containsPattern', () => {
  it('escapes LIKE wildcards and the escape character', () => {
    expect(containsPattern('50%_off\\')).toBe('%50\\%\\_off\\\\%');
    expect(containsPattern('plain')).toBe('%plain%');
  });
});

describe('readHeadline', () => {
  it('turns the markers into offsets of plain text', () => {
    const s = readHeadline(
      `A client who ${HIGHLIGHT_START}pays${HIGHLIGHT_STOP} late${FRAGMENT_DELIMITER}net 30`,
    );
    expect(s.text).toBe('A client who pays late … net 30');
    expect(s.highlights).toEqual([[13, 17]]);
    expect(s.text.slice(13, 17)).toBe('pays');
  });

  it('folds line breaks and runs of spaces, keeping the offsets right', () => {
    const s = readHeadline(
      `Late\n\n  ${HIGHLIGHT_START}fee${HIGHLIGHT_STOP}:\t${HIGHLIGHT_START}1.5%${HIGHLIGHT_STOP}\n`,
    );
    expect(s.text).toBe('Late fee: 1.5%');
    expect(s.highlights.map(([a, b]) => s.text.slice(a, b))).toEqual(['fee', '1.5%']);
  });

  it('never lets markup through as anything but text, and drops an unclosed or empty mark', () => {
    const s = readHeadline(`<b>x</b> ${HIGHLIGHT_START}${HIGHLIGHT_STOP}y ${HIGHLIGHT_START}z`);
    expect(s.text).toBe('<b>x</b> y z');
    expect(s.highlights).toEqual([]);
  });
});
