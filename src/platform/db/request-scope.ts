import { currentDbContext, runWithDbContext } from './async-context.ts';
import type { Db, Tx } from './client.ts';

/**
 * One request's unit of work (an idempotent POST): while it is open, every statement the request
 * makes through the database handle runs in the request's transaction, and a service's own
 * `db.transaction()` becomes a savepoint inside it. So the handler's writes and the response stored
 * for its Idempotency-Key commit together or not at all (docs/operations.md#crash-and-restart).
 */
export interface RequestScope {
  /** The request's transaction once it is open. */
  tx: Tx | null;
  /**
   * Deferred scopes (routes that call an outside service before they write) open the transaction at
   * the handler's first `db.transaction()`: this opens it and runs `fn` as that transaction's start.
   */
  begin: (<T>(fn: (tx: Tx) => Promise<T>) => Promise<T>) | null;
  /** Effects that must not happen unless the writes commit (chat posts, job cancels): run after it. */
  afterCommit: (() => unknown)[];
  /** Set once the transaction has committed or rolled back: the handle is the plain database again. */
  closed: boolean;
}

export function runInScope<T>(scope: RequestScope, fn: () => T): T {
  return runWithDbContext({ scope }, fn);
}

function openScope(): RequestScope | undefined {
  const scope = currentDbContext()?.scope as RequestScope | undefined;
  return scope && !scope.closed ? scope : undefined;
}

const UNSCOPED = Symbol('unscoped database');
const WRITES = new Set<string | symbol>(['insert', 'update', 'delete']);

/** The database under a scoped handle: what the unit of work itself opens its transaction on. */
export function unscopedDb(db: Db): Db {
  return ((db as unknown as Record<symbol, Db | undefined>)[UNSCOPED] ?? db) as Db;
}

/**
 * The database handle every module gets. Outside a request scope it is the database itself; inside
 * one it resolves to the request's transaction. A Proxy rather than a wrapper class, because Drizzle's
 * database and transaction share one surface (select, insert, transaction, execute, query, session)
 * and every member must follow the scope.
 */
export function scopedDb(db: Db): Db {
  return new Proxy(db, {
    get(target, property) {
      if (property === UNSCOPED) return target;
      const scope = openScope();
      if (scope) {
        if (scope.tx) return member(scope.tx, property);
        if (scope.begin && property === 'transaction') {
          const begin = scope.begin;
          return <T>(fn: (tx: Tx) => Promise<T>) => begin(fn);
        }
        if (scope.begin && WRITES.has(property)) {
          // A write here would commit apart from the stored answer: the route breaks its own rule.
          throw new Error(
            `A deferred idempotent route wrote with db.${String(property)} outside db.transaction()`,
          );
        }
      }
      return member(target, property);
    },
  });
}

function member(source: object, property: string | symbol): unknown {
  const value = Reflect.get(source, property) as unknown;
  // Methods are bound to the object they came from; the constructor stays itself (Drizzle's `is()`
  // compares constructors).
  return typeof value === 'function' && property !== 'constructor' ? value.bind(source) : value;
}

/**
 * Runs `effect` once the request's writes have committed, or now when no request transaction is open.
 * Effects queued in a unit of work that rolls back are dropped: they belonged to writes that never
 * happened. A deferred effect's failure is logged by the unit of work, never given to the request.
 */
export async function afterCommit(effect: () => unknown): Promise<void> {
  const scope = openScope();
  if (scope?.tx) {
    scope.afterCommit.push(effect);
    return;
  }
  await effect();
}

/** True while a request's transaction is open: calls that need their own connection must wait. */
export function inRequestTransaction(): boolean {
  return openScope()?.tx != null;
}
