import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRateLimiter } from '../../src/platform/http/rate-limit.ts';
import { freePort } from '../helpers/processes.ts';
import { until } from '../helpers/until.ts';

/**
 * Redis trouble with a real redis-server that this test starts, freezes (SIGSTOP), thaws, kills and
 * restarts: the limiter must keep answering from memory, with its headers, without waiting on Redis,
 * report each change of state once, and go back to Redis when it answers again.
 */
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
if (!hasRedisServer) console.log('redis-outage tests skipped: no redis-server on this machine');

/** Waits for the limiter's state (a plain condition), with the kit's one deadline. */
const untilTrue = (check: () => boolean, what: string) => until(async () => check(), what);

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

// Steps of one story on one Redis process, in this order (also when the suite runs shuffled): frozen,
// thawed, killed and restarted.
describe.skipIf(!hasRedisServer)('rate limits while Redis is frozen or down', { shuffle: false }, () => {
  let port: number;
  let redis: ChildProcess;
  let limiter: RedisRateLimiter;
  const changes: string[] = [];

  const startRedis = async () => {
    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    const deadline = Date.now() + 10_000;
    while (!(await answers(port))) {
      if (Date.now() > deadline) throw new Error('redis-server did not start');
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  beforeAll(async () => {
    port = await freePort();
    await startRedis();
    limiter = new RedisRateLimiter(`redis://127.0.0.1:${port}`, 5, 60_000, {
      prefix: `remit:outage:${crypto.randomUUID()}:`,
      // 1 s, not 100 ms: on a loaded machine the first command (loading the script) took longer than
      // 100 ms, tripped the circuit before the test began and left an extra hit in memory.
      commandTimeoutMs: 1000,
      // Long enough that the ten hits below all fall inside one open circuit; the later tests poll.
      retryAfterMs: 2000,
      onStateChange: (state) => changes.push(state),
    });
    await untilTrue(() => limiter.store === 'redis', 'the first connection');
    expect((await limiter.hit('k')).remaining).toBe(4);
    expect(limiter.store).toBe('redis');
    expect(changes).toEqual([]);
  });

  afterAll(async () => {
    await limiter?.close();
    redis?.kill('SIGCONT');
    redis?.kill('SIGKILL');
  });

  it('frozen (SIGSTOP): one hit waits out the short timeout, the rest answer from memory at once', async () => {
    redis.kill('SIGSTOP');
    const first = Date.now();
    const tripped = await limiter.hit('k');
    // Bounded by the 1 s command timeout, not by a TCP or reconnect timeout (10 s and more); the
    // bound is loose so that a busy machine cannot fail it.
    expect(Date.now() - first).toBeLessThan(5000);
    expect(tripped).toMatchObject({ allowed: true, limit: 5 });
    expect(limiter.store).toBe('memory');
    expect(changes).toEqual(['degraded']);
    // While the circuit is open no hit is sent to Redis: each answers from memory.
    const decisions = [];
    for (let i = 0; i < 10; i++) decisions.push(await limiter.hit('k'));
    expect(decisions.map((d) => d.allowed)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(decisions.every((d) => d.limit === 5 && d.resetSeconds >= 1)).toBe(true);
    expect(changes).toEqual(['degraded']);
  });

  it('thawed (SIGCONT): a background PING finds it, and hits count in Redis again', async () => {
    redis.kill('SIGCONT');
    await untilTrue(() => {
      void limiter.hit('probe');
      return limiter.store === 'redis';
    }, 'the circuit to close');
    expect(changes).toEqual(['degraded', 'healthy']);
    // Back on Redis: a fresh key counts from the start there.
    expect((await limiter.hit('after-thaw')).remaining).toBe(4);
  });

  it('killed: hits answer from memory at once; restarted: back to Redis', async () => {
    redis.kill('SIGKILL');
    await new Promise((r) => redis.once('exit', r));
    await untilTrue(() => {
      void limiter.hit('down');
      return limiter.store === 'memory';
    }, 'the circuit to open');
    const started = Date.now();
    const decision = await limiter.hit('down-2');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(decision).toMatchObject({ allowed: true, limit: 5, remaining: 4 });
    expect(changes).toEqual(['degraded', 'healthy', 'degraded']);

    await startRedis();
    await untilTrue(() => {
      void limiter.hit('probe-2');
      return limiter.store === 'redis';
    }, 'the circuit to close after the restart');
    expect(changes).toEqual(['degraded', 'healthy', 'degraded', 'healthy']);
  });
});
