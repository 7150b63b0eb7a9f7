import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { generateApiKey } from '../../src/modules/api-keys/api-key-format.ts';
import { issueApiKey } from '../../src/modules/api-keys/api-keys.service.ts';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import {
  createRateLimiter,
  MemoryRateLimiter,
  RedisRateLimiter,
} from '../../src/platform/http/rate-limit.ts';
import type { App } from '../../src/platform/http/types.ts';
import { createTestApp, secondInstance, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody, type CallResult } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { until } from '../helpers/until.ts';

const REDIS_URL = process.env.TEST_REDIS_URL;

/** A fresh full-access key of orgA's admin, so each test starts with an untouched quota. */
async function freshKey(t: TestApp, p: Principals): Promise<string> {
  const { key } = await issueApiKey(t.db, t.config.apiKeyPepper, {
    organizationUid: p.orgA.uid,
    userUid: p.orgA.admin.userUid,
    name: `rate ${crypto.randomUUID()}`,
    scopes: null,
  });
  return key;
}

function limits(res: CallResult) {
  const h = res.headers;
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
    expect(h[name], `${name} on ${res.status}`).toMatch(/^\d+$/);
  }
  return {
    limit: Number(h['ratelimit-limit']),
    remaining: Number(h['ratelimit-remaining']),
    reset: Number(h['ratelimit-reset']),
  };
}

function mistype(key: string): string {
  return key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
}

// One database for the file; other limiters run as further app instances over it.
let t: TestApp;
let p: Principals;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_S: '60' } });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

describe('per API key over HTTP (memory store, 3 per 60 s)', () => {
  it('headers on every authenticated response, errors included; the 4th request → 429 with Retry-After', async () => {
    const key = await freshKey(t, p);
    const ok = await call(t.app, 'GET', '/api/me', { key });
    expect(ok.status).toBe(200);
    expect(limits(ok)).toMatchObject({ limit: 3, remaining: 2 });
    expect(limits(ok).reset).toBeGreaterThanOrEqual(1);
    expect(limits(ok).reset).toBeLessThanOrEqual(60);

    const notFound = await call(t.app, 'DELETE', `/api/api-keys/${crypto.randomUUID()}`, { key });
    expectErrorBody(notFound, 404, 'not_found');
    expect(limits(notFound)).toMatchObject({ limit: 3, remaining: 1 });

    const forbidden = await call(t.app, 'GET', '/api/api-keys', {
      key,
      query: { organization_uid: p.orgB.uid },
    });
    expectErrorBody(forbidden, 403, 'not_a_member');
    expect(limits(forbidden)).toMatchObject({ limit: 3, remaining: 0 });

    const limited = await call(t.app, 'GET', '/api/me', { key });
    const body = expectErrorBody(limited, 429, 'rate_limited');
    expect(limits(limited)).toMatchObject({ limit: 3, remaining: 0 });
    const retryAfter = limited.headers['retry-after'];
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(Number(retryAfter)).toBe(limits(limited).reset);
    expect(body.message).toContain('3');

    // Still limited, on every route, POST included.
    expectErrorBody(await call(t.app, 'POST', '/api/api-keys', { key, body: { name: 'x' } }), 429);
    expectErrorBody(await call(t.app, 'GET', '/api/api-keys', { key }), 429);

    // Another key (even of the same user) has its own quota.
    const other = await freshKey(t, p);
    const otherRes = await call(t.app, 'GET', '/api/me', { key: other });
    expect(otherRes.status).toBe(200);
    expect(limits(otherRes)).toMatchObject({ limit: 3, remaining: 2 });
  });

  it('a missing-scope 403 carries the headers and spends quota', async () => {
    const scoped = await p.keyWithScopes(['invoices:read']);
    const res = await call(t.app, 'GET', '/api/api-keys', { key: scoped });
    expectErrorBody(res, 403, 'missing_scope');
    expect(limits(res)).toMatchObject({ limit: 3, remaining: 2 });
  });

  it("failed authentication spends the caller address's quota, never a key's", async () => {
    // A fresh limiter so this address's count starts at zero.
    const other = await secondInstance(t, { rateLimiter: new MemoryRateLimiter(3, 60_000) });
    try {
      const key = await freshKey(t, p);
      const attempts = [
        { authorization: `Bearer ${mistype(key)}` },
        { authorization: `Bearer ${generateApiKey()}` },
        { authorization: `bearer ${key}` },
        { authorization: `Bearer  ${key}` },
        {} as Record<string, string>,
      ];
      const statuses: number[] = [];
      for (const headers of attempts) {
        const res = await call(other.app, 'GET', '/api/me', { headers });
        statuses.push(res.status);
        expect(limits(res).limit).toBe(3);
        if (res.status === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        else expectErrorBody(res, 401, 'unauthorized');
      }
      // Guessing is slowed down per address…
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      // …while the key itself still has its whole quota.
      const res = await call(other.app, 'GET', '/api/me', { key });
      expect(res.status).toBe(200);
      expect(limits(res)).toMatchObject({ limit: 3, remaining: 2 });
    } finally {
      await other.close();
    }
  });

  it('an unknown route carries the headers too (counted per address)', async () => {
    const other = await secondInstance(t, { rateLimiter: new MemoryRateLimiter(3, 60_000) });
    try {
      const res = await call(other.app, 'GET', '/api/no-such-route', { key: p.orgA.admin.key });
      expectErrorBody(res, 404, 'route_not_found');
      expect(limits(res)).toMatchObject({ limit: 3, remaining: 2 });
    } finally {
      await other.close();
    }
  });

  it('public routes are not limited', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await call(t.app, 'GET', '/healthz');
      expect(res.status).toBe(200);
    }
  });

  it('a rate-limit store that is down does not take the API down: memory limits, with headers', async () => {
    // Nothing listens on port 1: the limiter falls back to counting in memory, so the limit still holds
    // (per instance), every answer keeps its RateLimit headers, and no request waits on Redis.
    const changes: string[] = [];
    const broken = new RedisRateLimiter('redis://127.0.0.1:1', 3, 60_000, {
      prefix: `remit:test:${crypto.randomUUID()}:`,
      onStateChange: (state) => changes.push(state),
    });
    const other = await secondInstance(t, { rateLimiter: broken });
    try {
      const key = await freshKey(t, p);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const started = Date.now();
        const res = await call(other.app, 'GET', '/api/me', { key });
        statuses.push(res.status);
        expect(limits(res).limit).toBe(3);
        // Bounded by the 100 ms command timeout, never by Redis reconnecting (seconds); the bound is
        // loose so that a busy machine cannot fail it.
        expect(Date.now() - started, `request ${i + 1}`).toBeLessThan(5000);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      expect(broken.store).toBe('memory');
      // The change of state is reported once, not once per request.
      expect(changes).toEqual(['degraded']);
    } finally {
      await other.close();
    }
  });
});

describe('window reset (RATE_LIMIT_WINDOW_S=1)', () => {
  let instance: { app: App; close(): Promise<void> };
  beforeAll(async () => {
    // The limiter the server builds from this configuration, in an instance over the same database.
    const config = loadConfig({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_S: '1' });
    instance = await secondInstance(t, {
      rateLimiter: createRateLimiter({ max: config.rateLimitMax, windowS: config.rateLimitWindowS }),
    });
  });
  afterAll(async () => instance?.close());

  it('after the window the key may call again', async () => {
    const key = await freshKey(t, p);
    // A fake clock: all four calls fall in one window however slow the machine is, and the window
    // ends when the clock is moved on, not after a real wait.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const statuses: number[] = [];
      let last!: CallResult;
      for (let i = 0; i < 4; i++) {
        last = await call(instance.app, 'GET', '/api/me', { key });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(last.headers['retry-after']).toBe('1');
      expect(limits(last).reset).toBe(1);

      vi.setSystemTime(Date.now() + 1_000);
      const again = await call(instance.app, 'GET', '/api/me', { key });
      expect(again.status).toBe(200);
      expect(limits(again)).toMatchObject({ limit: 3, remaining: 2 });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe.skipIf(!REDIS_URL)('Redis store shared by two instances', () => {
  const prefix = `remit:test:${crypto.randomUUID()}:`;
  let a: { app: App; close(): Promise<void> };
  let b: { app: App; close(): Promise<void> };
  beforeAll(async () => {
    // Two instances over the same database, each with its own client of the same Redis.
    a = await secondInstance(t, { rateLimiter: new RedisRateLimiter(REDIS_URL!, 3, 60_000, { prefix }) });
    b = await secondInstance(t, { rateLimiter: new RedisRateLimiter(REDIS_URL!, 3, 60_000, { prefix }) });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    const redis = new Redis(REDIS_URL!);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('2 requests on instance A and 2 on instance B: the 4th is 429', async () => {
    const key = await freshKey(t, p);
    const a1 = await call(a.app, 'GET', '/api/me', { key });
    const a2 = await call(a.app, 'GET', '/api/me', { key });
    const b1 = await call(b.app, 'GET', '/api/me', { key });
    const b2 = await call(b.app, 'GET', '/api/me', { key });
    const seen = [a1, a2, b1, b2].map((r) => `${r.status}/${String(r.headers['ratelimit-remaining'])}`);
    expect(seen).toEqual(['200/2', '200/1', '200/0', '429/0']);
    expect([a1, a2, b1].map((r) => limits(r).remaining)).toEqual([2, 1, 0]);
    expectErrorBody(b2, 429, 'rate_limited');
    expect(Number(b2.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Instance A sees the same exhausted quota; another key does not.
    expectErrorBody(await call(a.app, 'GET', '/api/me', { key }), 429);
    expect((await call(b.app, 'GET', '/api/me', { key: await freshKey(t, p) })).status).toBe(200);
  });
});

describe.skipIf(!REDIS_URL)(
  'the Redis store as the server makes it (createRateLimiter with REDIS_URL)',
  () => {
    let instance: { app: App; close(): Promise<void> };
    const uids: string[] = [];
    beforeAll(async () => {
      instance = await secondInstance(t, {
        rateLimiter: createRateLimiter({ redisUrl: REDIS_URL!, max: 3, windowS: 60 }),
      });
    });
    afterAll(async () => {
      await instance?.close();
      const redis = new Redis(REDIS_URL!);
      if (uids.length > 0) await redis.del(...uids.map((uid) => `remit:rl:${uid}`));
      await redis.quit();
    });

    it('counts each key in Redis: the 4th request is 429', async () => {
      const { row, key } = await issueApiKey(t.db, t.config.apiKeyPepper, {
        organizationUid: p.orgA.uid,
        userUid: p.orgA.admin.userUid,
        name: `rate ${crypto.randomUUID()}`,
        scopes: null,
      });
      uids.push(row.uid);
      const statuses: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await call(instance.app, 'GET', '/api/me', { key });
        statuses.push(`${res.status}/${String(res.headers['ratelimit-remaining'])}`);
      }
      expect(statuses).toEqual(['200/2', '200/1', '200/0', '429/0']);
      // In Redis, not in this instance's memory.
      const redis = new Redis(REDIS_URL!);
      try {
        expect(await redis.get(`remit:rl:${row.uid}`)).toBe('4');
      } finally {
        await redis.quit();
      }
    });
  },
);

describe('MemoryRateLimiter', () => {
  let limiter: MemoryRateLimiter | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await limiter?.close();
  });

  it('counts per key in a fixed window, then starts a fresh one', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2030-01-01T00:00:00Z'));
    limiter = new MemoryRateLimiter(2, 60_000);
    expect(await limiter.hit('a')).toEqual({ allowed: true, limit: 2, remaining: 1, resetSeconds: 60 });
    vi.advanceTimersByTime(30_500);
    expect(await limiter.hit('a')).toEqual({ allowed: true, limit: 2, remaining: 0, resetSeconds: 30 });
    expect(await limiter.hit('a')).toEqual({ allowed: false, limit: 2, remaining: 0, resetSeconds: 30 });
    expect(await limiter.hit('b')).toEqual({ allowed: true, limit: 2, remaining: 1, resetSeconds: 60 });
    // 1 ms before the end: still the same window, and the reset is never reported as 0.
    vi.setSystemTime(new Date('2030-01-01T00:00:59.999Z'));
    expect(await limiter.hit('a')).toEqual({ allowed: false, limit: 2, remaining: 0, resetSeconds: 1 });
    vi.setSystemTime(new Date('2030-01-01T00:01:00Z'));
    expect(await limiter.hit('a')).toEqual({ allowed: true, limit: 2, remaining: 1, resetSeconds: 60 });
  });
});

describe.skipIf(!REDIS_URL)('RedisRateLimiter', () => {
  const prefix = `remit:test:${crypto.randomUUID()}:`;
  let redis: Redis;
  const limiters: RedisRateLimiter[] = [];
  const make = (limit: number, windowMs: number) => {
    const l = new RedisRateLimiter(REDIS_URL!, limit, windowMs, { prefix });
    limiters.push(l);
    return l;
  };
  beforeAll(() => {
    redis = new Redis(REDIS_URL!);
  });
  afterAll(async () => {
    for (const l of limiters) await l.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('counts per key, sets the window on the first hit, and reports the reset', async () => {
    const limiter = make(2, 60_000);
    expect(await limiter.hit('k1')).toEqual({ allowed: true, limit: 2, remaining: 1, resetSeconds: 60 });
    expect(await limiter.hit('k1')).toMatchObject({ allowed: true, remaining: 0 });
    const third = await limiter.hit('k1');
    expect(third).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    expect(third.resetSeconds).toBeGreaterThanOrEqual(59);
    expect(third.resetSeconds).toBeLessThanOrEqual(60);
    expect(await limiter.hit('k2')).toMatchObject({ allowed: true, remaining: 1 });
    const ttl = await redis.pttl(`${prefix}k1`);
    expect(ttl).toBeGreaterThan(58_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await redis.get(`${prefix}k1`)).toBe('3');
  });

  it('connects even when start-up blocks the event loop right after construction', async () => {
    const limiter = make(5, 60_000);
    // Block right after the socket connects, while the client's handshake is in flight (reading the
    // private client, once ioredis is loaded, only to know when).
    const client = await (limiter as unknown as { client: Promise<Redis> }).client;
    if (client.status !== 'connect') await new Promise((resolve) => client.once('connect', resolve));
    const until = Date.now() + 700;
    while (Date.now() < until) {
      // Busy, as building the app is: the connection's handshake replies wait meanwhile.
    }
    expect(await limiter.hit('after-stall')).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('hits made before ioredis is loaded wait for the client, and count in Redis', async () => {
    const limiter = new RedisRateLimiter(REDIS_URL!, 2, 60_000, { prefix, commandTimeoutMs: 5000 });
    limiters.push(limiter);
    // ioredis is imported by the constructor: right after it, there is no client yet.
    expect((limiter as unknown as { redis: Redis | null }).redis).toBeNull();
    const hits = await Promise.all([limiter.hit('early'), limiter.hit('early'), limiter.hit('early')]);
    expect(hits.map((h) => h.allowed)).toEqual([true, true, false]);
    expect(limiter.store).toBe('redis');
    expect(await redis.get(`${prefix}early`)).toBe('3');
  });

  it('closed before ioredis is loaded: no client is made, and hits count in memory', async () => {
    const limiter = new RedisRateLimiter(REDIS_URL!, 2, 60_000, { prefix });
    await limiter.close();
    const client = (limiter as unknown as { client: Promise<Redis> }).client;
    await expect(client).rejects.toThrow(/closed/);
    expect((limiter as unknown as { redis: Redis | null }).redis).toBeNull();
    expect(await limiter.hit('closed')).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.store).toBe('memory');
  });

  it('the window expires', async () => {
    // Redis keeps the time here (the key's expiry): a window long enough that the first two hits
    // always share it, then hits until Redis has let it go.
    const limiter = make(1, 1000);
    expect((await limiter.hit('short')).allowed).toBe(true);
    const over = await limiter.hit('short');
    expect(over).toMatchObject({ allowed: false, resetSeconds: 1 });
    const next = await until(async () => {
      const hit = await limiter.hit('short');
      return hit.allowed && hit;
    }, 'the window to expire');
    expect(next).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('concurrent hits are counted atomically', async () => {
    const limiter = make(5, 60_000);
    const other = make(5, 60_000);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? limiter : other).hit('burst')),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
    expect(await redis.get(`${prefix}burst`)).toBe('12');
  });

  it('a counter left without expiry gets the window again (never limited forever)', async () => {
    await redis.set(`${prefix}stuck`, '7');
    const limiter = make(10, 60_000);
    expect(await limiter.hit('stuck')).toEqual({ allowed: true, limit: 10, remaining: 2, resetSeconds: 60 });
    const ttl = await redis.pttl(`${prefix}stuck`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});

describe('TRUST_PROXY: which address a failed request is counted against', () => {
  const attempt = (app: App, forwardedFor: string, remoteAddress = '127.0.0.1') =>
    app.inject({
      method: 'GET',
      url: '/api/me',
      remoteAddress,
      headers: { authorization: `Bearer ${generateApiKey()}`, 'x-forwarded-for': forwardedFor },
    });

  const instanceWith = async (env: Record<string, string>) => {
    const config = loadConfig({ RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_S: '60', ...env });
    const app = await buildApp(
      { ...t.deps, config, rateLimiter: new MemoryRateLimiter(2, 60_000) },
      { logger: false },
    );
    await app.ready();
    return app;
  };

  it('off (default): X-Forwarded-For is ignored, so clients behind one proxy share its bucket', async () => {
    const app = await instanceWith({});
    try {
      expect((await attempt(app, '203.0.113.1')).statusCode).toBe(401);
      expect((await attempt(app, '203.0.113.1')).statusCode).toBe(401);
      // Another client "behind" the same address: the address's bucket is spent.
      expect((await attempt(app, '203.0.113.2')).statusCode).toBe(429);
    } finally {
      await app.close();
    }
  });

  it('set to the proxy: each client has its own bucket; a header from an untrusted peer is not believed', async () => {
    const app = await instanceWith({ TRUST_PROXY: '127.0.0.1' });
    try {
      expect((await attempt(app, '203.0.113.1')).statusCode).toBe(401);
      expect((await attempt(app, '203.0.113.1')).statusCode).toBe(401);
      expect((await attempt(app, '203.0.113.1')).statusCode).toBe(429);
      expect((await attempt(app, '203.0.113.2')).statusCode).toBe(401);
      // A peer that is not the proxy cannot choose its bucket by sending the header.
      expect((await attempt(app, '203.0.113.9', '198.51.100.7')).statusCode).toBe(401);
      expect((await attempt(app, '203.0.113.10', '198.51.100.7')).statusCode).toBe(401);
      expect((await attempt(app, '203.0.113.11', '198.51.100.7')).statusCode).toBe(429);
    } finally {
      await app.close();
    }
  });

  it('configuration: true, a hop count or addresses/CIDRs; anything else is refused', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
    ]);
    expect(() => loadConfig({ TRUST_PROXY: 'my proxy' })).toThrow(/TRUST_PROXY/);
  });
});
