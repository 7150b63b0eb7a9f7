import type { Redis } from 'ioredis';

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the window resets (≥ 1). */
  resetSeconds: number;
}

/** A fixed-window counter per API key; memory for one instance, Redis to share it between instances. */
export interface RateLimiter {
  hit(key: string): Promise<RateLimitDecision>;
  close(): Promise<void>;
}

function decision(limit: number, count: number, ttlMs: number): RateLimitDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
  };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {
    this.sweeper = setInterval(
      () => {
        const now = Date.now();
        for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
      },
      Math.max(windowMs, 1000),
    );
    this.sweeper.unref();
  }

  hit(key: string): Promise<RateLimitDecision> {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + this.windowMs };
      this.windows.set(key, w);
    }
    w.count += 1;
    return Promise.resolve(decision(this.limit, w.count, w.resetAt - now));
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}

// One round trip: count the hit and start the window on the first one, atomically.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

/** An ioredis client with HIT_SCRIPT defined on it. */
type HitClient = Redis & { remitHit(key: string, windowMs: number): Promise<[number, number]> };

export interface RedisLimiterOptions {
  prefix?: string;
  /** The longest a Redis hit may hold a request before the in-memory limiter answers instead. */
  commandTimeoutMs?: number;
  /** How long Redis is left alone after a failure before a background PING checks it again. */
  retryAfterMs?: number;
  /** Called once per change: 'degraded' when Redis fails, 'healthy' when it answers again. */
  onStateChange?: (state: 'degraded' | 'healthy', reason?: unknown) => void;
}

/**
 * Counts in Redis (shared by every instance), behind a circuit breaker. When Redis fails or does not
 * answer within `commandTimeoutMs`, the circuit opens and this instance counts in memory instead: the
 * limit still holds per instance, the `RateLimit-*` headers stay, and no request waits on Redis again
 * until a background PING finds it answering. (A frozen Redis used to hold every request for 500 ms, and
 * a stopped one let every request through without headers.)
 *
 * ioredis is loaded by the constructor, not with this file: a server without REDIS_URL never loads it.
 * Hits made before the client exists wait for it as they wait for its first connection, within the
 * same timeout.
 */
export class RedisRateLimiter implements RateLimiter {
  /** The client, once ioredis is loaded. */
  private redis: HitClient | null = null;
  /** Settles when the client is made (or ioredis failed to load); what hits wait on until then. */
  private readonly client: Promise<HitClient>;
  private closed = false;
  private readonly fallback: MemoryRateLimiter;
  private readonly prefix: string;
  private readonly commandTimeoutMs: number;
  private readonly retryAfterMs: number;
  private readonly onStateChange: NonNullable<RedisLimiterOptions['onStateChange']>;
  private openedAt: number | null = null;
  private probing = false;

  constructor(
    url: string,
    private readonly limit: number,
    private readonly windowMs: number,
    options: RedisLimiterOptions = {},
  ) {
    this.prefix = options.prefix ?? 'remit:rl:';
    this.commandTimeoutMs = options.commandTimeoutMs ?? 100;
    this.retryAfterMs = options.retryAfterMs ?? 5000;
    this.onStateChange = options.onStateChange ?? (() => undefined);
    this.fallback = new MemoryRateLimiter(limit, windowMs);
    this.client = import('ioredis').then(({ Redis }) => {
      if (this.closed) throw new Error('The rate limiter was closed before Redis was connected');
      // No ioredis `commandTimeout`: it also times out the connection handshake, which broke the
      // connection when start-up blocked the event loop. Each hit is raced against its own timer instead.
      const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false });
      redis.defineCommand('remitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
      // Connection errors surface on the commands that need them; don't crash on the event.
      redis.on('error', () => undefined);
      this.redis = redis as HitClient;
      return this.redis;
    });
    // A failure to load surfaces on the hits that wait for the client, not as an unhandled rejection.
    this.client.catch(() => undefined);
  }

  /** 'redis' while the circuit is closed, 'memory' while Redis is being bypassed. */
  get store(): 'redis' | 'memory' {
    return this.openedAt === null ? 'redis' : 'memory';
  }

  async hit(key: string): Promise<RateLimitDecision> {
    // While ioredis loads and the first connection is being made, the command waits (bounded by the
    // timeout); once a connection was lost, nothing is sent until a PING finds Redis again.
    const redis = this.redis;
    const status = redis?.status;
    if (this.openedAt === null && (status === 'reconnecting' || status === 'close' || status === 'end')) {
      this.trip(new Error(`Redis is ${status}`));
    }
    if (this.openedAt !== null) {
      this.probe();
      return this.fallback.hit(key);
    }
    const run = (client: HitClient) => client.remitHit(this.prefix + key, this.windowMs);
    try {
      const [count, ttl] = await this.withTimeout(redis ? run(redis) : this.client.then(run));
      return decision(this.limit, count, ttl);
    } catch (error) {
      this.trip(error);
      return this.fallback.hit(key);
    }
  }

  private withTimeout<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not answer within ${this.commandTimeoutMs} ms`)),
        this.commandTimeoutMs,
      );
    });
    // A late answer (or failure) of the losing command must not surface as an unhandled rejection.
    promise.catch(() => undefined);
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  private trip(reason: unknown): void {
    const wasClosed = this.openedAt === null;
    this.openedAt = Date.now();
    if (wasClosed) this.onStateChange('degraded', reason);
  }

  /** At most one PING at a time, and only once the retry delay has passed; requests never wait on it. */
  private probe(): void {
    if (this.probing || this.openedAt === null || Date.now() - this.openedAt < this.retryAfterMs) return;
    const redis = this.redis;
    if (redis?.status !== 'ready') return;
    this.probing = true;
    this.withTimeout(redis.ping())
      .then(
        () => {
          this.openedAt = null;
          this.onStateChange('healthy');
        },
        () => {
          this.openedAt = Date.now();
        },
      )
      .finally(() => {
        this.probing = false;
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.fallback.close();
    this.redis?.disconnect();
  }
}

export function createRateLimiter(options: {
  redisUrl?: string | undefined;
  max: number;
  windowS: number;
  onStateChange?: RedisLimiterOptions['onStateChange'];
}): RateLimiter {
  return options.redisUrl
    ? new RedisRateLimiter(options.redisUrl, options.max, options.windowS * 1000, {
        onStateChange: options.onStateChange,
      })
    : new MemoryRateLimiter(options.max, options.windowS * 1000);
}
