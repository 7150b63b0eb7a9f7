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
 * How deep a request's JSON may nest: the body itself is the first level, so `{"a": {"b": [1]}}` has
 * three. Deeper input is refused (422 `validation_failed`, docs/errors.md#input-rules-every-route-shares)
 * before anything walks it, so whatever the service keeps and reads back can be walked, serialized and
 * stored without running out of stack, on every route and both databases.
 */
export const MAX_JSON_DEPTH = 64;

export const TOO_DEEP_MESSAGE = `must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep`;

export interface UnsafeInput {
  /** A JSON pointer: `/line_items/0/sku`; for nesting, the first array or object one level too deep. */
  path: string;
  problem: 'text' | 'depth';
  message: string;
}

/**
 * The first string or object key (in document order) that is unsafe text, or the first array or object
 * nested deeper than `maxDepth`; undefined when there is none. A loop with its own stack, not recursion:
 * the JSON parser accepts any depth that fits the body limit (half a million levels in 1 MB), far more
 * than the call stack holds. Buffers (a multipart file) are not text.
 */
export function findUnsafeInput(value: unknown, maxDepth: number = MAX_JSON_DEPTH): UnsafeInput | undefined {
  // [value, its pointer, how many arrays and objects hold it]
  const stack: [unknown, string, number][] = [[value, '', 0]];
  while (stack.length > 0) {
    const [item, path, depth] = stack.pop()!;
    if (typeof item === 'string') {
      if (isUnsafeText(item)) return { path, problem: 'text', message: UNSAFE_TEXT_MESSAGE };
      continue;
    }
    if (item === null || typeof item !== 'object' || Buffer.isBuffer(item)) continue;
    if (depth >= maxDepth) return { path, problem: 'depth', message: TOO_DEEP_MESSAGE };
    // Pushed last to first, so the first child is looked at first; an object's key before its value.
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}/${i}`, depth + 1]);
      continue;
    }
    const entries = Object.entries(item as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i]!;
      const here = `${path}/${escapePointer(key)}`;
      stack.push([inner, here, depth + 1], [key, here, depth + 1]);
    }
  }
  return undefined;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/**
 * The pointer of the first array or object in JSON text nested deeper than `maxDepth`, found by reading
 * the text without parsing it; undefined when there is none. Run before the JSON parser: parsing
 * millions of levels (14 MiB of `[` fit the largest body limit) takes seconds and hundreds of MB, which
 * this refuses after reading `maxDepth` + 1 brackets. Text that is not JSON is the parser's to refuse.
 */
export function findTooDeepJson(text: string, maxDepth: number = MAX_JSON_DEPTH): string | undefined {
  // Per open array or object: the index of the current item, or the current key (as written).
  const at: (number | string)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end > 0 && isEscaped(text, end)) end = text.indexOf('"', end + 1);
      if (end < 0) return undefined;
      if (expectKey) {
        at[at.length - 1] = text.slice(i, end + 1);
        expectKey = false;
      }
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (at.length >= maxDepth) return pointerOf(at);
      at.push(c === OPEN_ARRAY ? 0 : '');
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      at.pop();
      expectKey = false;
    } else if (c === COMMA && at.length > 0) {
      const top = at[at.length - 1]!;
      if (typeof top === 'number') at[at.length - 1] = top + 1;
      else expectKey = true;
    }
  }
  return undefined;
}

/** Whether the character at `index` follows an odd number of backslashes. */
function isEscaped(text: string, index: number): boolean {
  let count = 0;
  for (let i = index - 1; i >= 0 && text.charCodeAt(i) === BACKSLASH; i--) count++;
  return count % 2 === 1;
}

function pointerOf(at: (number | string)[]): string {
  return at
    .map((part) => {
      if (typeof part === 'number') return `/${part}`;
      let key: unknown = part;
      try {
        key = JSON.parse(part);
      } catch {
        // Not a well-formed string: named as written.
      }
      return `/${escapePointer(String(key))}`;
    })
    .join('');
}
