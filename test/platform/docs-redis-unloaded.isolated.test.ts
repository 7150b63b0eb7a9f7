import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/platform/http/rate-limit.ts';
import { createTestApp } from '../helpers/app.ts';

// In a process of its own (*.isolated.test.ts): in a shared test worker another file may already have
// loaded Swagger UI or ioredis for its own reasons.
const loaded = (pattern: RegExp) =>
  Object.keys(createRequire(import.meta.url).cache).filter((file) => pattern.test(file));
const SWAGGER_UI = /node_modules[\\/]@fastify[\\/]swagger-ui[\\/]/;
const IOREDIS = /node_modules[\\/]ioredis[\\/]/;

describe('loaded on first use only', () => {
  it('Swagger UI: not when the app is built, but on the first request for the docs', async () => {
    const t = await createTestApp();
    try {
      expect(loaded(SWAGGER_UI)).toEqual([]);
      expect((await t.app.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(200);
      expect(loaded(SWAGGER_UI).length).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it('ioredis: not for the in-memory rate limiter, but as soon as a Redis URL is configured', async () => {
    const memory = createRateLimiter({ max: 2, windowS: 60 });
    expect((await memory.hit('k')).remaining).toBe(1);
    await memory.close();
    expect(loaded(IOREDIS)).toEqual([]);

    // Nothing listens on port 1: the limiter counts in memory, as it does whenever Redis fails.
    const redis = createRateLimiter({ redisUrl: 'redis://127.0.0.1:1', max: 2, windowS: 60 });
    try {
      expect(await redis.hit('k')).toMatchObject({ limit: 2, remaining: 1 });
      expect(loaded(IOREDIS).length).toBeGreaterThan(0);
    } finally {
      await redis.close();
    }
  });
});
