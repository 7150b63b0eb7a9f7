import { hash, verify } from '@node-rs/argon2';

/**
 * Password hashing: argon2id with OWASP's first recommended setting (19 MiB, 2 passes, 1 lane),
 * ≈ 20–90 ms here (docs/people.md#passwords). The parameters live in the stored hash, so raising them
 * later rehashes each password at its next successful sign-in (`needsRehash`).
 */
export const PASSWORD_HASH_OPTIONS = {
  algorithm: 2, // Algorithm.Argon2id (a const enum, which verbatimModuleSyntax cannot import)
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PASSWORD_HASH_OPTIONS);
}

/**
 * Whether `password` matches `stored`. With no stored hash (no such user, or a user without a password)
 * a dummy hash is checked instead, so the answer takes as long either way and timing tells nothing
 * about which emails exist.
 */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  const ok = await verify(stored ?? (await dummyHash()), password).catch(() => false);
  return Boolean(stored) && ok;
}

export function needsRehash(stored: string): boolean {
  return !stored.startsWith(
    `$argon2id$v=19$m=${PASSWORD_HASH_OPTIONS.memoryCost},t=${PASSWORD_HASH_OPTIONS.timeCost},p=${PASSWORD_HASH_OPTIONS.parallelism}$`,
  );
}

let dummy: Promise<string> | undefined;
function dummyHash(): Promise<string> {
  dummy ??= hashPassword('remit: no such password');
  return dummy;
}

/** What a new password must be (NIST SP 800-63B: length, not composition rules). */
export function passwordProblem(password: string, email?: string): string | null {
  if ([...password].length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if ([...password].length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  if (email && password.trim().toLowerCase() === email.trim().toLowerCase())
    return 'must not be your email address';
  return null;
}
