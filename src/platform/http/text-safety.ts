/**
 * Strings PostgreSQL cannot store or that are not well-formed Unicode: a NUL character (`text` cannot
 * hold U+0000, so the insert fails with a 500) and a lone UTF-16 surrogate (JSON lets `"\ud800"` through,
 * the database stores it as U+FFFD, and what the caller reads back is not what they sent).
 */
const NUL_OR_LONE_SURROGATE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isUnsafeText(value: string): boolean {
  return NUL_OR_LONE_SURROGATE.test(value);
}

export const UNSAFE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired UTF-16 surrogates';

/**
 * The path (as a JSON pointer, `/line_items/0/sku`) of the first string, or object key, that is unsafe
 * text; undefined when there is none. Depth is bounded by the JSON parser's own limits, and Buffers (a
 * multipart file) are not text.
 */
export function findUnsafeText(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return isUnsafeText(value) ? path : undefined;
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnsafeText(value[i], `${path}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const here = `${path}/${escapePointer(key)}`;
    if (isUnsafeText(key)) return here;
    const found = findUnsafeText(item, here);
    if (found !== undefined) return found;
  }
  return undefined;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
