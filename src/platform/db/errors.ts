export interface ChainedError {
  code?: unknown;
  message?: unknown;
  constraint?: unknown;
  cause?: unknown;
}

/**
 * An error and the errors it wraps, outermost first. Drizzle wraps driver errors (the PostgreSQL error
 * and its SQLSTATE are the `cause`); the walk is bounded so a cyclic chain cannot hang.
 */
export function* errorChain(error: unknown, maxDepth = 5): Generator<ChainedError> {
  let current = error;
  for (let depth = 0; depth < maxDepth && current && typeof current === 'object'; depth++) {
    yield current as ChainedError;
    current = (current as ChainedError).cause;
  }
}

/** True for PostgreSQL's unique_violation (optionally on one named constraint or index). */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (const e of errorChain(error)) {
    if (e.code === '23505') return constraint === undefined || e.constraint === constraint;
  }
  return false;
}

/** True for PostgreSQL's foreign_key_violation (the referenced row is gone). */
export function isForeignKeyViolation(error: unknown): boolean {
  for (const e of errorChain(error)) if (e.code === '23503') return true;
  return false;
}
