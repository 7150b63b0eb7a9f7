import { useEffect, useState } from 'react';
import { problemOf } from './api.ts';

export type Resource<T> =
  | { status: 'loading' }
  | { status: 'ready'; data: T }
  | { status: 'error'; message: string; code: string | undefined };

interface Entry {
  promise: Promise<unknown>;
  at: number;
}

/** Answers kept for a short while: moving back and forth between approvals asks for nothing again. */
const cache = new Map<string, Entry>();
const FRESH_MS = 30_000;

/** What one person was shown is not kept for the next: called whenever a session begins or ends. */
export function forgetResources(): void {
  cache.clear();
}

/**
 * Loads `load()` once per `key` (shared by every component asking for it) and answers its state. A
 * null key loads nothing (answers loading). Failed loads are not kept.
 */
export function useResource<T>(key: string | null, load: () => Promise<T>): Resource<T> {
  const [state, setState] = useState<{ key: string | null; resource: Resource<T> }>({
    key,
    resource: { status: 'loading' },
  });
  useEffect(() => {
    if (key === null) return;
    let current = true;
    let entry = cache.get(key);
    if (!entry || Date.now() - entry.at > FRESH_MS) {
      entry = { promise: load(), at: Date.now() };
      cache.set(key, entry);
      entry.promise.catch(() => cache.delete(key));
    }
    (entry.promise as Promise<T>).then(
      (data) => current && setState({ key, resource: { status: 'ready', data } }),
      (error: unknown) =>
        current &&
        setState({
          key,
          resource: {
            status: 'error',
            message: problemOf(error),
            code: typeof error === 'object' && error && 'code' in error ? String(error.code) : undefined,
          },
        }),
    );
    return () => {
      current = false;
    };
    // `load` is a new function on every render; the key says what it loads.
  }, [key]);
  return state.key === key ? state.resource : { status: 'loading' };
}
