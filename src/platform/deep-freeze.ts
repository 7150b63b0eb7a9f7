/**
 * Freezes a value and everything it holds: what a cache shares between requests must stay as read. A
 * loop with its own stack, so no depth of stored JSON can run out of call stack.
 */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item && typeof item === 'object' && !Object.isFrozen(item)) {
      Object.freeze(item);
      for (const inner of Object.values(item)) stack.push(inner);
    }
  }
  return value;
}
