import crypto from 'node:crypto';
import * as OTPAuth from 'otpauth';
import type { Config } from '../../config.ts';
import type { Database, Db, DbOrTx } from '../../platform/db/client.ts';
import { asService } from '../../platform/db/session-role.ts';
import { TouchRecorder } from '../../platform/db/touch-recorder.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import type { Principal } from '../../platform/http/context.ts';
import { resolveMembership } from '../../platform/http/context.ts';
import type { MailTransports } from '../../platform/mail/mailer.ts';
import type { SecretBox } from '../../platform/secrets/secret-box.ts';
import {
  cachedMemberships,
  principalUser,
  type AuthenticationResult,
  type MembershipCache,
} from '../api-keys/api-keys.service.ts';
import { normalizeEmail } from '../tenancy/tenancy.service.ts';
import { hashPassword, needsRehash, passwordProblem, verifyPassword } from './passwords.ts';
import * as repo from './sign-in.repository.ts';
import {
  accountBucket,
  addressBucket,
  assertNotThrottled,
  forgive,
  mailBucket,
  mailRequestsBucket,
  recordFailure,
} from './sign-in-throttle.ts';
import { sendSystemMail } from './system-mail.ts';
import { hashSecretToken, newSecretToken } from './secret-tokens.ts';

/** What the sign-in use cases need from the app. */
export interface SignInDeps {
  database: Database;
  config: Pick<Config, 'people' | 'publicBaseUrl' | 'mailFrom'>;
  secrets: SecretBox;
  mail: MailTransports;
}

export type SessionMethod = 'password' | 'sign_in_link' | 'invitation';

export interface ClientInfo {
  ip: string;
  userAgent: string | undefined;
}

// One message for every sign-in failure, so no answer says whether an email has an account.
const invalidCredentials = () => new AppError('invalid_credentials', 'The email or password is not right');

// ---------------------------------------------------------------------------------------------------
// Authentication of a request by its session cookie

/** Turns a session cookie's token into a principal (auth.ts calls this for cookie requests). */
export async function authenticateSession(
  database: Database,
  idleSeconds: number,
  token: string,
  cache: MembershipCache,
): Promise<AuthenticationResult> {
  if (token.length < 40 || token.length > 64 || !/^[\w-]+$/.test(token))
    return { ok: false, reason: 'malformed' };
  const hash = hashSecretToken(token);
  const cached = cache.get(hash);
  const row = await repo.findSessionForAuthentication(database, hash, cached?.version ?? -1, idleSeconds);
  if (!row || !crypto.timingSafeEqual(Buffer.from(row.token_hash), Buffer.from(hash))) {
    return { ok: false, reason: 'unknown' };
  }
  if (row.is_revoked) return { ok: false, reason: 'revoked' };
  if (row.is_expired) return { ok: false, reason: 'expired' };
  const memberships = cachedMemberships(cache, hash, row);
  return {
    ok: true,
    principal: {
      credential: {
        kind: 'session',
        uid: row.session_uid,
        organizationUid:
          memberships.length > 0 ? resolveMembership({ memberships } as Principal).organizationUid : null,
      },
      scopes: null,
      user: principalUser(row),
      memberships,
      // How this session was established, not whether the person has TOTP now: a password-only
      // session opened before TOTP was turned on elsewhere must not pass for a second-factor one.
      secondFactor: row.second_factor,
      totpEnabled: row.totp_enabled,
    },
  };
}

/** Sessions' `last_seen_at` (their idle clock), written off the request path at most once a minute each. */
export class SessionActivityRecorder extends TouchRecorder {
  constructor(db: Db, onError: (error: unknown) => void, flushEveryMs = 1000) {
    super((uids) => asService(() => repo.touchSessions(db, uids)), onError, flushEveryMs);
  }
}

// ---------------------------------------------------------------------------------------------------
// Sessions

export interface NewSession {
  token: string;
  session: repo.SessionRow;
  user: { uid: string; email: string; fullName: string; totpEnabled: boolean };
}

/** Opens a session for the user (after whatever proved who they are). */
export async function openSession(
  deps: SignInDeps,
  userUid: string,
  method: SessionMethod,
  client: ClientInfo,
  secondFactor: boolean,
): Promise<NewSession> {
  const { token, tokenHash } = newSecretToken();
  return asService(async () => {
    const user = await repo.findSignInUser(deps.database.db, { uid: userUid });
    if (!user) throw notFound('User');
    const session = await repo.insertSession(deps.database.db, {
      userUid,
      tokenHash,
      expiresAt: new Date(Date.now() + deps.config.people.sessionMaxAgeS * 1000),
      ipAddress: client.ip,
      userAgent: client.userAgent?.slice(0, 512) ?? null,
      method,
      secondFactorAt: secondFactor ? new Date() : null,
    });
    return {
      token,
      session,
      user: {
        uid: user.uid,
        email: user.email,
        fullName: user.fullName,
        totpEnabled: user.totpEnabledAt !== null,
      },
    };
  });
}

/**
 * The second factor, when the user has one: a current six-digit code, accepted once. Missing → 401
 * `second_factor_required` (the password was right: the client asks for the code and sends both again).
 */
async function checkSecondFactor(
  db: DbOrTx,
  deps: SignInDeps,
  user: repo.SignInUser,
  code: string | undefined,
): Promise<boolean> {
  if (!user.totpEnabledAt || !user.totpSecret) return false;
  if (!code) {
    throw new AppError('second_factor_missing', 'Enter the six-digit code from your authenticator app', [
      { field: 'totp_code', message: 'required for this account' },
    ]);
  }
  if (!(await acceptTotpCode(db, deps, user, code))) {
    throw new AppError(
      'invalid_credentials',
      'The code is not right, or was already used; wait for the next one',
    );
  }
  return true;
}

export interface PasswordSignIn {
  email: string;
  password: string;
  totpCode?: string | undefined;
}

export async function signInWithPassword(
  deps: SignInDeps,
  input: PasswordSignIn,
  client: ClientInfo,
): Promise<NewSession> {
  const db = deps.database.db;
  const email = normalizeEmail(input.email);
  const buckets = [accountBucket(email), addressBucket(client.ip)];
  await assertNotThrottled(db, buckets);
  const user = await asService(() => repo.findSignInUser(db, { email }));
  // Verified against a dummy hash when there is no user or no password: the same time either way.
  if (!(await verifyPassword(user?.passwordHash, input.password)) || !user) {
    await recordFailure(db, buckets);
    throw invalidCredentials();
  }
  let secondFactor: boolean;
  try {
    secondFactor = await checkSecondFactor(db, deps, user, input.totpCode);
  } catch (error) {
    if ((error as AppError).code === 'invalid_credentials') await recordFailure(db, buckets);
    throw error;
  }
  await forgive(db, buckets[0]!);
  if (needsRehash(user.passwordHash!)) {
    const rehashed = await hashPassword(input.password);
    await asService(() => repo.updateCredentials(db, user.uid, { passwordHash: rehashed }));
  }
  return openSession(deps, user.uid, 'password', client, secondFactor);
}

export async function signOut(database: Database, principal: Principal): Promise<void> {
  if (principal.credential.kind !== 'session') return;
  await asService(() => repo.revokeSession(database.db, principal.user.uid, principal.credential.uid));
}

export async function listSessions(deps: SignInDeps, principal: Principal) {
  const rows = await asService(() =>
    repo.listActiveSessions(deps.database.db, principal.user.uid, deps.config.people.sessionIdleS),
  );
  return rows.map((row) => sessionView(deps, row, principal));
}

export function sessionView(deps: SignInDeps, row: repo.SessionRow, principal?: Principal) {
  const idleEnds = new Date(row.lastSeenAt.getTime() + deps.config.people.sessionIdleS * 1000);
  return {
    uid: row.uid,
    created_at: row.createdAt,
    last_seen_at: row.lastSeenAt,
    // Whichever comes first: the absolute end, or the idle end if nothing is done until then.
    expires_at: idleEnds < row.expiresAt ? idleEnds : row.expiresAt,
    ip_address: row.ipAddress,
    user_agent: row.userAgent,
    method: row.method,
    revoked_at: row.revokedAt,
    current: principal?.credential.kind === 'session' && principal.credential.uid === row.uid,
  };
}

/** The session the request came with (authentication has just found it open). */
export async function currentSession(deps: SignInDeps, principal: Principal) {
  const row = await asService(() =>
    repo.findSession(deps.database.db, principal.user.uid, principal.credential.uid),
  );
  if (!row) throw notFound('Session');
  return sessionView(deps, row, principal);
}

/** Revokes one of the caller's own sessions; another user's is 404. */
export async function revokeOwnSession(deps: SignInDeps, principal: Principal, uid: string) {
  const row = await asService(() => repo.revokeSession(deps.database.db, principal.user.uid, uid));
  if (!row) throw notFound('Session');
  return sessionView(deps, row, principal);
}

/** Signs the user out everywhere: every session, the current one too unless `keepCurrent`. */
export async function revokeAllSessions(deps: SignInDeps, principal: Principal, keepCurrent: boolean) {
  const except =
    keepCurrent && principal.credential.kind === 'session' ? principal.credential.uid : undefined;
  return asService(() => repo.revokeUserSessions(deps.database.db, principal.user.uid, except));
}

// ---------------------------------------------------------------------------------------------------
// Passwords

function assertPassword(password: string, email: string, field = 'password') {
  const problem = passwordProblem(password, email);
  if (problem) throw validationFailed(field, `The password ${problem}`);
}

/** Sets a user's password (invitation acceptance, reset, change); their other sessions end. */
export async function setPassword(deps: SignInDeps, userUid: string, email: string, password: string) {
  assertPassword(password, email);
  const passwordHash = await hashPassword(password);
  await asService(() =>
    deps.database.db.transaction(async (tx) => {
      await repo.updateCredentials(tx, userUid, { passwordHash, passwordChangedAt: new Date() });
      await repo.revokeUserSessions(tx, userUid);
      await repo.dropUnusedTokens(tx, userUid, 'password_reset');
    }),
  );
}

export async function changePassword(
  deps: SignInDeps,
  principal: Principal,
  input: { currentPassword: string; newPassword: string },
  client: ClientInfo,
): Promise<NewSession | null> {
  const db = deps.database.db;
  const user = await asService(() => repo.findSignInUser(db, { uid: principal.user.uid }));
  const buckets = [accountBucket(principal.user.email), addressBucket(client.ip)];
  await assertNotThrottled(db, buckets);
  if (!(await verifyPassword(user?.passwordHash, input.currentPassword))) {
    await recordFailure(db, buckets);
    throw new AppError('invalid_credentials', 'The current password is not right', [
      { field: 'current_password', message: 'is not right' },
    ]);
  }
  // Named as the body names it (setPassword below checks it again, as `password`, for its other callers).
  assertPassword(input.newPassword, principal.user.email, 'new_password');
  await setPassword(deps, principal.user.uid, principal.user.email, input.newPassword);
  // Every session ended with the change; the one that made it goes on as a new one.
  return principal.credential.kind === 'session'
    ? openSession(deps, principal.user.uid, 'password', client, principal.secondFactor === true)
    : null;
}

// ---------------------------------------------------------------------------------------------------
// Emailed links: password reset and sign-in link

async function emailLink(
  deps: SignInDeps,
  kind: 'password_reset' | 'sign_in_link',
  rawEmail: string,
  client: ClientInfo,
): Promise<void> {
  const db = deps.database.db;
  const email = normalizeEmail(rawEmail);
  const buckets = [mailBucket(email), mailRequestsBucket(client.ip)];
  await assertNotThrottled(db, buckets);
  // Counted whether or not the address has an account, so the throttle tells nothing either.
  await recordFailure(db, buckets);
  const user = await asService(() => repo.findSignInUser(db, { email }));
  if (!user) return;
  const { token, tokenHash } = newSecretToken();
  const ttlS =
    kind === 'password_reset' ? deps.config.people.passwordResetTtlS : deps.config.people.signInLinkTtlS;
  await asService(() =>
    db.transaction(async (tx) => {
      await repo.dropUnusedTokens(tx, user.uid, kind);
      await repo.insertToken(tx, {
        userUid: user.uid,
        kind,
        tokenHash,
        expiresAt: new Date(Date.now() + ttlS * 1000),
      });
    }),
  );
  const minutes = Math.round(ttlS / 60);
  const link =
    kind === 'password_reset'
      ? `${deps.config.publicBaseUrl}/reset-password?token=${token}`
      : `${deps.config.publicBaseUrl}/sign-in-link?token=${token}`;
  await sendSystemMail(
    { config: deps.config, mail: deps.mail },
    kind === 'password_reset'
      ? {
          to: user.email,
          subject: 'Reset your Remit password',
          text:
            `Someone (hopefully you) asked to set a new password for ${user.email} on Remit.\n\n` +
            `Set it here within ${minutes} minutes:\n${link}\n\n` +
            'The link works once. If you did not ask for it, ignore this email: your password stays as it is.\n',
        }
      : {
          to: user.email,
          subject: 'Your Remit sign-in link',
          text:
            `Sign in to Remit as ${user.email} within ${minutes} minutes:\n${link}\n\n` +
            'The link works once. If you did not ask for it, ignore this email.\n',
        },
  );
}

export const requestPasswordReset = (deps: SignInDeps, email: string, client: ClientInfo) =>
  emailLink(deps, 'password_reset', email, client);
export const requestSignInLink = (deps: SignInDeps, email: string, client: ClientInfo) =>
  emailLink(deps, 'sign_in_link', email, client);

function linkRefused(refused: 'unknown' | 'used' | 'expired', what: string): AppError {
  if (refused === 'used')
    return new AppError('token_used', `This ${what} link was already used; ask for a new one`);
  if (refused === 'expired')
    return new AppError('token_expired', `This ${what} link has expired; ask for a new one`);
  return new AppError('invalid_token', `This ${what} link is not valid; ask for a new one`);
}

export async function resetPassword(deps: SignInDeps, token: string, password: string): Promise<void> {
  const db = deps.database.db;
  // Checked before the token is used up, so a too-short password does not cost the link.
  const owner = await asService(() =>
    db.transaction(async (tx) => {
      const used = await repo.consumeToken(tx, 'password_reset', hashSecretToken(token));
      if ('refused' in used) throw linkRefused(used.refused, 'password reset');
      const user = await repo.findSignInUser(tx, { uid: used.userUid });
      if (!user) throw linkRefused('unknown', 'password reset');
      assertPassword(password, user.email);
      return user;
    }),
  );
  await setPassword(deps, owner.uid, owner.email, password);
}

export async function signInWithLink(
  deps: SignInDeps,
  token: string,
  totpCode: string | undefined,
  client: ClientInfo,
): Promise<NewSession> {
  const db = deps.database.db;
  await assertNotThrottled(db, [addressBucket(client.ip)]);
  // A user with a second factor needs the code too; the link is used only when everything is right.
  const user = await asService(() =>
    db.transaction(async (tx) => {
      const used = await repo.consumeToken(tx, 'sign_in_link', hashSecretToken(token));
      if ('refused' in used) throw linkRefused(used.refused, 'sign-in');
      const found = await repo.findSignInUser(tx, { uid: used.userUid });
      if (!found) throw linkRefused('unknown', 'sign-in');
      // In the link's transaction: on PGlite a statement outside it would wait for it to end.
      const secondFactor = await checkSecondFactor(tx, deps, found, totpCode);
      return { ...found, secondFactor };
    }),
  ).catch(async (error: unknown) => {
    if (['invalid_token', 'invalid_credentials'].includes((error as AppError).code)) {
      await recordFailure(db, [addressBucket(client.ip)]);
    }
    throw error;
  });
  return openSession(deps, user.uid, 'sign_in_link', client, user.secondFactor);
}

// ---------------------------------------------------------------------------------------------------
// TOTP second factor (RFC 6238: SHA-1, 6 digits, 30 s, ±1 step), through the otpauth library

const TOTP_PURPOSE = (userUid: string) => `user_credentials.totp_secret:${userUid}`;

function totpFor(secretBase32: string, email: string) {
  return new OTPAuth.TOTP({
    issuer: 'Remit',
    label: email,
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    secret: OTPAuth.Secret.fromBase32(secretBase32),
  });
}

/**
 * Whether `code` is a current code of the user's secret (±1 step of drift) for a time step later than
 * the last one accepted; when it is, that step is taken (a code is good once).
 */
async function acceptTotpCode(
  db: DbOrTx,
  deps: SignInDeps,
  user: repo.SignInUser,
  code: string,
): Promise<boolean> {
  if (!/^\d{6}$/.test(code) || !user.totpSecret) return false;
  const secret = deps.secrets.open(user.totpSecret, TOTP_PURPOSE(user.uid));
  const now = Date.now();
  const delta = totpFor(secret, user.email).validate({ token: code, timestamp: now, window: 1 });
  if (delta === null) return false;
  return asService(() => repo.claimTotpStep(db, user.uid, Math.floor(now / 30_000) + delta));
}

function requireSession(principal: Principal): void {
  if (principal.credential.kind !== 'session') {
    throw new AppError(
      'session_required',
      'A second factor is set up by the person, signed in (not with an API key)',
    );
  }
}

/** Starts setting up TOTP: a new secret, stored sealed and not yet required, and its otpauth:// URI. */
export async function setupTotp(deps: SignInDeps, principal: Principal) {
  requireSession(principal);
  const user = await asService(() => repo.findSignInUser(deps.database.db, { uid: principal.user.uid }));
  if (!user) throw notFound('User');
  if (user.totpEnabledAt) throw new AppError('conflict', 'A second factor is already on; turn it off first');
  const secret = new OTPAuth.Secret({ size: 20 }).base32;
  await asService(() =>
    repo.updateCredentials(deps.database.db, user.uid, {
      totpSecret: deps.secrets.seal(secret, TOTP_PURPOSE(user.uid)),
      totpEnabledAt: null,
      totpLastStep: null,
    }),
  );
  return { secret, otpauth_uri: totpFor(secret, user.email).toString() };
}

/** Turns TOTP on once the person proves their app has the secret (a current code). */
export async function enableTotp(deps: SignInDeps, principal: Principal, code: string) {
  requireSession(principal);
  const db = deps.database.db;
  const user = await asService(() => repo.findSignInUser(db, { uid: principal.user.uid }));
  if (!user?.totpSecret) throw new AppError('invalid_state', 'Set up TOTP first (POST /api/auth/totp/setup)');
  if (user.totpEnabledAt) throw new AppError('conflict', 'A second factor is already on');
  if (!(await acceptTotpCode(db, deps, user, code))) {
    throw validationFailed('code', 'The code is not right; enter the current one from your app');
  }
  // The session that proved the code goes on as a second-factor one; every other session of the
  // person ends, so none opened with the password alone outlives the change.
  await asService(() =>
    db.transaction(async (tx) => {
      await repo.updateCredentials(tx, user.uid, { totpEnabledAt: new Date() });
      await repo.markSecondFactor(tx, user.uid, principal.credential.uid);
      await repo.revokeUserSessions(tx, user.uid, principal.credential.uid);
    }),
  );
}

/** Turns TOTP off; needs a current code (or the password, for someone who lost the app). */
export async function disableTotp(
  deps: SignInDeps,
  principal: Principal,
  proof: { code?: string | undefined; password?: string | undefined },
  client: ClientInfo,
) {
  requireSession(principal);
  const db = deps.database.db;
  // Throttled as sign-in is, in the same buckets: a stolen session must not be a way to guess the
  // code or the password without limit.
  const buckets = [accountBucket(principal.user.email), addressBucket(client.ip)];
  await assertNotThrottled(db, buckets);
  const user = await asService(() => repo.findSignInUser(db, { uid: principal.user.uid }));
  if (!user?.totpEnabledAt) throw new AppError('invalid_state', 'No second factor is on');
  let proven = false;
  if (proof.code) {
    proven = await acceptTotpCode(db, deps, user, proof.code);
  } else if (proof.password) {
    proven = await verifyPassword(user.passwordHash, proof.password);
  }
  if (!proven) {
    await recordFailure(db, buckets);
    throw new AppError('invalid_credentials', 'The code or password is not right');
  }
  await forgive(db, buckets[0]!);
  await asService(() =>
    repo.updateCredentials(db, user.uid, { totpSecret: null, totpEnabledAt: null, totpLastStep: null }),
  );
}

/** Every stored TOTP secret sealed under the current key (at start and by `remit secrets rotate`). */
export async function resealTotpSecrets(db: Db, secrets: SecretBox): Promise<number> {
  return asService(async () => {
    let count = 0;
    for (const row of await repo.listTotpSecrets(db)) {
      const sealed = secrets.resealed(row.totpSecret, TOTP_PURPOSE(row.userUid));
      if (sealed === undefined) continue;
      if (await repo.replaceTotpSecret(db, row.userUid, row.totpSecret, sealed)) count += 1;
    }
    return count;
  });
}
