import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What the database layer follows through a request's async calls: the role its statements run as
 * (session-role.ts) and, for an idempotent request, its unit of work (request-scope.ts); and, for a
 * job, the fields of its log lines. One AsyncLocalStorage for all, because Node 20 copies every enabled instance onto every promise a
 * process creates: two instances cost twice, on every request (docs/performance.md#row-level-security).
 */
export interface DbContext {
  /** A holder (not the role itself): authentication narrows it after the context is entered. */
  role?: { role: unknown } | undefined;
  scope?: unknown;
  /** Fields every log line written inside carries: a job's queue, id and organization (logging.ts). */
  logFields?: Readonly<Record<string, string>> | undefined;
}

const storage = new AsyncLocalStorage<DbContext>();

export function currentDbContext(): DbContext | undefined {
  return storage.getStore();
}

/** Runs `fn` with `changes` over the current context (what is not changed stays). */
export function runWithDbContext<T>(changes: DbContext, fn: () => T): T {
  return storage.run({ ...storage.getStore(), ...changes }, fn);
}
