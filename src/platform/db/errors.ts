/** True for PostgreSQL's unique_violation (optionally on one named constraint or index). */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  // drizzle wraps driver errors; the PostgreSQL error is the cause.
  for (
    let e = error as { code?: string; constraint?: string; cause?: unknown } | undefined;
    e;
    e = e.cause as typeof e
  ) {
    if (e.code === '23505') return constraint === undefined || e.constraint === constraint;
  }
  return false;
}
