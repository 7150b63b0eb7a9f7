import type { DbOrTx } from '../../platform/db/client.ts';
import { asService } from '../../platform/db/session-role.ts';
import { AppError } from '../../platform/http/errors.ts';
import { clearThrottle, readThrottle, writeThrottle, type ThrottleRow } from './sign-in.repository.ts';

/**
 * Growing delays for sign-in and for the emails a person can ask for (docs/people.md#throttling). Each
 * bucket allows `free` failures; every failure past that blocks the bucket for twice as long as the
 * last (1 s, 2 s, 4 s … up to `maxDelayS`). A bucket with no failure for an hour starts again. Buckets
 * live in the database, so every instance counts the same failures.
 */
export interface ThrottlePolicy {
  free: number;
  maxDelayS: number;
}

export const POLICIES = {
  /** Per account (the normalized email, whether or not it has an account: the answer tells nothing). */
  account: { free: 5, maxDelayS: 900 },
  /** Per client address: more room, as many people may share one. */
  address: { free: 20, maxDelayS: 900 },
  /** Emails asked for (password reset, sign-in link) per address they go to… */
  mail: { free: 3, maxDelayS: 3600 },
  /** … and per client address asking. */
  mailRequests: { free: 20, maxDelayS: 3600 },
} satisfies Record<string, ThrottlePolicy>;

const FORGET_AFTER_MS = 60 * 60 * 1000;

export interface Bucket {
  name: string;
  policy: ThrottlePolicy;
}

export const accountBucket = (email: string): Bucket => ({
  name: `account:${email}`,
  policy: POLICIES.account,
});
export const addressBucket = (ip: string): Bucket => ({ name: `address:${ip}`, policy: POLICIES.address });
export const mailBucket = (email: string): Bucket => ({ name: `mail:${email}`, policy: POLICIES.mail });
export const mailRequestsBucket = (ip: string): Bucket => ({
  name: `mail-requests:${ip}`,
  policy: POLICIES.mailRequests,
});

/** 429 with Retry-After when any bucket is blocked at `now`. */
export async function assertNotThrottled(db: DbOrTx, buckets: Bucket[], now = new Date()): Promise<void> {
  const rows = await asService(() =>
    readThrottle(
      db,
      buckets.map((b) => b.name),
    ),
  );
  const until = Math.max(0, ...rows.map((r) => r.blockedUntil?.getTime() ?? 0));
  if (until > now.getTime()) {
    const seconds = Math.ceil((until - now.getTime()) / 1000);
    const error = new AppError('rate_limited', `Too many attempts; try again in ${seconds} s`);
    error.retryAfterS = seconds;
    throw error;
  }
}

/** The bucket's state after one more failure at `now`. */
export function afterFailure(row: ThrottleRow | undefined, bucket: Bucket, now: Date): ThrottleRow {
  const stale = !row || now.getTime() - row.lastFailedAt.getTime() > FORGET_AFTER_MS;
  const failures = (stale ? 0 : row.failures) + 1;
  const over = failures - bucket.policy.free;
  const delayS = over > 0 ? Math.min(2 ** (over - 1), bucket.policy.maxDelayS) : 0;
  return {
    bucket: bucket.name,
    failures,
    lastFailedAt: now,
    blockedUntil: delayS > 0 ? new Date(now.getTime() + delayS * 1000) : null,
  };
}

export async function recordFailure(db: DbOrTx, buckets: Bucket[], now = new Date()): Promise<void> {
  await asService(async () => {
    const rows = await readThrottle(
      db,
      buckets.map((b) => b.name),
    );
    for (const bucket of buckets) {
      await writeThrottle(
        db,
        afterFailure(
          rows.find((r) => r.bucket === bucket.name),
          bucket,
          now,
        ),
      );
    }
  });
}

export async function forgive(db: DbOrTx, bucket: Bucket): Promise<void> {
  await asService(() => clearThrottle(db, bucket.name));
}
