import type { PGlite, Transaction } from '@electric-sql/pglite';
import { inSpan } from '../observability/tracing.ts';

/** The statement's first word (`SELECT`, `INSERT` …), as the `pg` instrumentation names its spans. */
function operationOf(text: unknown): string {
  return (typeof text === 'string' && /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase()) || 'SQL';
}

function statementSpan<T>(method: string, text: unknown, run: () => Promise<T>): Promise<T> {
  return inSpan(
    `pglite.${method}:${operationOf(text)}`,
    {
      kind: 'client',
      requireParent: true,
      // The statement's text, never its values (our statements are parameterised).
      attributes: { 'db.system': 'postgresql', 'db.statement': typeof text === 'string' ? text : '' },
    },
    run,
  );
}

function withStatementSpans<T extends PGlite | Transaction>(
  target: T,
  wrap?: (property: string, value: (...args: unknown[]) => unknown) => unknown,
): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property) as unknown;
      if (typeof value !== 'function' || property === 'constructor') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      if (property === 'query' || property === 'exec') {
        return (...args: unknown[]) => statementSpan(property, args[0], () => method.apply(object, args));
      }
      return wrap?.(String(property), method) ?? method.bind(object);
    },
  });
}

/**
 * PGlite has no OpenTelemetry instrumentation: with tracing on, its statements get spans here, as
 * `pg`'s do from the library (docs/observability.md#traces). A transaction is a span of its own with
 * its statements under it. Only inside a request's or job's trace, as for `pg`.
 */
export function tracedPglite(lite: PGlite): PGlite {
  return withStatementSpans(lite, (property, method) => {
    if (property !== 'transaction') return undefined;
    return (fn: (tx: Transaction) => Promise<unknown>) =>
      inSpan(
        'pglite.transaction',
        { kind: 'client', requireParent: true },
        () => method.call(lite, (tx: Transaction) => fn(withStatementSpans(tx))) as Promise<unknown>,
      );
  });
}
