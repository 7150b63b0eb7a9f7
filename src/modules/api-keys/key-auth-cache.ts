import { deepFreeze } from '../../platform/deep-freeze.ts';
import type { Principal } from '../../platform/http/context.ts';
import type { ChannelListener, Notifications } from '../../platform/db/notifications.ts';

/** The channel the triggers of migration 0015 notify when anything authentication reads changes. */
export const AUTH_CHANGES_CHANNEL = 'remit_auth';

interface Entry {
  generation: number;
  validUntil: number;
  principal: Principal;
}

/**
 * The principals of API keys this process has just authenticated, so a key's next requests skip the
 * database (docs/performance.md#authentication-cache). Correct only while it hears every change:
 *
 * - Any change to a key, its user or the user's memberships NOTIFYs `remit_auth` (migration 0015);
 *   every notification forgets everything. The connection that commits the change hears it before its
 *   COMMIT returns, so within this process the change holds from the next request on; other processes
 *   hear it as soon as PostgreSQL delivers it (milliseconds).
 * - A read that started before a change and ends after it is never stored (the generation moved).
 * - While notifications are not being received (not yet listening, connection lost), nothing is served
 *   or stored; regaining them forgets everything again.
 * - An entry lasts at most `ttlMs` (a bound should a notification ever be missed) and never past its
 *   key's expiry.
 */
export class KeyAuthCache implements ChannelListener {
  private generation = 0;
  private listening = false;
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 50_000,
  ) {}

  /** The principal of a key hash, when held and still valid. */
  get(keyHash: string): Principal | undefined {
    if (!this.listening) return undefined;
    const entry = this.entries.get(keyHash);
    if (!entry) return undefined;
    if (entry.generation === this.generation && Date.now() < entry.validUntil) return entry.principal;
    this.entries.delete(keyHash);
    return undefined;
  }

  /** Taken before the database read whose result `set` may store. */
  mark(): number {
    return this.generation;
  }

  set(keyHash: string, readAt: number, principal: Principal, keyExpiresAt: Date | null): void {
    if (!this.listening || readAt !== this.generation) return;
    const validUntil = Math.min(Date.now() + this.ttlMs, keyExpiresAt?.getTime() ?? Infinity);
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    // Frozen: every request of the key shares it.
    this.entries.set(keyHash, { generation: readAt, validUntil, principal: deepFreeze(principal) });
  }

  /** Forgets everything. */
  notify(): void {
    this.generation += 1;
    this.entries.clear();
  }

  live(isLive: boolean): void {
    this.notify();
    this.listening = isLive;
  }

  get size(): number {
    return this.entries.size;
  }

  get isLive(): boolean {
    return this.listening;
  }
}

/**
 * The cache of one server, listening for changes; none when `ttlS` is 0. It serves once the database
 * connection that hears changes is up (in the background: a start never waits for it).
 */
export function startKeyAuthCache(
  notifications: Notifications,
  ttlS: number,
): { cache: KeyAuthCache; stop: () => void } | null {
  if (ttlS <= 0) return null;
  const cache = new KeyAuthCache(ttlS * 1000);
  const stop = notifications.listen(AUTH_CHANGES_CHANNEL, cache);
  return { cache, stop };
}
