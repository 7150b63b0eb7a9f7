import fs from 'node:fs';
import path from 'node:path';
import * as OTPAuth from 'otpauth';
import { signInThrottle } from '../../src/modules/people/sign-in.tables.ts';
import type { TestApp } from './app.ts';
import { call, type CallOptions, type CallResult } from './http.ts';

/** The text of a message in DATA_DIR/outbox, quoted-printable soft breaks and escapes undone. */
function decoded(raw: string): string {
  return raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Every message the app wrote to its outbox for `to`, oldest first. */
export function outboxMessages(t: TestApp, to: string): string[] {
  return outboxMessagesIn(t.config.dataDir, to);
}

/** The same for a process's DATA_DIR (a server started by the test). */
export function outboxMessagesIn(dataDir: string, to: string): string[] {
  const dir = path.join(dataDir, 'outbox');
  if (!fs.existsSync(dir)) return [];
  // Only finished messages: a `.tmp` file is one being written, renamed to `.eml` when complete (and
  // gone by the time it would be read).
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.eml'))
    .map((name) => path.join(dir, name))
    .sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs)
    .map((file) => decoded(fs.readFileSync(file, 'utf8')))
    .filter((text) => new RegExp(`^To: .*${to.replace(/[.+]/g, '\\$&')}`, 'im').test(text));
}

/** The token of the newest link to `pathname` emailed to `to`. */
export function emailedToken(t: TestApp, to: string, pathname: string): string {
  return emailedTokenIn(t.config.dataDir, to, pathname);
}

/** The same for a process's DATA_DIR (a server started by the test). */
export function emailedTokenIn(dataDir: string, to: string, pathname: string): string {
  const messages = outboxMessagesIn(dataDir, to);
  for (const text of messages.reverse()) {
    const match = new RegExp(`${pathname}\\?token=([\\w-]+)`).exec(text);
    if (match) return match[1]!;
  }
  throw new Error(`no ${pathname} link emailed to ${to} (${messages.length} messages)`);
}

/** A browser's view of one person: the session cookie it holds and the session's anti-forgery token. */
export interface Browser {
  cookie: string;
  csrf: string;
  /** A same-origin call with the cookie (and the token on unsafe methods). */
  call(method: string, url: string, options?: CallOptions): Promise<CallResult>;
}

export function sessionCookieOf(result: CallResult): string | undefined {
  const header = result.headers['set-cookie'];
  const all = Array.isArray(header) ? header : header ? [String(header)] : [];
  const cookie = all.find((c) => /^(__Host-)?remit_session=/.test(c));
  return cookie?.split(';')[0];
}

export function browserFrom(t: TestApp, signedIn: CallResult): Browser {
  const cookie = sessionCookieOf(signedIn);
  if (signedIn.status !== 200 || !cookie)
    throw new Error(`not signed in: ${signedIn.status} ${signedIn.raw}`);
  const browser: Browser = {
    cookie,
    csrf: (signedIn.body as { data: { csrf_token: string } }).data.csrf_token,
    call: (method, url, options = {}) =>
      call(t.app, method, url, {
        ...options,
        headers: {
          cookie: browser.cookie,
          ...(['GET', 'HEAD'].includes(method) ? {} : { 'x-csrf-token': browser.csrf }),
          ...options.headers,
        },
      }),
  };
  return browser;
}

/**
 * Forgets every sign-in and link failure, and the blocks they earned: every request of `app.inject`
 * comes from one address, so one test's failures would otherwise throttle the next test's sign-in.
 */
export async function clearSignInThrottle(t: TestApp): Promise<void> {
  await t.db.delete(signInThrottle);
}

/** Sets the user's password the way a person would: a reset link from the outbox. */
export async function setPasswordByEmail(t: TestApp, email: string, password: string): Promise<void> {
  const asked = await call(t.app, 'POST', '/api/auth/password-reset', { body: { email } });
  if (asked.status !== 202) throw new Error(`reset request: ${asked.status} ${asked.raw}`);
  const token = emailedToken(t, email, '/reset-password');
  const set = await call(t.app, 'POST', '/api/auth/password-reset/confirm', { body: { token, password } });
  if (set.status !== 200) throw new Error(`reset: ${set.status} ${set.raw}`);
}

export async function signIn(
  t: TestApp,
  email: string,
  password: string,
  totpCode?: string,
): Promise<Browser> {
  const result = await call(t.app, 'POST', '/api/auth/sign-in', {
    body: { email, password, ...(totpCode ? { totp_code: totpCode } : {}) },
  });
  return browserFrom(t, result);
}

/** The code an authenticator app shows for `secret`, `stepsAhead` periods from now. */
export function totpCode(secret: string, stepsAhead = 0): string {
  return new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 }).generate({
    timestamp: Date.now() + stepsAhead * 30_000,
  });
}
