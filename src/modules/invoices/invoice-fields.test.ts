import { describe, expect, it } from 'vitest';
import { describeValue, fieldArray, mergeFields } from './invoice-fields.ts';

describe('invoice fields', () => {
  it('describes each JSON type', () => {
    expect(describeValue('PO-7')).toEqual({ type: 'string', original_type: 'string', value: 'PO-7' });
    expect(describeValue('2026-03-05')).toMatchObject({ type: 'date', original_type: 'string' });
    expect(describeValue('2026-13-45')).toMatchObject({ type: 'string' });
    expect(describeValue(3)).toMatchObject({ type: 'number', original_type: 'integer' });
    expect(describeValue(3.5)).toMatchObject({ type: 'number', original_type: 'number' });
    expect(describeValue(true)).toMatchObject({ type: 'boolean' });
    expect(describeValue({ a: 1 })).toMatchObject({ type: 'object' });
    expect(describeValue([1])).toMatchObject({ type: 'array' });
    expect(describeValue(null)).toMatchObject({ type: 'null' });
  });

  it('merges only the sent keys and removes keys sent as null', () => {
    const stored = mergeFields({}, { a: 1, b: 'x' }, { nullRemoves: true });
    const merged = mergeFields(stored, { b: null, c: false }, { nullRemoves: true });
    expect(fieldArray(merged)).toEqual([
      { key: 'a', value: { type: 'number', original_type: 'integer', value: 1 } },
      { key: 'c', value: { type: 'boolean', original_type: 'boolean', value: false } },
    ]);
  });
});
