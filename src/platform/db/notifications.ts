import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/**
 * What a cache needs to know from PostgreSQL's LISTEN/NOTIFY: that something it holds changed, and
 * whether it would hear of such a change at all right now (docs/performance.md#authentication-cache).
 */
export interface ChannelListener {
  /** A notification on the channel arrived (from this process or any other), with its payload. */
  notify(payload: string): void;
  /**
   * Whether notifications are being received. While false (not yet listening, or the connection was
   * lost and is being re-established) a change may go unheard: a cache must not serve what it holds.
   */
  live(isLive: boolean): void;
}

export interface Notifications {
  /**
   * Starts listening on `channel` (the connection work goes on in the background: `listener.live(true)`
   * says when it holds); returns a function that stops.
   */
  listen(channel: string, listener: ChannelListener): () => void;
  close(): Promise<void>;
}

type Registry = Map<string, Set<ChannelListener>>;

function dispatch(registry: Registry, channel: string, payload: string): void {
  for (const listener of registry.get(channel) ?? []) listener.notify(payload);
}

function register(registry: Registry, channel: string, listener: ChannelListener): () => void {
  let listeners = registry.get(channel);
  if (!listeners) registry.set(channel, (listeners = new Set()));
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

const quoted = (channel: string) => `"${channel.replaceAll('"', '""')}"`;

/** One statement that listens on every channel (a pool connection and the dedicated one alike). */
const listenStatement = (channels: Iterable<string>) =>
  [...channels].map((channel) => `LISTEN ${quoted(channel)}`).join('; ');

/**
 * PGlite is one session in this process: once it listens it hears every change, and a transaction's
 * notification arrives before its COMMIT resolves.
 */
export function pgliteNotifications(lite: PGlite): Notifications {
  const registry: Registry = new Map();
  const listening = new Map<string, Promise<() => Promise<void>>>();
  return {
    listen(channel, listener) {
      let started = listening.get(channel);
      if (!started) {
        started = lite.listen(channel, (payload) => dispatch(registry, channel, payload));
        listening.set(channel, started);
      }
      const unregister = register(registry, channel, listener);
      listener.live(false);
      // Should LISTEN fail, the listener stays not live: a cache then serves nothing, as it must.
      started.then(
        () => listener.live(true),
        () => undefined,
      );
      return unregister;
    },
    // Unsubscribed even though closing the database ends them too: an instance kept open by its
    // caller (openDatabase's `pgliteInstance`) must not call this registry's listeners any more.
    close: async () => {
      const started = [...listening.values()];
      listening.clear();
      registry.clear();
      if (lite.closed) return;
      for (const subscription of started) {
        const unsubscribe = await subscription.catch(() => undefined);
        await unsubscribe?.().catch(() => undefined);
      }
    },
  };
}

/** The pool side of PostgreSQL notifications: which channels every connection must listen on. */
export interface PoolChannels {
  readonly channels: ReadonlySet<string>;
  /** Bumped when a channel is added, so a connection knows it must LISTEN again. */
  readonly version: number;
  deliver(channel: string, payload: string): void;
}

const LISTENED = Symbol('remit listened version');

interface ListeningClient {
  [LISTENED]?: number;
  query(text: string): Promise<unknown>;
  on(event: 'notification', fn: (message: { channel: string; payload?: string }) => void): unknown;
}

/**
 * Makes a pool connection listen on every registered channel before it is used. A connection that
 * listens hears its own transaction's notification before that COMMIT resolves, so a change made by
 * this process reaches its caches before the request that made it answers; the dedicated connection
 * of `postgresNotifications` hears every other process's. Resolves at once when nothing is new.
 */
export function listenOnConnection(client: unknown, pool: PoolChannels): Promise<void> | null {
  const connection = client as ListeningClient;
  if (pool.channels.size === 0 || connection[LISTENED] === pool.version) return null;
  const first = connection[LISTENED] === undefined;
  connection[LISTENED] = pool.version;
  if (first) connection.on('notification', (message) => pool.deliver(message.channel, message.payload ?? ''));
  return connection.query(listenStatement(pool.channels)).then(() => undefined);
}

export interface PostgresNotificationsOptions {
  connectionString: string;
  /** Reconnect delays after a lost connection: from `minRetryMs`, doubling to `maxRetryMs`. */
  minRetryMs?: number;
  maxRetryMs?: number;
}

/**
 * PostgreSQL: one dedicated connection per process listens on every channel (so another process's
 * change is heard even while the pool has no connection open), and every pool connection listens too
 * (`listenOnConnection`). Losing the dedicated connection makes every channel not live until it is
 * back; it reconnects with backoff.
 */
export function postgresNotifications(options: PostgresNotificationsOptions): Notifications & PoolChannels {
  const registry: Registry = new Map();
  const channels = new Set<string>();
  let version = 0;
  let listenedVersion = -1;
  let client: pg.Client | null = null;
  let ensuring: Promise<void> | null = null;
  let live = false;
  let closed = false;
  const minRetryMs = options.minRetryMs ?? 500;
  let retryMs = minRetryMs;
  let retryTimer: NodeJS.Timeout | null = null;

  const setLive = (value: boolean) => {
    if (live === value) return;
    live = value;
    for (const listeners of registry.values()) for (const listener of listeners) listener.live(value);
  };

  // Why it was lost does not matter: not live until a new connection listens again.
  const lost = (lostClient: pg.Client) => {
    if (client !== lostClient) return;
    client = null;
    setLive(false);
    lostClient.end().catch(() => undefined);
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void ensure();
    }, retryMs);
    retryTimer.unref();
    retryMs = Math.min(retryMs * 2, options.maxRetryMs ?? 30_000);
  };

  const listenAll = (connection: pg.Client) => connection.query(listenStatement(channels));

  // Connects when needed and listens on every channel registered so far (again, if one was added
  // meanwhile); live once both hold.
  const run = async (): Promise<void> => {
    while (!closed) {
      let current = client;
      if (!current) {
        const next = new pg.Client({
          connectionString: options.connectionString,
          keepAlive: true,
          connectionTimeoutMillis: 10_000,
          application_name: 'remit notifications',
        });
        next.on('error', () => lost(next));
        next.on('end', () => lost(next));
        next.on('notification', (message) => dispatch(registry, message.channel, message.payload ?? ''));
        client = current = next;
        listenedVersion = -1;
        try {
          await next.connect();
        } catch {
          lost(next);
          return;
        }
      }
      if (client !== current) return;
      if (listenedVersion === version) {
        retryMs = minRetryMs;
        setLive(true);
        return;
      }
      const wanted = version;
      try {
        await listenAll(current);
      } catch {
        lost(current);
        return;
      }
      if (client === current) listenedVersion = wanted;
    }
  };
  const ensure = (): Promise<void> => {
    ensuring ??= run().finally(() => {
      ensuring = null;
    });
    return ensuring;
  };

  return {
    get channels() {
      return channels;
    },
    get version() {
      return version;
    },
    deliver: (channel, payload) => dispatch(registry, channel, payload),
    listen(channel, listener) {
      const unregister = register(registry, channel, listener);
      if (!channels.has(channel)) {
        channels.add(channel);
        version += 1;
        // Not live for the new channel until the dedicated connection listens on it too.
        setLive(false);
      }
      listener.live(live);
      if (!live) void ensure();
      return unregister;
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      setLive(false);
      const current = client;
      client = null;
      await current?.end().catch(() => undefined);
    },
  };
}
