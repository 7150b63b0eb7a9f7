/**
 * Custom invoice fields. On the way in they are a plain object (`{"po_number": "PO-7"}`); stored and
 * served as `{key, value: {type, original_type, value}}` where `original_type` is the JSON type as sent
 * and `type` what the value means (a date-looking string is a `date`).
 */
export interface StoredField {
  type: 'string' | 'number' | 'boolean' | 'date' | 'object' | 'array' | 'null';
  original_type: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';
  value: unknown;
}

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;

export function describeValue(value: unknown): StoredField {
  if (value === null) return { type: 'null', original_type: 'null', value };
  if (Array.isArray(value)) return { type: 'array', original_type: 'array', value };
  switch (typeof value) {
    case 'string':
      return {
        type: DATE.test(value) && !Number.isNaN(Date.parse(value)) ? 'date' : 'string',
        original_type: 'string',
        value,
      };
    case 'number':
      return { type: 'number', original_type: Number.isInteger(value) ? 'integer' : 'number', value };
    case 'boolean':
      return { type: 'boolean', original_type: 'boolean', value };
    default:
      return { type: 'object', original_type: 'object', value };
  }
}

/** Merges sent fields into the stored ones: only sent keys change; a key sent as null is removed. */
export function mergeFields(
  stored: Record<string, StoredField>,
  input: Record<string, unknown>,
  { nullRemoves }: { nullRemoves: boolean },
): Record<string, StoredField> {
  const out = { ...stored };
  for (const [key, value] of Object.entries(input)) {
    if (value === null && nullRemoves) delete out[key];
    else out[key] = describeValue(value);
  }
  return out;
}

export function fieldArray(stored: Record<string, StoredField>): { key: string; value: StoredField }[] {
  return Object.keys(stored)
    .sort()
    .map((key) => ({ key, value: stored[key]! }));
}
