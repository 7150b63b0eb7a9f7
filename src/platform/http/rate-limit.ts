import { Redis } from 'ioredis';

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

/** The longest a Redis hit may hold a request before it is allowed without counting. */
const HIT_TIMEOUT_MS = 500;

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly prefix = 'remit:rl:',
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false });
    this.redis.defineCommand('remitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    // Connection errors surface on the commands that need them; don't crash on the event.
    this.redis.on('error', () => undefined);
  }

  /**
   * Fails fast when Redis is unreachable, and auth.ts then lets the request through (fail open). A hit
   * used to wait in ioredis's offline queue for the next reconnect attempt, whose back-off grows to 5 s:
   * while Redis was down every request stalled for seconds. (Not ioredis's `commandTimeout`: that also
   * times out the connection handshake, which breaks the connection when start-up blocks the event loop.)
   */
  async hit(key: string): Promise<RateLimitDecision> {
    if (this.redis.status === 'reconnecting' || this.redis.status === 'close') {
      throw new Error('Redis rate-limit store is not connected');
    }
    const runner = this.redis as unknown as {
      remitHit(key: string, windowMs: number): Promise<[number, number]>;
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('Redis rate-limit store did not answer in time')),
        HIT_TIMEOUT_MS,
      );
    });
    try {
      const [count, ttl] = await Promise.race([runner.remitHit(this.prefix + key, this.windowMs), timeout]);
      return decision(this.limit, count, ttl);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}

export function createRateLimiter(options: {
  redisUrl?: string | undefined;
  max: number;
  windowS: number;
}): RateLimiter {
  return options.redisUrl
    ? new RedisRateLimiter(options.redisUrl, options.max, options.windowS * 1000)
    : new MemoryRateLimiter(options.max, options.windowS * 1000);
}
