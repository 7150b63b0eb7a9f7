import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { currentDbContext, runWithDbContext } from './async-context.ts';
import { listenOnConnection, type PoolChannels } from './notifications.ts';

/**
 * Who the database sees (docs/security.md#row-level-security). A request runs as `remit_tenant`,
 * which row-level security confines to the organizations in `remit.organization_uids`; work that is
 * not a request (startup, migrations, jobs, the CLI) runs as the login role, which owns the tables and
 * so is not confined. `asService()` is the one way for code started by a request to step out.
 */
export type SessionRole =
  | { kind: 'tenant'; organizationUids: readonly string[] }
  | { kind: 'service' }
  /** Whichever role the connection already has: for a statement whose effect does not depend on it. */
  | { kind: 'any' };

/** A request's role, mutable so authentication can narrow it once it knows the caller. */
export interface RoleHolder {
  role: SessionRole;
}

export const TENANT_ROLE = 'remit_tenant';

const SERVICE: RoleHolder = { role: { kind: 'service' } };

/** A request before authentication: the tenant role with no organization, which sees no tenant row. */
export function unauthenticatedRole(): RoleHolder {
  return { role: { kind: 'tenant', organizationUids: [] } };
}

/** Runs `fn` (and everything it starts) with `holder`'s role. */
export function runWithRole<T>(holder: RoleHolder, fn: () => T): T {
  return runWithDbContext({ role: holder }, fn);
}

/**
 * The documented bypass: runs `fn` as the login role, across every organization. For work that is
 * cross-organization by nature (a batch of `last_used_at` writes, the job queue's own tables, search's
 * trigram scans: docs/security.md#the-bypass). Inside an open request transaction it changes nothing:
 * the transaction keeps the role it began with.
 */
export function asService<T>(fn: () => T): T {
  return runWithDbContext({ role: SERVICE }, fn);
}

const ANY: RoleHolder = { role: { kind: 'any' } };

/**
 * Runs `fn` on a connection as it is, without switching its role: only for a fixed call to a function
 * that runs as its owner (authentication), which answers the same whoever calls it. Saves the round trip
 * a switch would cost on every request.
 */
export function withConnectionAsIs<T>(fn: () => T): T {
  return runWithDbContext({ role: ANY }, fn);
}

/**
 * Reads filtered by `ILIKE '%…%'` run outside the policy: PostgreSQL uses an index only for a
 * condition placed before the policy when its operator is leakproof, and `ILIKE` is not, so under
 * the policy a trigram index cannot serve it (200,000 rows: 0.25 ms → 136 ms). Such a read keeps its
 * own organization filter, which every repository query carries (docs/security.md#what-it-costs).
 */
export function withTextSearchIndexes<T>(textFiltered: boolean, fn: () => T): T {
  return textFiltered ? asService(fn) : fn();
}

/** The role statements issued now must run as; no request around means the process's own work. */
export function currentRole(): SessionRole {
  return ((currentDbContext()?.role as RoleHolder | undefined) ?? SERVICE).role;
}

interface SessionSettings {
  key: string;
  role: string;
  organizations: string;
}

function settingsFor(role: SessionRole): SessionSettings | null {
  if (role.kind === 'any') return null;
  if (role.kind === 'service') return SERVICE_SETTINGS;
  // Sorted, so the same caller's organizations are the same key whatever order they came in.
  const organizations = [...role.organizationUids].sort().join(',');
  return { key: `tenant:${organizations}`, role: TENANT_ROLE, organizations };
}

const SERVICE_SETTINGS: SessionSettings = { key: 'service', role: 'none', organizations: '' };

// Session-level (not transaction-local): a connection keeps the role of its last caller, so a pool
// whose connections serve the same organizations pays nothing; a change costs one round trip.
const APPLY = `select set_config('role', $1, false), set_config('remit.organization_uids', $2, false)`;

const APPLIED = Symbol('remit session settings');

type Settable = { [APPLIED]?: string; query(text: string, values: unknown[]): Promise<unknown> };

/** Whether the connection already runs as `wanted` (null: any role will do). */
function hasSettings(connection: Settable, wanted: SessionSettings | null): boolean {
  // A fresh connection is the login role with no organizations: the service settings.
  return !wanted || (connection[APPLIED] ?? SERVICE_SETTINGS.key) === wanted.key;
}

async function apply(connection: Settable, wanted: SessionSettings | null): Promise<void> {
  if (!wanted || hasSettings(connection, wanted)) return;
  // Forget first: if this fails halfway the connection's state is unknown and is set again next time.
  connection[APPLIED] = 'unknown';
  await connection.query(APPLY, [wanted.role, wanted.organizations]);
  connection[APPLIED] = wanted.key;
}

type ConnectCallback = (
  error: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

/**
 * A pool whose connections are set to the caller's role as they are handed out. The role is read when
 * `connect()` (or `query()`, which calls it) is called, in the caller's context: a connection handed
 * over later, by whichever request released it, still gets the waiting caller's role. A transaction
 * keeps its connection, so it runs entirely as the role it began with.
 */
export class RoleScopedPool extends pg.Pool {
  /** Channels every connection listens on before it is used (notifications.ts). */
  channels: PoolChannels | null = null;

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    const wanted = settingsFor(currentRole());
    const ready = super.connect().then((client) => {
      const connection = client as unknown as Settable;
      const listening = this.channels ? listenOnConnection(client, this.channels) : null;
      // The steady state (the connection already listens and has this role) adds no promise of its own.
      if (!listening && hasSettings(connection, wanted)) return client;
      return (listening ?? Promise.resolve())
        .then(() => apply(connection, wanted))
        .then(
          () => client,
          (error: unknown) => {
            client.release(error as Error);
            throw error;
          },
        );
    });
    if (!callback) return ready;
    ready.then(
      (client) => callback(undefined, client, (release) => client.release(release as Error | boolean)),
      (error: Error) => callback(error, undefined, () => undefined),
    );
  }
}

/**
 * The embedded database with the same rule. PGlite is one session, so setting the role and running the
 * statement (or the whole transaction) must not be split by another caller: one queue holds both.
 * PGlite itself makes a statement from outside wait for an open transaction, so the queue adds no new
 * waiting. `depth.pending` counts what is queued or running (the pool metrics read it).
 */
export function roleScopedPglite(lite: PGlite, depth: { pending: number } = { pending: 0 }): PGlite {
  const connection = lite as unknown as Settable;
  let queue: Promise<unknown> = Promise.resolve();
  // Settling also swallows the failure for the queue: the caller has it through `result`.
  const settled = () => {
    depth.pending -= 1;
  };
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    depth.pending += 1;
    const result = queue.then(work, work);
    queue = result.then(settled, settled);
    return result;
  };
  const scoped = new Set<string | symbol>(['query', 'exec', 'transaction', 'sql']);
  return new Proxy(lite, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      if (!scoped.has(property)) return property === 'constructor' ? value : value.bind(target);
      return (...args: unknown[]) => {
        const wanted = settingsFor(currentRole());
        return exclusive(async () => {
          await apply(connection, wanted);
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        });
      };
    },
  });
}
