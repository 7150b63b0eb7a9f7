import type { Db } from '../../platform/db/client.ts';
import { asService } from '../../platform/db/session-role.ts';
import { TouchRecorder } from '../../platform/db/touch-recorder.ts';
import { touchLastUsed } from './api-keys.repository.ts';

/**
 * Keys' `last_used_at`, written off the request path at most once a minute per key. One statement for
 * the keys of every organization seen: the bypass (`asService`), by design.
 */
export class LastUsedRecorder extends TouchRecorder {
  constructor(db: Db, onError: (error: unknown) => void, flushEveryMs = 1000) {
    super((uids) => asService(() => touchLastUsed(db, uids)), onError, flushEveryMs);
  }
}
