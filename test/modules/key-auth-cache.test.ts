import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeyAuthCache } from '../../src/modules/api-keys/key-auth-cache.ts';
import type { Principal } from '../../src/platform/http/context.ts';

const principal = (name: string): Principal => ({
  credential: { kind: 'api_key', uid: `key-${name}`, organizationUid: 'org' },
  scopes: null,
  user: { uid: `user-${name}`, id: 1, email: `${name}@example.test`, fullName: name, avatarUrl: null },
  memberships: [{ organizationUid: 'org', organizationName: 'Org', role: 'admin', isDefault: true }],
});

const listening = (ttlMs = 10_000) => {
  const cache = new KeyAuthCache(ttlMs);
  cache.live(true);
  return cache;
};

afterEach(() => {
  vi.useRealTimers();
});

describe('KeyAuthCache', () => {
  it('holds a principal read while nothing changed, frozen', () => {
    const cache = listening();
    cache.set('h', cache.mark(), principal('a'), null);
    const held = cache.get('h')!;
    expect(held.user.fullName).toBe('a');
    expect(Object.isFrozen(held) && Object.isFrozen(held.memberships[0])).toBe(true);
  });

  it('never stores a read that a change overtook', () => {
    const cache = listening();
    const readAt = cache.mark();
    cache.notify(); // the change commits while the read is in flight
    cache.set('h', readAt, principal('stale'), null);
    expect(cache.get('h')).toBeUndefined();
  });

  it('forgets everything on a change', () => {
    const cache = listening();
    cache.set('a', cache.mark(), principal('a'), null);
    cache.set('b', cache.mark(), principal('b'), null);
    cache.notify();
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('serves and stores nothing while not listening, and forgets when listening stops or starts', () => {
    const cache = new KeyAuthCache(10_000);
    cache.set('h', cache.mark(), principal('a'), null);
    expect(cache.get('h')).toBeUndefined();
    cache.live(true);
    cache.set('h', cache.mark(), principal('a'), null);
    expect(cache.get('h')).toBeDefined();
    cache.live(false);
    expect(cache.get('h')).toBeUndefined();
    cache.live(true);
    expect(cache.get('h')).toBeUndefined();
  });

  it('an entry lasts the TTL at most, and never past its key’s expiry', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-11-26T00:00:00Z') });
    const cache = listening(10_000);
    cache.set('long', cache.mark(), principal('long'), null);
    cache.set('expiring', cache.mark(), principal('expiring'), new Date('2026-11-26T00:00:03Z'));
    vi.setSystemTime(new Date('2026-11-26T00:00:02.999Z'));
    expect(cache.get('expiring')).toBeDefined();
    vi.setSystemTime(new Date('2026-11-26T00:00:03Z'));
    expect(cache.get('expiring')).toBeUndefined();
    expect(cache.get('long')).toBeDefined();
    vi.setSystemTime(new Date('2026-11-26T00:00:10Z'));
    expect(cache.get('long')).toBeUndefined();
  });

  it('stays bounded', () => {
    const cache = new KeyAuthCache(10_000, 3);
    cache.live(true);
    for (const name of ['a', 'b', 'c', 'd']) cache.set(name, cache.mark(), principal(name), null);
    expect(cache.size).toBeLessThanOrEqual(3);
    expect(cache.get('d')).toBeDefined();
  });
});
